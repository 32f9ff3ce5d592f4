"""The appendix's account of a cold CI run (mjlab_microduck.book.ci_run), on a synthetic
ci_run record made by the job's own record builder: every cell is checked against the values
put in, so the page and jobs.ci_run agree on the record's keys."""

from __future__ import annotations

import datetime as dt

import jupytext
import pytest

from mjlab_microduck.book import budgets, results
from mjlab_microduck.book import ci_run as page
from mjlab_microduck.jobs import book_build
from mjlab_microduck.jobs import ci_run as job
from mjlab_microduck.runs import records

FINISHED = dt.datetime(2026, 12, 1, 20, 0, tzinfo=dt.timezone.utc)


def _pass(stages: dict[str, float], wall: float, passed: int = 990, junit: bool = True) -> job.Pass:
    lines, t = [], 1000.0
    for name, seconds in stages.items():
        lines += [f"[stage] {name} begin {t}", f"[stage] {name} end {t + seconds}"]
        t += seconds
    slowest = (job.TestTime("tests.jobs.test_train_driver::test_smoke", 95.5),
               job.TestTime("tests.jobs.test_bench::test_quick", 40.0))  # fmt: skip
    return job.Pass(returncode=0, wall_seconds=wall, lines=lines, stages=job.parse_stages(lines),
                    junit=job.Junit(passed + 6, 0, 0, 6, 300.0, slowest) if junit else None,
                    loads=[1.5, 2.25, 2.0])  # fmt: skip


def _chapter(name: str, seconds: float) -> book_build.ChapterRun:
    return book_build.ChapterRun(name, seconds, FINISHED, "ci", "cpu", "Test CPU", "abc1234", 2)


@pytest.fixture
def published(tmp_path):
    cold = _pass({"venv": 200.0, "system-deps": 1.0, "execute": 420.0, "html": 45.0,
                  "test": 230.0}, wall=899.0)  # fmt: skip
    warm = _pass({"system-deps": 1.0, "test": 175.5}, wall=178.0)
    runs = [_chapter("01_setup", 25.0), _chapter("05_resume_1500", 45.0),
            _chapter("06_replay", 500.0)]  # fmt: skip
    record = job.build_record("20261201T200000Z_ci_run", cold, warm, runs, "abc1234" * 5 + "ab",
                              "2026-12-01T19:45:00+00:00", [], cores=2)  # fmt: skip
    records.write_record(record, tmp_path / page.CI_RUN_RECORD / records.RECORD_FILENAME)
    return tmp_path


def test_the_stage_table_gives_each_stage_its_time_and_share_and_the_targets(published):
    frame = page.stage_table(page.ci_run(published))
    rows = frame.set_index("stage")
    assert list(rows["time"]) == ["3.4 min", "7.0 min", "45 s", "3.8 min", "15.0 min", "3.0 min",
                                  "1 s", "2.9 min"]  # fmt: skip
    assert list(rows["share"]) == [f"{201 / 899:.0%}", f"{420 / 899:.0%}", f"{45 / 899:.0%}",
                                   f"{230 / 899:.0%}", "100%", "100%", f"{1 / 178:.0%}",
                                   f"{175.5 / 178:.0%}"]  # fmt: skip
    assert list(rows["target"])[4:] == ["15.0 min: within", "3.0 min: within", "", ""]
    # The warm run's own stages: it installed nothing new and executed no chapter.
    assert list(rows.index)[6:] == [f"second run: {page.STAGE_ROWS[0][0]}",
                                    f"second run: {page.STAGE_ROWS[3][0]}"]  # fmt: skip


def test_a_run_over_its_target_says_by_how_much(tmp_path):
    record = job.build_record("r", _pass({"test": 10.0}, wall=1000.0), None, [], "abc", "2026-12"
                              "-01T19:45:00+00:00", [], cores=2)  # fmt: skip
    frame = page.stage_table(record)
    assert list(frame["stage"]) == [label for label, _ in page.STAGE_ROWS] + [
        "**cold `bash .ci/run`, in all**"
    ]
    assert list(frame["time"])[:3] == ["not run"] * 3
    assert frame["target"].iloc[-1] == "15.0 min: over by 1.7 min"


