"""mjlab's velocity command with a share of turn-in-place envs.

Problem it solves: with the twist command drawn uniformly over (vx, vy, wz), a command to turn
on the spot (no linear velocity, a clear yaw rate) is about 2 % of the draws, and turning in place
at 0.5 rad/s is the case the walker presets fail longest. A turn-in-place env keeps its sampled
yaw rate, raised to at least ``min_turn_rate_rad_s`` like mjlab's forward-only envs raise their
speed, with no linear velocity and no heading target (which would overwrite the yaw rate).
Standing envs stay standing. With ``rel_turn_in_place_envs = 0`` it draws exactly what
``UniformVelocityCommand`` draws.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import torch
from mjlab.tasks.velocity.mdp.velocity_command import (
    UniformVelocityCommand,
    UniformVelocityCommandCfg,
)

if TYPE_CHECKING:
    from mjlab.envs import ManagerBasedRlEnv


def turn_in_place(command_b: torch.Tensor, min_turn_rate_rad_s: float) -> torch.Tensor:
    """The command rows as turn-in-place commands: linear part zeroed, yaw rate at least
    ``min_turn_rate_rad_s`` in magnitude with its sign kept (a zero rate turns left)."""
    turned = torch.zeros_like(command_b)
    sign = torch.where(command_b[:, 2] < 0, -1.0, 1.0)
    turned[:, 2] = sign * command_b[:, 2].abs().clamp(min=min_turn_rate_rad_s)
    return turned


class TurnInPlaceVelocityCommand(UniformVelocityCommand):
    cfg: TurnInPlaceVelocityCommandCfg

    def __init__(self, cfg: TurnInPlaceVelocityCommandCfg, env: ManagerBasedRlEnv):
        super().__init__(cfg, env)
        self.is_turn_in_place_env = torch.zeros_like(self.is_heading_env)

    def _resample_command(self, env_ids: torch.Tensor) -> None:
        super()._resample_command(env_ids)
        self.is_turn_in_place_env[env_ids] = False
        if self.cfg.rel_turn_in_place_envs <= 0.0:
            return  # no draw either: the random stream stays mjlab's own
        draw = torch.rand(len(env_ids), device=self.device) < self.cfg.rel_turn_in_place_envs
        turning = draw & ~self.is_standing_env[env_ids]
        self.is_turn_in_place_env[env_ids] = turning
        ids = env_ids[turning]
        if len(ids) == 0:
            return
        self.vel_command_b[ids] = turn_in_place(
            self.vel_command_b[ids], self.cfg.min_turn_rate_rad_s
        )
        self.vel_command_w[ids] = self.vel_command_b[ids]
        self.is_heading_env[ids] = False
        self.is_forward_env[ids] = False


@dataclass(kw_only=True)
class TurnInPlaceVelocityCommandCfg(UniformVelocityCommandCfg):
    rel_turn_in_place_envs: float = 0.0
    min_turn_rate_rad_s: float = 0.3

    def build(self, env: ManagerBasedRlEnv) -> TurnInPlaceVelocityCommand:
        return TurnInPlaceVelocityCommand(self, env)


def derived_cfg(twist: UniformVelocityCommandCfg, cls: type, **added):
    """``twist`` as a config of ``cls`` (a subclass of its class): every field of it kept,
    ``added`` (the subclass's own fields) set."""
    kept = {f.name: getattr(twist, f.name) for f in fields(twist) if f.init}
    return cls(**kept, **added)


def with_turn_in_place(
    twist: UniformVelocityCommandCfg, rel_turn_in_place_envs: float, min_turn_rate_rad_s: float
) -> TurnInPlaceVelocityCommandCfg:
    """``twist`` as a turn-in-place command config: every field of it kept, the share added."""
    return derived_cfg(
        twist,
        TurnInPlaceVelocityCommandCfg,
        rel_turn_in_place_envs=rel_turn_in_place_envs,
        min_turn_rate_rad_s=min_turn_rate_rad_s,
    )
