"""``microduck records``: its refusals, the stale verdict of ``verify`` and ``verify --fix``.

What this proves, on run folders written by hand (tests/run_fakes.py):

* a catalogue of bad input to every subcommand (missing or wrong paths, runs that cannot be
  published: running, stale, interrupted, failed, of another kind; a taken or impossible
  destination; a checkpoint the run never saved; an output that cannot be written; unknown
  options) is one line on stderr, exit status 2, and creates nothing;
* ``publish`` names its two positionals RUN and DEST in its help and its errors;
* ``verify`` answers ``ok`` for a live running record, ``stale`` (exit 1) for one whose process
  is gone, and ``--fix`` turns the latter into an ``interrupted`` record that verifies;
* the issue's two tracebacks are gone from the installed command (a real subprocess).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import run_fakes

from mjlab_microduck.cli import main as microduck
from mjlab_microduck.runs import records

SRC = Path(__file__).resolve().parents[2] / "codes" / "practices" / "amd" / "microduck-rl" / "src"
PREFIX = "microduck records: "


def _process(pid: int, heartbeat: str | None = None) -> records.RunProcess:
    return records.RunProcess(host=os.uname().nodename, pid=pid,
                              heartbeat_at=heartbeat or records.utc_now_iso())  # fmt: skip


@pytest.fixture
def world(tmp_path) -> Path:
    """Run folders of every status under ``tmp_path/runs``, an existing destination, an empty
    folder and a record that is not JSON."""
    runs = tmp_path / "runs"
    summary = {"checkpoints": "model_0.pt,model_5.pt", "last_checkpoint": "model_5.pt"}
    run_fakes.train_run(runs, "ok", summary=summary)
    run_fakes.train_run(runs, "running", status="running", started_at=records.utc_now_iso(),
                        process=_process(os.getpid()))  # fmt: skip
    run_fakes.train_run(runs, "stale", status="running", process=_process(run_fakes.dead_pid()))
    run_fakes.train_run(runs, "interrupted", status="interrupted", signal="SIGTERM",
                        error="interrupted by SIGTERM at iteration 6")  # fmt: skip
    run_fakes.train_run(runs, "failed", status="failed", error="boom")
    records.write_record(run_fakes.record(run_id="replay", kind="replay"), runs / "replay")
    (runs / "broken").mkdir()
    (runs / "broken" / records.RECORD_FILENAME).write_text("{not json")
    (tmp_path / "empty").mkdir()
    (tmp_path / "book" / "taken").mkdir(parents=True)
    return tmp_path


BAD = [
    ([], "Expected one of {schema, validate, verify, publish, chapter-times, ci-run, map, "
         "drive-export, fold, fold-gait, join-folds, retire, collect}."),
    (["frobnicate"], "Unrecognized options: frobnicate"),
    (["validate"], "give at least one record file or run folder"),
    (["validate", "{t}/runs/ok", "{t}/missing"], "{t}/missing: no record there"),
    (["verify", "{t}/empty"], "{t}/empty: no record there (a record.json, or a run folder"),
    (["verify", "--stale-after", "0", "{t}/runs/ok"], "--stale-after 0.0: must be more than 0"),
    (["verify", "--bogus", "{t}/runs/ok"], "Unrecognized options: --bogus"),
    (["publish"], "missing required arguments: RUN, DEST"),
    (["publish", "{t}/runs/ok"], "missing required argument: DEST"),
    (["publish", "{t}/missing", "{t}/book/new"], "{t}/missing: no such record file"),
    (["publish", "{t}/runs/broken", "{t}/book/new"], "record.json: not valid JSON"),
    (["publish", "{t}/runs/running", "{t}/book/new"],
     "{t}/runs/running: the run is still running, only finished (ok) runs are published; "
     "wait for it to finish"),
    (["publish", "{t}/runs/stale", "{t}/book/new"],
     "{t}/runs/stale: the run is still running, only finished (ok) runs are published; stale "
     "(process"),
    (["publish", "{t}/runs/interrupted", "{t}/book/new"],
     "the run was interrupted, only finished (ok) runs are published; `microduck train "
     "--resume-from {t}/runs/interrupted` continues it"),
    (["publish", "{t}/runs/failed", "{t}/book/new"],
     "{t}/runs/failed: the run is failed, only finished (ok) runs are published"),
    (["publish", "{t}/runs/replay", "{t}/book/new"], "a replay run is not published this way"),
    (["publish", "{t}/runs/ok", "{t}/book/taken"], "{t}/book/taken: already exists"),
    (["publish", "{t}/runs/ok", "{t}/nowhere/new"], "{t}/nowhere: no such folder to publish"),
    (["publish", "{t}/runs/ok", "{t}/book/new", "--checkpoints", "7"],
     "no checkpoint model_7.pt in the run (it saved model_0.pt, model_5.pt)"),
    (["schema", "--output", "/proc/nope/schema.json"], "no such folder /proc/nope"),
    (["schema", "--output", "/proc/schema.json"], "--output /proc/schema.json: cannot write"),
    (["schema", "--output", "{t}/no/such/schema.json"], "no such folder {t}/no/such"),
    (["schema", "--output", "{t}/empty"], "--output {t}/empty: a folder; give the file"),
    (["map", "--readme", "{t}/missing.md"], "No such file or directory"),
    (["chapter-times", "{t}/out", "--notebooks", "{t}/empty"], "{t}/empty: no chapter"),
    (["fold", "{t}/runs/ok"], "give the run folders to fold, then the folder to write"),
    (["fold", "{t}/runs/ok", "{t}/book/taken"], "{t}/book/taken: already exists"),
    (["fold", "{t}/runs/ok", "{t}/nowhere/new"], "{t}/nowhere: no such folder to write"),
    (["fold", "{t}/runs/ok", "{t}/runs/ok", "{t}/book/new"], "ok: given twice"),
    (["fold", "{t}/runs/failed", "{t}/book/new"], "run status is failed; only ok runs"),
    (["fold", "{t}/runs/broken", "{t}/book/new"], "record.json: not valid JSON"),
    (["fold", "{t}/runs/ok", "{t}/book/new", "--keep", "ok"], "add --retire"),
    (["fold", "{t}/runs/ok", "{t}/book/new", "--retire", "--keep", "other"],
     "--keep other: not among the runs to fold"),
    (["fold-gait", "{t}/runs/ok", "{t}/book/new"], "a train record, not a gait_test run"),
    (["join-folds", "{t}/runs/ok", "{t}/runs/failed", "{t}/book/new"],
     "{t}/runs/ok: a train record, not a summary record to join"),
    (["retire", "{t}/runs/ok", "model_5.pt"], "say why the files are retired"),
    (["retire", "{t}/runs/ok", "model_5.pt", "--why", "unread"],
     "no artifact model_5.pt in its record"),
    (["retire", "{t}/missing", "model_5.pt", "--why", "unread"], "no such record file"),
]  # fmt: skip


def _tree(root: Path) -> list[tuple[str, bytes]]:
    return sorted((str(p), p.read_bytes() if p.is_file() else b"") for p in root.rglob("*"))


@pytest.mark.parametrize(("argv", "fragment"), BAD, ids=[" ".join(a[:2]) or "-" for a, _ in BAD])
def test_bad_input_is_one_line_exit_2_and_creates_nothing(world, capsys, argv, fragment):
    before = _tree(world)
    argv = [a.replace("{t}", str(world)) for a in argv]
    assert microduck(["records", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith(PREFIX)
    assert fragment.replace("{t}", str(world)) in err
    assert _tree(world) == before


def test_publish_names_its_positionals_run_and_dest(capsys):
    with pytest.raises(SystemExit) as exit_:
        microduck(["records", "publish", "--help"])
    assert exit_.value.code == 0
    help_text = capsys.readouterr().out
    assert help_text.startswith("usage: microduck records publish [-h] RUN DEST")
    assert "the run folder to publish" in help_text and "the folder to publish it as" in help_text


def test_verify_tells_a_live_run_from_a_stale_one_and_fix_closes_the_stale_one(world, capsys):
    runs = world / "runs"
    assert microduck(["records", "verify", str(runs / "running"), str(runs / "ok")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{runs / 'running' / 'record.json'}: ok (train, running)",
        f"{runs / 'ok' / 'record.json'}: ok (train, ok)",
    ]
    stale = records.load_record(runs / "stale")
    assert microduck(["records", "verify", str(runs / "stale"), str(runs / "ok")]) == 1
    out, err = capsys.readouterr()
    assert err == (
        f"{runs / 'stale' / 'record.json'}: stale (train, running): process {stale.process.pid} "
        f"on {stale.process.host} is gone; `microduck records verify --fix` marks it interrupted\n"
    )
    assert records.load_record(runs / "stale") == stale  # without --fix nothing is written

    assert microduck(["records", "verify", "--fix", str(runs / "stale")]) == 0
    fixed = records.load_record(runs / "stale")
    assert capsys.readouterr().out == (
        f"{runs / 'stale' / 'record.json'}: fixed (train, stale -> interrupted): {fixed.error}\n"
    )
    assert (fixed.status, fixed.signal, fixed.summary["last_checkpoint"]) == (
        "interrupted", None, "model_5.pt")  # fmt: skip
    assert microduck(["records", "verify", str(runs / "stale")]) == 0
    assert capsys.readouterr().out.endswith("ok (train, interrupted)\n")


def test_verify_stale_after_judges_an_old_heartbeat(world, capsys):
    runs = world / "runs"
    old = records.load_record(runs / "running").model_copy(
        update={"process": _process(os.getpid(), "2026-01-02T03:04:05+00:00")})  # fmt: skip
    records.write_record(old, runs / "running")
    assert microduck(["records", "verify", str(runs / "running")]) == 1
    assert "stale (train, running): no heartbeat for " in capsys.readouterr().err
    assert microduck(["records", "verify", "--stale-after", "1e12", str(runs / "running")]) == 0


@pytest.mark.parametrize(("argv", "line"), [
    (["publish", "{t}/runs/running", "{t}/book/new"], "the run is still running"),
    (["schema", "--output", "/proc/nope/schema.json"], "no such folder /proc/nope"),
])  # fmt: skip
def test_the_installed_command_refuses_without_a_traceback(world, argv, line):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    code = "from mjlab_microduck.cli import console_main; console_main()"
    argv = [a.replace("{t}", str(world)) for a in argv]
    proc = subprocess.run([sys.executable, "-c", code, "records", *argv], capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip
    assert proc.returncode == 2
    (only,) = proc.stderr.splitlines()
    assert only.startswith(PREFIX) and line in only and "Traceback" not in proc.stderr


def test_a_stale_run_that_cannot_be_rewritten_is_reported_not_raised(world, capsys, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(records.os, "replace", full_disk)
    stale = world / "runs" / "stale"
    before = records.load_record(stale)
    assert microduck(["records", "verify", "--fix", str(stale)]) == 1
    assert capsys.readouterr().err == (
        f"{stale / 'record.json'}: stale, and cannot be fixed: OSError: [Errno 28] No space left "
        "on device\n"
    )
    assert records.load_record(stale) == before


def test_fold_gait_retires_the_folded_folders_but_those_kept(tmp_path, capsys):
    import shutil

    published = Path(__file__).resolve().parents[2] / "book" / "results"
    gait = published / "h200_walker_gait_s42_model_550"
    # the same test under two names: a recipe's per-checkpoint tests, as gait-watch leaves them
    for it in (550, 600):
        shutil.copytree(gait, tmp_path / f"h200_x_gait_s42_model_{it}")
    sources = [str(tmp_path / f"h200_x_gait_s42_model_{it}") for it in (550, 600)]
    dest = tmp_path / "h200_x_gait_history"
    argv = ["records", "fold-gait", *sources, str(dest), "--retire", "--keep",
            "h200_x_gait_s42_model_550"]  # fmt: skip
    assert microduck(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"folded: {dest / 'record.json'} (2 runs)",
                   "retired: 1 run folders; kept h200_x_gait_s42_model_550"]  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["h200_x_gait_history",
                                                          "h200_x_gait_s42_model_550"]
    record = records.load_record(dest)
    assert record.command[:3] == ["microduck", "records", "fold-gait"]
    assert record.config["sources"] == ["h200_x_gait_s42_model_550", "h200_x_gait_s42_model_600"]
    assert microduck(["records", "verify", str(dest)]) == 0


def test_join_folds_makes_one_summary_and_retires_the_joined(tmp_path, capsys):
    import shutil

    published = Path(__file__).resolve().parents[2] / "book" / "results"
    gait = published / "h200_walker_gait_s42_model_550"
    for seed in (42, 43):  # one recipe's two trainings, each folded where it ran
        shutil.copytree(gait, tmp_path / f"h200_x_gait_s{seed}_model_550")
        assert microduck(["records", "fold-gait", "--retire",
                          str(tmp_path / f"h200_x_gait_s{seed}_model_550"),
                          str(tmp_path / f"s{seed}")]) == 0  # fmt: skip
    capsys.readouterr()
    dest = tmp_path / "h200_x_gait_history"
    assert microduck(["records", "join-folds", str(tmp_path / "s42")]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "give at least two summary records to join, then the folder to write")
    argv = ["records", "join-folds", str(tmp_path / "s42"), str(tmp_path / "s43"), str(dest),
            "--retire"]  # fmt: skip
    assert microduck(argv) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"joined: {dest / 'record.json'} (2 runs from 2 summary records)",
        "retired: 2 summary folders"]  # fmt: skip
    assert [p.name for p in tmp_path.iterdir()] == ["h200_x_gait_history"]
    record = records.load_record(dest)
    assert record.command[:3] == ["microduck", "records", "join-folds"]
    assert record.config["sources"] == ["h200_x_gait_s42_model_550", "h200_x_gait_s43_model_550"]
    assert microduck(["records", "verify", str(dest)]) == 0


def test_retire_removes_a_file_and_names_it_in_the_record(tmp_path, capsys):
    where = tmp_path / "run"
    where.mkdir()
    (where / "model_5.pt").write_bytes(b"weights")
    art = records.artifact(where / "model_5.pt", where, "checkpoint")
    records.write_record(run_fakes.record(artifacts=[art]), where)
    argv = ["records", "retire", str(where), "model_5.pt", "--why", "no page replays it"]
    assert microduck(argv) == 0
    assert capsys.readouterr().out == f"{where}: retired model_5.pt\n"
    record = records.load_record(where)
    assert record.artifacts == [] and not (where / "model_5.pt").exists()
    assert f"model_5.pt (7 bytes, sha256 {art.sha256})" in record.notes
    assert "(no page replays it)" in record.notes
