"""The front page's table of chapters (mjlab_microduck.book.chapter_times).

The first part builds small results folders of fixture records and checks every number the
table shows against values computed from those records; the second ties the chapter map to the
published records, the profiles and what the chapters themselves select.
"""

from __future__ import annotations

from pathlib import Path

import jupytext
import pytest
import yaml

from mjlab_microduck.book import chapter_times as ct
from mjlab_microduck.book import results
from mjlab_microduck.jobs import book_build
from mjlab_microduck.runs import folds, records
from mjlab_microduck.runtime import profiles

REPO = Path(__file__).resolve().parents[2]


# ----------------------------------------------------------------------------- fixtures


def _write(root: Path, name: str, *, kind: str = "train", wall: float | None = 10.0,
           profile: str = "full", backend: str = "cuda", device: str = "NVIDIA H200",
           status: str = "ok", summary: dict | None = None, config: dict | None = None,
           machine_label: str | None = None) -> records.RunRecord:  # fmt: skip
    record = records.RunRecord(
        run_id=f"20261130T000000Z_{name}",
        kind=kind,
        status=status,
        error="boom" if status == "failed" else None,
        provenance=records.Provenance(
            backend=backend, device_name=device, hostname="host",
            date="2026-11-30T00:00:00+00:00", profile=profile, git_commit="abc1234def",
            machine_label=machine_label,
        ),  # fmt: skip
        started_at="2026-11-30T00:00:00+00:00",
        finished_at=None if status == "running" else "2026-11-30T00:10:00+00:00",
        wall_seconds=wall,
        summary=summary or {},
        config=config or {},
    )
    records.write_record(record, root / name / records.RECORD_FILENAME)
    return record


def _ci(root: Path, seconds: dict[str, float], cores: int = 2, **kwargs) -> None:
    _write(root, ct.CI_BUILD_RECORD, kind="book_build", profile="ci", backend="cpu",
           device="Test CPU", wall=sum(seconds.values()),
           summary={f"{ct.CI_SECONDS_PREFIX}{k}": v for k, v in seconds.items()},
           config={"profile": "ci", "cpu_cores": cores, "chapters": list(seconds)},
           machine_label=f"{cores}-core Test CPU, CPU only", **kwargs)  # fmt: skip


SMOKE = ct.Chapter("notebooks/03_smoke", "smoke {smoke}",
                   (ct.GpuWork("smoke", ("gpu_a", "gpu_b")),))  # fmt: skip
REPLAYS = ct.Chapter("notebooks/06_replays", "replays",
                     (ct.GpuWork("replays", ("gpu_replay_*",)), ct.GpuWork("the sweep")))
RECIPE = ct.Chapter("notebooks/04_recipe", "recipe",
                    (ct.GpuWork("stage", ("gpu_stage",), before_build=True),))
CPU_ONLY = ct.Chapter("notebooks/02_cpu", "cpu only")
UNTIMED = ct.Chapter("notebooks/09_bench", "bench", (ct.GpuWork("the quick benchmark"),))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    _write(tmp_path, "gpu_a", wall=30.25)
    _write(tmp_path, "gpu_b", wall=33.5)
    for i, wall in enumerate((5.5, 6.0, 7.25)):
        _write(tmp_path, f"gpu_replay_{i}", kind="replay", wall=wall)
    _write(tmp_path, "gpu_stage", wall=476.834)
    return tmp_path


# ----------------------------------------------------------------------------- numbers


def test_full_time_sums_the_named_records(root):
    time = ct.full_time(SMOKE, root)
    assert time.in_chapter_s == pytest.approx(30.25 + 33.5)
    assert time.before_build_s is None
    assert time.runs == (("gpu_a", ("gpu_a",)), ("gpu_b", ("gpu_b",)))
    assert time.untimed == () and not time.lower_bound
    assert time.devices == ("NVIDIA H200",)
    assert ct.full_text(time) == "64 s"
    assert ct.sources_text(time) == "`gpu_a`, `gpu_b`"


