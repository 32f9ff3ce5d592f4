"""``microduck gait-watch``: the options are the fields of
:class:`~mjlab_microduck.jobs.gait_watch.GaitWatchRequest`; one line per gait test written.
SIGINT or SIGTERM stops the watch (130, 143); the gait tests written by then stay."""

from __future__ import annotations

import sys

from mjlab_microduck.cli._common import Refused, interrupted, parse, refuse


def main(argv: list[str] | None = None, prog: str = "microduck gait-watch") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.jobs import gait_test, gait_watch, stopping

    with stopping.signals_raise():
        try:
            request = parse(gait_watch.GaitWatchRequest, argv, prog)
            gait_watch.watch(request, log=lambda line: print(line, flush=True))
        except (Refused, ValueError, gait_test.GaitTestError) as err:
            return refuse(prog, err)
        except (stopping.Interrupted, KeyboardInterrupt) as err:
            return interrupted(prog, err)
    return 0
