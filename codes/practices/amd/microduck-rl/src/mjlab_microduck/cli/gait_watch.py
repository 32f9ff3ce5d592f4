"""``microduck gait-watch``: the options are the fields of
:class:`~mjlab_microduck.jobs.gait_watch.GaitWatchRequest`; one line per gait test written."""

from __future__ import annotations

import sys

from mjlab_microduck.cli._common import Refused, parse, refuse


def main(argv: list[str] | None = None, prog: str = "microduck gait-watch") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.jobs import gait_test, gait_watch

    try:
        request = parse(gait_watch.GaitWatchRequest, argv, prog)
        gait_watch.watch(request, log=lambda line: print(line, flush=True))
    except (Refused, ValueError, gait_test.GaitTestError) as err:
        return refuse(prog, err)
    return 0