def test_a_pattern_sums_its_series_and_untimed_work_makes_a_lower_bound(root):
    time = ct.full_time(REPLAYS, root)
    assert time.in_chapter_s == pytest.approx(5.5 + 6.0 + 7.25)
    assert time.runs == (("gpu_replay_*", ("gpu_replay_0", "gpu_replay_1", "gpu_replay_2")),)
    assert time.untimed == ("the sweep",) and time.lower_bound
    assert ct.full_text(time) == "at least 19 s"
    assert ct.sources_text(time) == "`gpu_replay_*` (3); not timed: the sweep"


def test_work_made_before_the_build_is_said_so(root):
    time = ct.full_time(RECIPE, root)
    assert time.in_chapter_s is None
    assert time.before_build_s == pytest.approx(476.834)
    assert time.total_s == pytest.approx(476.834)
    assert ct.full_text(time) == f"7.9 min {ct.BEFORE_BUILD}"
    both = ct.Chapter("notebooks/05_x", "x", SMOKE.full + RECIPE.full)
    assert ct.full_text(ct.full_time(both, root)) == f"64 s + 7.9 min {ct.BEFORE_BUILD}"
    assert ct.full_time(both, root).total_s == pytest.approx(30.25 + 33.5 + 476.834)


def test_no_gpu_work_and_no_record_read_differently(root):
    cpu = ct.full_time(CPU_ONLY, root)
    assert ct.full_text(cpu) == "no GPU run" and ct.sources_text(cpu) == "none"
    untimed = ct.full_time(UNTIMED, root)
    assert untimed.total_s is None
    assert ct.full_text(untimed) == "not recorded"
    assert ct.sources_text(untimed) == "not timed: the quick benchmark"


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"backend": "cpu", "device": "Test CPU"}, "a CPU run"),
    ({"profile": "ci"}, "profile ci, not full"),
    ({"wall": None}, "no wall time"),
    ({"status": "failed"}, "status failed"),
])  # fmt: skip
def test_a_record_that_cannot_time_full_gpu_work_is_an_error(tmp_path, kwargs, message):
    _write(tmp_path, "gpu_a", **kwargs)
    _write(tmp_path, "gpu_b")
    with pytest.raises(ValueError, match=message):
        ct.full_time(SMOKE, tmp_path)


def test_a_missing_record_is_an_error(tmp_path):
    _write(tmp_path, "gpu_a")
    with pytest.raises(FileNotFoundError, match="gpu_b"):
        ct.full_time(SMOKE, tmp_path)
    with pytest.raises(FileNotFoundError, match="gpu_replay_"):
        ct.full_time(REPLAYS, tmp_path)


def test_ci_build_reads_the_seconds_of_each_chapter(root):
    assert ct.ci_build(root) is None
    _ci(root, {"03_smoke": 41.05, "06_replays": 250.5})
    ci = ct.ci_build(root)
    assert ci.seconds == {"03_smoke": 41.05, "06_replays": 250.5}
    assert ci.cores == 2


def test_ci_build_refuses_a_record_that_is_not_a_ci_cpu_build(root):
    _write(root, ct.CI_BUILD_RECORD, kind="book_build", profile="full", backend="cuda")
    with pytest.raises(ValueError, match="not a ci build"):
        ct.ci_build(root)
    _write(root, ct.CI_BUILD_RECORD, kind="bench", profile="ci", backend="cpu")
    with pytest.raises(ValueError, match="not an ok book_build"):
        ct.ci_build(root)


