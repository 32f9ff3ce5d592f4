"""How often robots fold their legs starting into a fast walk, and what the gait test sees of it.

Problem it solves: the gait test's fastest forward cases start each robot from its reset pose
straight into 0.3 or 0.4 m/s, and a checkpoint fails when a single robot of the 80 per case
(5 evaluation seeds x 16) ends its run. A policy that folds a share ``p`` of its robots there
passes that condition with probability ``(1 - p) ** 80``, so one test says little about a rare
fold. A *start test* is the gait test of those cases alone with many robots and a short run
(``gait_test.START_TEST``; ``microduck gait-test --start-test``, ``gait-watch --start-test``);
this module reads its per-robot terminations (``robots.csv``) into the share of robots that
end their run, per case, and the chance that the full-size test's 80 robots show none.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from mjlab_microduck.book import tables
from mjlab_microduck.jobs.gait_test import PROFILE_SIZES, ROBOTS_FILENAME
from mjlab_microduck.runs import records

START_TESTS = {
    "WALKER_HEADING s42 model_999": "cpu_walker_heading_start_s42_model_999",
    "WALKER_TURNING s43 model_500": "cpu_walker_turning_start_s43_model_500",
}
"""The published start tests (4 evaluation seeds x 256 robots per case, 2 s, on a CPU) of two
published checkpoints that pass the gait test: ``WALKER_HEADING``'s walker (seed 42, model_999,
chapter 4's heading recipe), and the first checkpoint of a lever to pass (the turn-in-place
envs). The book's walker (``walker.json``) has no published start test."""
FINE_PLANAR_START_TESTS = {
    "WALKER_TURNING_AXES_FAST_START_FINE_PLANAR s43 model_675": (
        "cpu_walker_turning_axes_fast_start_fine_planar_start_s43_model_675"
    ),
}
"""The start test of the narrow planar-velocity term's passing checkpoint, the first pass of a
fast-start recipe (chapter 11's section on the term)."""


def robots_per_full_case() -> int:
    """Robots per case of the full-size gait test: seeds x robots per seed."""
    seeds, robots = PROFILE_SIZES["full"]
    return len(seeds) * robots


def unseen_chance(share: float, robots: int) -> float:
    """The chance that none of ``robots`` independent robots ends its run, if ``share`` do."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must lie in [0, 1] (got {share})")
    return (1.0 - share) ** robots


def _span_text(times_s: pd.Series) -> str:
    """``first–last`` of some times in seconds, one time alone, ``-`` for none."""
    if times_s.empty:
        return "-"
    first, last = f"{times_s.min():.2f}", f"{times_s.max():.2f}"
    return first if first == last else f"{first}–{last}"


def fold_table(tests: Mapping[str, str | Path], results_root: str | Path | None = None):
    """One row per start test (label -> its folder under the results) and case: its robots,
    how many ended their run and their share, the time of the first and last end, the chance
    that the full-size gait test's robots of that case show none, then the run folder and the
    machine that ran it (last, so that a narrow page shows the numbers first)."""
    if results_root is None:
        from mjlab_microduck.book import results

        results_root = results.results_root()
    full = robots_per_full_case()
    rows = []
    for label, folder in tests.items():
        where = Path(results_root) / folder
        record = records.load_record(where)
        robots = pd.read_csv(where / ROBOTS_FILENAME)
        for case, group in robots.groupby("case", sort=False):
            ended = group[group["terminated"]]
            share = len(ended) / len(group)
            rows.append({
                "checkpoint": label, "case": case,
                "robots": len(group), "ended": len(ended), "share (%)": round(100 * share, 1),
                "ended at (s)": _span_text(ended["termination_time_s"]),
                f"chance {full} robots show none": round(unseen_chance(share, full), 2),
                "run": where.name, "machine": tables.record_machine_text(record),
            })  # fmt: skip
    return pd.DataFrame(rows).set_index(["checkpoint", "case"])


def folded_starts_text(
    checkpoint: str | Path,
    case: str = "forward_0.4",
    tests: Mapping[str, str | Path] = START_TESTS,
    results_root: str | Path | None = None,
) -> str | None:
    """``ended of robots (share %)`` of the published start test that ran ``checkpoint`` (found
    by its SHA-256), in ``case``; None when no published start test ran it."""
    if results_root is None:
        from mjlab_microduck.book import results

        results_root = results.results_root()
    digest = records.sha256_file(checkpoint)
    for label, folder in tests.items():
        record = records.load_record(Path(results_root) / folder)
        if record.config.get("checkpoint_sha256") == digest:
            row = fold_table({label: folder}, results_root).loc[(label, case)]
            return f"{row['ended']} of {row['robots']} ({row['share (%)']:.1f} %)"
    return None
