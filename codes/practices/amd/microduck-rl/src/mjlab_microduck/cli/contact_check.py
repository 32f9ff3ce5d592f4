"""``microduck contact-check``: the sphere-drop contact check.

The options are those of :func:`mjlab_microduck.runtime.contact_check.main`, which checks its
input and refuses bad input with one line and exit status 2 before it creates anything.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None, prog: str = "microduck contact-check") -> int:
    from mjlab_microduck.runtime import contact_check

    del prog  # the module names itself in its messages
    return int(contact_check.main(list(sys.argv[1:] if argv is None else argv)))


def alias_main() -> None:
    """The old ``microduck-contact-check`` console script."""
    sys.exit(main(prog="microduck-contact-check"))
