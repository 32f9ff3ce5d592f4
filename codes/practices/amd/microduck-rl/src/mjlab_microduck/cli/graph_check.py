"""``microduck graph-check``: the options are the fields of
:class:`~mjlab_microduck.jobs.graph_check.GraphCheckRequest`; the exit status is 0 when the
replayed steps match the plain ones, 1 when they do not and 2 on bad input, refused in one line
before an env is built."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from mjlab_microduck.cli._common import parse, run_command

PROG = "microduck graph-check"


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.jobs import graph_check

    def build() -> graph_check.GraphCheckRequest:
        return parse(graph_check.GraphCheckRequest, argv, prog)

    def act(request: graph_check.GraphCheckRequest) -> int:
        result = graph_check.compare(request)
        print(json.dumps({**asdict(result), "passed": result.passed}, sort_keys=True)
              if request.json else result.line())  # fmt: skip
        return 0 if result.passed else 1

    return run_command(prog, build, act)
