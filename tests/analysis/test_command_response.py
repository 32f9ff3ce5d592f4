"""Command sweeps (mjlab_microduck.analysis.command_response): the slope rule on hand-made
sweeps, and real CPU sweeps of two published checkpoints: the stepping preset's, which walks
one pace, and the recipe run's last, whose speed rises with the command."""

from __future__ import annotations

import pandas as pd
import pytest

from mjlab_microduck.analysis import acceptance, command_response
from mjlab_microduck.book import command_sweep, results
from mjlab_microduck.jobs import replay
from mjlab_microduck.tasks.tuning import STEPPING
from mjlab_microduck.tasks.velocity import preset_task_id

# Folded with its run into the presets' summary record, which keeps this one checkpoint.
STEPPING_750 = (results.results_root() / results.PRESET_HISTORY / "h200_stepping_resume_1500"
                / "model_750.pt")
STEPPING_TASK = preset_task_id(STEPPING)
RECIPE_1498 = results.results_root() / results.RECIPE_RUN_1500 / "model_1498.pt"


def _swept(velocities, commands=(0.0, 0.2, 0.4), done=None):
    return pd.DataFrame({
        "command_mps": commands,
        "mean_forward_velocity_mps": velocities,
        "done_count": done or [0] * len(commands),
    })  # fmt: skip


@pytest.mark.parametrize(
    ("velocities", "slope", "follows"),
    [
        ((0.0, 0.2, 0.4), 1.0, True),  # tracks exactly
        ((0.0, 0.1, 0.2), 0.5, True),  # half the command: on the rule's line
        ((0.0, 0.09, 0.18), 0.45, False),
        ((0.065, 0.065, 0.065), 0.0, False),  # one gait whatever it is told
        ((0.1, 0.05, 0.0), -0.25, False),
    ],
)
def test_slope_rule_on_hand_made_sweeps(velocities, slope, follows):
    swept = _swept(velocities)
    assert command_response.response_slope(swept) == pytest.approx(slope)
    assert command_response.follows_command(swept) is follows


def test_a_termination_fails_the_rule_whatever_the_slope():
    assert not command_response.follows_command(_swept((0.0, 0.2, 0.4), done=[0, 1, 0]))


def test_one_command_has_no_slope_and_no_commands_no_sweep():
    with pytest.raises(ValueError, match="two different commands"):
        command_response.response_slope(_swept((0.1, 0.1), commands=(0.15, 0.15)))
    with pytest.raises(replay.ReplayError, match="at least one command"):
        command_sweep.sweep(replay.ReplayRequest(checkpoint=RECIPE_1498), commands=())


def test_findings_give_the_slope_the_rule_and_where_the_policy_stands():
    follows = command_sweep.findings(_swept((0.0, 0.005, 0.3)))
    assert follows.iloc[0] == pytest.approx(0.75) and follows["terminations"] == 0
    assert follows["follows the command (slope ≥ 0.5, no termination)"]
    assert follows["commands it stands under (m/s, speed < 0.01)"] == "0.2"
    assert not follows["walks off when told to stand"]
    one_gait = command_sweep.findings(_swept((0.065, 0.065, 0.065)))
    assert not one_gait["follows the command (slope ≥ 0.5, no termination)"]
    assert one_gait["walks off when told to stand"]
    falls = command_sweep.findings(_swept((0.0, 0.06, 0.12), done=[0, 0, 2]))
    assert falls["terminations"] == 2


def test_plot_response_draws_the_measured_points_and_both_guides():
    import matplotlib

    matplotlib.use("Agg")
    fig = command_sweep.plot_response(_swept((0.0, 0.1, 0.2)))
    ideal, half, measured = fig.axes[0].lines
    assert list(ideal.get_ydata()) == [0.0, 0.4]
    assert list(half.get_ydata()) == [0.0, 0.2]
    assert list(measured.get_xdata()) == [0.0, 0.2, 0.4]
    assert list(measured.get_ydata()) == [0.0, 0.1, 0.2]


