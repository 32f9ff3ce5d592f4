"""Gait-test verdicts as tables for the pages: which skills a checkpoint holds, per test run.

Problem it solves: chapter 6 puts this build's gait test of a checkpoint beside the recorded
``full`` one; instead of a sentence per verdict, one table gives each test's source (run,
machine, profile), its size and wall time, each skill held or not and the number of failed
conditions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from mjlab_microduck.analysis import walker
from mjlab_microduck.book import tables, walker_results
from mjlab_microduck.runs.records import RunRecord


def skills_column(record: RunRecord, verdict: Mapping[str, Any]) -> dict[str, Any]:
    """One gait test in one column: size, wall time, every skill (``yes``/``no``), and how many
    conditions failed."""
    held = walker.skills_held(verdict["table"], verdict["thresholds"])
    return {
        "size": tables.size_text(record),
        "wall time": tables.wall_text(record.wall_seconds),
        **{skill: "yes" if ok else "no" for skill, ok in held.items()},
        "failed conditions": len(verdict["failures"]),
    }


def skills_table(tests: Mapping[str, tuple[RunRecord, Mapping[str, Any]]]) -> pd.DataFrame:
    """:func:`skills_column` of each labelled ``(record, verdict)``, under its source rows."""
    columns = {label: (rec, skills_column(rec, verdict)) for label, (rec, verdict) in tests.items()}
    return tables.facts_table(columns)


def published_skills_table(folders: Mapping[str, str]) -> pd.DataFrame:
    """:func:`skills_table` of published gait tests, each a label and its folder under the
    results."""
    tests = {}
    for label, folder in folders.items():
        verdict, record = walker_results.published_gait(folder)
        tests[label] = (record, verdict)
    return skills_table(tests)
