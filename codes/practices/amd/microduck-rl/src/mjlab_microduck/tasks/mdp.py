"""Task terms the MicroDuck adds to mjlab's velocity task.

Small, pure functions so each can be unit-tested on hand-computed values. mjlab's own terms
(rewards, ``root_height_below_minimum``, ``nan_detection``) are used wherever they fit; only what
mjlab lacks lives here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

import torch

if TYPE_CHECKING:
    from mjlab.envs import ManagerBasedRlEnv


class StandingStage(TypedDict):
    step: int
    """Env steps per env (``env.common_step_counter``) from which the stage applies."""
    fraction: float


def standing_fraction_at(step: int, stages: Sequence[StandingStage]) -> float:
    """The fraction of standing (zero-command) envs in force at ``step``: the last stage reached."""
    fraction = 0.0
    for stage in stages:
        if step >= stage["step"]:
            fraction = stage["fraction"]
    return fraction


def raise_standing_fraction(
    env: ManagerBasedRlEnv,
    env_ids: torch.Tensor,
    command_name: str,
    stages: Sequence[StandingStage],
) -> dict[str, torch.Tensor]:
    """Curriculum: more envs are told to stand still as training goes on.

    A walking policy that never practises standing shuffles when commanded zero; adding standing
    envs from the start slows down learning to walk. The schedule follows the upstream task.
    """
    del env_ids  # The fraction is global; it applies at each env's next resample.
    cfg = env.command_manager.get_term(command_name).cfg
    cfg.rel_standing_envs = standing_fraction_at(env.common_step_counter, stages)
    return {"rel_standing_envs": torch.tensor(cfg.rel_standing_envs)}


def trunk_below_height(trunk_z_m: torch.Tensor, min_height_m: float) -> torch.Tensor:
    """True where the trunk is below ``min_height_m`` (the pure part of the below-ground guard)."""
    return trunk_z_m < min_height_m


def below_ground(env: ManagerBasedRlEnv, min_height_m: float = -0.05) -> torch.Tensor:
    """Termination: the trunk is under the floor.

    A standing MicroDuck's trunk is about 0.11 m high. Only the soles collide with the ground
    (as in the upstream model), so the trunk can pass below the floor in two ways: a collapse
    that folds the legs straight down, which happens while a policy is still learning, and
    missing ground contacts (the ROCm broadphase cache, chapter 2), where the whole robot falls
    through while staying upright. Without this guard the second kind runs to the time-out and
    looks like success; with it, both end the episode at once and show in the logged
    ``Episode_Termination/below_ground`` scalar.
    """
    return trunk_below_height(env.scene["robot"].data.root_link_pos_w[:, 2], min_height_m)
