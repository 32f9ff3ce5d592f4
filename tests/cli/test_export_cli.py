"""``microduck export`` and ``microduck records drive-export``: their options, and refusals
(one line on stderr, exit status 2, nothing created) before any environment is built."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mjlab_microduck.cli import COMMANDS, usage
from mjlab_microduck.cli import main as microduck
from mjlab_microduck.jobs import export

REPO = Path(__file__).resolve().parents[2]
CHECKPOINT = REPO / "book" / "results" / "h200_walker_heading_main_s42" / "model_999.pt"


@pytest.fixture
def no_export(monkeypatch):
    def refuse_to_run(*args, **kwargs):
        raise AssertionError("the export ran")

    monkeypatch.setattr(export, "run", refuse_to_run)


def test_export_is_a_listed_command():
    assert COMMANDS["export"][0] == "mjlab_microduck.cli.export:main"
    assert "  export " in usage()


@pytest.mark.parametrize("argv, message", [
    ([], "missing required argument"),
    (["missing.pt"], "checkpoint missing.pt: no such file"),
    ([str(CHECKPOINT), "--name", "no spaces"], "run name 'no spaces'"),
    ([str(CHECKPOINT), "--bogus"], "bogus"),
])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path, no_export):
    assert microduck(["export", *argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("microduck export: ") and message in err
    assert not (tmp_path / "out").exists()


def test_export_help_names_the_options(capsys):
    with pytest.raises(SystemExit) as done:
        microduck(["export", "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    for option in ("CHECKPOINT", "--task", "--out", "--name"):
        assert option in text


def test_drive_export_copies_the_published_export(tmp_path, capsys):
    dest = tmp_path / "export"
    assert microduck(["records", "drive-export", str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == [
        "about.json", "policy.onnx", "scene.xml", "spec.json"]  # fmt: skip
    about = json.loads((dest / "about.json").read_text())
    published = REPO / "book" / "results" / "cpu_export_walker_heading_s42_model_999"
    if not (REPO / "book" / "results" / "walker.json").exists():
        assert about["walker"] is False and about["label"].endswith("(not a walker yet)")
        assert about["published"] is True
        assert (dest / "policy.onnx").read_bytes() == (published / "policy.onnx").read_bytes()
    mtime = (dest / "spec.json").stat().st_mtime_ns
    assert microduck(["records", "drive-export", str(dest)]) == 0  # unchanged: not rewritten
    assert (dest / "spec.json").stat().st_mtime_ns == mtime
    assert "drive-export" not in capsys.readouterr().err


def test_drive_export_refuses_a_walker_json_naming_no_file(tmp_path, capsys):
    results = tmp_path / "results"
    results.mkdir()
    (results / "walker.json").write_text(json.dumps({"checkpoint": "nowhere/model_1.pt"}))
    dest = tmp_path / "export"
    assert microduck(["records", "drive-export", str(dest), "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere/model_1.pt is not there" in err
    assert not dest.exists()
