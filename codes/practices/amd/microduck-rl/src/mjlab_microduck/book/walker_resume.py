"""Chapter 5's resume tables: the files a resume wrote, and what resuming the walker recipe
bought, read from its published gait tests.

Problem it solves: a resume must write exactly the checkpoints rsl_rl's rule predicts
(:func:`stage_files` checks a run and its resume and tabulates both stages). Every seed of
the walker recipe ran a first stage and a resume, and every few checkpoints went through the
gait test. Chapter 5 asks what the resumed iterations changed:
the failed gait conditions and skills per checkpoint from the last one of the first stage on
(:func:`resume_table`), and per seed what the resume changed (:func:`seed_findings`): failed
conditions before and after, skills gained, falls, the share of robots that hold their heading
where the gait test kept every robot's numbers; and what a heading drift costs in the yaw-rate
tracking reward (:func:`drift_cost`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from mjlab_microduck.analysis import walker
from mjlab_microduck.book import walker_results as wr

STRAIGHT_CASES = ("forward", "backward", "push")
"""Gait-test cases whose command has no yaw: a robot should keep its heading under them."""


def written_checkpoints(stage: Any) -> list[str]:
    """The checkpoint files a stage (a :class:`results.TrainingRun`) wrote: those on disk for
    a local run, else the names its record lists (a published copy keeps only some files)."""
    from mjlab_microduck.jobs.train import list_checkpoints

    if stage.log_dir is not None:
        return [p.name for p in list_checkpoints(stage.log_dir)]
    return list(stage.checkpoints)


def stage_files(stage_one: Any, stage_two: Any) -> pd.DataFrame:
    """Per stage of a run (``stage_one``, from scratch) and its resume (``stage_two``), both
    :class:`results.TrainingRun`: the run, the iterations asked for, the numbers rsl_rl gave
    them and the checkpoint files written. Raises ``ValueError`` when a stage's files are not
    exactly the ones rsl_rl's rule predicts (:func:`results.expected_checkpoints`, from the
    loaded iteration on a resume)."""
    from mjlab_microduck.book import results

    rows = {}
    for label, stage in (("one (from scratch)", stage_one), ("two (resumed)", stage_two)):
        config = stage.record.config
        start = int(config.get("resume_from_iteration") or 0)
        written = written_checkpoints(stage)
        expected = results.expected_checkpoints(
            start, int(config["iterations"]), int(config["save_interval"])
        )
        if written != expected:
            raise ValueError(
                f"stage {label}: rsl_rl wrote {written}, the rule predicts {expected}"
            )
        index = stage.scalars.index
        rows[label] = {
            "run": stage.record.run_id,
            "iterations asked": int(config["iterations"]),
            "iteration numbers": f"{index.min()}–{index.max()}",
            "checkpoint files": ", ".join(written),
        }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "stage"
    return frame


def resume_from(runs: Sequence[wr.SeedRun]) -> int:
    """The iteration the resumes loaded (the last checkpoint of the first stage)."""
    return int(runs[0].stages[1][1].config["resume_from_iteration"])


def held_text(row: pd.Series) -> str:
    """The skills a progress row holds, comma-separated, or "none"."""
    held = [s for s in walker.SKILLS if row[s]]
    return ", ".join(held) or "none"


def resume_table(runs: Sequence[wr.SeedRun]) -> pd.DataFrame:
    """Per seed and gait-tested checkpoint from the loaded one on: its stage, minutes of
    training, failed gait conditions, skills held and whether it passes the gait test."""
    start = resume_from(runs)
    rows = []
    for run in runs:
        p = run.progress()
        for _, row in p[p["iteration"] >= start].iterrows():
            rows.append(
                {
                    "seed": run.seed,
                    "checkpoint": f"model_{int(row['iteration'])}",
                    "stage": "first (last checkpoint)" if row["iteration"] == start else "resumed",
                    "minutes": round(row["minutes"], 1),
                    "failed conditions": int(row["failed_conditions"]),
                    "skills held": held_text(row),
                    "passes the gait test": "yes" if row["walker"] else "no",
                }
            )
    return pd.DataFrame(rows).set_index(["seed", "checkpoint"])


def seed_findings(
    table: pd.DataFrame, within: Sequence[tuple[int, dict]] = ()
) -> pd.DataFrame:
    """Per seed, what the resume changed (from :func:`resume_table`'s ``table``): failed gait
    conditions at the loaded checkpoint, the fewest after it and where, those at the last one,
    the skills gained, the resumed checkpoints that pass and those with a fall; with
    ``within`` (:func:`heading_within`), the share of robots holding their heading at each
    checkpoint that kept robot-level numbers."""
    shares = dict(within)
    rows = {}
    for seed, t in table.groupby(level="seed"):
        after = t.iloc[1:]
        held_before = set(t["skills held"].iloc[0].split(", "))
        held_after = set().union(*(set(x.split(", ")) for x in after["skills held"]))
        gained = sorted((held_after - held_before) - {"none"})
        row = {
            f"failed at {t.index[0][1]}": int(t["failed conditions"].iloc[0]),
            "fewest after the resume": int(after["failed conditions"].min()),
            "at": after["failed conditions"].idxmin()[1],
            f"failed at {after.index[-1][1]}": int(after["failed conditions"].iloc[-1]),
            "skills gained": ", ".join(gained) or "none",
            "resumed checkpoints passing": int((after["passes the gait test"] == "yes").sum()),
            "resumed checkpoints with a fall": int(
                (~after["skills held"].str.contains("never falls")).sum()
            ),
            "resumed checkpoints": len(after),
        }
        fractions = shares.get(seed) or {}
        if fractions:
            row["robots holding their heading"] = " → ".join(
                f"{fractions[i]:.0%} (model_{i})" for i in sorted(fractions)
            )
        rows[f"seed {seed}"] = row
    return pd.DataFrame(rows).T


def heading_within(runs: Sequence[wr.SeedRun]) -> tuple[float | None, list[tuple[int, dict]]]:
    """The gait test's heading limit (rad) and, per seed, ``{iteration: share of robots whose
    heading stayed within it under a straight command}`` where the test kept robot-level
    numbers (:meth:`walker_results.SeedRun.heading_share`)."""
    threshold, within = None, []
    for run in runs:
        fractions = {}
        for it, _, _ in run.gait:
            share = run.heading_share(it, STRAIGHT_CASES)
            if share is None:
                continue
            threshold = run.verdict(it)["thresholds"]["max_heading_change_rad"]
            fractions[it] = share
        within.append((run.seed, fractions))
    return threshold, within


def drift_cost(drift_rate: float, std: float) -> float:
    """The share of the yaw-rate tracking reward, ``exp(-e^2 / std^2)``, a drift forfeits."""
    return 1 - math.exp(-(drift_rate**2) / std**2)
