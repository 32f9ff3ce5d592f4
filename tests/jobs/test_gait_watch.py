"""Watching trainings (mjlab_microduck.jobs.gait_watch): a dead run does not keep the watch open.

What this proves: a run whose record still says ``running`` but whose process is gone counts as
finished (``stale``), so a watch with nothing left to test ends at once; a live running run
keeps it waiting until ``max_seconds``.
"""

from __future__ import annotations

import os
import time

import run_fakes

from mjlab_microduck.jobs import gait_watch
from mjlab_microduck.runs import records


def _watch(run) -> float:
    request = gait_watch.GaitWatchRequest(runs=(run,), poll_s=0.05, max_seconds=1.0)
    started = time.monotonic()
    assert gait_watch.watch(request, log=lambda line: None) == []
    return time.monotonic() - started


def _process(pid: int) -> records.RunProcess:
    return records.RunProcess(host=os.uname().nodename, pid=pid,
                              heartbeat_at=records.utc_now_iso())  # fmt: skip


def test_a_stale_run_is_finished_for_the_watch_and_a_live_one_is_not(tmp_path):
    now = records.utc_now_iso()
    stale = run_fakes.train_run(
        tmp_path, "stale", iterations=(), status="running", process=_process(run_fakes.dead_pid())
    )
    live = run_fakes.train_run(
        tmp_path, "live", iterations=(), status="running", started_at=now,
        process=_process(os.getpid()),
    )  # fmt: skip
    assert gait_watch._run_state(stale)[0] == "stale"
    assert gait_watch._run_state(live)[0] == "running"
    assert _watch(stale) < 0.5
    assert _watch(live) >= 1.0
