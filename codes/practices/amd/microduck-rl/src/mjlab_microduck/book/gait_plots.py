"""Top-view path plots of a gait test, drawn from its ``paths.csv`` (no re-run needed).

Problem it solves: a progress ratio says a robot fell short; the path says why (it circled,
drifted sideways, stopped). One small panel per case shows every robot's trunk path in its own
start frame (forward to the right, left up, metres, equal axes), the start, and what was
commanded: an arrow as long as the ideal path for a straight command, the ideal arc for
walk-and-turn, the 5 cm tolerance circle for stand (turning in place has no path to draw).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mjlab_microduck.analysis import gait
from mjlab_microduck.analysis.gait import GaitCase

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

COLUMNS = 4
MIN_HALF_WIDTH_M = 0.1
"""Panels show at least +-10 cm, so a stander's millimetres look like millimetres."""
COMMAND_COLOR = "black"


def _cases(paths: pd.DataFrame, cases: Sequence[str | GaitCase] | None) -> list[GaitCase]:
    present = list(dict.fromkeys(paths["case"]))
    if cases is None:
        known = [c for c in gait.CASES if c.name in present]
        return known + [gait.CASE_BY_NAME[n] for n in present if n not in gait.CASE_BY_NAME]
    chosen = [gait.CASE_BY_NAME.get(c, None) if isinstance(c, str) else c for c in cases]
    missing = [str(c) for c, got in zip(cases, chosen, strict=True) if got is None]
    missing += [c.name for c in chosen if c is not None and c.name not in present]
    if missing:
        raise ValueError(f"no paths for case(s): {', '.join(missing)}")
    return chosen


def _ideal_path(case: GaitCase, duration_s: float) -> np.ndarray:
    """Points of the path a perfect robot would walk, in the start frame."""
    t = np.linspace(0.0, duration_s, 200)
    direction, speed, yaw = case.direction_rad, case.speed, case.ang_vel_z
    if yaw == 0.0:
        return np.outer(t * speed, [math.cos(direction), math.sin(direction)])
    # Constant velocity in a frame turning at yaw: a circle of radius speed / yaw.
    heading = yaw * t
    return np.stack([
        speed / yaw * (np.sin(heading + direction) - math.sin(direction)),
        speed / yaw * (math.cos(direction) - np.cos(heading + direction)),
    ], axis=1)  # fmt: skip


def _draw_command(axis: Axes, case: GaitCase, duration_s: float) -> None:
    if case.kind == "stand":
        from matplotlib.patches import Circle

        radius = gait.MAX_STAND_DISPLACEMENT_M
        axis.add_patch(Circle((0.0, 0.0), radius, fill=False, linestyle=":",
                              color=COMMAND_COLOR, gid="tolerance"))  # fmt: skip
        axis.update_datalim([[-radius, -radius], [radius, radius]])
        return
    if case.kind == "turn":
        return
    ideal = _ideal_path(case, duration_s)
    if case.kind == "walk_turn":
        axis.plot(*ideal.T, linestyle="--", color=COMMAND_COLOR, linewidth=1, gid="ideal_path")
    start = ideal[-2] if case.kind == "walk_turn" else (0.0, 0.0)
    arrow = axis.annotate(
        "", xy=tuple(ideal[-1]), xytext=tuple(start),
        arrowprops={"arrowstyle": "-|>", "color": COMMAND_COLOR, "linewidth": 1.2,
                    "shrinkA": 0, "shrinkB": 0},
    )  # fmt: skip
    arrow.set_gid("command")
    axis.update_datalim(ideal)


def _square_limits(axis: Axes) -> None:
    """Equal axes that show at least +-MIN_HALF_WIDTH_M around the data."""
    (x0, x1), (y0, y1) = axis.dataLim.intervalx, axis.dataLim.intervaly
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    half = max((x1 - x0) / 2, (y1 - y0) / 2, MIN_HALF_WIDTH_M) * 1.1
    axis.set_xlim(cx - half, cx + half)
    axis.set_ylim(cy - half, cy + half)
    axis.set_aspect("equal", adjustable="box")


def path_plot(
    paths: pd.DataFrame,
    cases: Sequence[str | GaitCase] | None = None,
    mode: str = gait.HEADING_MODE,
) -> Figure:
    """Small multiples, one top-view panel per case (``paths`` as in a gait test's paths.csv).

    Robots are coloured by seed; ``cases`` picks and orders the panels (default: every case in
    ``paths``, in the test's order). A test run in both modes draws the paths of ``mode``
    (``heading`` or ``open_loop``); a paths table without a mode column is drawn whole.
    """
    import matplotlib.pyplot as plt

    if "mode" in paths.columns:
        if mode not in set(paths["mode"]):
            raise ValueError(f"no paths in mode {mode!r} (found {sorted(set(paths['mode']))})")
        paths = paths[paths["mode"] == mode]
    chosen = _cases(paths, cases)
    rows = math.ceil(len(chosen) / COLUMNS)
    cols = min(COLUMNS, len(chosen))
    fig, grid = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.7 * rows), squeeze=False)
    for axis in grid.ravel()[len(chosen) :]:
        fig.delaxes(axis)
    seeds = sorted(paths["seed"].unique())
    colors = {seed: plt.get_cmap("tab10")(i % 10) for i, seed in enumerate(seeds)}
    for i, (axis, case) in enumerate(zip(grid.ravel(), chosen, strict=False)):
        mine = paths[paths["case"] == case.name]
        for (seed, _robot), path in mine.groupby(["seed", "robot"], sort=True):
            path = path.sort_values("step")
            axis.plot(path["forward_m"], path["left_m"], color=colors[seed], linewidth=0.8,
                      alpha=0.7)  # fmt: skip
            axis.plot(path["forward_m"].iloc[-1], path["left_m"].iloc[-1], ".",
                      color=colors[seed], markersize=3)  # fmt: skip
        axis.plot(0.0, 0.0, "o", color=COMMAND_COLOR, markersize=4, gid="start", zorder=5)
        _draw_command(axis, case, float(mine["t_s"].max()))
        _square_limits(axis)
        axis.set_title(case.label, fontsize=9)
        axis.tick_params(labelsize=7)
        axis.grid(True, alpha=0.3)
        if i % COLUMNS == 0:
            axis.set_ylabel("left (m)", fontsize=8)
        if i >= len(chosen) - cols:
            axis.set_xlabel("forward (m)", fontsize=8)
    if len(seeds) > 1:
        handles = [plt.Line2D([], [], color=colors[s], label=f"seed {s}") for s in seeds]
        fig.legend(handles=handles, loc="lower center", ncol=len(seeds), fontsize=8,
                   frameon=False)  # fmt: skip
        fig.tight_layout(rect=(0, 0.04, 1, 1))
    else:
        fig.tight_layout()
    return fig
