"""mjlab's task registry, with the MicroDuck tasks in it.

Problem it solves: mjlab imports task packages through its ``mjlab.tasks`` entry point, which
exists only where this package is pip-installed. With ``src/`` on ``PYTHONPATH`` instead (a
borrowed GPU machine, a notebook run from a checkout), a lookup through ``mjlab.tasks.registry``
misses every MicroDuck task. Importing this module imports :mod:`mjlab_microduck.tasks` first,
which registers them; where the entry point already did, that is a no-op.
"""

from mjlab.tasks.registry import list_tasks, load_env_cfg, load_rl_cfg, load_runner_cls

__all__ = ["list_tasks", "load_env_cfg", "load_rl_cfg", "load_runner_cls"]
