"""The MicroDuck with and without the frozen-broadphase fault, for chapter 2.

Problem it solves: chapter 2 shows what the ROCm broadphase cache does to the robot, on any
machine: a few MicroDuck environments hold every joint at its home position for a few dozen
steps, once with the stock broadphase and once with the fault in each of its modes, and the
termination terms say which episodes sank through the floor. The page calls
:func:`fault_terminations`; its table is the one the chapter reads.
"""

from __future__ import annotations

import contextlib
import io
import warnings

import pandas as pd

from mjlab_microduck.compat import faults
from mjlab_microduck.robot.constants import FOOT_GEOMS

NUM_ENVS, STEPS = 4, 40
"""The chapter's sizes: enough to see every term fire, small enough for a CPU build."""
TRUNK_Z_COLUMN = "median trunk z [m]"


def hold_home_terminations(
    num_envs: int = NUM_ENVS, steps: int = STEPS, device: str = "cpu"
) -> tuple[dict[str, int], float, float]:
    """Termination counts over ``steps`` env steps holding the home pose, the median trunk
    height (m) over them, and the largest bounding radius of a sole (cm)."""
    import torch
    from mjlab.envs import ManagerBasedRlEnv

    from mjlab_microduck.tasks.velocity import microduck_flat_env_cfg

    cfg = microduck_flat_env_cfg(play=False)
    cfg.scene.num_envs = num_envs
    # mjlab prints its manager tables and config warnings on every build; keep the page short.
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        env = ManagerBasedRlEnv(cfg, device=device)
    try:
        env.reset()
        hold_home = torch.zeros(env.num_envs, env.action_manager.total_action_dim)
        counts = {name: 0 for name in env.termination_manager.active_terms}
        trunk_z = []
        for _ in range(steps):
            env.step(hold_home)
            trunk_z.append(env.scene["robot"].data.root_link_pos_w[:, 2].clone())
            for name in counts:
                counts[name] += int(env.termination_manager.get_term(name).sum())
        model = env.sim.mj_model
        feet = [i for i in range(model.ngeom) if model.geom(i).name.split("/")[-1] in FOOT_GEOMS]
        foot_rbound_cm = float(model.geom_rbound[feet].max()) * 100
        return counts, float(torch.cat(trunk_z).median()), foot_rbound_cm
    finally:
        env.close()


def fault_terminations(num_envs: int = NUM_ENVS, steps: int = STEPS) -> tuple[pd.DataFrame, float]:
    """One row per broadphase (stock, then the fault in each mode): termination counts and the
    median trunk height; and the sole's bounding radius (cm) of the stock run.

    The fault is entered before each environment is built: mjlab decides on graph capture at
    creation, and a captured step would replay the real broadphase.
    """
    runs = {"stock broadphase": hold_home_terminations(num_envs, steps)}
    for mode in faults.MODES:
        with faults.frozen_broadphase(mode):
            runs[f"frozen broadphase ({mode})"] = hold_home_terminations(num_envs, steps)
    table = pd.DataFrame({label: counts for label, (counts, _, _) in runs.items()}).T
    table[TRUNK_Z_COLUMN] = [round(z, 3) for _, z, _ in runs.values()]
    return table, runs["stock broadphase"][2]
