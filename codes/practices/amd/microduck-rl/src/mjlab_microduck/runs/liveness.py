"""Is a ``running`` record still running? Heartbeats while it runs, and the stale verdict after.

Problem it solves: a run stopped by a closed terminal, a killed job or a machine that went away
never writes its end, so its record says ``running`` forever and reads like a run in progress.
A running record therefore names its host and process id and carries a heartbeat
(:class:`~mjlab_microduck.runs.records.RunProcess`): :class:`Heartbeat` rewrites it from a
daemon thread every minute (with whatever progress the job reports, e.g. its last checkpoint),
and :func:`stale_reason` tells a live run from a dead one: on its own host, a process id that no
longer exists is dead; anywhere, a heartbeat older than the limit is.

No-op cases: a record that is not ``running`` is never stale; a record written before
heartbeats existed (no ``process``) is judged by its start time against the same limit.
Nothing here starts a thread or reads the clock on import.
"""

from __future__ import annotations

import datetime as _dt
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mjlab_microduck.runs import records

HEARTBEAT_S = 60.0
# Seconds between heartbeats, for tests that watch a real run's heartbeat (a minute otherwise).
HEARTBEAT_ENV = "MICRODUCK_HEARTBEAT_S"
# Ten missed heartbeats: long enough for a machine under load, short enough that a dead run on
# another host (whose process cannot be looked up from here) shows up the same day.
STALE_AFTER_S = 600.0


def heartbeat_interval() -> float:
    """Seconds between heartbeats: ``MICRODUCK_HEARTBEAT_S`` when it is a positive number."""
    try:
        value = float(os.environ.get(HEARTBEAT_ENV, ""))
    except ValueError:
        return HEARTBEAT_S
    return value if value > 0 else HEARTBEAT_S


def this_process() -> records.RunProcess:
    """This process as a running record names it, with a heartbeat of now."""
    return records.RunProcess(
        host=socket.gethostname(), pid=os.getpid(), heartbeat_at=records.utc_now_iso()
    )


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (signal 0 checks, sends nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _age_s(iso: str, now: _dt.datetime) -> float:
    then = _dt.datetime.fromisoformat(iso)
    if then.tzinfo is None:  # records write UTC offsets; a hand-made one without is read as UTC
        then = then.replace(tzinfo=_dt.timezone.utc)
    return (now - then).total_seconds()


def stale_reason(
    record: records.RunRecord,
    limit_s: float = STALE_AFTER_S,
    now: _dt.datetime | None = None,
    host: str | None = None,
) -> str | None:
    """Why a ``running`` record is stale (one line), or None when it may still be running."""
    if record.status != "running":
        return None
    now = now or _dt.datetime.now(_dt.timezone.utc)
    host = host or socket.gethostname()
    proc = record.process
    if proc is not None and proc.host == host and not pid_alive(proc.pid):
        return f"process {proc.pid} on {proc.host} is gone"
    last, what = (proc.heartbeat_at, "heartbeat") if proc else (record.started_at, "start")
    age = _age_s(last, now)
    if age > limit_s:
        return f"no heartbeat for {age:.0f} s (last sign of life: its {what} at {last})"
    return None


class Heartbeat:
    """Rewrite a running record every ``interval_s`` (default :func:`heartbeat_interval`) with
    a fresh heartbeat and progress.

    ``progress()`` returns summary entries to merge (the job's view of how far it got); it runs
    on the heartbeat thread and must not fail: an exception skips that beat's progress, never
    the heartbeat. Leaving the ``with`` block stops and joins the thread, so the job's own last
    write (the finished record) is never overwritten by a late beat.
    """

    def __init__(
        self,
        record: records.RunRecord,
        run_dir: str | os.PathLike[str],
        interval_s: float | None = None,
        progress: Callable[[], dict[str, Any]] | None = None,
    ):
        self.record = record
        self.run_dir = Path(run_dir)
        self.interval_s = heartbeat_interval() if interval_s is None else interval_s
        self.progress = progress
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="record-heartbeat", daemon=True)

    def beat(self) -> records.RunRecord:
        """Write the running record once, now (also what the thread does each interval)."""
        with self._lock:
            if self._stop.is_set():
                return self.record
            update: dict[str, Any] = {"process": this_process()}
            if self.progress is not None:
                try:
                    update["summary"] = {**self.record.summary, **self.progress()}
                except Exception:  # noqa: BLE001 - progress is a nicety; the heartbeat is not
                    pass
            self.record = self.record.model_copy(update=update)
            records.write_record(self.record, self.run_dir)
            return self.record

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.beat()
            except OSError:  # a full disk for a minute must not end the run; the next beat tries
                pass

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._stop.set()
        self._thread.join()