def test_the_table_shows_values_computed_from_the_records(root):
    _ci(root, {"03_smoke": 41.05, "06_replays": 250.5, "02_cpu": 35.0})
    chapters = (CPU_ONLY, SMOKE, RECIPE, REPLAYS)
    frame = ct.table(root, chapters)
    assert list(frame.columns) == ["chapter", "what it runs", "ci on 2-core CPU", "ci budget",
                                   "full on one NVIDIA H200", "source records"]  # fmt: skip
    rows = frame.set_index("chapter")
    assert list(rows.index) == ["2 {doc}`/notebooks/02_cpu`", "3 {doc}`/notebooks/03_smoke`",
                                "4 {doc}`/notebooks/04_recipe`", "6 {doc}`/notebooks/06_replays`"]
    assert list(rows["ci on 2-core CPU"]) == [
        ct.duration_text(35.0), ct.duration_text(41.05), "not recorded", ct.duration_text(250.5)]
    assert list(rows["ci on 2-core CPU"]) == ["35 s", "41 s", "not recorded", "4.2 min"]
    assert list(rows["ci budget"]) == ["none"] * 4  # the fixture chapters have no budget
    assert list(rows["full on one NVIDIA H200"]) == [
        "no GPU run", "64 s", f"7.9 min {ct.BEFORE_BUILD}", "at least 19 s"]
    sizes = profiles.FULL.smoke_sizes
    assert rows.loc["3 {doc}`/notebooks/03_smoke`", "what it runs"] == (
        "smoke " + " and ".join(str(e) for e, _ in sizes)
        + f" environments × {sizes[0][1]} PPO iterations")  # fmt: skip


def test_without_a_ci_record_the_column_says_so(root):
    frame = ct.table(root, (SMOKE,))
    assert frame["ci on a CPU"].tolist() == ["not recorded"]
    assert "`make chapter-times`" in ct.caption(root)


def test_the_full_column_names_every_gpu_of_mixed_records(tmp_path):
    _write(tmp_path, "gpu_a", device="NVIDIA H200")
    _write(tmp_path, "gpu_b", device="NVIDIA H100")
    assert "full on one GPU" in ct.table(tmp_path, (SMOKE,)).columns


def test_the_caption_names_the_ci_machine_date_and_commit(root):
    _ci(root, {"03_smoke": 41.05, "06_replays": 250.5})
    text = ct.caption(root)
    assert "2-core Test CPU, CPU only" in text
    assert "2026-11-30" in text and "abc1234" in text
    assert f"`{ct.CI_BUILD_RECORD}`" in text
    assert ct.duration_text(41.05 + 250.5) in text


@pytest.mark.parametrize(("seconds", "text"), [
    (33.4, "33 s"), (89.4, "89 s"), (90.0, "1.5 min"), (476.834, "7.9 min"), (747.5, "12.5 min"),
])  # fmt: skip
def test_duration_text(seconds, text):
    assert ct.duration_text(seconds) == text


def test_markdown_table_is_a_pipe_table_with_escaped_cells():
    import pandas as pd

    frame = pd.DataFrame([{"a": "x | y", "b": "two\nlines"}, {"a": 1, "b": 2.5}])
    assert ct.markdown_table(frame).splitlines() == [
        "| a | b |", "|---|---|", "| x \\| y | two lines |", "| 1 | 2.5 |"]


def test_the_seconds_prefix_is_the_one_the_build_record_writes():
    assert ct.CI_SECONDS_PREFIX == book_build.SECONDS_PREFIX


# ----------------------------------------------------------------------------- the real map


def _toc_chapters() -> list[str]:
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    return [ch["file"] for part in toc["parts"] for ch in part["chapters"]
            if ch["file"].startswith("notebooks/")]  # fmt: skip


def _published(name: str) -> records.RunRecord:
    return records.load_record(results.results_root() / name)


def _chapter(number: int) -> ct.Chapter:
    return next(c for c in ct.CHAPTERS if c.number == number)


def test_the_map_has_every_chapter_of_the_toc_in_order():
    assert [c.doc for c in ct.CHAPTERS] == _toc_chapters()
    assert [c.number for c in ct.CHAPTERS] == list(range(1, 12))


def test_the_published_table_has_a_row_per_chapter_and_its_gpus():
    frame = ct.table()
    assert len(frame) == len(ct.CHAPTERS)
    # the walker's gait test ran on an H100, every other full-size run on an H200
    assert frame.columns[4] == "full on one GPU"
    assert ct.headers(None, ["NVIDIA H200"])["full"] == "full on one NVIDIA H200"
    full = frame.iloc[:, 4].tolist()
    assert full[1] == "no GPU run"  # chapter 2 runs on the CPU in both profiles
    smoke = sum(_published(n).wall_seconds for n in ("h200_smoke_64x5", "h200_smoke_256x5"))
    assert full[2] == ct.duration_text(smoke)
    assert full[3] == f"{ct.duration_text(_published(results.RECIPE_RUN_500).wall_seconds)} " \
                      f"{ct.BEFORE_BUILD}"  # fmt: skip


