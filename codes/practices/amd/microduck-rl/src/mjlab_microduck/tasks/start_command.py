"""mjlab's velocity command with a share of fast starts, over the single-axis one.

Problem it solves: the gait test starts every robot from its reset pose straight into its
case's command, and what the nearly passing checkpoints fail last is single robots folding
their legs within the first second at 0.3-0.4 m/s forward (1-3 % of the robots, whatever their
friction, mass or centre of mass). In training, a start from the reset pose happens once per
20-s episode and draws its command uniformly, so a straight, fast start is a small share of
the experience. A fast-start env is an env whose command is drawn at its reset (its first
command of the episode): ``rel_fast_start_envs`` of them walk straight forward, at least
``min_fast_start_speed_m_s`` fast (up to the range's top speed), with no sideways component
and the heading held at the heading they start with (mjlab's heading law aims at it from the
first step, as in the gait test; without the heading command, a yaw rate of 0), until their
first resample. Later resamples draw as the single-axis command does. With ``spare_standing``,
a draw that stands stays standing: fast starts come only from the draws that move. With
``rel_fast_start_envs = 0`` it draws exactly what
:class:`~mjlab_microduck.tasks.axis_command.AxisVelocityCommand` draws.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from mjlab_microduck.tasks.axis_command import AxisVelocityCommand, AxisVelocityCommandCfg
from mjlab_microduck.tasks.turning_command import derived_cfg

if TYPE_CHECKING:
    from mjlab.envs import ManagerBasedRlEnv


def fast_start(speed_share: torch.Tensor, min_speed_m_s: float, max_speed_m_s: float):
    """Fast-start commands for draws ``speed_share`` in [0, 1): forward at
    ``min + share * (max - min)`` m/s, no sideways component, no yaw rate (the heading law
    sets it)."""
    command = torch.zeros(len(speed_share), 3, device=speed_share.device)
    command[:, 0] = min_speed_m_s + speed_share * (max_speed_m_s - min_speed_m_s)
    return command


class FastStartVelocityCommand(AxisVelocityCommand):
    cfg: FastStartVelocityCommandCfg

    def __init__(self, cfg: FastStartVelocityCommandCfg, env: ManagerBasedRlEnv):
        super().__init__(cfg, env)
        self.is_fast_start_env = torch.zeros_like(self.is_heading_env)
        # The command is drawn before the reset pose reaches the simulation; the heading target
        # is taken from the robot at the command update that follows (mjlab runs one after the
        # reset pose is in, before the first observation).
        self.aims_at_start_heading = torch.zeros_like(self.is_heading_env)

    def _resample_command(self, env_ids: torch.Tensor) -> None:
        # mjlab's CommandTerm counts the draws of an episode after drawing: 0 means a reset.
        at_reset = self.command_counter[env_ids] == 0
        super()._resample_command(env_ids)
        self.is_fast_start_env[env_ids] = False
        self.aims_at_start_heading[env_ids] = False
        if self.cfg.rel_fast_start_envs <= 0.0:
            return  # no draw either: the random stream stays the single-axis command's own
        draw = torch.rand(len(env_ids), device=self.device) < self.cfg.rel_fast_start_envs
        speed_share = torch.rand(len(env_ids), device=self.device)
        chosen = draw & at_reset
        if self.cfg.spare_standing:
            chosen &= ~self.is_standing_env[env_ids]
        ids = env_ids[chosen]
        if len(ids) == 0:
            return
        top = self.cfg.ranges.lin_vel_x[1]
        self.vel_command_b[ids] = fast_start(
            speed_share[chosen], self.cfg.min_fast_start_speed_m_s, top
        )
        self.vel_command_w[ids] = self.vel_command_b[ids]
        for flag in (self.is_standing_env, self.is_turn_in_place_env, self.is_axis_env,
                     self.is_world_env, self.is_forward_env):  # fmt: skip
            flag[ids] = False
        self.is_fast_start_env[ids] = True
        # Without the heading command (a replay holding its yaw rate) the yaw rate stays 0.
        self.is_heading_env[ids] = self.cfg.heading_command
        self.aims_at_start_heading[ids] = self.cfg.heading_command

    def _update_command(self) -> None:
        aiming = self.aims_at_start_heading.nonzero(as_tuple=False).flatten()
        if len(aiming) > 0:
            self.heading_target[aiming] = self.robot.data.heading_w[aiming]
            self.aims_at_start_heading[aiming] = False
        super()._update_command()


@dataclass(kw_only=True)
class FastStartVelocityCommandCfg(AxisVelocityCommandCfg):
    rel_fast_start_envs: float = 0.0
    min_fast_start_speed_m_s: float = 0.3
    spare_standing: bool = False

    def __post_init__(self):
        super().__post_init__()
        if not self.min_fast_start_speed_m_s <= self.ranges.lin_vel_x[1]:
            raise ValueError(
                f"min_fast_start_speed_m_s {self.min_fast_start_speed_m_s} is above the "
                f"command range's top speed {self.ranges.lin_vel_x[1]}"
            )

    def build(self, env: ManagerBasedRlEnv) -> FastStartVelocityCommand:
        return FastStartVelocityCommand(self, env)


def with_fast_starts(
    twist: AxisVelocityCommandCfg,
    rel_fast_start_envs: float,
    min_fast_start_speed_m_s: float,
    spare_standing: bool = False,
) -> FastStartVelocityCommandCfg:
    """``twist`` as a fast-start command config: every field of it kept, the share added."""
    return derived_cfg(
        twist, FastStartVelocityCommandCfg, rel_fast_start_envs=rel_fast_start_envs,
        min_fast_start_speed_m_s=min_fast_start_speed_m_s, spare_standing=spare_standing,
    )  # fmt: skip
