"""How long each chapter may take in the ``ci`` profile: its budget, and the check against it.

Problem it solves: a cold CI run (``bash .ci/run``: installs, every chapter, the HTML, the
tests) must finish in 15 minutes on the two-core CPU machine. Chapters grow one cell at a time
and nobody notices until CI is slow again. So each chapter has a share of the time, written
beside it on the front page's table of chapters, and ``tests/book/test_chapter_budgets.py``
fails for a chapter whose recorded ``ci`` execution time (``seconds.<chapter>`` of the
``cpu_ci_book_build`` record) is more than :data:`FACTOR` times its budget.

The budgets add up to :data:`TOTAL_S` (8 minutes of chapter execution, which the build runs two
at a time): of the 15 minutes, the environment's install takes 3 to 4, and the HTML build and
the test suite the rest. Chapter 6 has the largest share: the gait test of the published walker
in both modes, the replays, a video and a command sweep.

No-op cases: importing reads no file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

TARGET_CI_S = 15 * 60
"""A cold ``bash .ci/run`` on the two-core machine, installs included."""
TARGET_WARM_CI_S = 3 * 60
"""The same run again with the environment, the execution cache and the HTML warm."""
FACTOR = 2.0
"""A chapter fails its check when its recorded time is more than this many times its budget."""

BUDGETS_S: Mapping[str, float] = {
    "01_setup": 30,
    "02_compat_fixes": 40,
    "03_smoke_training": 30,
    "04_train_500": 25,
    "05_resume_1500": 30,
    "06_replay": 200,
    "07_discarded_experiment": 35,
    "08_runtime_pitfalls": 10,
    "09_performance": 30,
    "10_multi_gpu": 40,
    "11_time_to_walk": 10,
}
"""Seconds of ``ci`` execution per chapter (the notebook's stem)."""
TOTAL_S = sum(BUDGETS_S.values())


@dataclass(frozen=True)
class Verdict:
    """One chapter's recorded time against its budget."""

    chapter: str
    seconds: float
    budget_s: float

    @property
    def ratio(self) -> float:
        return self.seconds / self.budget_s

    @property
    def within_budget(self) -> bool:
        return self.seconds <= self.budget_s

    @property
    def fails(self) -> bool:
        """More than :data:`FACTOR` times the budget: the check fails."""
        return self.seconds > FACTOR * self.budget_s


def verdicts(seconds: Mapping[str, float], budgets: Mapping[str, float] = BUDGETS_S):
    """A :class:`Verdict` per budgeted chapter with a recorded time, in the budgets' order;
    a recorded chapter without a budget is a ``KeyError`` (every chapter must have one)."""
    unbudgeted = sorted(set(seconds) - set(budgets))
    if unbudgeted:
        raise KeyError(f"chapters without a ci budget: {', '.join(unbudgeted)}")
    return [Verdict(c, float(seconds[c]), float(b)) for c, b in budgets.items() if c in seconds]
