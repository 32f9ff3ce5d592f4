"""MicroDuck tasks, registered with mjlab (the ``mjlab.tasks`` entry point imports this module)."""

from mjlab.tasks.registry import list_tasks, register_mjlab_task
from mjlab.tasks.velocity.rl import VelocityOnPolicyRunner

from mjlab_microduck.tasks.rl_cfg import microduck_ppo_runner_cfg
from mjlab_microduck.tasks.velocity import (
    STEPPING_TUNING_TASK_ID,
    TASK_ID,
    TUNING_OF_TASK,
    UNGUARDED_TASK_ID,
    UPSTREAM_TUNING_TASK_ID,
    microduck_flat_env_cfg,
    microduck_flat_stepping_tuning_env_cfg,
    microduck_flat_unguarded_env_cfg,
    microduck_flat_upstream_tuning_env_cfg,
)

__all__ = ["TASK_ID", "UNGUARDED_TASK_ID", "UPSTREAM_TUNING_TASK_ID", "microduck_flat_env_cfg"]

_ENV_FACTORIES = {
    TASK_ID: microduck_flat_env_cfg,
    UNGUARDED_TASK_ID: microduck_flat_unguarded_env_cfg,
    UPSTREAM_TUNING_TASK_ID: microduck_flat_upstream_tuning_env_cfg,
    STEPPING_TUNING_TASK_ID: microduck_flat_stepping_tuning_env_cfg,
}

# mjlab may import this module both through its entry point and through the package: register once.
if TASK_ID not in list_tasks():
    for task_id, factory in _ENV_FACTORIES.items():
        register_mjlab_task(
            task_id=task_id,
            env_cfg=factory(),
            play_env_cfg=factory(play=True),
            rl_cfg=microduck_ppo_runner_cfg(TUNING_OF_TASK[task_id].init_action_std_rad),
            runner_cls=VelocityOnPolicyRunner,
        )
