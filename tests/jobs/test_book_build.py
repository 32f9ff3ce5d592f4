"""Recording a book build's chapter times (mjlab_microduck.jobs.book_build) from a fixture
execution cache made with jupyter-cache's own API, as myst-nb fills it during a build."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import nbformat as nbf
import pytest
from book_fakes import MYST_FRONT_MATTER

from mjlab_microduck.cli import main
from mjlab_microduck.jobs import book_build
from mjlab_microduck.runs import records
from mjlab_microduck.runtime import provenance

CPU = "Test CPU 9000"
JUPYTEXT = {"name": "jupytext", "type": "plugin"}
HEADER = MYST_FRONT_MATTER + """
# {title}

```{{code-cell}} ipython3
print("banner of {title}")
```
"""


def banner(profile: str = "ci", backend: str = "cpu", device: str = CPU,
           commit: str = "abc1234") -> str:  # fmt: skip
    return (f"profile={profile} | backend={backend} | device={device} | "
            f"date=2026-12-01 10:00 UTC | commit={commit}\n")  # fmt: skip


def make_chapter(folder: Path, name: str) -> Path:
    path = folder / f"{name}.md"
    path.write_text(HEADER.format(title=name))
    return path


def cache_execution(cache_dir: Path, path: Path, seconds: float | None, text: str) -> None:
    """What myst-nb does after executing ``path``: the notebook with outputs, and its time."""
    import jupytext
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    cache = get_cache(str(cache_dir))
    cache.add_nb_to_project(str(path), read_data=JUPYTEXT)
    nb = jupytext.read(path)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [nbf.v4.new_output("stream", name="stdout", text=text)]
    data = {} if seconds is None else {"execution_seconds": seconds}
    cache.cache_notebook_bundle(CacheBundleIn(nb, str(path.resolve()), data=data),
                                check_validity=False, overwrite=True)  # fmt: skip


@pytest.fixture
def build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(provenance, "cpu_model", lambda: CPU)
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    cache = tmp_path / "_build" / ".jupyter_cache"
    chapters = [make_chapter(notebooks, n) for n in ("01_setup", "02_compat")]
    for path, seconds in zip(chapters, (20.07, 35.05), strict=True):
        cache_execution(cache, path, seconds, banner())
    return tmp_path, cache, chapters


def test_parse_banner_reads_every_field():
    fields = book_build.parse_banner("noise\n" + banner(backend="cuda 13.0", device="NVIDIA H200"))
    assert fields == {"profile": "ci", "backend": "cuda 13.0", "device": "NVIDIA H200",
                      "date": "2026-12-01 10:00 UTC", "commit": "abc1234"}  # fmt: skip
    assert book_build.parse_banner("no banner here") is None


def test_read_build_returns_each_chapter_with_its_time_and_banner(build):
    _, cache, chapters = build
    runs = book_build.read_build(cache, chapters)
    assert [(r.chapter, r.seconds) for r in runs] == [("01_setup", 20.07), ("02_compat", 35.05)]
    assert {(r.profile, r.backend, r.device, r.commit) for r in runs} == {
        ("ci", "cpu", CPU, "abc1234")}
    assert all(r.finished.tzinfo is not None for r in runs)


def test_build_record_sums_the_chapters_and_keeps_the_provenance(build):
    _, cache, chapters = build
    runs = book_build.read_build(cache, chapters)
    now = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.timezone.utc)
    record = book_build.build_record(runs, cores=2, now=now)
    assert record.kind == "book_build" and record.status == "ok"
    assert record.summary["seconds.01_setup"] == 20.07
    assert record.summary["seconds.02_compat"] == 35.05
    assert record.summary["seconds_total"] == pytest.approx(20.07 + 35.05)
    assert record.wall_seconds == pytest.approx(20.07 + 35.05)
    assert record.config["cpu_cores"] == 2 and record.config["profile"] == "ci"
    assert record.config["chapters"] == ["01_setup", "02_compat"]
    prov = record.provenance
    assert (prov.backend, prov.device_name, prov.profile) == ("cpu", CPU, "ci")
    assert prov.machine_label == f"2-core {CPU}, CPU only"
    assert prov.git_commit == "abc1234"  # no repository given: the banner's commit as is
    assert prov.date == now.isoformat(timespec="seconds")
    start = dt.datetime.fromisoformat(record.started_at)
    end = dt.datetime.fromisoformat(record.finished_at)
    assert start <= end and record.run_id.endswith("_ci_book_build")


def test_record_build_writes_a_valid_record(build):
    tmp, cache, chapters = build
    book_build.record_build(cache, chapters, tmp / "out")
    assert (tmp / "out" / records.RECORD_FILENAME).is_file()
    loaded = records.load_record(tmp / "out")
    assert loaded.kind == "book_build" and loaded.summary["chapters"] == 2


@pytest.mark.parametrize(("text", "every", "message"), [
    (banner(profile="full"), True, "in the full profile, not ci"),
    (banner(backend="cuda 13.0"), True, "only CPU builds"),
    (banner(device="Another CPU"), True, "this machine is"),
    (banner(commit="fff0000"), False, "different commits"),
    (banner(profile="full"), False, "different profiles"),
    ("no banner\n", False, "printed no banner"),
])  # fmt: skip
def test_a_build_that_cannot_back_a_ci_measurement_is_refused(build, text, every, message):
    _, cache, chapters = build
    for path in chapters if every else chapters[1:]:
        cache_execution(cache, path, 35.05, text)
    with pytest.raises(book_build.BuildRecordError, match=message):
        book_build.build_record(book_build.read_build(cache, chapters))


def test_a_chapter_without_a_matching_execution_is_refused(build):
    tmp, cache, chapters = build
    with pytest.raises(book_build.BuildRecordError, match="never executed"):
        book_build.read_build(cache, [*chapters, make_chapter(tmp / "notebooks", "03_new")])
    chapters[0].write_text(chapters[0].read_text().replace("banner of", "changed code of"))
    with pytest.raises(book_build.BuildRecordError, match="matches its current code"):
        book_build.read_build(cache, chapters)
    with pytest.raises(book_build.BuildRecordError, match="no execution cache"):
        book_build.read_build(tmp / "nowhere", chapters)


def test_a_cached_execution_without_a_time_is_refused(build):
    _, cache, chapters = build
    cache_execution(cache, chapters[0], None, banner())
    with pytest.raises(book_build.BuildRecordError, match="no execution time"):
        book_build.read_build(cache, chapters)


def test_cli_records_chapter_times(build, capsys):
    tmp, cache, _ = build
    out = tmp / "book" / "results" / "cpu_ci_book_build"
    argv = ["records", "chapter-times", str(out), "--cache", str(cache),
            "--notebooks", str(tmp / "notebooks")]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "01_setup: 20.1 s" in printed and "02_compat: 35.0 s" in printed
    assert (out / records.RECORD_FILENAME).is_file()
    assert records.load_record(out).summary["seconds.02_compat"] == 35.05


def test_cli_records_chapter_times_refuses_in_one_line(build, capsys):
    tmp, cache, chapters = build
    cache_execution(cache, chapters[1], 35.05, banner(profile="full"))
    argv = ["records", "chapter-times", str(tmp / "out"), "--cache", str(cache),
            "--notebooks", str(tmp / "notebooks")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("microduck records: ")
    assert not (tmp / "out").exists()
