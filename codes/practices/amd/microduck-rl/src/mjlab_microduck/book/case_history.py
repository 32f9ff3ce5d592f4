"""One gait-test case across the tested checkpoints of several recipes.

Problem it solves: a lever aimed at one failure (single robots folding as they start into
0.4 m/s) is judged by that case and by what the lever cost elsewhere (standing still, say).
Chapter 11 compares recipes case by case over the same window of checkpoints; this module reads
each checkpoint's verdict row for the case from the published gait tests, so no number is
typed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from mjlab_microduck.book.walker_results import SeedRun


def case_rows(run: SeedRun, case: str, first_iteration: int, last_iteration: int) -> list[dict]:
    """The verdict rows of ``case`` in ``run``'s gait tests from ``first_iteration`` to
    ``last_iteration``, each with its ``iteration``."""
    rows = []
    for iteration, _, _ in run.gait:
        if first_iteration <= iteration <= last_iteration:
            table = run.verdict(iteration)["table"]
            row = next((r for r in table if r["case"] == case), None)
            if row is None:
                raise KeyError(f"seed {run.seed}, model_{iteration}: no case {case!r}")
            rows.append({**row, "iteration": iteration})
    return rows


def case_history_table(
    groups: Mapping[str, Sequence[SeedRun]],
    case: str,
    first_iteration: int,
    last_iteration: int,
) -> pd.DataFrame:
    """Per group of runs (a row), over its gait-tested checkpoints from ``first_iteration`` to
    ``last_iteration``: how many there are, in how many ``case`` failed, how many robots ended
    their run in it (all checkpoints together), and the largest displacement of a robot in it
    (median and largest over the checkpoints; for a standing case, how far a robot drifted).
    A case that commands a yaw rate adds its slowest seed's mean yaw rate over the command
    (median over the checkpoints), which the test asks to be at least 0.8."""
    out = []
    for label, runs in groups.items():
        rows = [row for run in runs
                for row in case_rows(run, case, first_iteration, last_iteration)]  # fmt: skip
        if not rows:
            raise ValueError(f"{label}: no gait test from model_{first_iteration} to "
                             f"model_{last_iteration}")  # fmt: skip
        moved = pd.Series([float(r["max_displacement_m"]) for r in rows])
        # per checkpoint, the test's row keeps the slowest seed's ratio (None without a yaw rate)
        yaw = pd.Series([r["mean_yaw_ratio"] for r in rows], dtype=float)
        turning = {} if yaw.isna().all() else {
            "yaw rate / command, median": round(float(yaw.median()), 2)}
        out.append({
            "runs": label, "checkpoints": len(rows),
            "failed in": sum(not r["passed"] for r in rows),
            "robots ended": sum(int(r["terminations"]) for r in rows),
            "largest displacement, median (m)": round(float(moved.median()), 3),
            "largest displacement, largest (m)": round(float(moved.max()), 3),
            **turning,
        })  # fmt: skip
    frame = pd.DataFrame(out).set_index("runs")
    frame.columns.name = case
    return frame
