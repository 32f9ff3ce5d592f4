"""Executing a book's notebooks into myst-nb's execution cache, two at a time
(mjlab_microduck.jobs.execute_book), on a tiny book of sleeping notebooks: both run at once,
the cache holds what myst-nb would have written, and `jupyter-book build` then executes
nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from book_fakes import MYST_FRONT_MATTER

from mjlab_microduck.cli import main
from mjlab_microduck.jobs import book_build
from mjlab_microduck.jobs import execute_book as ex
from mjlab_microduck.runtime import provenance

BANNER = "profile=ci | backend=cpu | device=Test CPU | date=2026-12-01 10:00 UTC | commit=abc1234"
CONFIG = """title: tiny
only_build_toc_files: true
exclude_patterns: [_build, "**/.*"]
execute:
  execute_notebooks: cache
  timeout: 120
parse:
  myst_enable_extensions: [colon_fence, substitution]
sphinx:
  config:
    nb_execution_raise_on_error: true
"""
TOC = """format: jb-book
root: intro
chapters:
  - file: notebooks/01_slow
  - file: notebooks/02_quick
  - file: notebooks/03_plain
"""
NOTEBOOK = MYST_FRONT_MATTER + """
# {title}

:::{{note}}
A colon fence, so the book's own Markdown extensions are needed to read this page.
:::

```{{code-cell}} ipython3
print("{banner}")
```

