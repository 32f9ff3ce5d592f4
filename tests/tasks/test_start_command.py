"""Fast starts: a share of the commands drawn at a reset walks straight forward, heading held."""

from dataclasses import replace

import command_envs
import pytest
import torch

from mjlab_microduck.tasks import axis_command, start_command, tuning
from mjlab_microduck.tasks.velocity import TASK_ID, env_cfg_of_task

FAST_START_TASK = f"{TASK_ID}-WalkerTurningAxesFastStartTuning"


def test_fast_start_commands_walk_forward_between_the_minimum_and_the_top_speed():
    command = start_command.fast_start(torch.tensor([0.0, 0.5, 0.999]), 0.3, 0.4)
    assert command[:, 0].tolist() == pytest.approx([0.3, 0.35, 0.3999], abs=1e-6)
    assert torch.equal(command[:, 1:], torch.zeros(3, 2))


def test_the_fast_start_walker_keeps_every_field_of_the_axes_walkers_command():
    axes = env_cfg_of_task(f"{TASK_ID}-WalkerTurningAxesTuning").commands["twist"]
    starts = env_cfg_of_task(FAST_START_TASK).commands["twist"]
    assert isinstance(starts, start_command.FastStartVelocityCommandCfg)
    preset = tuning.WALKER_TURNING_AXES_FAST_START.fast_start
    assert (starts.rel_fast_start_envs, starts.min_fast_start_speed_m_s) == (
        preset.envs_fraction, preset.min_speed_m_s)  # fmt: skip
    for name in ("heading_command", "rel_heading_envs", "rel_standing_envs", "ranges",
                 "heading_control_stiffness", "resampling_time_range",
                 "rel_turn_in_place_envs", "min_turn_rate_rad_s", "rel_axis_envs",
                 "min_axis_speed_m_s"):  # fmt: skip
        assert getattr(starts, name) == getattr(axes, name), name
    assert type(axes) is axis_command.AxisVelocityCommandCfg
    # A replay or an export draws none: it writes the command itself.
    assert env_cfg_of_task(FAST_START_TASK, play=True).commands["twist"].rel_fast_start_envs == 0


def test_a_minimum_above_the_top_speed_is_refused():
    axes = env_cfg_of_task(f"{TASK_ID}-WalkerTurningAxesTuning").commands["twist"]
    with pytest.raises(ValueError, match="above the command range's top speed 0.4"):
        start_command.with_fast_starts(axes, 0.5, 0.45)


def test_fast_starts_need_single_axis_envs_and_the_heading_command():
    for lone in (tuning.WALKER_TURNING, replace(tuning.WALKER_TURNING_AXES, heading=None)):
        with pytest.raises(ValueError, match="fast starts are drawn over single-axis envs"):
            replace(lone, name="lone", fast_start=tuning.FastStart())


@pytest.fixture(scope="module")
def starts_env():
    with command_envs.cpu_env(FAST_START_TASK, num_envs=400, seed=7) as env:
        yield env


def test_a_share_of_the_resets_starts_fast_and_straight_and_holds_its_start_heading(starts_env):
    term = starts_env.command_manager.get_term("twist")
    ids = torch.arange(starts_env.num_envs)
    starts_env.reset()  # every env's first command of the episode is drawn at its reset
    fast = term.is_fast_start_env.clone()
    # half the resets: 200 of 400 expected; a binomial's 4 sigma either way
    assert 160 <= int(fast.sum()) <= 240
    command = term.vel_command_b
    assert bool((command[fast, 0] >= 0.3 - 1e-6).all() and (command[fast, 0] <= 0.4).all())
    assert torch.equal(command[fast, 1], torch.zeros(int(fast.sum())))
    assert bool(term.is_heading_env[fast].all())
    for flag in (term.is_standing_env, term.is_turn_in_place_env, term.is_axis_env):
        assert not (fast & flag).any()
    # the command update after the reset pose is in (mjlab runs one before the first
    # observation) aims each one's heading law at the heading it starts with
    assert not term.aims_at_start_heading.any()
    heading = term.robot.data.heading_w
    assert torch.allclose(term.heading_target[fast], heading[fast], atol=1e-5)
    # the others keep the heading target they drew: most are somewhere else
    others = term.is_heading_env & ~fast
    assert bool(((term.heading_target[others] - heading[others]).abs() > 1e-3).float().mean() > 0.9)
    assert torch.equal(term.vel_command_b[fast, 2], torch.zeros(int(fast.sum())))
    # a resample in the middle of an episode draws no fast start
    term._resample_command(ids)
    assert term.command_counter.min() > 0 and not term.is_fast_start_env.any()


def test_sparing_standing_keeps_every_standing_draw_and_starts_fast_among_the_others(
    starts_env, monkeypatch
):
    """With ``spare_standing``, the standing envs the single-axis draw made at a reset stay
    standing (none becomes a fast start) and about half of the others start fast."""
    term = starts_env.command_manager.get_term("twist")
    drawn = {}
    parent = axis_command.AxisVelocityCommand._resample_command

    def snapshot(self, env_ids):
        parent(self, env_ids)
        drawn["standing"] = self.is_standing_env.clone()

    monkeypatch.setattr(axis_command.AxisVelocityCommand, "_resample_command", snapshot)
    monkeypatch.setattr(term.cfg, "spare_standing", True)
    starts_env.reset()
    standing, fast = term.is_standing_env, term.is_fast_start_env
    assert int(drawn["standing"].sum()) >= 20  # a tenth of 400 stand; 4 sigma below is 16
    assert torch.equal(standing, drawn["standing"]) and not (fast & standing).any()
    moving = int((~standing).sum())
    assert 0.5 * moving - 4 * (moving * 0.25) ** 0.5 <= int(fast.sum()) <= moving
    assert tuning.WALKER_TURNING_AXES_FAST_START_STANDING.fast_start.spares_standing
    monkeypatch.setattr(term.cfg, "spare_standing", False)
    starts_env.reset()  # without it, fast starts take standing draws too
    assert int((drawn["standing"] & term.is_fast_start_env).sum()) > 0


def test_with_no_share_it_draws_exactly_what_the_axes_command_draws(starts_env):
    command_envs.assert_zero_share_draws_as(
        starts_env.command_manager.get_term("twist"), "rel_fast_start_envs",
        "is_fast_start_env", axis_command.AxisVelocityCommand._resample_command, seed=17)
