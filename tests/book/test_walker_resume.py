"""What resuming the walker bought: the table and findings chapter 5 quotes."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from mjlab_microduck.analysis import walker
from mjlab_microduck.book import walker_recipes as recipes
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


def test_seed_findings_on_a_made_up_resume():
    first, resumed = "first (last checkpoint)", "resumed"
    table = _table([
        (1, "model_9", first, 5, "never falls", "no"),
        (1, "model_10", resumed, 3, "never falls, stands still", "no"),
        (1, "model_11", resumed, 4, "none", "no"),
        (2, "model_9", first, 2, "never falls", "no"),
        (2, "model_10", resumed, 2, "never falls", "yes"),
    ])
    found = walker_resume.seed_findings(table, [(1, {9: 0.5, 10: 0.75})])
    one, two = found.loc["seed 1"], found.loc["seed 2"]
    assert (one["failed at model_9"], one["fewest after the resume"]) == (5, 3)
    assert one["at"] == "model_10" and one["failed at model_11"] == 4
    assert one["skills gained"] == "stands still" and two["skills gained"] == "none"
    assert (one["resumed checkpoints with a fall"], one["resumed checkpoints"]) == (1, 2)
    assert (one["resumed checkpoints passing"], two["resumed checkpoints passing"]) == (0, 1)
    assert one["robots holding their heading"] == "50% (model_9) → 75% (model_10)"
    assert pd.isna(two["robots holding their heading"])


def test_resume_table_starts_at_the_loaded_checkpoint(runs):
    table = walker_resume.resume_table(runs)
    start = walker_resume.resume_from(runs)
    assert start == 499
    for seed in recipes.SEEDS:
        rows = table.loc[seed]
        assert rows.index[0] == f"model_{start}"
        assert list(rows["stage"]) == ["first (last checkpoint)"] + ["resumed"] * (len(rows) - 1)
        assert rows["minutes"].is_monotonic_increasing
    assert set(table["passes the gait test"]) <= {"yes", "no"}


def test_seed_findings_of_the_published_resumes(runs):
    threshold, within = walker_resume.heading_within(runs)
    assert threshold == 0.3
    found = walker_resume.seed_findings(walker_resume.resume_table(runs), within)
    assert list(found.index) == [f"seed {s}" for s in recipes.SEEDS]
    assert (found["resumed checkpoints"] == 4).all()
    assert found["robots holding their heading"].str.contains("(model_499) → ", regex=False).all()


def _stage(run_id, first, iterations, interval, files, resumed=None, log_dir=None):
    from types import SimpleNamespace

    config = {"iterations": iterations, "save_interval": interval}
    if resumed is not None:
        config["resume_from_iteration"] = resumed
    return SimpleNamespace(
        record=SimpleNamespace(run_id=run_id, config=config),
        scalars=pd.DataFrame(index=pd.Index(range(first, first + iterations), name="iteration")),
        checkpoints=files, log_dir=log_dir,
    )  # fmt: skip


def test_stage_files_tabulates_the_recorded_resume_by_rsl_rls_rule():
    from mjlab_microduck.book import results

    one = results.published_run(results.RECIPE_RUN_500)
    two = results.published_run(results.RECIPE_RUN_1500)
    table = walker_resume.stage_files(one, two)
    assert list(table.index) == ["one (from scratch)", "two (resumed)"]
    assert table["iterations asked"].tolist() == [500, 1000]
    assert table["iteration numbers"].tolist() == ["0–499", "499–1498"]
    assert table.loc["two (resumed)", "checkpoint files"] == (
        "model_500.pt, model_750.pt, model_1000.pt, model_1250.pt, model_1498.pt"
    )


def test_stage_files_reads_a_live_runs_files_and_refuses_a_mismatch(tmp_path):
    for name in ("model_2.pt", "model_3.pt"):
        (tmp_path / name).write_bytes(b"")
    one = _stage("a", 0, 3, 1, ["model_0.pt", "model_1.pt", "model_2.pt"])
    two = _stage("b", 2, 2, 1, [], resumed=2, log_dir=tmp_path)  # the record's list is not read
    table = walker_resume.stage_files(one, two)
    assert table.loc["two (resumed)", "checkpoint files"] == "model_2.pt, model_3.pt"
    assert table.loc["two (resumed)", "iteration numbers"] == "2–3"
    (tmp_path / "model_3.pt").unlink()
    with pytest.raises(ValueError, match=r"wrote \['model_2.pt'\], the rule predicts"):
        walker_resume.stage_files(one, two)
