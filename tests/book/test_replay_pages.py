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