```{{code-cell}} ipython3
---
tags: [remove-input]
---
import json, os, pathlib, time
from ipykernel.connect import get_connection_file
start = time.time()
# Both notebooks meet here before they sleep, so a kernel that starts late cannot make two
# notebooks that ran at once look sequential; run one after the other, the first waits 60 s.
pathlib.Path("{title}.started").touch()
while len(list(pathlib.Path().glob("*.started"))) < 2 and time.time() - start < 60:
    time.sleep(0.05)
met = len(list(pathlib.Path().glob("*.started"))) == 2
time.sleep({sleep})
{extra}
print(json.dumps({{"start": start, "end": time.time(), "cwd": os.getcwd(),
                  "omp": os.environ.get("OMP_NUM_THREADS"),
                  "transport": json.load(open(get_connection_file()))["transport"],
                  "met": met}}))
```
"""


def write_book(root: Path, extra: str = "") -> Path:
    (root / "notebooks").mkdir(parents=True)
    (root / "_config.yml").write_text(CONFIG)
    (root / "_toc.yml").write_text(TOC)
    (root / "intro.md").write_text("# Intro\n\nA plain page, no notebook.\n")
    for name, sleep, more in (("01_slow", 2, ""), ("02_quick", 1, extra)):
        (root / "notebooks" / f"{name}.md").write_text(
            NOTEBOOK.format(title=name, banner=BANNER, sleep=sleep, extra=more))  # fmt: skip
    (root / "notebooks" / "03_plain.md").write_text("# Plain\n\nNo code.\n")
    return root


def times(nb) -> dict:
    out = nb.cells[-1].outputs if hasattr(nb, "cells") else nb
    text = "".join(o.get("text", "") for o in out if o.get("output_type") == "stream")
    return json.loads(text.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    root = write_book(tmp_path_factory.mktemp("book"))
    lines: list[str] = []
    report = ex.execute(ex.ExecuteRequest(root=root, jobs=2, estimates=None), log=lines.append)
    return root, report, lines


# ----------------------------------------------------------------------------- scheduling


def test_the_longest_expected_starts_first_and_a_reader_waits_for_what_it_reads():
    pick = ex.schedule(["a", "b", "c", "d"], {"a": 10, "b": 400, "c": 60},
                       {"b": {"c"}, "d": {"cached"}})  # fmt: skip
    # b is the longest but reads c: c (60 s) starts first, then a; d's dependency is cached.
    assert pick(set(), set()) == "c"
    assert pick(set(), {"c"}) == "a"
    assert pick(set(), {"c", "a"}) == "d"
    assert pick(set(), {"c", "a", "d"}) is None  # b still waits for c
    assert pick({"c"}, {"c", "a", "d"}) == "b"


def test_notebooks_waiting_on_each_other_are_refused():
    with pytest.raises(ex.ExecuteError, match=r"wait on each other: \['a', 'b'\]"):
        ex.schedule(["a", "b", "c"], {}, {"a": {"b"}, "b": {"a"}})


def test_after_pairs_add_to_the_declared_map():
    assert ex.dependencies(["05_resume:04_train", "05_resume:03_smoke"], {"06": ("05",)}) == {
        "06": {"05"}, "05_resume": {"04_train", "03_smoke"}}  # fmt: skip


@pytest.mark.parametrize(("jobs", "cores", "threads"), [(1, 2, 0), (2, 2, 1), (2, 8, 4), (3, 2, 1)])
def test_the_cores_are_shared_out_between_the_kernels(jobs, cores, threads):
    assert ex.threads_per_kernel(jobs, cores) == threads


def test_kernels_talk_over_unix_sockets_of_their_own_where_zmq_has_them(monkeypatch, tmp_path):
    import zmq

    config = ex.kernel_config(os.path.relpath(tmp_path))
    assert config.KernelManager.transport == "ipc"
    assert config.KernelManager.ip == str(tmp_path.resolve() / "kernel")  # absolute
    monkeypatch.setattr(zmq, "has", lambda feature: feature != "ipc")
    assert "KernelManager" not in ex.kernel_config(tmp_path)  # TCP, jupyter_client's default


def test_estimates_are_a_book_build_records_seconds(tmp_path):
    assert ex.estimates_from(tmp_path / "none") == {}
    published = Path(__file__).resolve().parents[2] / "book" / "results" / "cpu_ci_book_build"
    seconds = ex.estimates_from(published)
    assert set(seconds) == {p.stem for p in (published.parents[2] / "notebooks").glob("*.md")}
    assert all(s > 0 for s in seconds.values())


# ----------------------------------------------------------------------------- executing


@pytest.mark.slow
def test_both_notebooks_run_at_once_in_their_folder_the_plain_pages_not_at_all(executed):
    root, report, lines = executed
    assert sorted(o.stem for o in report.executed) == ["01_slow", "02_quick"]
    assert report.failed == [] and report.cached == [] and report.jobs == 2
    from jupyter_cache import get_cache

    cache = get_cache(str(root / ex.DEFAULT_CACHE))
    runs = {}
    for stem in ("01_slow", "02_quick"):
        uri = str((root / "notebooks" / f"{stem}.md").resolve())
        cached = cache.get_cached_project_nb(uri)
        assert cached is not None and cached.data["execution_jobs"] == 2
        runs[stem] = times(cache.get_cache_bundle(cached.pk).nb)
        assert cached.data["execution_seconds"] >= runs[stem]["end"] - runs[stem]["start"]
        assert runs[stem]["cwd"] == str(root / "notebooks")
        assert runs[stem]["omp"] == str(ex.threads_per_kernel(2))
        # Unix sockets: kernels starting at once cannot take each other's TCP ports.
        assert runs[stem]["transport"] == "ipc"
    slow, quick = runs["01_slow"], runs["02_quick"]
    assert slow["met"] and quick["met"], "one notebook ran without the other"
    assert slow["start"] < quick["end"] and quick["start"] < slow["end"], "they did not overlap"
    assert lines[0].startswith("execute: 2 of 2 notebooks to run, 2 at a time")


@pytest.mark.slow
def test_the_build_record_reads_the_cache_it_filled(executed, monkeypatch):
    root, report, _ = executed
    monkeypatch.setattr(provenance, "cpu_model", lambda: "Test CPU")
    chapters = [root / "notebooks" / f"{s}.md" for s in ("01_slow", "02_quick")]
    record = book_build.build_record(book_build.read_build(root / ex.DEFAULT_CACHE, chapters))
    by_stem = {o.stem: o.seconds for o in report.executed}
    assert record.summary["seconds.01_slow"] == pytest.approx(by_stem["01_slow"], abs=0.01)
    assert record.summary["execution_jobs"] == 2 and record.config["execution_jobs"] == 2
    assert any("2 at a time" in note for note in record.provenance.notes)


@pytest.mark.slow
def test_a_second_pass_finds_everything_cached_and_runs_nothing(executed):
    root, _, _ = executed
    again = ex.execute(ex.ExecuteRequest(root=root, jobs=2, estimates=None), log=lambda _: None)
    assert again.executed == [] and sorted(again.cached) == ["01_slow", "02_quick"]


@pytest.mark.slow
def test_jupyter_book_build_then_executes_none_of_them(executed):
    root, _, _ = executed
    jb = Path(sys.executable).with_name("jupyter-book")
    proc = subprocess.run([str(jb), "build", str(root), "-W", "-n", "--keep-going"],
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert log.count("Using cached notebook") == 2, log[-3000:]
    assert "Executing notebook" not in log
    assert BANNER in (root / "_build" / "html" / "notebooks" / "01_slow.html").read_text()


@pytest.mark.slow
def test_a_failing_notebook_is_recorded_failed_and_the_others_still_run(tmp_path, capsys):
    root = write_book(tmp_path / "book", extra="raise RuntimeError('boom in 02')")
    assert main(["execute-book", "--root", str(root), "--jobs", "2", "--estimates", "None"]) == 1
    out, err = capsys.readouterr()
    assert "execute: 02_quick FAILED" in out and "RuntimeError" in out and "boom in 02" in out
    assert err.strip() == ("microduck execute-book: 02_quick failed; the build stops before "
                           "the HTML")  # fmt: skip
    from jupyter_cache import get_cache

    cache = get_cache(str(root / ex.DEFAULT_CACHE))
    failed = str((root / "notebooks" / "02_quick.md").resolve())
    assert "boom in 02" in cache.get_project_record(failed).traceback
    assert cache.get_cached_project_nb(failed) is None
    assert cache.get_cached_project_nb(str((root / "notebooks" / "01_slow.md").resolve()))


# A hidden cell binding a name, then a shown cell reading it: the whole notebook runs, but a
# reader who types the shown cells gets a NameError.
HIDDEN_THEN_SHOWN = """
```{code-cell} ipython3
---
tags: [remove-cell]
---
answer_from_a_hidden_cell = 42
```

