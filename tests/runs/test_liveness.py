"""Running records (mjlab_microduck.runs.liveness): the heartbeat, and the stale verdict.

What this proves: a running record on its own host whose process is gone is stale; a live
process with a fresh heartbeat is not, with an old one it is; on another host only the
heartbeat counts; a record without a heartbeat is judged by its start; a finished record is
never stale. The heartbeat thread rewrites the record with progress, survives a failing
progress callback, and stops for good when its block ends.
"""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest
import run_fakes

from mjlab_microduck.runs import liveness, records

NOW = dt.datetime(2026, 1, 2, 4, 0, 0, tzinfo=dt.timezone.utc)
HOST = "thishost"


def running(pid: int | None, heartbeat: str = "2026-01-02T03:59:00+00:00", host: str = HOST):
    process = records.RunProcess(host=host, pid=pid, heartbeat_at=heartbeat) if pid else None
    return run_fakes.record(status="running", process=process,
                            started_at="2026-01-02T03:00:00+00:00")  # fmt: skip


def reason(record, limit_s: float = 600.0):
    return liveness.stale_reason(record, limit_s, now=NOW, host=HOST)


def test_a_process_that_is_gone_on_this_host_is_stale_at_once():
    pid = run_fakes.dead_pid()
    assert reason(running(pid)) == f"process {pid} on {HOST} is gone"


def test_a_live_process_is_stale_only_when_its_heartbeat_is_older_than_the_limit():
    me = os.getpid()
    assert reason(running(me)) is None  # 60 s old, limit 600 s
    assert reason(running(me), limit_s=30.0) == (
        "no heartbeat for 60 s (last sign of life: its heartbeat at 2026-01-02T03:59:00+00:00)"
    )


def test_on_another_host_only_the_heartbeat_counts():
    gone = run_fakes.dead_pid()
    assert reason(running(gone, host="elsewhere")) is None
    old = running(gone, host="elsewhere", heartbeat="2026-01-02T03:30:00+00:00")
    assert reason(old).startswith("no heartbeat for 1800 s")


def test_a_record_without_a_heartbeat_is_judged_by_its_start():
    assert reason(running(None)) == (
        "no heartbeat for 3600 s (last sign of life: its start at 2026-01-02T03:00:00+00:00)"
    )
    assert reason(running(None), limit_s=7200.0) is None


@pytest.mark.parametrize("status", ["ok", "failed", "interrupted"])
def test_a_finished_record_is_never_stale(status):
    extra = {"error": "why"} if status != "ok" else {}
    done = run_fakes.record(
        status=status,
        process=records.RunProcess(
            host=HOST, pid=run_fakes.dead_pid(), heartbeat_at="2000-01-01T00:00:00+00:00"
        ),
        **extra,
    )
    assert reason(done) is None


def test_heartbeat_interval_comes_from_the_environment_when_it_is_a_positive_number(monkeypatch):
    for value, expected in (("2.5", 2.5), ("0", 60.0), ("-1", 60.0), ("soon", 60.0)):
        monkeypatch.setenv(liveness.HEARTBEAT_ENV, value)
        assert liveness.heartbeat_interval() == expected
    monkeypatch.delenv(liveness.HEARTBEAT_ENV)
    assert liveness.heartbeat_interval() == liveness.HEARTBEAT_S == 60.0


def test_the_heartbeat_rewrites_the_record_with_progress_and_stops_with_its_block(tmp_path):
    record = running(os.getpid(), heartbeat="2026-01-02T03:00:00+00:00")
    records.write_record(record, tmp_path)
    beats = []

    def progress():
        beats.append(len(beats))
        if len(beats) == 2:
            raise RuntimeError("progress is a nicety")
        return {"last_checkpoint": f"model_{len(beats)}.pt"}

    with liveness.Heartbeat(record, tmp_path, interval_s=0.05, progress=progress):
        deadline = time.monotonic() + 10
        while len(beats) < 4 and time.monotonic() < deadline:
            time.sleep(0.02)
    assert len(beats) >= 4, "the heartbeat stopped after a failing progress call"
    on_disk = records.load_record(tmp_path)
    assert on_disk.status == "running" and on_disk.process.pid == os.getpid()
    assert on_disk.process.heartbeat_at > "2026-01-02T03:00:00+00:00"
    assert on_disk.summary["last_checkpoint"] == f"model_{len(beats)}.pt"
    text, count = (tmp_path / records.RECORD_FILENAME).read_text(), len(beats)
    time.sleep(0.3)
    assert len(beats) == count and (tmp_path / records.RECORD_FILENAME).read_text() == text


def test_this_process_names_this_host_and_pid():
    import socket

    me = liveness.this_process()
    assert (me.host, me.pid) == (socket.gethostname(), os.getpid())
    assert dt.datetime.fromisoformat(me.heartbeat_at).tzinfo is not None
