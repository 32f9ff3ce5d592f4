"""Close the record of a run that died without writing its end (``records verify --fix``).

Problem it solves: a run whose process was killed outright (SIGKILL, the out-of-memory killer,
a machine that went away) leaves a record that says ``running`` for ever; ``records verify``
reports it ``stale`` (:mod:`mjlab_microduck.runs.liveness`). :func:`mark_stale_interrupted`
rewrites it as ``interrupted`` from what is on disk: its end is the run folder's last change
(the last heartbeat or file the run wrote), and a training also gets what the signal handler
would have written, its scalars so far, last checkpoint and iteration, and ``train.log``, listed
with their checksums (:func:`mjlab_microduck.jobs.train.stopped_on_disk`), so it can be resumed
with ``microduck train --resume-from RUN``.

No-op cases: a record that is not stale is returned unchanged and nothing is written.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from mjlab_microduck.jobs import train
from mjlab_microduck.runs import liveness, records


def last_change(run_dir: Path) -> _dt.datetime:
    """When anything in the run folder last changed (its newest file's modification time)."""
    times = [p.stat().st_mtime for p in run_dir.rglob("*") if p.is_file()]
    newest = max(times, default=run_dir.stat().st_mtime)
    return _dt.datetime.fromtimestamp(newest, _dt.timezone.utc).replace(microsecond=0)


def mark_stale_interrupted(
    run_dir: Path, record: records.RunRecord, limit_s: float = liveness.STALE_AFTER_S
) -> records.RunRecord:
    """The stale ``record`` of ``run_dir`` rewritten (on disk too) as ``interrupted``."""
    reason = liveness.stale_reason(record, limit_s)
    if reason is None:
        return record
    ended = last_change(run_dir)  # before the export below adds a file
    started = _dt.datetime.fromisoformat(record.started_at)
    if started.tzinfo is None:  # records write UTC offsets; a hand-made one without is UTC
        started = started.replace(tzinfo=_dt.timezone.utc)
    found: dict = {}
    if record.kind == "train":
        found = train.stopped_on_disk(record, run_dir)
        reason = f"{reason}, {train.progress_line(found['summary'])}"
    fixed = records.mark_interrupted(
        record,
        f"stale: {reason}; marked interrupted by `microduck records verify --fix`",
        finished_at=ended.isoformat(),
        wall_seconds=max(0.0, round((ended - started).total_seconds(), 3)),
        **found,
    )
    records.write_record(fixed, run_dir)
    return records.load_record(run_dir)
