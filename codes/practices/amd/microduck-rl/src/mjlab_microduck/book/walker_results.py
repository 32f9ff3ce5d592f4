"""The walker recipe's published runs, read for the chapters: per seed, its training stages,
its gait-tested checkpoints, the skills each one holds and when.

Problem it solves: chapters 4-6 and the front page all speak of the same three training seeds
(4096 envs, 500 iterations, resumed for 250 more, on one H200) and their gait tests; this module
finds those records under ``book/results`` by name and turns them into the tables the pages
show, so no page repeats the lookup or types a number. A missing record is an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mjlab_microduck.analysis import walker
from mjlab_microduck.runs import records

WALKER_TASK = "Mjlab-Velocity-Flat-MicroDuck-WalkerTuning"
SEEDS = (42, 43, 44)
STAGES = ("main", "resume")


def _results_root(results_root: str | Path | None) -> Path:
    if results_root is not None:
        return Path(results_root)
    from mjlab_microduck.book import results

    return results.results_root()


@dataclass(frozen=True)
class SeedRun:
    """One training seed of the walker recipe: its stages and its gait-tested checkpoints."""

    seed: int
    stages: tuple[tuple[Path, records.RunRecord], ...]
    gait: tuple[tuple[int, Path, records.RunRecord], ...]

    def _stage_scalars(self) -> list[tuple[str, pd.DataFrame]]:
        return [
            (rec.started_at, records.load_scalars(rec, where).set_index("iteration"))
            for where, rec in self.stages
        ]

    def scalars(self) -> pd.DataFrame:
        """Both stages' scalars, by iteration (the resume's repeat of iteration 499 dropped)."""
        frames = [frame for _, frame in self._stage_scalars()]
        joined = pd.concat(frames)
        return joined[~joined.index.duplicated(keep="first")]

    def clock(self) -> walker.TrainingClock:
        return walker.TrainingClock(tuple(self._stage_scalars()))

    def verdict(self, iteration: int) -> dict:
        for it, where, _ in self.gait:
            if it == iteration:
                return json.loads((where / "verdict.json").read_text())
        raise KeyError(f"seed {self.seed}: no gait test of model_{iteration}")

    def progress(self) -> pd.DataFrame:
        """Skills held per gait-tested checkpoint, with minutes of training (analysis.walker)."""
        verdicts = [
            (it, json.loads((where / "verdict.json").read_text())) for it, where, _ in self.gait
        ]
        return walker.progress_table(verdicts, self.clock())

    def checkpoint(self, iteration: int) -> Path:
        """The published slim checkpoint of ``model_<iteration>.pt``."""
        for where, _ in self.stages:
            path = where / f"model_{iteration}.pt"
            if path.is_file():
                return path
        raise FileNotFoundError(f"seed {self.seed}: model_{iteration}.pt is not published")


def seed_run(seed: int, results_root: str | Path | None = None) -> SeedRun:
    root = _results_root(results_root)
    stages = []
    for stage in STAGES:
        where = root / f"h200_walker_{stage}_s{seed}"
        stages.append((where, records.load_record(where)))
    gait = []
    for where in sorted(root.glob(f"h200_walker_gait_s{seed}_model_*")):
        gait.append((int(where.name.rsplit("_", 1)[1]), where, records.load_record(where)))
    if not gait:
        raise FileNotFoundError(f"{root}: no gait test of walker seed {seed}")
    return SeedRun(seed, tuple(stages), tuple(sorted(gait, key=lambda g: g[0])))


def seed_runs(results_root: str | Path | None = None) -> list[SeedRun]:
    return [seed_run(seed, results_root) for seed in SEEDS]


def first_held_table(runs: list[SeedRun]) -> pd.DataFrame:
    """Per seed and skill: the first gait-tested checkpoint holding it ("-" if none did) and
    the minutes of training to it."""
    rows = {}
    for run in runs:
        progress = run.progress()
        row = {}
        for skill in (*walker.SKILLS, "walker"):
            hit = walker.first_held(progress, skill)
            row[skill] = (
                "never"
                if hit is None
                else (f"model_{int(hit['iteration'])} ({hit['minutes']:.1f} min)")
            )
        rows[f"seed {run.seed}"] = row
    return pd.DataFrame(rows)


def candidate(runs: list[SeedRun]) -> tuple[SeedRun, int]:
    """The checkpoint closest to a walker: fewest failed conditions among those with no
    termination (ties: the earlier one). It is a candidate, not a walker, unless it passes."""
    best = None
    for run in runs:
        progress = run.progress()
        for _, row in progress[progress["never falls"]].iterrows():
            key = (row["failed_conditions"], row["minutes"])
            if best is None or key < best[0]:
                best = (key, run, int(row["iteration"]))
    if best is None:
        raise ValueError("no gait-tested walker checkpoint is free of terminations")
    return best[1], best[2]


def case_table(verdict: dict) -> pd.DataFrame:
    """A gait verdict's per-case table (worst seed per column), for display."""
    table = pd.DataFrame(verdict["table"]).set_index("label")
    keep = ["passed", "mean_progress_ratio", "min_progress_ratio", "mean_yaw_ratio",
            "max_abs_heading_change_rad", "max_displacement_m", "terminations"]  # fmt: skip
    return table[keep]
