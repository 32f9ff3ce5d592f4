"""mjlab's velocity command with a share of single-axis envs, over the turn-in-place one.

Problem it solves: every linear case of the gait test commands one axis at a time (forward,
backward or sideways, with the heading held), while a uniform draw over (vx, vy) almost never
does: a pure sideways command of 0.1-0.2 m/s is about 4 % of the draws, and walking sideways at
0.78-0.85 of 0.15 m/s is what keeps the turning walker's seeds from passing longest, as turning
in place did before it had its own envs. A single-axis env keeps one of its sampled linear
components (x or y, even odds), raised to at least ``min_axis_speed_m_s`` with its sign kept,
and zeroes the other; its yaw rate and heading target stay as drawn, so a heading env walks a
straight line along that axis once it faces its target. Standing and turn-in-place envs are
left alone. With ``rel_axis_envs = 0`` it draws exactly what
:class:`~mjlab_microduck.tasks.turning_command.TurnInPlaceVelocityCommand` draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from mjlab_microduck.tasks.turning_command import (
    TurnInPlaceVelocityCommand,
    TurnInPlaceVelocityCommandCfg,
    derived_cfg,
)

if TYPE_CHECKING:
    from mjlab.envs import ManagerBasedRlEnv


def single_axis(
    command_b: torch.Tensor, keep_y: torch.Tensor, min_speed_m_s: float
) -> torch.Tensor:
    """The command rows with one linear axis kept: y where ``keep_y``, else x, raised to at
    least ``min_speed_m_s`` in magnitude with its sign kept (zero moves forward or left); the
    other linear axis zeroed and the yaw rate unchanged."""
    shaped = command_b.clone()
    axis = keep_y.long()
    kept = command_b[:, :2].gather(1, axis[:, None]).squeeze(1)
    sign = torch.where(kept < 0, -1.0, 1.0)
    shaped[:, :2] = 0.0
    shaped[:, :2].scatter_(1, axis[:, None], (sign * kept.abs().clamp(min=min_speed_m_s))[:, None])
    return shaped


class AxisVelocityCommand(TurnInPlaceVelocityCommand):
    cfg: AxisVelocityCommandCfg

    def __init__(self, cfg: AxisVelocityCommandCfg, env: ManagerBasedRlEnv):
        super().__init__(cfg, env)
        self.is_axis_env = torch.zeros_like(self.is_heading_env)

    def _resample_command(self, env_ids: torch.Tensor) -> None:
        super()._resample_command(env_ids)
        self.is_axis_env[env_ids] = False
        if self.cfg.rel_axis_envs <= 0.0:
            return  # no draw either: the random stream stays the turning command's own
        draw = torch.rand(len(env_ids), device=self.device) < self.cfg.rel_axis_envs
        keep_y = torch.rand(len(env_ids), device=self.device) < 0.5
        chosen = draw & ~self.is_standing_env[env_ids] & ~self.is_turn_in_place_env[env_ids]
        self.is_axis_env[env_ids] = chosen
        ids = env_ids[chosen]
        if len(ids) == 0:
            return
        self.vel_command_b[ids] = single_axis(
            self.vel_command_b[ids], keep_y[chosen], self.cfg.min_axis_speed_m_s
        )
        self.vel_command_w[ids] = self.vel_command_b[ids]  # mjlab's world-frame envs read this


@dataclass(kw_only=True)
class AxisVelocityCommandCfg(TurnInPlaceVelocityCommandCfg):
    rel_axis_envs: float = 0.0
    min_axis_speed_m_s: float = 0.1

    def build(self, env: ManagerBasedRlEnv) -> AxisVelocityCommand:
        return AxisVelocityCommand(self, env)


def with_axes(
    twist: TurnInPlaceVelocityCommandCfg, rel_axis_envs: float, min_axis_speed_m_s: float
) -> AxisVelocityCommandCfg:
    """``twist`` as a single-axis command config: every field of it kept, the share added."""
    return derived_cfg(
        twist, AxisVelocityCommandCfg, rel_axis_envs=rel_axis_envs,
        min_axis_speed_m_s=min_axis_speed_m_s,
    )  # fmt: skip
