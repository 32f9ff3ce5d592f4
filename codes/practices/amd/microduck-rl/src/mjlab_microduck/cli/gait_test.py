"""``microduck gait-test``: the options are the fields of
:class:`~mjlab_microduck.jobs.gait_test.GaitTestCli` (the request's own flags unprefixed); the
exit status is 0 when the checkpoint walks, 1 when it fails the test, 2 on bad input, and 130 or
143 when SIGINT or SIGTERM stops it (the gait test in progress leaves no folder)."""

from __future__ import annotations

import sys

from mjlab_microduck.cli._common import Refused, interrupted, parse, refuse


def main(argv: list[str] | None = None, prog: str = "microduck gait-test") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    import tyro

    from mjlab_microduck.jobs import gait_test, stopping

    with stopping.signals_raise():
        try:
            args = parse(tyro.conf.OmitArgPrefixes[gait_test.GaitTestCli], argv, prog)
            done = gait_test.run_command(args)
        except (Refused, gait_test.GaitTestError, ValueError) as err:
            return refuse(prog, err)
        except (stopping.Interrupted, KeyboardInterrupt) as err:
            return interrupted(prog, err)
    gait_test.print_verdict(done.result, done.run_dir)
    return 0 if done.result.verdict.passed else 1
