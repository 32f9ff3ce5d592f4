"""What chapter 4 reads off a training run's curves, as values for one table.

Problem it solves: the page explains survival, exploration and the termination guards from the
recorded curves; the figures it points at (when the episode length passes a level, how far
``fell_over`` falls, what ``legs_collapsed`` settles at) are computed here once and shown in
one table with the run's source (:func:`mjlab_microduck.book.tables.run_facts`), instead of
being glued into sentences one by one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from mjlab_microduck.book.results import term_text

LENGTH = "Train/mean_episode_length"
TERMINATION = "Episode_Termination/{}"


def first_iteration_above(series: pd.Series, level: float) -> int | None:
    """The first iteration (index) at which ``series`` exceeds ``level``; None if it never does."""
    above = series[series > level]
    return None if above.empty else int(above.index[0])


def curve_facts(scalars: pd.DataFrame, summary: Mapping[str, Any]) -> dict[str, Any]:
    """The figures chapter 4 reads off a training run: survival (the episode length passing
    100 and 500 control steps, ``fell_over`` from its peak to the last iteration,
    ``legs_collapsed`` at the median of the last four fifths and at the end), exploration
    (``Policy/mean_std`` first and last), numerical health and the sinking guard (how often
    ``nan_state`` and ``below_ground`` fired), and the throughput (last, best, median)."""
    fell = scalars[TERMINATION.format("fell_over")]
    collapsed = scalars[TERMINATION.format("legs_collapsed")]
    std = scalars["Policy/mean_std"]
    fps = scalars["Perf/total_fps"]
    return {
        "mean episode length first > 100 steps": first_iteration_above(scalars[LENGTH], 100),
        "mean episode length first > 500 steps": first_iteration_above(scalars[LENGTH], 500),
        "fell_over per reset: peak → last": f"{fell.max():.2f} → {fell.iloc[-1]:.2f}",
        "legs_collapsed per reset: median of the last 4/5 → last": (
            f"{collapsed.iloc[len(collapsed) // 5:].median():.2f} → {collapsed.iloc[-1]:.2f}"
        ),
        "Policy/mean_std: first → last": f"{std.iloc[0]:.2f} → {std.iloc[-1]:.2f}",
        "nan_state": term_text(summary, "nan_state"),
        "below_ground": term_text(summary, "below_ground"),
        "env steps/s: last, best, median": (
            f"{fps.iloc[-1]:,.0f}, {fps.max():,.0f}, {fps.median():,.0f}"
        ),
    }


def standing_share(command_mps: float, std_mps: float) -> float:
    """The share of a Gaussian tracking term ``exp(-error² / std²)`` that a robot standing
    still earns under a forward command of ``command_mps``."""
    return math.exp(-(command_mps**2) / std_mps**2)
