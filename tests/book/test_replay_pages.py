"""book/replay_pages.py: what a replay's turn and sway cost in the tracking rewards."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mjlab_microduck.book import replay_pages


def test_turn_and_sway_of_a_steady_turn():
    # 4 s at 50 Hz: a robot turning left at 0.5 rad/s along a circle, swaying ±0.1 m/s
    t = np.arange(201) / 50
    yaw = 0.5 * t
    trajectory = pd.DataFrame({
        "x": 0.3 * np.sin(yaw), "y": 0.3 * (1 - np.cos(yaw)), "yaw": yaw,
        "vy_b": 0.1 * np.where(np.arange(201) % 2, 1.0, -1.0),
    })  # fmt: skip
    costs = replay_pages.turn_and_sway(trajectory, 4.0, math.sqrt(0.5))
    assert costs["heading_change_rad"] == pytest.approx(2.0)
    assert costs["mean_turn_rate_rad_s"] == pytest.approx(0.5)
    assert costs["yaw-rate reward kept at that turn rate"] == pytest.approx(math.exp(-0.5))
    assert costs["sway's cost under a 0.1 m/s kernel"] == pytest.approx(1 - math.exp(-1))


def test_the_path_plot_draws_the_walked_path_in_its_start_frame_beside_the_command():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # facing +y (yaw0 = pi/2) and walking 0.1 m/s along it for the protocol's 200 frames
    frames = np.arange(replay_pages.PROTOCOL_FRAMES + 1)
    trajectory = pd.DataFrame({"x": 1.0 + 0 * frames, "y": 0.002 * frames,
                               "yaw0": math.pi / 2 + 0 * frames})  # fmt: skip
    ax = replay_pages.plot_path_against_command(trajectory, label="walked")
    walked, commanded = ax.get_lines()
    assert walked.get_label() == "walked"
    # in the start frame the walk is straight ahead: 0.4 m forward, nothing to the left
    assert walked.get_xdata()[-1] == pytest.approx(0.4)
    assert np.abs(walked.get_ydata()).max() == pytest.approx(0.0, abs=1e-12)
    # the command: PROTOCOL_LIN_VEL_X for 4 s
    assert commanded.get_xdata()[-1] == pytest.approx(replay_pages.PROTOCOL_LIN_VEL_X * 4.0)
    assert "straight ahead" in commanded.get_label()
    plt.close(ax.figure)


def _live(seconds: float, notes: str | None) -> replay_pages.LiveReplay:
    from types import SimpleNamespace

    return replay_pages.LiveReplay(label="model_1.pt", run_dir=None,
                                   record=SimpleNamespace(notes=notes), seconds=seconds,
                                   log="")  # fmt: skip


def test_timing_text_times_only_replays_that_ran():
    from mjlab_microduck.jobs import replay

    ran, kept = _live(7.94, None), _live(0.01, replay.MEMO_NOTE)
    assert not ran.from_memo and kept.from_memo
    assert replay_pages.timing_text([ran, _live(8.26, None)]) == (
        "one replay of 200 frames without video took 7.9–8.3 s here, including building the "
        "environment")
    assert replay_pages.timing_text([kept, kept]) == (
        "each trajectory was read back from the build's replay memo (each identical replay ran "
        "earlier in the build), so this page timed no replay")
    assert replay_pages.timing_text([ran, kept]) == (
        "one replay of 200 frames without video took 7.9 s here, including building the "
        "environment; 1 of the 2 trajectories was read back from the build's replay memo (each "
        "identical replay ran earlier in the build)")
