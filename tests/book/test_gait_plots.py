"""The gait test's top-view path plot: one panel per case, start marker, command drawn.

What this proves, from a synthetic ``paths.csv`` frame (no simulator): the figure has exactly one
axes per case, titled with the case's label, equal axes in metres; every panel marks the start;
a straight command is an arrow as long as the ideal path, walk-and-turn draws its ideal arc,
stand its tolerance circle; an unknown case is refused.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mjlab_microduck.analysis import gait  # noqa: E402
from mjlab_microduck.book import gait_plots  # noqa: E402

CASES = ("forward_0.15", "stand", "turn_left_0.5", "walk_turn_left", "left_0.15")


def synthetic_paths(duration_s: float = 10.0) -> pd.DataFrame:
    """Two seeds x two robots per case, each going half the commanded speed."""
    t = np.arange(0.0, duration_s + 1e-9, 0.1)
    frames = []
    for name in CASES:
        case = gait.CASE_BY_NAME[name]
        for seed in (0, 1):
            for robot in (0, 1):
                frames.append(pd.DataFrame({
                    "seed": seed, "case": name, "robot": robot, "step": np.arange(len(t)) * 5,
                    "t_s": t, "forward_m": 0.5 * case.lin_vel_x * t,
                    "left_m": 0.5 * case.lin_vel_y * t + 0.001 * robot,
                }))  # fmt: skip
    return pd.concat(frames, ignore_index=True)


def by_gid(axis, gid):
    return [a for a in axis.get_children() if a.get_gid() == gid]


def test_one_panel_per_case_with_start_and_command():
    fig = gait_plots.path_plot(synthetic_paths())
    try:
        assert len(fig.axes) == len(CASES)
        # Panels follow the test's case order, titled with the labels.
        order = [c.label for c in gait.CASES if c.name in CASES]
        assert [axis.get_title() for axis in fig.axes] == order
        for axis in fig.axes:
            assert len(by_gid(axis, "start")) == 1
            assert axis.get_aspect() == 1.0
            # Four paths (two seeds x two robots), each with its end dot.
            assert sum(1 for line in axis.get_lines() if line.get_gid() is None) == 8
        panels = {axis.get_title(): axis for axis in fig.axes}
        (arrow,) = by_gid(panels["forward 0.15 m/s"], "command")
        assert arrow.xy == pytest.approx((1.5, 0.0))  # 0.15 m/s for 10 s
        assert arrow.get_position() == pytest.approx((0.0, 0.0))
        (arrow,) = by_gid(panels["sideways left 0.15 m/s"], "command")
        assert arrow.xy == pytest.approx((0.0, 1.5), abs=1e-12)
        walk_turn = panels["walk 0.15 m/s and turn +0.5 rad/s"]
        (arc,) = by_gid(walk_turn, "ideal_path")
        x, y = arc.get_data()
        # A circle of radius 0.3 m walked for 5 rad: it ends where the arrow points.
        assert (x[-1], y[-1]) == pytest.approx((0.3 * np.sin(5.0), 0.3 * (1 - np.cos(5.0))))
        assert len(by_gid(walk_turn, "command")) == 1
        assert len(by_gid(panels["stand"], "tolerance")) == 1
        assert by_gid(panels["stand"], "command") == []
        assert by_gid(panels["turn in place +0.5 rad/s"], "command") == []
        # A stander's panel still shows +-10 cm, so millimetres do not look like metres.
        low, high = panels["stand"].get_xlim()
        assert high - low >= 0.2
        # Limits include the whole commanded arrow.
        assert panels["forward 0.15 m/s"].get_xlim()[1] > 1.5
        assert fig.legends and len(fig.legends[0].get_texts()) == 2
    finally:
        plt.close(fig)


def test_cases_pick_and_order_panels_and_unknown_is_refused():
    paths = synthetic_paths(duration_s=2.0)
    fig = gait_plots.path_plot(paths, cases=["stand", "forward_0.15"])
    try:
        assert [a.get_title() for a in fig.axes] == ["stand", "forward 0.15 m/s"]
        (arrow,) = by_gid(fig.axes[1], "command")
        assert arrow.xy == pytest.approx((0.3, 0.0))  # ideal length follows the paths' duration
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="no paths for case"):
        gait_plots.path_plot(paths, cases=["push"])
    with pytest.raises(ValueError, match="no paths for case"):
        gait_plots.path_plot(paths, cases=["no_such_case"])
