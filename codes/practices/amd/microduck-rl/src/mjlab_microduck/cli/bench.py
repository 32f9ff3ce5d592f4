"""``microduck bench``: the benchmark matrix; ``publish RUN_DIR DEST`` copies a bench run
into the book.

The options are those of :func:`mjlab_microduck.jobs.bench.main`, which checks its input and
refuses bad input with one line and exit status 2 before it creates anything.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None, prog: str = "microduck bench") -> int:
    from mjlab_microduck.jobs import bench

    del prog  # the module names itself in its messages
    return int(bench.main(list(sys.argv[1:] if argv is None else argv)))


def alias_main() -> None:
    """The old ``microduck-bench`` console script."""
    sys.exit(main(prog="microduck-bench"))
