"""``microduck train``: options are the fields of :class:`~mjlab_microduck.jobs.train.TrainRequest`.

Defaults come from the profile in force (``MICRODUCK_PROFILE``: sizes and device). The request
is validated (name, device, task, sizes, checkpoint) before the run folder is created;
``--resume-from`` takes a checkpoint or a run folder (its last checkpoint, which must load).
Exit status: 0 for an ok run, 1 for a failed one, 2 for bad input, 130 or 143 when SIGINT or
SIGTERM stopped it (the run's record then says ``interrupted``).
"""

from __future__ import annotations

import sys

from mjlab_microduck.cli._common import finish_run, parse, run_command

DESCRIPTION = (
    "Train a MicroDuck task with mjlab/rsl_rl and write a run record. Defaults are the sizes"
    " and device of the profile in force (MICRODUCK_PROFILE)."
)


def main(argv: list[str] | None = None, prog: str = "microduck train") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from mjlab_microduck.jobs import train
    from mjlab_microduck.runtime import profiles

    def build() -> train.TrainRequest:
        profile = profiles.current()
        default = train.TrainRequest(
            name="train",
            num_envs=profile.main_envs,
            iterations=profile.main_iterations,
            save_interval=profile.main_save_interval,
            device=profile.device,
            profile=profile.name,
        )
        parsed = parse(train.TrainRequest, argv, prog, default=default, description=DESCRIPTION)
        return train.validate(parsed)

    return run_command(prog, build, lambda request: finish_run(prog, *train.run(request)))
