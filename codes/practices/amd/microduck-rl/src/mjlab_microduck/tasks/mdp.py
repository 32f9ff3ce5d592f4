"""Task terms the MicroDuck adds to mjlab's velocity task.

Small, pure functions so each can be unit-tested on hand-computed values. mjlab's own terms
(rewards, ``root_height_below_minimum``, ``nan_detection``) are used wherever they fit; only what
mjlab lacks lives here.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

import torch
from mjlab.envs.mdp import dr
from mjlab.managers.scene_entity_config import SceneEntityCfg

from mjlab_microduck.robot.constants import FOOT_SITES

if TYPE_CHECKING:
    from mjlab.envs import ManagerBasedRlEnv

_FEET = SceneEntityCfg("robot", site_names=FOOT_SITES)
_ROBOT = SceneEntityCfg("robot")


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


@functools.wraps(dr.body_mass)  # keeps model_fields and recompute, which mjlab reads
def body_mass_at_com(env: ManagerBasedRlEnv, env_ids: torch.Tensor | None, **params) -> None:
    """``dr.body_mass`` without its warning that inertia is left unchanged.

    That is the model intended here: the upstream task's +-5 % mass errors (servo and battery
    tolerances) as point masses at each body's centre of mass, the randomisation every
    published policy was trained with. mjlab warns about it on every startup.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="dr.body_mass only randomizes mass", category=UserWarning
        )
        dr.body_mass(env, env_ids, **params)


def trunk_below_height(trunk_z_m: torch.Tensor, min_height_m: float) -> torch.Tensor:
    """True where the trunk is below ``min_height_m`` (the pure part of the below-ground guard)."""
    return trunk_z_m < min_height_m


def below_ground(env: ManagerBasedRlEnv, min_height_m: float = -0.05) -> torch.Tensor:
    """Termination: the trunk is under the floor.

    A standing MicroDuck's trunk is about 0.11 m high. With ground contacts missing (the ROCm
    broadphase cache, chapter 2) the whole robot falls through the floor while staying upright;
    without this guard that runs to the time-out and looks like success, with it the episode
    ends at once and shows in the logged ``Episode_Termination/below_ground`` scalar. A trunk
    that sinks past its own feet (legs folded) is ended earlier by ``legs_collapsed``, so in a
    healthy run this guard stays at zero.
    """
    return trunk_below_height(env.scene["robot"].data.root_link_pos_w[:, 2], min_height_m)


def trunk_height_above_lower_sole(trunk_z_m: torch.Tensor, feet_z_m: torch.Tensor) -> torch.Tensor:
    """Trunk height above the lower of the sole sites (``feet_z_m`` is ``[envs, feet]``)."""
    return trunk_z_m - feet_z_m.min(dim=-1).values


def legs_collapsed(
    env: ManagerBasedRlEnv, min_height_above_feet_m: float = 0.05, asset_cfg: SceneEntityCfg = _FEET
) -> torch.Tensor:
    """Termination: the trunk is within ``min_height_above_feet_m`` of the lower sole.

    Standing, the trunk is about 0.11 m above the soles and never below 0.08 m in a gait. Only
    the soles collide, so a policy can fold its legs and let the trunk sink past its feet (and
    through the floor), or lie at just under ``fell_over``'s 70 degrees on its soles. Both are
    falls; this ends them as falls. It measures the trunk *relative to the feet*, so a robot
    that sinks as a whole because ground contacts are missing (chapter 2) is left to
    ``below_ground``, which is what the guard is for.
    """
    robot = env.scene[asset_cfg.name]
    feet_z = robot.data.site_pos_w[:, asset_cfg.site_ids, 2]
    height = trunk_height_above_lower_sole(robot.data.root_link_pos_w[:, 2], feet_z)
    return height < min_height_above_feet_m


def single_stance_indicator(
    in_contact: torch.Tensor, command: torch.Tensor, command_threshold: float
) -> torch.Tensor:
    """1.0 where exactly one foot touches the ground while the command asks for motion."""
    one_foot = in_contact.sum(dim=-1) == 1
    return (one_foot & is_moving_command(command, command_threshold)).float()


def single_stance(
    env: ManagerBasedRlEnv, sensor_name: str, command_name: str, command_threshold: float = 0.01
) -> torch.Tensor:
    """Reward: one foot on the ground while commanded to move, the phase every step passes.

    mjlab's air-time reward pays only once a foot has been up for a while; on a robot whose
    servos barely lift a foot, that signal is rarely found by random actions. This one pays for
    the first moment of a step.
    """
    command = env.command_manager.get_command(command_name)
    return single_stance_indicator(feet_in_contact(env, sensor_name), command, command_threshold)


def yaw_rate_kernel(command_rad_s: torch.Tensor, yaw_rate_rad_s: torch.Tensor,
                    std_rad_s: float) -> torch.Tensor:
    """``exp(-(command - yaw rate)^2 / std^2)``: the yaw-rate error alone."""
    return torch.exp(-torch.square(command_rad_s - yaw_rate_rad_s) / std_rad_s**2)


