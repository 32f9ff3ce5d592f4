"""``microduck probe``: the interprocess GPU event reuse probe.

The options are those of :func:`mjlab_microduck.runtime.ipc_probe.main`, which checks its input and
refuses bad input with one line and exit status 2 before it creates anything.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None, prog: str = "microduck probe") -> int:
    from mjlab_microduck.runtime import ipc_probe

    del prog  # the module names itself in its messages
    return int(ipc_probe.main(list(sys.argv[1:] if argv is None else argv)))


def alias_main() -> None:
    """The old ``microduck-probe`` console script."""
    sys.exit(main(prog="microduck-probe"))
