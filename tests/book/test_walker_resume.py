"""What resuming the walker bought: the table and findings chapter 5 quotes."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from mjlab_microduck.analysis import walker
from mjlab_microduck.book import walker_results as wr
from mjlab_microduck.book import walker_resume


@pytest.fixture(scope="module")
def runs():
    return wr.seed_runs()


def test_held_text_names_the_skills_held_or_none():
    row = pd.Series(dict.fromkeys(walker.SKILLS, False))
    assert walker_resume.held_text(row) == "none"
    row[walker.SKILLS[0]] = row[walker.SKILLS[2]] = True
    assert walker_resume.held_text(row) == f"{walker.SKILLS[0]}, {walker.SKILLS[2]}"


def test_drift_cost_is_the_share_a_gaussian_kernel_forfeits():
    assert walker_resume.drift_cost(0.0, 0.5) == 0.0
    assert walker_resume.drift_cost(0.5, 0.5) == pytest.approx(1 - math.exp(-1))
    assert walker_resume.drift_cost(0.03, 0.3) > walker_resume.drift_cost(0.03, 0.71)


def _table(rows):
    frame = pd.DataFrame(rows, columns=["seed", "checkpoint", "stage", "failed conditions",
                                        "skills held", "passes the gait test"])
    return frame.set_index(["seed", "checkpoint"])


def test_table_findings_on_a_made_up_resume():
    first, resumed = "first (last checkpoint)", "resumed"
    table = _table([
        (1, "model_9", first, 5, "never falls", "no"),
        (1, "model_10", resumed, 3, "never falls, stands still", "no"),
        (1, "model_11", resumed, 4, "none", "no"),
        (2, "model_9", first, 2, "never falls", "no"),
        (2, "model_10", resumed, 2, "never falls", "no"),
    ])
    found = walker_resume._table_findings(table, 9)
    assert found["failed"] == ("seed 1: 5 at model_9, at best 3 (model_10), 4 at model_11; "
                               "seed 2: 2 at model_9, at best 2 (model_10)")
    assert found["direction"] == "fewer for seed 1; none fewer for seed 2"
    assert found["gained"] == "seed 1 gains stands still"
    assert found["any_pass"] == "No resumed checkpoint passes the gait test"
    assert found["heading"] == "none of them holds its heading"
    assert (found["lost_falls"], found["resumed_n"]) == ("1", "3")


def test_resume_table_starts_at_the_loaded_checkpoint(runs):
    table = walker_resume.resume_table(runs)
    start = walker_resume.resume_from(runs)
    assert start == 499
    for seed in wr.SEEDS:
        rows = table.loc[seed]
        assert rows.index[0] == f"model_{start}"
        assert list(rows["stage"]) == ["first (last checkpoint)"] + ["resumed"] * (len(rows) - 1)
        assert rows["minutes"].is_monotonic_increasing
    assert set(table["passes the gait test"]) <= {"yes", "no"}


def test_resume_findings_quote_the_published_records(runs):
    found = walker_resume.resume_findings(runs)
    assert (found["envs"], found["nseeds"], found["more"]) == ("4096", "3", "250")
    assert (found["from_ckpt"], found["last_ckpt"]) == ("model_499.pt", "model_748.pt")
    assert found["failed"].count("seed ") == len(wr.SEEDS)
    threshold = float(found["threshold"])
    assert threshold > 0 and float(found["drift_rate"]) == pytest.approx(
        threshold / float(found["gait_seconds"]), abs=0.005)
    assert float(found["cost_next"].rstrip("%")) > float(found["cost_now"].rstrip("%"))
