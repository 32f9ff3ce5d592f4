"""Single-axis envs: a share of the draws walks along x or y only, over the turning command."""

import command_envs
import pytest
import torch

from mjlab_microduck.tasks import axis_command, turning_command
from mjlab_microduck.tasks.velocity import TASK_ID, env_cfg_of_task

AXES_TASK = f"{TASK_ID}-WalkerTurningAxesTuning"


def test_single_axis_keeps_one_linear_axis_raised_to_the_minimum_with_its_sign():
    command = torch.tensor([[0.3, -0.2, 0.8], [-0.05, 0.1, -0.4], [0.02, -0.04, 0.1],
                            [0.0, 0.0, 0.0]])  # fmt: skip
    keep_y = torch.tensor([False, False, True, True])
    shaped = axis_command.single_axis(command, keep_y, min_speed_m_s=0.1)
    expected = torch.tensor([[0.3, 0.0, 0.8], [-0.1, 0.0, -0.4], [0.0, -0.1, 0.1],
                             [0.0, 0.1, 0.0]])  # fmt: skip
    assert torch.allclose(shaped, expected)
    assert command[0].tolist() == pytest.approx([0.3, -0.2, 0.8])  # the input is left alone


def test_the_axes_walker_keeps_every_field_of_the_turning_walkers_command():
    turning = env_cfg_of_task(f"{TASK_ID}-WalkerTurningTuning").commands["twist"]
    axes = env_cfg_of_task(AXES_TASK).commands["twist"]
    assert isinstance(axes, axis_command.AxisVelocityCommandCfg)
    assert (axes.rel_axis_envs, axes.min_axis_speed_m_s) == (0.3, 0.1)
    for name in ("heading_command", "rel_heading_envs", "rel_standing_envs", "ranges",
                 "heading_control_stiffness", "resampling_time_range",
                 "rel_turn_in_place_envs", "min_turn_rate_rad_s"):  # fmt: skip
        assert getattr(axes, name) == getattr(turning, name), name
    # A replay or an export draws none: it writes the command itself.
    play = env_cfg_of_task(AXES_TASK, play=True).commands["twist"]
    assert play.rel_axis_envs == 0 and play.rel_turn_in_place_envs == 0
    assert type(turning) is turning_command.TurnInPlaceVelocityCommandCfg


@pytest.fixture(scope="module")
def axes_env():
    with command_envs.cpu_env(AXES_TASK, num_envs=400, seed=5) as env:
        yield env


def test_a_share_of_the_draws_walks_along_one_axis(axes_env):
    term = axes_env.command_manager.get_term("twist")
    term._resample_command(torch.arange(axes_env.num_envs))
    axis, command = term.is_axis_env, term.vel_command_b
    # 30 % of the ~76 % neither standing nor turning in place: 92 of 400 expected; 4 sigma.
    assert 55 <= int(axis.sum()) <= 130
    assert not (axis & (term.is_standing_env | term.is_turn_in_place_env)).any()
    linear = command[axis, :2]
    # exactly one axis moves, at least 0.1 m/s; both axes are drawn
    assert bool(((linear == 0).sum(dim=-1) == 1).all())
    assert bool((linear.abs().max(dim=-1).values >= 0.1 - 1e-6).all())
    assert 0 < int((linear[:, 1] != 0).sum()) < int(axis.sum())
    assert torch.equal(term.vel_command_w[axis], command[axis])
    # the others keep their uniform draw: almost every moving one moves along both axes
    others = ~axis & ~term.is_standing_env & ~term.is_turn_in_place_env
    assert bool((command[others, :2] != 0).all())
    # heading envs among them steer by heading as before
    assert bool((axis & term.is_heading_env).any())


def test_with_no_share_it_draws_exactly_what_the_turning_command_draws(axes_env):
    command_envs.assert_zero_share_draws_as(
        axes_env.command_manager.get_term("twist"), "rel_axis_envs", "is_axis_env",
        turning_command.TurnInPlaceVelocityCommand._resample_command, seed=13)


def test_single_axis_envs_need_the_turning_command():
    from dataclasses import replace

    from mjlab_microduck.tasks import tuning

    with pytest.raises(ValueError, match="drawn over turn-in-place ones"):
        replace(tuning.WALKER_HEADING, name="lone", single_axis=tuning.SingleAxis())