def test_a_stage_the_run_stopped_in_says_so(tmp_path):
    cold = _pass({"execute": 300.0}, wall=700.0)
    cold.lines.append("[stage] test begin 1300.0")
    cold.stages = job.parse_stages(cold.lines)
    cold.ended = 1580.5
    record = job.build_record("r", cold, None, [], "abc", "2026-12-01T19:45:00+00:00", [],
                              cores=2)  # fmt: skip
    rows = page.stage_table(record).set_index("stage")
    assert rows.loc["test suite (`pytest`)", "time"] == "4.7 min (the run stopped in it)"


def test_the_chapter_table_puts_each_time_against_its_budget(published):
    frame = page.chapter_table(page.ci_run(published)).set_index("chapter")
    assert len(frame) == len(budgets.BUDGETS_S)
    setup, resume, replay = (frame.loc[f"{{doc}}`/notebooks/{c}`"]
                             for c in ("01_setup", "05_resume_1500", "06_replay"))  # fmt: skip
    assert (setup["time"], setup["budget"], setup["against its budget"]) == ("25 s", "30 s",
                                                                            "within")  # fmt: skip
    assert budgets.BUDGETS_S["05_resume_1500"] == 30 and budgets.BUDGETS_S["06_replay"] == 200
    assert resume["against its budget"] == "1.5 × budget"
    assert replay["against its budget"] == "2.5 × budget (fails)"
    assert frame.loc["{doc}`/notebooks/02_compat_fixes`", "time"] == "not measured"


def test_the_slowest_tests_and_the_caption(published):
    record = page.ci_run(published)
    frame = page.slowest_table(record)
    assert frame.values.tolist() == [["`tests.jobs.test_train_driver::test_smoke`", "1.6 min"],
                                     ["`tests.jobs.test_bench::test_quick`", "40 s"]]  # fmt: skip
    text = page.caption(record)
    assert ("a fresh clone of commit abc1234 with the machine's own home folder (its download "
            "and compiled-kernel caches) on 2026-12-01 (2-core") in text
    fresh = record.model_copy(update={"config": {**record.config, "fresh_home": True}})
    assert ("a fresh clone of commit abc1234 with an empty home folder (no download or "
            "compiled-kernel cache) on 2026-12-01 (2-core") in page.caption(fresh)
    assert "chapters executed 2 at a time, 9.5 min of execution in all" in text
    assert "tests: 990 passed, 0 failed, 6 skipped" in text
    assert (
        "load average during the run 1.5 at the start, at most 2.25 (mean 1.92) on 2 cores" in text
    )
    assert "during the second run 1.5 at the start" in text


def test_without_a_record_the_section_says_how_to_make_one(tmp_path):
    assert page.ci_run(tmp_path) is None
    assert "`make ci-times`" in page.appendix_section(tmp_path).data


def test_a_record_of_another_kind_is_refused(tmp_path, published):
    bad = records.load_record(published / page.CI_RUN_RECORD).model_copy(update={"kind": "bench"})
    records.write_record(bad, tmp_path / "x" / page.CI_RUN_RECORD / records.RECORD_FILENAME)
    with pytest.raises(ValueError, match="a bench record, not a ci_run"):
        page.ci_run(tmp_path / "x")


def test_the_appendix_shows_the_section_from_one_hidden_cell():
    nb = jupytext.read(results.results_root().parents[0] / "appendix_tests.md")
    (cell,) = [c for c in nb.cells if c.cell_type == "code"]
    assert cell.source.strip().endswith("ci_run.appendix_section()")
    assert "remove-input" in cell.metadata.get("tags", [])
    assert cell.metadata.get("mystnb", {}).get("markdown_format") == "myst"
    shown = page.appendix_section().data
    assert "`make ci-times`" in shown or "| stage | time | share | target |" in shown
