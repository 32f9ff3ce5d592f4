"""``microduck replay``: replay a checkpoint (options: jobs.replay.build_parser).

The options are those of :func:`mjlab_microduck.jobs.replay.main`, which checks its input and
refuses bad input with one line and exit status 2 before it creates anything.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None, prog: str = "microduck replay") -> int:
    from mjlab_microduck.jobs import replay

    del prog  # the module names itself in its messages
    return int(replay.main(list(sys.argv[1:] if argv is None else argv)))


def alias_main() -> None:
    """The old ``microduck-replay`` console script."""
    sys.exit(main(prog="microduck-replay"))
