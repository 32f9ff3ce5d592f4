"""Ask a running training to end because it has reached its goal, and say so in its record.

Problem it solves: a training launched to find the first checkpoint that passes the gait test
keeps the GPU busy for every iteration after it, and a run stopped by a plain signal reads as
``interrupted``, which a book cannot publish. :func:`request_stop` writes the reason
(``stop_request.json``) into the run's folder, atomically, and then sends SIGTERM to the
process its record names. The training driver (``jobs.train``) finds the file when the signal
arrives and ends the run ``ok``, with the reason in its summary (``stopped_on_request``) and
everything it had saved by then, so the record says how it stopped.

No-op cases: a run that is not ``running`` gets neither file nor signal; a running record on
another host gets the file only (its process cannot be signalled from here), so it stops when
something else stops it, and still records why. Nothing here runs on import.
"""

from __future__ import annotations

import json
import os
import signal
import socket
from dataclasses import asdict, dataclass
from pathlib import Path

from mjlab_microduck.runs import liveness, records

FILENAME = "stop_request.json"
SUMMARY_KEY = "stopped_on_request"


@dataclass(frozen=True)
class StopRequest:
    """Why a run was asked to stop, who asked, and when."""

    reason: str
    by: str
    at: str


def request_stop(run_dir: str | Path, reason: str, by: str) -> str:
    """Ask the training in ``run_dir`` to end for ``reason``; one line saying what was done."""
    run_dir = Path(run_dir)
    record = records.load_record(run_dir)
    if record.status != "running":
        return f"{run_dir.name}: not stopped, it has already ended ({record.status})"
    asked = StopRequest(reason=" ".join(reason.split()), by=by, at=records.utc_now_iso())
    records.atomic_write_text(run_dir / FILENAME, json.dumps(asdict(asked), indent=1) + "\n")
    proc = record.process
    if proc is None or proc.host != socket.gethostname():
        where = proc.host if proc else "an unnamed host"
        return (f"{run_dir.name}: asked to stop in {FILENAME}; its process on {where} is not "
                "signalled from here")  # fmt: skip
    if not liveness.pid_alive(proc.pid):
        return f"{run_dir.name}: asked to stop, but its process {proc.pid} is gone"
    os.kill(proc.pid, signal.SIGTERM)
    return f"{run_dir.name}: asked to stop (SIGTERM to process {proc.pid}): {asked.reason}"


def read(run_dir: str | Path) -> StopRequest | None:
    """The stop request left in ``run_dir``, or None (none, or one that cannot be read)."""
    try:
        data = json.loads((Path(run_dir) / FILENAME).read_text())
        return StopRequest(**{key: str(data[key]) for key in ("reason", "by", "at")})
    except (OSError, ValueError, KeyError, TypeError):
        return None
