"""``microduck train``: options are the fields of :class:`~mjlab_microduck.jobs.train.TrainRequest`.

Defaults come from the profile in force (``MICRODUCK_PROFILE``: sizes and device). The request
is validated (name, device, task, sizes, checkpoint) before the run folder is created.
"""

from __future__ import annotations

import sys

from mjlab_microduck.cli._common import Refused, parse, refuse

DESCRIPTION = (
    "Train a MicroDuck task with mjlab/rsl_rl and write a run record. Defaults are the sizes"
    " and device of the profile in force (MICRODUCK_PROFILE)."
)


def main(argv: list[str] | None = None, prog: str = "microduck train") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.jobs import train
    from mjlab_microduck.runs import records
    from mjlab_microduck.runtime import profiles

    try:
        profile = profiles.current()
        default = train.TrainRequest(
            name="train",
            num_envs=profile.main_envs,
            iterations=profile.main_iterations,
            save_interval=profile.main_save_interval,
            device=profile.device,
            profile=profile.name,
        )
        request = train.validate(
            parse(train.TrainRequest, argv, prog, default=default, description=DESCRIPTION)
        )
    except (Refused, ValueError) as err:
        return refuse(prog, err)
    run_dir, record = train.run(request)
    print(f"run record: {run_dir / records.RECORD_FILENAME} (status {record.status})")
    if record.status != "ok":
        print(f"{prog}: {record.error}", file=sys.stderr)
        return 1
    return 0
