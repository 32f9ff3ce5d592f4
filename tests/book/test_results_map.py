"""The map of which chapter reads which runs (mjlab_microduck.book.results_map).

The first part renders a small folder of fixture records and checks the section line by line;
the second ties the real map to ``book/results`` (every folder read by a chapter or listed as
unread, no pattern matching nothing), to what the chapters and the book's modules read, and to
the README, whose section must be exactly what the records render.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from mjlab_microduck.analysis import acceptance
from mjlab_microduck.book import chapter_times as ct
from mjlab_microduck.book import results, tables
from mjlab_microduck.book import results_map as rm
from mjlab_microduck.book import walker_recipes as recipes
from mjlab_microduck.book import walker_results as wr
from mjlab_microduck.cli import main
from mjlab_microduck.runs import records

REPO = Path(__file__).resolve().parents[2]
README = REPO / "book" / "results" / "README.md"
GPU_VERSIONS = {"torch": "2.11.0", "python": "3.12.3", "warp": "1.13.0"}


# ----------------------------------------------------------------------------- fixtures


def _write(root: Path, name: str, kind: str, config: dict, *, wall: float | None,
           started: str = "2026-11-30T10:00:00+00:00", summary: dict | None = None,
           backend: str = "cuda", device: str = "NVIDIA H200", label: str | None = None,
           versions: dict | None = None) -> None:  # fmt: skip
    gpu = backend != "cpu"
    record = records.RunRecord(
        run_id=f"20261130T000000Z_{name}", kind=kind, status="ok", config=config,
        provenance=records.Provenance(
            backend=backend, device_name=device, hostname="host", date=started,
            driver_version="580.159.04" if gpu else None, runtime_version="13.0" if gpu else None,
            profile="full" if gpu else "ci", machine_label=label,
            versions=versions or (GPU_VERSIONS if gpu else {"torch": "2.13.0+cpu"}),
        ),
        started_at=started, finished_at=started, wall_seconds=wall, summary=summary or {},
    )  # fmt: skip
    records.write_record(record, root / name / records.RECORD_FILENAME)


def _train(envs: int, iterations: int, resumed: int | None = None, gpus: int = 1) -> dict:
    return {"num_envs": envs, "iterations": iterations, "resume_from_iteration": resumed,
            "gpu_ids": list(range(gpus))}  # fmt: skip


def _replay(checkpoint: str, **extra) -> dict:
    return {"checkpoint": f"/tmp/run/{checkpoint}", "frames": 200, "video": True, **extra}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    _write(tmp_path, "gpu_train", "train", _train(256, 500), wall=476.834)
    _write(tmp_path, "gpu_resume", "train", _train(256, 1000, resumed=499), wall=747.516)
    _write(tmp_path, "gpu_pair", "train", _train(4096, 60, gpus=2), wall=168.882)
    _write(tmp_path, "gpu_replay_model_499", "replay", _replay("model_499.pt"), wall=6.496,
           summary={"duration_s": 4.0})  # fmt: skip
    _write(tmp_path, "gpu_replay_model_1000", "replay", _replay("model_1000.pt"), wall=9.399,
           started="2026-12-01T09:00:00+00:00", summary={"duration_s": 4.0})  # fmt: skip
    _write(tmp_path, "gpu_gait", "gait_test",
           {"checkpoint": "/tmp/run/model_550.pt", "seeds": [0, 1, 2, 3, 4],
            "robots_per_case": 16, "cases": [f"case_{i}" for i in range(16)],
            "duration_s": 10.0}, wall=95.6, started="2026-12-01T13:31:09+00:00")  # fmt: skip
    _write(tmp_path, "cpu_video", "replay",
           {**_replay("model_550.pt", video=True), "schedule": [[0, 0.2, 0, 0], [5, 0.15, 0, 0.5]]},
           wall=113.011, started="2026-12-01T13:45:43+00:00", summary={"duration_s": 10.0},
           backend="cpu", device="Test CPU")  # fmt: skip
    _write(tmp_path, "cpu_build", "book_build",
           {"profile": "ci", "cpu_cores": 2, "chapters": ["01_a", "02_b", "03_c"]}, wall=64.4,
           started="2026-12-01T15:51:49+00:00", backend="cpu", device="Test CPU",
           label="2-core Test CPU, CPU only")  # fmt: skip
    _write(tmp_path, "old_probe", "probe", {"probe": "ipc_event", "ring": 1, "reuses": 100},
           wall=20.0864)  # fmt: skip
    doctor = tmp_path / "gpu_doctor"
    doctor.mkdir()
    provenance = {"backend": "cuda", "device_name": "NVIDIA H200", "driver_version": "580.159.04",
                  "runtime_version": "13.0", "hostname": "host",
                  "date": "2026-11-30T09:19:45+00:00"}  # fmt: skip
    checks = [{"name": n, "status": "ok"} for n in ("backend", "device", "warp")]
    (doctor / "doctor.json").write_text(json.dumps({"provenance": provenance, "checks": checks}))
    contact = tmp_path / "gpu_contact"
    contact.mkdir()
    for name in ("contact_cuda.json", "contact_cuda_frozen.json"):
        (contact / name).write_text(json.dumps({"device": "cuda:0", "steps": 200,
                                                "timestep": 0.005}))  # fmt: skip
    return tmp_path


CHAPTERS = (
    rm.ChapterRuns("notebooks/01_setup", "Set-up", ("gpu_doctor", "gpu_contact"),
                   "The reports."),
    rm.ChapterRuns("notebooks/02_cpu", "On the CPU", (), "No published run."),
    rm.ChapterRuns("notebooks/04_train", "Training",
                   ("gpu_train", "gpu_resume", "gpu_replay_model_*", "gpu_pair")),
    rm.ChapterRuns("book/intro", "The front page", ("cpu_build", "cpu_video", "gpu_gait"),
                   "The table of chapters."),
)  # fmt: skip
UNREAD = {"old_probe": "made by an older probe; chapter 8 reads its successor"}
H200 = "one NVIDIA H200, driver 580, CUDA 13.0"
CONTACT_MACHINE = "`cuda:0` (the report names no GPU model)"
RESUMED = "256 envs × 1,000 it, resumed from iteration 499"


def _table(*rows: tuple[str, ...]) -> list[str]:
    return ["| run folder | kind | machine | date | size | wall time |",
            "|---|---|---|---|---|---|",
            *("| " + " | ".join(cells) + " |" for cells in rows)]  # fmt: skip


EXPECTED = "\n".join([
    "The machines, software stacks and dates the run records name:",
    "",
    "- 2 run records on Test CPU (cpu): torch 2.13.0+cpu; started 2026-12-01.",
    "- 7 run records on NVIDIA H200, driver 580.159.04, CUDA 13.0 (cuda): torch 2.11.0, "
    "warp 1.13.0, python 3.12.3; started 2026-11-30 to 2026-12-01.",
    "",
    "### Chapter 1, Set-up",
    "",
    "The reports.",
    "",
    *_table(
        ("`gpu_doctor`", "report (`doctor.json`)", H200, "2026-11-30", "3 checks",
         rm.REPORT_WALL),
        ("`gpu_contact`", "report (`contact_cuda.json`, `contact_cuda_frozen.json`)",
         CONTACT_MACHINE, "not recorded", "2 reports, 200 steps of 5 ms each", rm.REPORT_WALL),
    ),
    "",
    "### Chapter 2, On the CPU",
    "",
    "No published run.",
    "",
    "### Chapter 4, Training",
    "",
    *_table(
        ("`gpu_train`", "train", H200, "2026-11-30", "256 envs × 500 it", "477 s (7.9 min)"),
        ("`gpu_resume`", "train", H200, "2026-11-30", RESUMED, "748 s (12.5 min)"),
        ("`gpu_replay_model_*` (2 runs)", "replay", H200, "2026-11-30 to 2026-12-01",
         "model_{499, 1000}.pt, each 1 env, 4 s, video", "6–9 s each"),
        ("`gpu_pair`", "train", "2 × NVIDIA H200, driver 580, CUDA 13.0", "2026-11-30",
         "4,096 envs × 60 it per GPU", "169 s (2.8 min)"),
    ),
    "",
    "### The front page",
    "",
    "The table of chapters.",
    "",
    *_table(
        ("`cpu_build`", "book_build", "2-core Test CPU, CPU only", "2026-12-01",
         "3 chapters, ci profile", "64 s"),
        ("`cpu_video`", "replay", "Test CPU, CPU only", "2026-12-01",
         "model_550.pt, 1 env, 10 s, a 2-part command schedule, video", "113 s (1.9 min)"),
        ("`gpu_gait`", "gait_test", H200, "2026-12-01",
         "model_550.pt, 5 seeds × 16 robots × 16 cases, 10 s", "96 s (1.6 min)"),
    ),
    "",
    "### Read by no chapter",
    "",
    "| run folder | kind | date | why no chapter reads it |",
    "|---|---|---|---|",
    f"| `old_probe` | probe | 2026-11-30 | {UNREAD['old_probe']} |",
    "",
])  # fmt: skip


# ----------------------------------------------------------------------------- rendering


def test_a_small_record_set_renders_to_exactly_these_rows(root):
    assert rm.render(root, CHAPTERS, UNREAD) == EXPECTED


def test_a_machine_with_one_run_record_says_so_in_the_singular(root):
    lines = rm.stacks_text(rm.folder_frame(root, ["cpu_video", "gpu_train", "gpu_resume"]))
    assert lines[0].startswith("- 1 run record on Test CPU (cpu): ")
    assert lines[1].startswith("- 2 run records on NVIDIA H200, ")


def test_a_folder_no_chapter_reads_and_unread_does_not_list_is_an_error(root):
    (root / "gpu_new").mkdir()
    (root / ".hidden").mkdir()  # hidden folders are not runs
    with pytest.raises(ValueError, match="read by no chapter and not in UNREAD: gpu_new$"):
        rm.render(root, CHAPTERS, UNREAD)
    with pytest.raises(ValueError, match="read by no chapter and not in UNREAD: old_probe"):
        rm.render(root, CHAPTERS, {})


def test_a_pattern_that_matches_nothing_is_an_error(root):
    chapters = (*CHAPTERS, rm.ChapterRuns("notebooks/09_bench", "Bench", ("bench_*",)))
    message = r"pattern matching no folder: notebooks/09_bench: bench_\*"
    with pytest.raises(ValueError, match=message):
        rm.render(root, chapters, UNREAD)
    with pytest.raises(ValueError, match="pattern matching no folder: UNREAD: gone"):
        rm.render(root, CHAPTERS, {**UNREAD, "gone": "removed"})


def test_a_folder_two_patterns_of_one_page_match_or_read_and_unread_is_an_error(root):
    doubled = (rm.ChapterRuns("notebooks/04_train", "Training", ("gpu_*", "gpu_train")),
               *CHAPTERS[:2], CHAPTERS[3])  # fmt: skip
    problems = rm.coverage(root, doubled, UNREAD).problems
    assert problems == ["matched by two patterns of one page: notebooks/04_train: gpu_train"]
    problems = rm.coverage(root, CHAPTERS, {**UNREAD, "gpu_pair": "x"}).problems
    assert problems == ["read by a chapter but listed in UNREAD: gpu_pair"]


def test_the_section_is_replaced_between_the_markers_and_nothing_else(root):
    text = f"# Title\n\nintro\n\n{rm.BEGIN}\nold line\n{rm.END}\n\n## After\ntext\n"
    new = rm.replace_section(text, "new body\n")
    assert new == f"# Title\n\nintro\n\n{rm.BEGIN}\n\nnew body\n\n{rm.END}\n\n## After\ntext\n"
    assert rm.section(new) == "new body\n"
    assert rm.replace_section(new, "new body\n") == new
    for broken in ("no markers", f"{rm.END}\n{rm.BEGIN}\n", f"{rm.BEGIN}\n{rm.BEGIN}\n{rm.END}\n"):
        with pytest.raises(ValueError, match="expected one line"):
            rm.replace_section(broken, "x")


def test_update_readme_checks_then_rewrites_atomically(root, monkeypatch):
    readme = root / "README.md"
    text = f"# Records\n\n{rm.BEGIN}\nstale\n{rm.END}\n\n## Layout\n"
    readme.write_text(text)
    assert rm.update_readme(readme, write=False, chapters=CHAPTERS, unread=UNREAD) is True
    assert readme.read_text() == text  # a check writes nothing
    written = []
    real = records.atomic_write_text
    monkeypatch.setattr(records, "atomic_write_text",
                        lambda path, body: written.append(path) or real(path, body))
    assert rm.update_readme(readme, chapters=CHAPTERS, unread=UNREAD) is True
    assert written == [readme]
    assert rm.section(readme.read_text()) == EXPECTED
    assert readme.read_text().startswith("# Records\n\n") and readme.read_text().endswith(
        f"{rm.END}\n\n## Layout\n")
    assert rm.update_readme(readme, chapters=CHAPTERS, unread=UNREAD) is False


@pytest.mark.parametrize(("provenance", "gpus", "text"), [
    (dict(backend="cuda", device_name="NVIDIA H200", driver_version="580.159.04",
          runtime_version="13.0"), 1, "one NVIDIA H200, driver 580, CUDA 13.0"),
    (dict(backend="hip", device_name="AMD Radeon AI PRO R9700", runtime_version="7.2"), 2,
     "2 × AMD Radeon AI PRO R9700, HIP 7.2"),
    (dict(backend="cpu", device_name="AMD EPYC"), 1, "AMD EPYC, CPU only"),
    (dict(backend="cpu", device_name="AMD EPYC", machine_label="2-core AMD EPYC, CPU only"), 1,
     "2-core AMD EPYC, CPU only"),
])  # fmt: skip
def test_machine_text(provenance, gpus, text):
    prov = records.Provenance(hostname="h", date="2026-11-30T00:00:00+00:00", **provenance)
    assert tables.machine_text(prov, gpus) == text


@pytest.mark.parametrize(("seconds", "text"), [
    (None, "not recorded"), (33.4, "33 s"), (476.834, "477 s (7.9 min)"),
])  # fmt: skip
def test_wall_text(seconds, text):
    assert tables.wall_text(seconds) == text


def test_walls_and_dates_of_a_series():
    assert rm.walls_text([6.496, 9.399, 8.0]) == "6–9 s each"
    assert rm.walls_text([95.6, 95.9]) == "96 s (1.6 min) each"
    assert rm.dates_text(["2026-12-01", "2026-11-30", "not recorded"]) == "2026-11-30 to 2026-12-01"
    assert rm.checkpoints_text(["model_1000.pt", "model_499.pt"]) == "model_{499, 1000}.pt"
    assert rm.checkpoints_text(["policy.pt", "model_1.pt"]) == "policy.pt, model_1.pt"


# ----------------------------------------------------------------------------- the command


def test_records_map_checks_rewrites_and_refuses_in_one_line(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text(rm.replace_section(README.read_text(), "stale\n"))
    argv = ["records", "map", "--readme", str(readme), "--results", str(README.parent)]
    assert main([*argv, "--check"]) == 1
    assert "differs from the records" in capsys.readouterr().err
    assert main(argv) == 0
    assert readme.read_text() == README.read_text()
    assert main([*argv, "--check"]) == 0
    assert "matches the records" in capsys.readouterr().out
    readme.write_text("# no markers\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("microduck records: expected one line")


# ----------------------------------------------------------------------------- the real map


def _matched(patterns) -> set[str]:
    names = rm.folders(results.results_root())
    return {n for p in patterns for n in rm.matches(p, names)}


def _page(doc: str) -> rm.ChapterRuns:
    return next(c for c in rm.CHAPTERS if c.doc == doc)


def test_every_published_folder_is_read_by_a_chapter_or_listed_as_unread():
    assert rm.coverage(results.results_root()).problems == []
    assert all(reason.strip() for reason in rm.UNREAD.values())


def test_the_readme_section_is_what_the_records_render():
    assert rm.section(README.read_text()) == rm.render(), (
        "book/results/README.md is out of date: run `microduck records map`")


def test_the_map_has_every_chapter_of_the_toc_in_order_then_the_front_page_and_the_appendix():
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    chapters = [ch["file"] for part in toc["parts"] for ch in part["chapters"]
                if ch["file"].startswith("notebooks/")]  # fmt: skip
    assert [c.doc for c in rm.CHAPTERS] == [*chapters, "book/intro", "book/appendix_tests"]
    for chapter in rm.CHAPTERS:
        if chapter.doc.startswith("notebooks/"):
            heading = next(line for line in (REPO / f"{chapter.doc}.md").read_text().splitlines()
                           if line.startswith("# "))  # fmt: skip
            assert heading == f"# {chapter.title}"
        assert chapter.runs or chapter.note, chapter.doc


def test_every_folder_a_page_names_or_globs_in_its_source_is_in_its_map():
    names = set(rm.folders(results.results_root()))
    for chapter in rm.CHAPTERS:
        source = (REPO / f"{chapter.doc}.md").read_text()
        named = {t for t in re.findall(r"[A-Za-z0-9_]+", source) if t in names}
        for pattern in re.findall(r"glob\(\"([^\"/]+)/record\.json\"\)", source):
            named |= set(rm.matches(pattern, names))
        missing = named - _matched(chapter.runs)
        assert not missing, (chapter.doc, sorted(missing))


def _folder(where: Path) -> str:
    """The folder under book/results holding a run: its own, or the summary record folding it."""
    return where.relative_to(results.results_root()).parts[0]


def test_chapters_4_and_6_read_the_runs_preset_outcomes_reads():
    root = results.results_root()
    replays = acceptance.recorded_replays(root)
    used = set()
    for task in acceptance.recorded_presets(root).values():
        if not acceptance.recorded_preset_rows(root, task):
            continue  # a recipe without protocol replays (the walkers) is no row of the table
        for ckpt in acceptance.published_checkpoints(root, task=task, retired=True):
            used.add(_folder(ckpt.path.parent))
            replay = acceptance.recorded_protocol_replay(ckpt, replays, task=task)
            if replay is not None:
                used.add(_folder(replay.where))
    for doc in ("notebooks/04_train_500", "notebooks/06_replay"):
        assert used <= _matched(_page(doc).runs), doc
    assert _matched(rm.ALL_PRESET_RUNS) <= used  # the map claims no preset run it does not use
    assert results.RECIPE_RUN_500 == f"{rm.DEFAULT_PRESET_PREFIX}_train_500"
    assert results.RECIPE_RUN_1500 == f"{rm.DEFAULT_PRESET_PREFIX}_resume_1500"


def test_the_walker_pages_read_every_folder_seed_runs_reads():
    for recipe, docs in ((recipes.WALKER, ("04_train_500", "05_resume_1500")),
                         (recipes.WALKER_NARROW, ("04_train_500",)),
                         (recipes.WALKER_HEADING, ("04_train_500",))):  # fmt: skip
        read = set()
        for run in wr.seed_runs(recipe=recipe):
            read |= {where.name for where, _ in run.stages}
            read |= {_folder(where) for _, where, _ in run.gait}
        runs = {recipes.WALKER: rm.WALKER_RUNS, recipes.WALKER_NARROW: rm.WALKER_NARROW_RUNS,
                recipes.WALKER_HEADING: rm.WALKER_HEADING_RUNS}[recipe]
        assert _matched(runs) == read
        for doc in docs:
            assert read <= _matched(_page(f"notebooks/{doc}").runs), (recipe.name, doc)


def test_the_front_page_reads_every_run_the_table_of_chapters_sums():
    front = _matched(_page("book/intro").runs)
    for chapter in ct.CHAPTERS:
        for _, folders in ct.full_time(chapter).runs:
            assert set(folders) <= front, chapter.doc
    assert ct.CI_BUILD_RECORD in front
    assert rm.VIDEO_RUN in front
    assert rm.VIDEO_RUN in (REPO / "notebooks" / "06_replay.md").read_text()


def test_a_summary_record_is_one_row_naming_the_runs_it_folds():
    frame = rm.folder_frame(results.results_root())
    sizes = {name: rm.row(name, frame)["size"] for name in (
        results.PRESET_HISTORY, results.RECIPE_REPLAYS,
        recipes.gait_history_folder(recipes.WALKER))}
    assert sizes == {results.PRESET_HISTORY: "20 replays, 8 trainings folded",
                     results.RECIPE_REPLAYS: "5 replays folded",
                     recipes.gait_history_folder(recipes.WALKER):
                         "39 gait tests folded"}  # fmt: skip
    one = records.load_record(results.results_root() / results.RECIPE_REPLAYS)
    one = one.model_copy(update={"summary": {"runs": 1, "replay_runs": 1}})
    assert tables.size_text(one) == "1 replay folded"
    assert rm.row(results.RECIPE_REPLAYS, frame)["wall time"] == "41 s"
