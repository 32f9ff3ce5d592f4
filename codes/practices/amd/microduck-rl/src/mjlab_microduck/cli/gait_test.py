"""``microduck gait-test``: the gait test of :mod:`mjlab_microduck.jobs.gait_test`.

The options are those of its ``main``, which checks its input and refuses bad input with one
line and exit status 2 before it creates anything.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None, prog: str = "microduck gait-test") -> int:
    from mjlab_microduck.jobs import gait_test

    del prog  # the module names itself in its messages
    return int(gait_test.main(list(sys.argv[1:] if argv is None else argv)))