```{code-cell} ipython3
print(answer_from_a_hidden_cell)
```
"""


def test_shown_cells_are_the_code_cells_a_reader_can_read_folded_or_not():
    import nbformat

    cells = [nbformat.v4.new_code_cell("a = 1", metadata={"tags": ["remove-input"]}),
             nbformat.v4.new_markdown_cell("text"),
             nbformat.v4.new_code_cell("b = a", metadata={"tags": ["hide-output"]}),
             nbformat.v4.new_code_cell("c = b", metadata={"tags": ["hide-cell"]}),
             nbformat.v4.new_code_cell("d = 2")]  # fmt: skip
    nb = nbformat.v4.new_notebook(cells=cells)
    assert [c.source for c in ex.shown_cells(nb).cells] == ["b = a", "c = b", "d = 2"]
    assert len(nb.cells) == 5  # a copy: the notebook itself is left whole


@pytest.mark.slow
def test_shown_only_runs_what_a_reader_types_and_leaves_the_cache_alone(tmp_path, capsys):
    root = write_book(tmp_path / "book")
    quick = root / "notebooks" / "02_quick.md"
    quick.write_text(quick.read_text() + HIDDEN_THEN_SHOWN)
    args = ["execute-book", "--root", str(root), "--shown-only", "--estimates", "None"]
    assert main(args) == 1
    out, err = capsys.readouterr()
    assert "execute: 01_slow done" in out
    assert "execute: 02_quick FAILED" in out and "NameError" in out
    assert "answer_from_a_hidden_cell" in out
    assert err.strip() == ("microduck execute-book: 02_quick failed; its shown cells do not run "
                           "alone")  # fmt: skip
    assert not (root / ex.DEFAULT_CACHE).exists()
    # Run whole, the same notebook passes: the hidden cell binds the name first.
    report = ex.execute(ex.ExecuteRequest(root=root, jobs=2, estimates=None), log=lambda _: None)
    assert report.failed == [] and len(report.executed) == 2


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--jobs", "0"], "--jobs must be at least 1, not 0"),
        (["--after", "05_resume"], "--after takes NOTEBOOK:READS (two stems), not '05_resume'"),
        (["--after", "01_slow:04_missing"], "--after names no notebook of the book: 04_missing"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_creates_no_cache(tmp_path, capsys, args, message):
    root = write_book(tmp_path / "book")
    assert main(["execute-book", "--root", str(root), *args]) == 2
    _, err = capsys.readouterr()
    assert err == f"microduck execute-book: {message}\n"
    assert not (root / "_build").exists()


def test_a_folder_without_a_toc_is_refused(tmp_path, capsys):
    assert main(["execute-book", "--root", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"microduck execute-book: {tmp_path}: no _toc.yml; give the book's folder as --root\n"
    )
    assert list(tmp_path.iterdir()) == []
