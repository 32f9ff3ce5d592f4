"""MicroDuck tasks, registered with mjlab (the ``mjlab.tasks`` entry point imports this module)."""

from mjlab.tasks.registry import list_tasks, register_mjlab_task
from mjlab.tasks.velocity.rl import VelocityOnPolicyRunner

from mjlab_microduck.tasks.rl_cfg import microduck_ppo_runner_cfg
from mjlab_microduck.tasks.velocity import (
    TASK_ID,
    UNGUARDED_TASK_ID,
    microduck_flat_env_cfg,
    microduck_flat_unguarded_env_cfg,
)

__all__ = ["TASK_ID", "UNGUARDED_TASK_ID", "microduck_flat_env_cfg"]

# mjlab may import this module both through its entry point and through the package: register once.
if TASK_ID not in list_tasks():
    register_mjlab_task(
        task_id=TASK_ID,
        env_cfg=microduck_flat_env_cfg(),
        play_env_cfg=microduck_flat_env_cfg(play=True),
        rl_cfg=microduck_ppo_runner_cfg(),
        runner_cls=VelocityOnPolicyRunner,
    )
    register_mjlab_task(
        task_id=UNGUARDED_TASK_ID,
        env_cfg=microduck_flat_unguarded_env_cfg(),
        play_env_cfg=microduck_flat_unguarded_env_cfg(play=True),
        rl_cfg=microduck_ppo_runner_cfg(),
        runner_cls=VelocityOnPolicyRunner,
    )
