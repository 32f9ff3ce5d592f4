"""``microduck replay``: the options are the fields of
:class:`~mjlab_microduck.jobs.replay.ReplayCli` (the checkpoint is the one positional argument).

What can be refused without the environment (a fixed command next to ``--schedule``, frames,
video size, device, run name) is refused before mjlab is imported; a checkpoint that is missing,
unreadable or does not fit the task is refused once the environment is built, before the run
folder is made. Either way: one line on stderr and exit status 2.
"""

from __future__ import annotations

import sys

from mjlab_microduck.cli._common import Refused, parse, refuse

PROG = "microduck replay"


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.jobs import replay

    try:
        args = parse(replay.ReplayCli, argv, prog)
        request, name = replay.request_from_cli(args)
    except (Refused, replay.ReplayError, ValueError) as err:
        return refuse(prog, err)
    import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)

    try:
        run_dir, record = replay.run(request, args.out, name)
    except replay.ReplayError as err:
        return refuse(prog, err)
    print(replay.summary_line(run_dir, record))
    return 0