@pytest.mark.slow
def test_the_published_stepping_policy_walks_one_pace_whatever_the_command():
    """Chapter 6's finding, on this CPU: told to stand or to go 0.4 m/s, the stepping policy
    goes forward at about the same speed; the commands do reach it (it turns differently)."""
    request = replay.ReplayRequest(checkpoint=STEPPING_750, task=STEPPING_TASK)
    swept = command_sweep.sweep(request, commands=(0.0, 0.4), progress=False)
    assert list(swept["command_mps"]) == [0.0, 0.4]
    assert (swept["done_count"] == 0).all()
    standing, fast = swept["mean_forward_velocity_mps"]
    assert standing > 0.03  # walks off although told to stand
    assert abs(fast - standing) < 0.02
    assert abs(command_response.response_slope(swept)) < 0.1
    assert not command_response.follows_command(swept)
    turn_standing, turn_fast = swept["heading_change_rad"]
    assert abs(turn_standing - turn_fast) > 0.2


@pytest.mark.slow
def test_the_published_recipe_policy_stands_when_told_and_speeds_up_when_told():
    """Chapter 6's sweep of the recipe run's last checkpoint, on this CPU: still under a zero
    command, walking faster under 0.4 than under 0.15 m/s (measured 0.001, 0.087, 0.183)."""
    request = replay.ReplayRequest(checkpoint=RECIPE_1498, task=acceptance.RECIPE_TASK)
    swept = command_sweep.sweep(request, commands=(0.0, 0.15, 0.4), progress=False)
    assert (swept["done_count"] == 0).all()
    standing, protocol, fast = swept["mean_forward_velocity_mps"]
    assert abs(standing) < 0.01
    assert protocol >= acceptance.MIN_FORWARD_VELOCITY_MPS
    assert fast > protocol + 0.05
    assert command_response.response_slope(swept) > 0.4


def test_a_sweep_reports_progress_only_for_replays_that_run(tmp_path, monkeypatch, capsys):
    """Replays read back from the build's replay memo are counted in one line, never timed in
    the progress milestones as if they ran."""
    from mjlab_microduck.jobs import replay_memo
    from mjlab_microduck.runtime import progress

    monkeypatch.setenv(replay_memo.ENV_VAR, str(tmp_path / "memo"))
    monkeypatch.setenv(progress.ENV_VAR, "milestones")
    trajectory = pd.DataFrame({
        "x": [0.0, 0.01], "y": [0.0, 0.0], "z": [0.1, 0.1], "yaw": [0.0, 0.0],
        "yaw0": [0.0, 0.0], "vx_b": [0.5, 0.5], "vy_b": [0.0, 0.0], "upright": [1.0, 1.0],
        "done": [False, False], "t_s": [0.0, 0.02], "segment": [0, 0], "cmd_vx": [0.1, 0.1],
        "cmd_vy": [0.0, 0.0], "cmd_wz": [0.0, 0.0], "wz_b": [0.0, 0.0]})  # fmt: skip
    ran = []
    monkeypatch.setattr(replay, "_simulate",
                        lambda request, progress: ran.append(request) or (trajectory, [], 0.02))
    checkpoint = tmp_path / "model_7.pt"
    checkpoint.write_bytes(b"weights")
    request = replay.ReplayRequest(checkpoint=checkpoint)
    command_sweep.sweep(request, commands=(0.1, 0.2))
    first = capsys.readouterr().err
    assert len(ran) == 2 and "commands replayed: 100% (2/2)" in first and "memo" not in first
    swept = command_sweep.sweep(request, commands=(0.1, 0.2, 0.3))
    again = capsys.readouterr().err
    assert len(ran) == 3 and list(swept["command_mps"]) == [0.1, 0.2, 0.3]
    memo_line, *milestones = again.splitlines()
    assert memo_line == "commands: 2 of 3 replays read back from the build's replay memo"
    assert milestones and all(m.startswith("commands replayed: ") and "(1/1)" in m
                              for m in milestones)  # fmt: skip
    command_sweep.sweep(request, commands=(0.1, 0.2, 0.3))
    assert capsys.readouterr().err.splitlines() == [
        "commands: 3 of 3 replays read back from the build's replay memo"]
    assert len(ran) == 3
    monkeypatch.setenv(progress.ENV_VAR, "off")  # off silences the memo line too
    command_sweep.sweep(request, commands=(0.1, 0.2, 0.3))
    assert capsys.readouterr().err == "" and len(ran) == 3
