"""Turn-in-place envs: mjlab's velocity command with a share of turns on the spot."""

import command_envs
import pytest
import torch
from mjlab.tasks.velocity.mdp.velocity_command import (
    UniformVelocityCommand,
    UniformVelocityCommandCfg,
)

from mjlab_microduck.tasks import turning_command
from mjlab_microduck.tasks.velocity import TASK_ID, env_cfg_of_task

TURNING_TASK = f"{TASK_ID}-WalkerTurningTuning"


def test_turn_in_place_zeroes_the_linear_command_and_raises_slow_turns_keeping_their_sign():
    command = torch.tensor([[0.3, -0.2, 0.8], [-0.1, 0.1, -0.05], [0.2, 0.0, 0.1], [0.0, 0.2, 0.0]])
    turned = turning_command.turn_in_place(command, min_turn_rate_rad_s=0.3)
    assert torch.equal(turned[:, :2], torch.zeros(4, 2))
    assert turned[:, 2].tolist() == pytest.approx([0.8, -0.3, 0.3, 0.3])
    assert command[0].tolist() == pytest.approx([0.3, -0.2, 0.8])  # the input is left alone


def test_the_turning_walker_keeps_every_field_of_the_heading_walkers_command():
    heading = env_cfg_of_task(f"{TASK_ID}-WalkerHeadingTuning").commands["twist"]
    turning = env_cfg_of_task(TURNING_TASK).commands["twist"]
    assert isinstance(turning, turning_command.TurnInPlaceVelocityCommandCfg)
    assert (turning.rel_turn_in_place_envs, turning.min_turn_rate_rad_s) == (0.15, 0.3)
    for name in ("heading_command", "rel_heading_envs", "rel_standing_envs", "ranges",
                 "heading_control_stiffness", "resampling_time_range"):  # fmt: skip
        assert getattr(turning, name) == getattr(heading, name), name
    # A replay or an export draws no turn-in-place envs: it writes the command itself.
    assert env_cfg_of_task(TURNING_TASK, play=True).commands["twist"].rel_turn_in_place_envs == 0
    # Every other task keeps mjlab's own command.
    assert type(heading) is UniformVelocityCommandCfg


@pytest.fixture(scope="module")
def turning_env():
    with command_envs.cpu_env(TURNING_TASK, num_envs=400, seed=3) as env:
        yield env


def test_a_share_of_the_draws_turn_on_the_spot_and_never_steer_by_heading(turning_env):
    term = turning_env.command_manager.get_term("twist")
    term._resample_command(torch.arange(turning_env.num_envs))
    turning = term.is_turn_in_place_env
    command = term.vel_command_b
    # 15 % of the 90 % that are not standing: 54 of 400 expected; a binomial's 4 sigma either way.
    assert 25 <= int(turning.sum()) <= 85
    assert not (turning & term.is_standing_env).any()
    assert not (turning & term.is_heading_env).any()
    assert torch.equal(command[turning, :2], torch.zeros(int(turning.sum()), 2))
    assert bool((command[turning, 2].abs() >= 0.3 - 1e-6).all())
    # The others are drawn as mjlab draws them: some move and turn at once.
    moving = ~turning & ~term.is_standing_env
    assert bool((command[moving, :2].norm(dim=-1) > 0).all())
    # After a step the turning envs still hold their turn: no heading law overwrote the yaw rate.
    yaw_before = command[turning, 2].clone()
    turning_env.step(torch.zeros(turning_env.num_envs, turning_env.action_manager.total_action_dim))
    assert torch.allclose(term.vel_command_b[turning, 2], yaw_before)


def test_with_no_share_the_config_keeps_the_twist_it_was_made_from():
    cfg = env_cfg_of_task(f"{TASK_ID}-WalkerHeadingTuning").commands["twist"]
    same = turning_command.with_turn_in_place(cfg, 0.0, 0.3)
    assert same.rel_turn_in_place_envs == 0.0 and same.ranges == cfg.ranges


def test_with_no_share_it_draws_exactly_what_mjlab_draws(turning_env):
    command_envs.assert_zero_share_draws_as(
        turning_env.command_manager.get_term("twist"), "rel_turn_in_place_envs",
        "is_turn_in_place_env", UniformVelocityCommand._resample_command, seed=11)
