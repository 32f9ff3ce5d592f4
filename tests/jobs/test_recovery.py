"""Closing a stale record from what is on disk (mjlab_microduck.jobs.recovery).

What this proves: a stale training record becomes ``interrupted`` with no signal, ending at the
run folder's last change, with the last checkpoint and the last iteration ``train.log``
reported, and ``train.log`` listed with its checksum; a stale bench record is closed without
training facts; a live run is left exactly as it was, and nothing is written.
"""

from __future__ import annotations

import datetime as dt
import os

import run_fakes

from mjlab_microduck.jobs import recovery
from mjlab_microduck.runs import records


def _stale(pid: int | None = None) -> records.RunProcess:
    return records.RunProcess(host=os.uname().nodename, pid=pid or run_fakes.dead_pid(),
                              heartbeat_at="2026-01-02T03:10:00+00:00")  # fmt: skip


def test_a_stale_training_is_closed_from_its_checkpoints_and_log(tmp_path):
    run_dir = run_fakes.train_run(tmp_path, iterations=(0, 5), log_iterations=8,
                                  status="running", process=_stale())  # fmt: skip
    with (run_dir / "train.log").open("a") as log:  # a cold start: Warp compiled a module
        log.write("Module mujoco_warp._src.smooth 4052998 load on device 'cuda:0' took 8546.14 ms"
                  "  (compiled)\n")
    when = dt.datetime(2026, 1, 2, 3, 20, 0, tzinfo=dt.timezone.utc).timestamp()
    for path in run_dir.rglob("*"):
        os.utime(path, (when, when))
    before = records.load_record(run_dir)
    fixed = recovery.mark_stale_interrupted(run_dir, before)
    assert fixed == records.load_record(run_dir)
    assert (fixed.status, fixed.signal) == ("interrupted", None)
    assert fixed.error == (
        f"stale: process {before.process.pid} on {before.process.host} is gone, at iteration 7, "
        "last checkpoint model_5.pt; marked interrupted by `microduck records verify --fix`"
    )
    assert fixed.finished_at == "2026-01-02T03:20:00+00:00"
    assert fixed.wall_seconds == 955.0  # from its start, 03:04:05

    summary = fixed.summary
    assert (summary["last_checkpoint"], summary["last_checkpoint_iteration"]) == ("model_5.pt", 5)
    assert summary["checkpoints"] == "model_0.pt,model_5.pt" and summary["last_iteration"] == 7
    assert (summary["warp_modules_compiled"], summary["warp_compile_s"]) == (1, 8.55)
    assert [a.path for a in fixed.artifacts] == ["train.log"] and fixed.scalars_csv is None
    records.verify_artifacts(fixed, run_dir)


def test_a_stale_bench_is_closed_without_training_facts(tmp_path):
    record = run_fakes.record(run_id="b", kind="bench", status="running", process=_stale())
    records.write_record(record, tmp_path)
    fixed = recovery.mark_stale_interrupted(tmp_path, record)
    assert fixed.status == "interrupted" and fixed.summary == {} and fixed.artifacts == []
    assert fixed.error.startswith(f"stale: process {record.process.pid} on ")


def test_a_live_run_is_left_alone(tmp_path):
    record = run_fakes.record(status="running", process=_stale(os.getpid()),
                              started_at=records.utc_now_iso())  # fmt: skip
    live = record.model_copy(
        update={"process": record.process.model_copy(update={"heartbeat_at": record.started_at})}
    )
    records.write_record(live, tmp_path)
    text = (tmp_path / records.RECORD_FILENAME).read_text()
    assert recovery.mark_stale_interrupted(tmp_path, live) is live
    assert (tmp_path / records.RECORD_FILENAME).read_text() == text