def test_the_smoke_runs_are_the_full_profile_sizes():
    (work,) = _chapter(3).full
    sizes = [(_published(n).config["num_envs"], _published(n).config["iterations"])
             for n in work.runs]  # fmt: skip
    assert sizes == [tuple(s) for s in profiles.FULL.smoke_sizes]


def test_chapters_4_and_5_time_the_recipe_stages_they_read():
    (main,) = _chapter(4).full
    (resume,) = _chapter(5).full
    assert main.runs == (results.RECIPE_RUN_500,) and main.before_build
    assert resume.runs == (results.RECIPE_RUN_1500,) and resume.before_build
    full = profiles.FULL
    one, two = _published(results.RECIPE_RUN_500), _published(results.RECIPE_RUN_1500)
    assert (one.config["num_envs"], one.config["iterations"]) == (full.main_envs,
                                                                  full.main_iterations)
    assert (two.config["num_envs"], two.config["iterations"]) == (full.main_envs,
                                                                  full.resume_iterations)


def test_chapter_6_times_the_gait_test_and_the_replays_it_makes():
    from mjlab_microduck.analysis import acceptance
    from mjlab_microduck.book import walker_results as wr
    from mjlab_microduck.jobs import gait_test

    gait_work, replay_work, *untimed = _chapter(6).full
    walker_record = wr.published_walker()  # chapter 6 gait-tests the published walker
    assert gait_work.runs == (walker_record["gait_record"],)
    request = gait_test.request_for_profile(
        "full", wr.walker_checkpoint(walker_record), walker_record["task"])
    config = _published(gait_work.runs[0]).config
    assert list(config["seeds"]) == list(request.seeds)
    assert config["robots_per_case"] == request.robots_per_case
    root = results.results_root()
    recorded = acceptance.recorded_replays(root)
    protocol = {acceptance.recorded_protocol_replay(c, recorded).where
                for c in acceptance.published_checkpoints(root)}  # fmt: skip
    # the five replays, folded into the one summary record chapter 6 times
    (fold,) = replay_work.runs
    assert {where.parent.name for where in protocol} == {fold}
    assert {where.name for where in protocol} == set(_published(fold).config["sources"])
    folded = [r.record.wall_seconds for r in folds.load_fold(root / fold)]
    assert len(folded) == 5 and _published(fold).wall_seconds == pytest.approx(sum(folded))
    assert [w.runs for w in untimed] == [(), ()]


def test_chapter_8_times_the_probe_it_runs_on_the_gpu():
    (work,) = _chapter(8).full
    config = _published(work.runs[0]).config
    assert (config["ring"], config["reuses"]) == (1, 100)
    source = (REPO / "notebooks" / "08_runtime_pitfalls.md").read_text()
    assert "ipc_event.run_probe(reuses=100, ring_size=1, timeout_s=60)" in source


def test_the_published_ci_build_covers_every_chapter_on_a_cpu():
    ci = ct.ci_build()
    if ci is None:
        pytest.skip(f"no {ct.CI_BUILD_RECORD} record yet: `make chapter-times`")
    assert set(ci.seconds) == {c.stem for c in ct.CHAPTERS}
    assert ci.cores and ci.cores >= 1
    assert all(s > 0 for s in ci.seconds.values())
    assert ci.record.wall_seconds == pytest.approx(sum(ci.seconds.values()), abs=0.1)


def test_the_front_page_shows_the_table_from_one_hidden_cell():
    nb = jupytext.read(REPO / "book" / "intro.md")
    cells = [c for c in nb.cells if c.cell_type == "code"]
    (cell,) = [c for c in cells if "chapter_times.front_page_table()" in c.source]
    assert "remove-input" in cell.metadata.get("tags", [])
    assert cell.metadata.get("mystnb", {}).get("markdown_format") == "myst"
    shown = ct.front_page_table()
    table_lines = [ln for ln in shown.data.splitlines() if ln.startswith("| ")]
    assert len(table_lines) == len(ct.CHAPTERS) + 1  # the header and one row per chapter
