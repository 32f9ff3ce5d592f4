"""How far a training run is from a walker: the gait test's conditions grouped into skills,
checkpoint by checkpoint, and the wall time at which each skill first holds.

Problem it solves: a gait verdict is one bit (walking or not) and a list of failed lines. To
see what training buys with time, the book asks per checkpoint which *skills* hold for every
evaluation seed: walking where told (progress and speed), turning on command, holding a
heading, standing still, and never terminating. The first checkpoint at which all of them
hold is the walker; its wall time from the start of training is the time to walk.

Pure functions of published records (pandas only): no torch, no mjlab.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

SKILLS = ("walks where told", "turns on command", "holds its heading", "stands still",
          "never falls")  # fmt: skip

_ZERO_YAW_PREFIXES = ("forward", "backward", "left", "right", "stand", "push")
_LINEAR_PREFIXES = ("forward", "backward", "left", "right", "push")
_TURN_PREFIXES = ("turn", "walk_turn")


def _at_least(value: Any, threshold: float) -> bool:
    return value is not None and pd.notna(value) and float(value) >= threshold - 1e-9


def _at_most(value: Any, threshold: float) -> bool:
    return value is not None and pd.notna(value) and float(value) <= threshold + 1e-9


def skills_held(table: Sequence[Mapping[str, Any]], thresholds: Mapping[str, float]) -> dict:
    """Which skills hold in one gait verdict (``verdict.json``: its per-case ``table`` of
    worst-seed numbers, and its ``thresholds``)."""
    held = dict.fromkeys(SKILLS, True)
    for row in table:
        case = str(row["case"])
        if case.startswith(_LINEAR_PREFIXES):
            held["walks where told"] &= _at_least(
                row["mean_progress_ratio"], thresholds["min_progress_ratio_mean"]
            ) and _at_least(row["min_progress_ratio"], thresholds["min_progress_ratio_robot"])
        if case.startswith("walk_turn"):
            held["walks where told"] &= _at_least(
                row["heading_speed_ratio"], thresholds["min_heading_speed_ratio"]
            )
        if case.startswith(_TURN_PREFIXES):
            held["turns on command"] &= _at_least(
                row["mean_yaw_ratio"], thresholds["min_yaw_ratio"]
            )
        if case.startswith(_ZERO_YAW_PREFIXES):
            held["holds its heading"] &= _at_most(
                row["max_abs_heading_change_rad"], thresholds["max_heading_change_rad"]
            )
        if case == "stand":
            held["stands still"] &= _at_most(
                row["max_displacement_m"], thresholds["max_stand_displacement_m"]
            )
        held["never falls"] &= int(row["terminations"] or 0) == 0
    return held


def seconds_since_epoch(iso: str) -> float:
    """An ISO time stamp of a record, on the clock of the scalars' ``wall_time``."""
    return dt.datetime.fromisoformat(iso).timestamp()


@dataclass(frozen=True)
class TrainingClock:
    """Wall time of a chain of training runs (a run and its resumes), by iteration.

    ``stages`` are ``(started_at ISO, scalars)`` in chain order; scalars are indexed by
    iteration with a ``wall_time`` column (TensorBoard's time stamp, seconds since the epoch).
    A resumed stage starts its clock where the previous one ended, so the time of an
    iteration counts the training processes' own wall time, start-up included, and none of
    the gap between them.
    """

    stages: tuple[tuple[str, pd.DataFrame], ...]

    def seconds_at(self, iteration: int) -> float:
        """Wall seconds from the start of the chain to the end of ``iteration``."""
        elapsed = 0.0
        for started_at, scalars in self.stages:
            wall = scalars["wall_time"].dropna()
            if wall.empty:
                continue
            start = seconds_since_epoch(started_at)
            if iteration <= wall.index.max():
                if iteration < wall.index.min():
                    raise ValueError(f"iteration {iteration}: before this stage's first")
                return elapsed + float(wall.loc[:iteration].iloc[-1]) - start
            elapsed += float(wall.iloc[-1]) - start
        raise ValueError(f"iteration {iteration}: past the last recorded iteration")

    def minutes_by_iteration(self) -> pd.Series:
        """Minutes from the start of the chain at every recorded iteration (the vectorised
        :meth:`seconds_at`, over 60); an iteration two stages share keeps the first's time."""
        parts, elapsed = [], 0.0
        for started_at, scalars in self.stages:
            wall = scalars["wall_time"].dropna()
            if wall.empty:
                continue
            start = seconds_since_epoch(started_at)
            parts.append((elapsed + wall - start) / 60.0)
            elapsed += float(wall.iloc[-1]) - start
        if not parts:
            return pd.Series(dtype=float, name="wall_time")
        joined = pd.concat(parts)
        return joined[~joined.index.duplicated(keep="first")]


def progress_table(
    verdicts: Iterable[tuple[int, Mapping[str, Any]]], clock: TrainingClock | None
) -> pd.DataFrame:
    """One row per evaluated checkpoint: iteration, minutes of training (NaN without a
    ``clock``: gait tests published without their training), one column per skill,
    ``walker`` (every skill) and the number of failed conditions."""
    rows = []
    for iteration, verdict in sorted(verdicts, key=lambda item: item[0]):
        held = skills_held(verdict["table"], verdict["thresholds"])
        rows.append({
            "iteration": iteration,
            "minutes": clock.seconds_at(iteration) / 60.0 if clock else float("nan"),
            **held,
            "walker": all(held.values()),
            "failed_conditions": len(verdict["failures"]),
        })  # fmt: skip
    return pd.DataFrame(rows)


def first_held(progress: pd.DataFrame, column: str) -> pd.Series | None:
    """The first row at which ``column`` holds (a skill or ``walker``), or None."""
    hits = progress[progress[column]]
    return None if hits.empty else hits.iloc[0]


def time_to_walk_s(progress: pd.DataFrame) -> float | None:
    """Seconds of training to the first checkpoint that passes the whole gait test."""
    row = first_held(progress, "walker")
    return None if row is None else float(row["minutes"]) * 60.0
