"""Chapter 4's figures read off a training run, on a made-up run."""

from __future__ import annotations

import math

import pandas as pd

from mjlab_microduck.book import train_pages


def _scalars() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Train/mean_episode_length": [20.0, 150.0, 600.0, 700.0, 650.0],
            "Episode_Termination/fell_over": [1.0, 4.0, 2.0, 0.5, 0.0],
            "Episode_Termination/legs_collapsed": [0.0, 1.0, 0.8, 0.6, 0.7],
            "Policy/mean_std": [0.5, 0.5, 0.45, 0.4, 0.41],
            "Perf/total_fps": [1000.0, 2000.0, 3000.0, 2500.0, 2200.0],
        },
        index=pd.Index([0, 1, 2, 3, 4], name="iteration"),
    )


def test_curve_facts_reads_the_levels_peaks_and_terms():
    summary = {"iterations": 5, "nan_state_nonzero_iterations": 0,
               "below_ground_nonzero_iterations": 1, "below_ground_max": 0.5,
               "below_ground_last": 0.0}  # fmt: skip
    facts = train_pages.curve_facts(_scalars(), summary)
    assert facts["mean episode length first > 100 steps"] == 1
    assert facts["mean episode length first > 500 steps"] == 2
    assert facts["fell_over per reset: peak → last"] == "4.00 → 0.00"
    assert facts["legs_collapsed per reset: median of the last 4/5 → last"] == "0.75 → 0.70"
    assert facts["Policy/mean_std: first → last"] == "0.50 → 0.41"
    assert facts["nan_state"] == "0 in all 5 iterations"
    assert facts["below_ground"].startswith("non-zero in 1 of 5 iterations")
    assert facts["env steps/s: last, best, median"] == "2,200, 3,000, 2,200"


def test_a_level_never_reached_has_no_iteration():
    assert train_pages.first_iteration_above(pd.Series([1.0, 2.0]), 5) is None


def test_standing_share_is_the_gaussian_kernel_at_the_command():
    assert math.isclose(train_pages.standing_share(0.15, 0.2), math.exp(-0.5625))
    assert train_pages.standing_share(0.0, 0.2) == 1.0


def _smoke_scalars(rewards: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Train/mean_reward": rewards,
            "Train/mean_episode_length": [20.0, 30.0],
            "Policy/mean_std": [0.998, 0.99],
            "Episode_Reward/upright": [0.01, 0.02],
            "Episode_Reward/track_linear_velocity": [0.01, 0.03],
            "Episode_Reward/action_rate_l2": [-0.02, -0.09],
            "Episode_Reward/dof_pos_limits": [-0.001, -0.005],
        },
        index=pd.Index([0, 1], name="iteration"),
    )


def test_random_policy_row_splits_the_last_reward_terms_and_names_the_largest_penalty():
    row = train_pages.random_policy_row(_smoke_scalars([-0.9, -1.3]), control_dt_s=0.02)
    assert row == {
        "action std (first iteration)": 1.0,
        "episode length (last, steps)": 30.0,
        "episode length (last, s)": 0.6,
        "mean reward (last)": -1.3,
        "positive terms (last, per s of episode limit)": 0.05,
        "penalties (last, per s of episode limit)": -0.095,
        "largest penalty (last)": "action_rate_l2",
    }


def test_random_policy_table_has_one_row_per_run():
    runs = {"a": _smoke_scalars([1.0, 1.2]), "b": _smoke_scalars([-0.9, -1.3])}
    table = train_pages.random_policy_table(runs, control_dt_s=0.02)
    assert list(table.index) == ["a", "b"] and table.index.name == "run"
    assert list(table["mean reward (last)"]) == [1.2, -1.3]


def test_label_with_action_std_names_the_first_iterations_std():
    scalars = _smoke_scalars([-0.9, -1.3])  # Policy/mean_std 0.998, then 0.99
    assert (train_pages.label_with_action_std("recorded 64x5 (H200, full)", scalars)
            == "recorded 64x5 (H200, full, action std 1.0)")  # fmt: skip
    scalars["Policy/mean_std"] = [0.49, 0.6]
    assert train_pages.label_with_action_std("live 16x3", scalars) == "live 16x3 (action std 0.5)"


def test_reward_sign_reads_every_iteration():
    assert train_pages.reward_sign(pd.Series([1.2, 0.1])) == "positive in every iteration"
    assert train_pages.reward_sign(pd.Series([-1.2, -0.1])) == "negative in every iteration"
    assert train_pages.reward_sign(pd.Series([-1.2, 0.1])) == "of both signs"


def test_random_policy_figures_read_the_registered_task_and_its_preset():
    from mjlab_microduck.runs.names import TASK_ID
    from mjlab_microduck.tasks import tuning

    figures = train_pages.random_policy_figures(TASK_ID)
    assert figures.name == TASK_ID
    assert figures["tuning preset"] == tuning.DEFAULT_TUNING.name.upper()
    assert figures["initial action std (policy)"] == tuning.DEFAULT_TUNING.init_action_std_rad
    assert figures["control rate (Hz)"] == 50.0 and figures["episode limit (s)"] == 20.0
    upstream = train_pages.random_policy_figures(f"{TASK_ID}-{tuning.UPSTREAM.task_suffix}")
    assert upstream["initial action std (policy)"] == tuning.UPSTREAM.init_action_std_rad == 1.0
