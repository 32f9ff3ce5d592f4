"""Plots of run scalars for the book's pages (matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure


def plot_curves(
    df: pd.DataFrame,
    columns: Sequence[str],
    x: str = "iteration",
    title: str | None = None,
    ax: Axes | Sequence[Axes] | None = None,
) -> Figure:
    """One subplot per column of ``df`` against ``x`` (the index if ``x`` is not a column)."""
    import matplotlib.pyplot as plt

    columns = list(columns)
    if not columns:
        raise ValueError("plot_curves needs at least one column")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"columns not in the data: {', '.join(missing)}")
    if ax is None:
        fig, axes_arr = plt.subplots(
            len(columns), 1, figsize=(7, 2.2 * len(columns)), sharex=True, squeeze=False
        )
        axes = list(axes_arr[:, 0])
    else:
        axes = [ax] if not isinstance(ax, Sequence) else list(ax)
        if len(axes) != len(columns):
            raise ValueError(f"got {len(axes)} axes for {len(columns)} columns")
        fig = axes[0].figure
    xs = df[x] if x in df.columns else df.index
    for axis, col in zip(axes, columns, strict=True):
        axis.plot(xs, df[col], linewidth=1.2)
        axis.set_ylabel(col)
        axis.grid(True, alpha=0.3)
    axes[-1].set_xlabel(x if x in df.columns else (df.index.name or "index"))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig


def plot_failed_by_transitions(frame: pd.DataFrame, ax: Axes | None = None) -> Figure:
    """Failed gait-test conditions against the millions of transitions collected to each
    tested checkpoint (the frame of ``walker_results.transitions_table``): one line per group
    of runs and seed, one colour per group, the seed as the line style."""
    import matplotlib.pyplot as plt

    if frame.empty:
        raise ValueError("plot_failed_by_transitions needs at least one gait-tested checkpoint")
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 3.2))
    fig = ax.figure
    styles = ("-", "--", ":", "-.")
    seeds = sorted(frame["seed"].unique())
    for number, (label, group) in enumerate(frame.groupby("runs", sort=False)):
        for seed, points in group.groupby("seed"):
            points = points.sort_values("transitions (M)")
            ax.plot(points["transitions (M)"], points["failed conditions"], marker="o",
                    markersize=3, color=f"C{number}", linestyle=styles[seeds.index(seed) % 4],
                    label=f"{label}, seed {seed}")  # fmt: skip
    ax.set_xlabel("transitions collected (millions)")
    ax.set_ylabel("failed conditions")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return fig
