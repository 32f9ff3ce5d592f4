"""MicroDuck tasks, registered with mjlab (the ``mjlab.tasks`` entry point imports this module)."""

from functools import partial

from mjlab.tasks.registry import list_tasks, register_mjlab_task
from mjlab.tasks.velocity.rl import VelocityOnPolicyRunner

from mjlab_microduck.tasks.rl_cfg import microduck_ppo_runner_cfg
from mjlab_microduck.tasks.symmetry import MirroredVelocityRunner
from mjlab_microduck.tasks.velocity import (
    TASK_ID,
    TUNING_OF_TASK,
    UNGUARDED_TASK_ID,
    UPSTREAM_TUNING_TASK_ID,
    env_cfg_of_task,
    microduck_flat_env_cfg,
)

__all__ = ["TASK_ID", "UNGUARDED_TASK_ID", "UPSTREAM_TUNING_TASK_ID", "microduck_flat_env_cfg"]

# mjlab may import this module both through its entry point and through the package: register once.
if TASK_ID not in list_tasks():
    for task_id, preset in TUNING_OF_TASK.items():
        factory = partial(env_cfg_of_task, task_id)
        register_mjlab_task(
            task_id=task_id,
            env_cfg=factory(),
            play_env_cfg=factory(play=True),
            rl_cfg=microduck_ppo_runner_cfg(preset.init_action_std_rad),
            runner_cls=MirroredVelocityRunner if preset.mirror_symmetry else VelocityOnPolicyRunner,
        )
