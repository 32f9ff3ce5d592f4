"""The training summary (mjlab_microduck.analysis.training) on hand-computed scalars."""

from __future__ import annotations

import pandas as pd

from mjlab_microduck.analysis.training import summarize


def test_summarize_on_hand_computed_values():
    nan = float("nan")
    frame = pd.DataFrame(
        {
            "Train/mean_reward": [1.0, 3.0, 2.0, 5.0],
            "Train/mean_episode_length": [10.0, 30.0, 20.0, nan],
            "Perf/total_fps": [100.0, 300.0, 200.0, 250.0],
            "Episode_Termination/nan_state": [0.0, 0.0, 0.0, 0.0],
            "Episode_Termination/below_ground": [0.0, 0.5, 0.0, 0.25],
            "Episode_Termination/fell_over": [2.0, 1.0, nan, 0.0],
            "Metrics/twist/error_vel_xy": [0.1, 0.2, nan, nan],
            "wall_time": [1000.0, 1010.0, 1025.0, 1030.0],
        },
        index=pd.Index([7, 8, 9, 10], name="iteration"),
    )
    s = summarize(frame, num_envs=16, steps_per_env=24)
    assert (s["iterations"], s["first_iteration"], s["last_iteration"]) == (4, 7, 10)
    assert s["transitions"] == 4 * 16 * 24
    assert (s["reward_first"], s["reward_last"], s["reward_best"]) == (1.0, 5.0, 5.0)
    # Missing values are dropped, not read as 0: the last episode length is 20.
    assert (s["episode_length_first"], s["episode_length_last"], s["episode_length_best"]) == (
        10.0, 20.0, 30.0
    )  # fmt: skip
    assert (s["throughput_last"], s["throughput_best"]) == (250.0, 300.0)
    assert s["wall_time_first_to_last_s"] == 30.0
    assert (s["nan_state_last"], s["nan_state_max"], s["nan_state_nonzero_iterations"]) == (
        0.0, 0.0, 0
    )  # fmt: skip
    assert (s["below_ground_last"], s["below_ground_max"]) == (0.25, 0.5)
    assert s["below_ground_nonzero_iterations"] == 2
    assert (s["fell_over_last"], s["fell_over_max"], s["fell_over_nonzero_iterations"]) == (
        0.0, 2.0, 2
    )  # fmt: skip
    assert s["error_vel_xy_last"] == 0.2 and "error_vel_yaw_last" not in s
