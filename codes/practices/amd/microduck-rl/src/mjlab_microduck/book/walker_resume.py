"""What resuming the walker recipe bought, read from its published gait tests (chapter 5).

Problem it solves: every seed of the walker recipe ran a first stage and a resume, and every
few checkpoints went through the gait test. Chapter 5 asks what the resumed iterations changed:
the failed gait conditions and skills per checkpoint from the last one of the first stage on
(:func:`resume_table`), and the findings its prose quotes (:func:`resume_findings`): failed
conditions before and after, skills gained, falls, the share of robots that hold their heading
where the gait test kept every robot's numbers, and what a heading drift costs in the yaw-rate
tracking reward.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from mjlab_microduck.analysis import walker
from mjlab_microduck.book import walker_results as wr
from mjlab_microduck.tasks import tuning

STRAIGHT_CASES = ("forward", "backward", "push")
"""Gait-test cases whose command has no yaw: a robot should keep its heading under them."""


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


def _plural(word: str, items: Sequence[str]) -> str:
    return f"{word}{'s' if len(items) > 1 else ''} {', '.join(items)}"


def _stage_facts(runs: Sequence[wr.SeedRun]) -> dict[str, str]:
    from mjlab_microduck.book import results

    first_rec, resume_rec = runs[0].stages[0][1], runs[0].stages[1][1]
    start, more = resume_from(runs), resume_rec.config["iterations"]
    expected = results.expected_checkpoints(start, more, resume_rec.config["save_interval"])
    if not all(
        str(run.stages[1][1].summary["last_checkpoint"]).endswith(expected[-1]) for run in runs
    ):
        raise ValueError("a walker resume did not end where the rule says")
    gait_its = [it for it, _, _ in runs[0].gait]
    return {
        "envs": f"{first_rec.config['num_envs']}",
        "nseeds": f"{len(runs)}",
        "more": f"{more}",
        "last_ckpt": expected[-1],
        "from_ckpt": f"model_{start}.pt",
        "every": f"{gait_its[1] - gait_its[0]}",
    }


def _table_findings(table: pd.DataFrame, start: int) -> dict[str, str]:
    per_seed, fewer, not_fewer, gained = [], [], [], {}
    for seed, t in table.groupby(level="seed"):
        before = int(t["failed conditions"].iloc[0])
        after = t.iloc[1:]
        (fewer if after["failed conditions"].min() < before else not_fewer).append(f"{seed}")
        best, last = after["failed conditions"].idxmin()[1], after.index[-1][1]
        text = (
            f"seed {seed}: {before} at model_{start}, at best "
            f"{int(after['failed conditions'].min())} ({best})"
        )
        if best != last:
            text += f", {int(after['failed conditions'].iloc[-1])} at {last}"
        per_seed.append(text)
        held_before = set(t["skills held"].iloc[0].split(", "))
        held_after = set().union(*(set(x.split(", ")) for x in t["skills held"].iloc[1:]))
        new = sorted((held_after - held_before) - {"none"})
        if new:
            gained[seed] = new
    direction = []
    if fewer:
        direction.append(f"fewer for {_plural('seed', fewer)}")
    if not_fewer:
        direction.append(f"none fewer for {_plural('seed', not_fewer)}")
    resumed = table["stage"] == "resumed"
    lost_falls = table[resumed & ~table["skills held"].str.contains("never falls")]
    return {
        "failed": "; ".join(per_seed),
        "direction": "; ".join(direction),
        "gained": (f"no seed holds a skill after the resume that it did not hold at model_{start}")
        if not gained
        else "; ".join(f"seed {seed} gains {', '.join(g)}" for seed, g in gained.items()),
        "any_pass": (
            "A resumed checkpoint passes the gait test"
            if (table["passes the gait test"] == "yes").any()
            else "No resumed checkpoint passes the gait test"
        ),
        "heading": (
            "some hold their heading"
            if table["skills held"].str.contains("holds its heading").any()
            else "none of them holds its heading"
        ),
        "lost_falls": f"{len(lost_falls)}",
        "resumed_n": f"{int(resumed.sum())}",
    }


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


def resume_findings(
    runs: Sequence[wr.SeedRun], table: pd.DataFrame | None = None
) -> dict[str, str]:
    """The values chapter 5 quotes about the walker's resumes, as display strings."""
    table = resume_table(runs) if table is None else table
    start = resume_from(runs)
    found = {**_stage_facts(runs), **_table_findings(table, start)}
    threshold, within = heading_within(runs)
    its = sorted(next(iter(within))[1])
    found["robots_its"] = " and ".join(f"model_{i}" for i in its)
    found["within"] = "; ".join(
        f"seed {seed}: " + " → ".join(f"{f[i]:.0%}" for i in its) for seed, f in within
    )
    if threshold is None:
        raise ValueError("no gait test of the walker kept its robots.csv")
    found["threshold"] = f"{threshold:g}"
    gait_seconds = runs[0].gait[0][2].config["duration_s"]
    drift_rate = threshold / gait_seconds
    std_now = tuning.WALKER.ang_vel_std_rad_s
    std_next = tuning.WALKER_NARROW.ang_vel_std_rad_s
    found.update(
        {
            "drift_rate": f"{drift_rate:.2f}",
            "gait_seconds": f"{gait_seconds:g}",
            "std_now": f"{std_now:.2f}",
            "std_next": f"{std_next:g}",
            "cost_now": f"{drift_cost(drift_rate, std_now):.1%}",
            "cost_next": f"{drift_cost(drift_rate, std_next):.1%}",
        }
    )
    return found
