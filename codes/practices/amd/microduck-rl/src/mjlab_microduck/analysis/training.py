"""The training summary: what a training record says about its run, from the run's scalars.

A pure function of the scalars TensorBoard logged (one row per iteration), in the reference
chapter's terms: first, last and best reward, episode length and throughput, and for every
termination term its last value, maximum and the number of iterations where it was non-zero.
"""

from __future__ import annotations

import pandas as pd


def summarize(scalars: pd.DataFrame, num_envs: int, steps_per_env: int) -> dict:
    """The reference chapter's training table, computed from exported scalars.

    ``transitions`` counts env steps collected by this run only (iterations x envs x
    ``steps_per_env``, the rollout length of the task's runner config).
    Termination terms are rsl_rl's per-iteration means of mjlab's per-reset counts; the guard
    terms are reported as their maximum and the number of iterations where they were non-zero,
    since "0 in every iteration" is the claim the book makes about them.
    """
    summary: dict[str, float | int | None] = {}
    iterations = len(scalars)
    summary["iterations"] = iterations
    summary["first_iteration"] = int(scalars.index.min()) if iterations else None
    summary["last_iteration"] = int(scalars.index.max()) if iterations else None
    summary["transitions"] = iterations * num_envs * steps_per_env

    def first_last_best(column: str, key: str) -> None:
        series = scalars[column].dropna() if column in scalars else pd.Series(dtype=float)
        summary[f"{key}_first"] = float(series.iloc[0]) if len(series) else None
        summary[f"{key}_last"] = float(series.iloc[-1]) if len(series) else None
        summary[f"{key}_best"] = float(series.max()) if len(series) else None

    first_last_best("Train/mean_reward", "reward")
    first_last_best("Train/mean_episode_length", "episode_length")
    first_last_best("Perf/total_fps", "throughput")
    if "wall_time" in scalars and iterations > 1:
        summary["wall_time_first_to_last_s"] = float(
            scalars["wall_time"].iloc[-1] - scalars["wall_time"].iloc[0]
        )
    for column in scalars.columns:
        if column.startswith("Episode_Termination/"):
            term = column.split("/", 1)[1]
            series = scalars[column].fillna(0.0)
            summary[f"{term}_last"] = float(series.iloc[-1])
            summary[f"{term}_max"] = float(series.max())
            summary[f"{term}_nonzero_iterations"] = int((series > 0).sum())
    for column, key in (
        ("Metrics/twist/error_vel_xy", "error_vel_xy_last"),
        ("Metrics/twist/error_vel_yaw", "error_vel_yaw_last"),
    ):
        if column in scalars and scalars[column].notna().any():
            summary[key] = float(scalars[column].dropna().iloc[-1])
    return summary
