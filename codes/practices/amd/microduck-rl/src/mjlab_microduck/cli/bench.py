"""``microduck bench``: the options are the fields of
:class:`~mjlab_microduck.jobs.bench.BenchRequest`.

Their defaults are the plan for the device and mode (``--device``, ``--quick``), so those two
are read first; the request is validated before the run folder is made. A finished bench run is
copied into the book with ``microduck records publish``. SIGINT or SIGTERM ends the run
``interrupted`` (with what was measured) and the command with 130 or 143.
"""

from __future__ import annotations

import argparse
import os
import sys

from mjlab_microduck.cli._common import finish_run, parse, run_command

DESCRIPTION = (
    "Benchmark the MicroDuck task (physics, PPO training, fix costs, step breakdown, launches"
    " and host reads per step) and write a run record plus bench.csv."
)


def _device_and_quick(argv: list[str]) -> tuple[str | None, bool]:
    # Only to choose the defaults; tyro parses (and reports on) the same options afterwards.
    early = argparse.ArgumentParser(add_help=False)
    early.add_argument("--device")
    early.add_argument("--quick", action="store_true")
    early.add_argument("--no-quick", dest="quick", action="store_false")
    known, _ = early.parse_known_args(argv)
    return known.device, known.quick


def main(argv: list[str] | None = None, prog: str = "microduck bench") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.jobs import bench
    from mjlab_microduck.runtime import backend, profiles

    def build() -> bench.BenchRequest:
        device, quick = _device_and_quick(argv)
        device = device or backend.default_device()
        profile = os.environ.get(profiles.PROFILE_ENV_VAR) or ("ci" if device == "cpu" else "full")
        default = bench.default_request(device, quick, profile=profile)
        parsed = parse(bench.BenchRequest, argv, prog, default=default, description=DESCRIPTION)
        return bench.validate(parsed)

    return run_command(prog, build, lambda request: finish_run(prog, *bench.run(request)))
