"""Start tests: the share of robots that end their run starting into a fast walk."""

import pandas as pd
import pytest

from mjlab_microduck.book import results
from mjlab_microduck.book import start_folds as sf
from mjlab_microduck.jobs.gait_test import START_TEST

WALKER_START = "cpu_walker_heading_start_s42_model_999"


def test_the_full_size_test_has_80_robots_per_case():
    assert sf.robots_per_full_case() == 80


def test_unseen_chance_is_the_chance_that_no_robot_ends_its_run():
    assert sf.unseen_chance(0.0, 80) == 1.0
    assert sf.unseen_chance(1.0, 80) == 0.0
    assert sf.unseen_chance(0.02, 80) == pytest.approx(0.98**80)
    assert sf.unseen_chance(0.02, 80) < 0.2 < sf.unseen_chance(0.01, 80)
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match=r"share must lie in \[0, 1\]"):
            sf.unseen_chance(bad, 80)


def test_the_fold_table_counts_each_case_s_ended_robots_from_the_record():
    table = sf.fold_table({"walker": WALKER_START})
    robots = pd.read_csv(results.results_root() / WALKER_START / "robots.csv")
    assert list(table.index.get_level_values("case")) == ["forward_0.3", "forward_0.4"]
    for case, group in robots.groupby("case"):
        row = table.loc[("walker", case)]
        assert row["robots"] == len(group) == 4 * 256
        assert row["ended"] == int(group["terminated"].sum())
        assert row["share (%)"] == round(100 * group["terminated"].mean(), 1)
        assert row["chance 80 robots show none"] == round(
            (1 - group["terminated"].mean()) ** 80, 2)
    # the published walker folds single robots starting into 0.4 m/s, within the first second
    fast = table.loc[("walker", "forward_0.4")]
    assert 0 < fast["ended"] and fast["chance 80 robots show none"] < 0.5
    first, last = (float(t) for t in fast["ended at (s)"].split("–"))
    assert 0 < first <= last < 1.0
    assert table.loc[("walker", "forward_0.3"), "ended at (s)"] == "-"
    assert (table["machine"] == "Intel(R) Xeon(R) Processor, CPU only").all()
    assert (table["run"] == WALKER_START).all() and list(table.columns)[-2:] == ["run", "machine"]


def test_each_start_test_ran_the_published_checkpoint_its_label_names():
    import hashlib

    from mjlab_microduck.book import walker_recipes as recipes
    from mjlab_microduck.book import walker_results as wr
    from mjlab_microduck.runs import records

    walker = wr.walker_heading_summary()  # WALKER_HEADING's walker, s42 model_999
    lever = wr.seed_runs(recipe=recipes.WALKER_TURNING)[1]
    planar = wr.seed_run(43, recipe=recipes.WALKER_TURNING_AXES_FAST_START_FINE_PLANAR)
    checkpoints = [wr.walker_checkpoint(walker), lever.checkpoint(wr.first_passing(lever)[0]),
                   planar.checkpoint(wr.first_passing(planar)[0])]  # fmt: skip
    assert lever.seed == 43 and wr.first_passing(lever)[0] == 500
    assert checkpoints[2].name == "model_675.pt"
    tests = {**sf.START_TESTS, **sf.FINE_PLANAR_START_TESTS}
    for (label, folder), checkpoint in zip(tests.items(), checkpoints, strict=True):
        record = records.load_record(results.results_root() / folder)
        assert f"model_{checkpoint.stem.split('_')[1]}" in label
        assert record.config["checkpoint_sha256"] == hashlib.sha256(
            checkpoint.read_bytes()).hexdigest()
        # the sizes the start test has now (a record keeps tuples as lists)
        for field, value in START_TEST.items():
            assert record.config[field] == (list(value) if isinstance(value, tuple) else value)
    # the task came from the run record beside the checkpoint
    assert record.config["task"] == recipes.WALKER_TURNING_AXES_FAST_START_FINE_PLANAR.task


def test_a_single_end_is_one_time_and_none_is_a_dash():
    times = sf._span_text
    assert times(pd.Series([0.5, 0.761, 0.6])) == "0.50–0.76"
    assert times(pd.Series([0.58])) == "0.58" == times(pd.Series([0.581, 0.579]))
    assert times(pd.Series([], dtype=float)) == "-"


def test_folded_starts_find_the_start_test_by_the_checkpoint_s_bytes(tmp_path):
    root = results.results_root()
    walker = root / "h200_walker_heading_main_s42" / "model_999.pt"
    lever = root / "h200_walker_turning_main_s43" / "model_500.pt"
    assert sf.folded_starts_text(walker) == "21 of 1024 (2.1 %)"
    assert sf.folded_starts_text(walker, case="forward_0.3") == "0 of 1024 (0.0 %)"
    assert sf.folded_starts_text(lever) == "1 of 1024 (0.1 %)"
    # the same bytes under another name are the same checkpoint; other bytes have no start test
    copy = tmp_path / "model.pt"
    copy.write_bytes(walker.read_bytes())
    assert sf.folded_starts_text(copy) == "21 of 1024 (2.1 %)"
    other = root / "h200_walker_resume_s42" / "model_550.pt"
    assert sf.folded_starts_text(other) is None
