"""MicroDuck tasks, registered with mjlab (the ``mjlab.tasks`` entry point imports this module).

Before anything else it picks MuJoCo's offscreen GL backend and installs the compatibility
hooks: mjlab reads ``warp.context`` when the first simulation is built, so the hooks must be in
place before any task can be made. This is the only import with side effects in the package.
"""

from mjlab_microduck.compat import gl_backend

gl_backend.choose_gl_backend()  # MuJoCo reads MUJOCO_GL once, when first imported

from functools import partial

from mjlab_microduck import compat

compat.install_all()

from mjlab.tasks.registry import list_tasks, register_mjlab_task

from mjlab_microduck.tasks.kl_schedule import scheduled_runner
from mjlab_microduck.tasks.rl_cfg import microduck_ppo_runner_cfg
from mjlab_microduck.tasks.runner import AtomicSaveVelocityRunner
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
        runner = MirroredVelocityRunner if preset.mirror_symmetry else AtomicSaveVelocityRunner
        register_mjlab_task(
            task_id=task_id,
            env_cfg=factory(),
            play_env_cfg=factory(play=True),
            rl_cfg=microduck_ppo_runner_cfg(
                preset.init_action_std_rad,
                preset.steps_per_env,
                preset.num_mini_batches,
                preset.desired_kl,
            ),
            runner_cls=scheduled_runner(runner, preset),
        )