def track_yaw_rate(env: ManagerBasedRlEnv, std: float, command_name: str = "twist",
                   asset_cfg: SceneEntityCfg = _ROBOT) -> torch.Tensor:
    """The commanded yaw rate tracked by a kernel of its own. mjlab's ``track_angular_velocity``
    also counts the trunk's roll and pitch rates as error, which a walking biped always has: a
    narrow kernel of that sum would pay almost nothing whatever the yaw rate."""
    command = env.command_manager.get_command(command_name)
    yaw_rate = env.scene[asset_cfg.name].data.root_link_ang_vel_b[:, 2]
    return yaw_rate_kernel(command[:, 2], yaw_rate, std)


def planar_velocity_kernel(command_m_s: torch.Tensor, velocity_m_s: torch.Tensor,
                           std_m_s: float) -> torch.Tensor:
    """``exp(-|command - velocity|^2 / std^2)`` over the last axis (x, y): the planar error."""
    return torch.exp(-torch.sum(torch.square(command_m_s - velocity_m_s), dim=-1) / std_m_s**2)


def track_planar_velocity(env: ManagerBasedRlEnv, std: float, command_name: str = "twist",
                          asset_cfg: SceneEntityCfg = _ROBOT) -> torch.Tensor:
    """The commanded planar velocity tracked by a kernel of its own. mjlab's
    ``track_linear_velocity`` also counts the trunk's vertical velocity as error, which a
    stepping biped always has: a narrow kernel of that sum would charge every step's bob."""
    command = env.command_manager.get_command(command_name)
    velocity = env.scene[asset_cfg.name].data.root_link_lin_vel_b[:, :2]
    return planar_velocity_kernel(command[:, :2], velocity, std)


def feet_in_contact(env: ManagerBasedRlEnv, sensor_name: str) -> torch.Tensor:
    """``[envs, feet]``: which feet the contact sensor sees on the ground now."""
    return env.scene[sensor_name].data.current_contact_time > 0


def episode_time_s(env: ManagerBasedRlEnv) -> torch.Tensor:
    """Seconds since each env's episode began (what the gait clock runs on)."""
    return env.episode_length_buf.float() * env.step_dt


def gait_phase_at(time_s: torch.Tensor, period_s: float) -> torch.Tensor:
    """Where each env is in its gait cycle, in [0, 1): 0 is the left foot's touch-down."""
    return torch.remainder(time_s / period_s, 1.0)


def gait_clock(env: ManagerBasedRlEnv, period_s: float) -> torch.Tensor:
    """Observation: ``[sin, cos]`` of the gait phase, a clock the policy can step to.

    The clock runs from each episode's start; it tells the policy *when* each foot should be
    down, not *where* it should go, so it adds no reference motion.
    """
    angle = 2.0 * torch.pi * gait_phase_at(episode_time_s(env), period_s)
    return torch.stack((torch.sin(angle), torch.cos(angle)), dim=-1)


def stance_schedule(phase: torch.Tensor, stance_fraction: float = 0.5) -> torch.Tensor:
    """Which feet should touch the ground, ``[envs, (left, right)]``; the right lags by half."""
    feet_phase = torch.stack((phase, torch.remainder(phase + 0.5, 1.0)), dim=-1)
    return feet_phase < stance_fraction


def gait_contact_match(
    in_contact: torch.Tensor, scheduled_stance: torch.Tensor, moving: torch.Tensor
) -> torch.Tensor:
    """Fraction of feet whose contact agrees with the schedule; both down when told to stand."""
    wanted = torch.where(moving.unsqueeze(-1), scheduled_stance, torch.ones_like(scheduled_stance))
    return (in_contact == wanted).float().mean(dim=-1)


def is_moving_command(command: torch.Tensor, command_threshold: float) -> torch.Tensor:
    """True where the twist command asks for motion (linear norm plus yaw rate, as mjlab)."""
    return command[:, :2].norm(dim=-1) + command[:, 2].abs() > command_threshold


def follow_gait_contacts(
    env: ManagerBasedRlEnv,
    sensor_name: str,
    command_name: str,
    period_s: float,
    command_threshold: float = 0.01,
) -> torch.Tensor:
    """Reward: feet touch the ground when the gait clock says, alternating left and right.

    Standing still under a walking command pays half of it (one foot always agrees); stepping in
    time pays all of it. That gives random exploration a dense signal toward lifting feet, which
    velocity tracking alone never gave this robot (chapter 4's standing runs). With a zero command
    it pays for both feet down.
    """
    schedule = stance_schedule(gait_phase_at(episode_time_s(env), period_s))
    moving = is_moving_command(env.command_manager.get_command(command_name), command_threshold)
    return gait_contact_match(feet_in_contact(env, sensor_name), schedule, moving)
