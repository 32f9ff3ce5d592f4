"""How precisely the recipes at scale hold a heading, and what their command tracking costs.

Problem it solves: a lever aimed at one skill (a narrow yaw-rate term for holding the heading
under mjlab's heading law) is judged twice: by the skill it aims at, read from the gait tests'
per-case worst robot, and by what the training paid for it elsewhere, read from mjlab's own
command metrics in the training scalars. Chapter 11 shows both for several recipes side by
side; each table is computed from the published records, so no number is typed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from mjlab_microduck.book.walker_results import SeedRun
from mjlab_microduck.runs.folds import HEADING_LIMIT_KEY

SIDEWAYS_CASES = ("left_", "right_")
"""The gait test's sideways cases (``left_0.15``, ``right_0.15``), by name prefix."""
YAW_ERROR = "Metrics/twist/error_vel_yaw"
LINEAR_ERROR = "Metrics/twist/error_vel_xy"
"""mjlab's velocity-command metrics: per episode, the absolute yaw-rate error (rad/s) and the
norm of the planar velocity error (m/s), summed over its steps and divided by the steps of the
longest command interval (``UniformVelocityCommand._update_metrics``)."""


def worst_heading_rad(run: SeedRun, iteration: int, cases: tuple[str, ...]) -> float:
    """The largest |heading change| of any robot, over the cases whose name starts with one of
    ``cases``, in the verdict's mode of ``run``'s gait test of ``model_<iteration>``."""
    rows = [r for r in run.verdict(iteration)["table"] if str(r["case"]).startswith(cases)]
    if not rows:
        raise KeyError(f"seed {run.seed}, model_{iteration}: no case starting with {cases}")
    return max(float(r["max_abs_heading_change_rad"]) for r in rows)


def heading_hold_table(
    groups: Mapping[str, Sequence[SeedRun]],
    first_iteration: int,
    last_iteration: int,
    cases: tuple[str, ...] = SIDEWAYS_CASES,
) -> pd.DataFrame:
    """Per group of runs (a row): over its gait-tested checkpoints from ``first_iteration`` to
    ``last_iteration``, the worst robot's heading change in ``cases`` (median and largest over
    the checkpoints) and how many checkpoints it took past the test's heading limit."""
    rows = []
    for label, runs in groups.items():
        worst, limit = [], None
        for run in runs:
            for iteration, _, _ in run.gait:
                if first_iteration <= iteration <= last_iteration:
                    worst.append(worst_heading_rad(run, iteration, cases))
                    limit = run.verdict(iteration)["thresholds"][HEADING_LIMIT_KEY]
        if not worst:
            raise ValueError(f"{label}: no gait test from model_{first_iteration} to "
                             f"model_{last_iteration}")  # fmt: skip
        series = pd.Series(worst)
        rows.append({
            "runs": label, "checkpoints": len(worst),
            "worst, median (rad)": round(float(series.median()), 2),
            "worst, largest (rad)": round(float(series.max()), 2),
            f"past {limit:g} rad": int((series > limit).sum()),
        })  # fmt: skip
    return pd.DataFrame(rows).set_index("runs")


def command_error_table(groups: Mapping[str, Sequence[SeedRun]], iteration: int) -> pd.DataFrame:
    """Per group and seed (a row), mjlab's yaw-rate and planar-velocity command errors of the
    training episodes logged at ``iteration`` (the mean over the 10 iterations up to it, so one
    noisy iteration does not decide)."""
    rows = []
    for label, runs in groups.items():
        for run in runs:
            scalars = run.scalars()
            if iteration not in scalars.index:
                raise KeyError(f"{label}, seed {run.seed}: no scalars at iteration {iteration}")
            window = scalars.loc[iteration - 9 : iteration]
            rows.append({
                "runs": label, "seed": run.seed,
                "yaw-rate error": round(float(window[YAW_ERROR].mean()), 2),
                "planar velocity error": round(float(window[LINEAR_ERROR].mean()), 3),
            })  # fmt: skip
    return pd.DataFrame(rows).set_index(["runs", "seed"])
