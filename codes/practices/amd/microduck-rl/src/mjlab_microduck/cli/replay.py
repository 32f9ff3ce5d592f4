"""``microduck replay``: the options are the fields of
:class:`~mjlab_microduck.jobs.replay.ReplayCli` (the checkpoint is the one positional argument).

What can be refused without the environment (a fixed command next to ``--schedule``, frames,
video size, device, run name) is refused before mjlab is imported; a checkpoint that is missing,
unreadable or does not fit the task is refused once the environment is built, before the run
folder is made. Either way: one line on stderr and exit status 2. A replay stopped by SIGINT
or SIGTERM leaves no run folder (a replay's folder holds a complete replay or does not exist)
and exits 130 or 143.
"""

from __future__ import annotations

import sys

from mjlab_microduck.cli._common import Refused, interrupted, parse, refuse

PROG = "microduck replay"


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.jobs import replay, stopping

    try:
        args = parse(replay.ReplayCli, argv, prog)
        request, name = replay.request_from_cli(args)
    except (Refused, replay.ReplayError, ValueError) as err:
        return refuse(prog, err)
    with stopping.signals_raise():
        try:
            import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)

            run_dir, record = replay.run(request, args.out, name)
        except replay.ReplayError as err:
            return refuse(prog, err)
        except (stopping.Interrupted, KeyboardInterrupt) as err:
            return interrupted(prog, err)
    print(replay.summary_line(run_dir, record))
    return 0
