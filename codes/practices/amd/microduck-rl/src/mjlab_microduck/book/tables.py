"""Tables of run records for the book's pages (pandas)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from mjlab_microduck.runs.records import RunRecord


def records_table(
    records: Iterable[RunRecord], summary_keys: Sequence[str] | None = None
) -> pd.DataFrame:
    """One row per record: identity columns, then summary values.

    ``summary_keys=None`` takes every summary key seen, in order of first appearance; a record
    without a key gets ``None`` there (shown as missing, never as 0).
    """
    records = list(records)
    if summary_keys is None:
        keys: list[str] = []
        for rec in records:
            keys.extend(k for k in rec.summary if k not in keys)
    else:
        keys = list(summary_keys)
    rows = []
    for rec in records:
        row: dict[str, Any] = {
            "run_id": rec.run_id,
            "kind": rec.kind,
            "status": rec.status,
            "profile": rec.provenance.profile,
            "backend": rec.provenance.backend,
            "device": rec.provenance.device_name,
            "date": rec.provenance.date,
            "wall_seconds": rec.wall_seconds,
        }
        for key in keys:
            row[key] = rec.summary.get(key)
        rows.append(row)
    columns = ["run_id", "kind", "status", "profile", "backend", "device", "date", "wall_seconds"]
    return pd.DataFrame(rows, columns=columns + [k for k in keys if k not in columns])
