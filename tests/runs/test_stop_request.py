"""Asking a training to stop because it reached its goal (``runs.stop_request``).

What this proves: a running run on this host gets the request file and SIGTERM (a real child
process here); one whose process is gone, or that runs on another host, gets the file only, and
the line says so; a run that has ended gets nothing; a missing or damaged request reads as None.
How the training driver ends on a request is tested in tests/jobs/test_train_stopping.py.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys

import run_fakes

from mjlab_microduck.runs import records, stop_request


def _running(tmp_path, host: str, pid: int):
    process = records.RunProcess(host=host, pid=pid, heartbeat_at=records.utc_now_iso())
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    records.write_record(run_fakes.record(status="running", process=process), run_dir)
    return run_dir


def test_a_running_training_here_gets_the_request_and_sigterm(tmp_path):
    trainer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        run_dir = _running(tmp_path, socket.gethostname(), trainer.pid)
        line = stop_request.request_stop(run_dir, "model_500  passed\nthe gait test", by="me")
        assert trainer.wait(timeout=10) == -signal.SIGTERM
    finally:
        trainer.kill()
    assert line == (f"run: asked to stop (SIGTERM to process {trainer.pid}): "
                    "model_500 passed the gait test")
    asked = stop_request.read(run_dir)
    assert (asked.reason, asked.by) == ("model_500 passed the gait test", "me")
    assert asked.at.endswith("+00:00")


def test_a_gone_process_or_another_host_gets_the_file_only(tmp_path):
    pid = run_fakes.dead_pid()
    gone = _running(tmp_path, socket.gethostname(), pid)
    assert stop_request.request_stop(gone, "why", by="me") == (
        f"run: asked to stop, but its process {pid} is gone")
    assert stop_request.read(gone).reason == "why"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    far = _running(elsewhere, "another-host", 1)
    line = stop_request.request_stop(far, "why", by="me")
    assert "its process on another-host is not signalled from here" in line
    assert stop_request.read(far).by == "me"


def test_an_ended_run_gets_nothing(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    records.write_record(run_fakes.record(status="ok"), run_dir)
    assert stop_request.request_stop(run_dir, "why", by="me") == (
        "run: not stopped, it has already ended (ok)")
    assert not (run_dir / stop_request.FILENAME).exists()


def test_no_request_or_a_damaged_one_reads_as_none(tmp_path):
    assert stop_request.read(tmp_path) is None
    (tmp_path / stop_request.FILENAME).write_text("{not json")
    assert stop_request.read(tmp_path) is None
    (tmp_path / stop_request.FILENAME).write_text(json.dumps({"reason": "why"}))
    assert stop_request.read(tmp_path) is None
