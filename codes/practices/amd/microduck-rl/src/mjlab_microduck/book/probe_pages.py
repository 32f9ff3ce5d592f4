"""The published records of the interprocess-event probe, for chapter 8.

Problem it solves: a probe record's ``ok`` says only that every reuse was waited on without an
error. Whether that proves reuse past the runtime's 32 signal slots is a separate field of the
record's summary, ``conclusive`` (some event of the ring was used more than 32 times), and it is
what the fail-closed gate goes by. The page calls :func:`probe_records_table`, which shows the
two side by side so that an ``ok`` over too few reuses does not read as a pass.
"""

from __future__ import annotations

import os

import pandas as pd

from mjlab_microduck.runs import records
from mjlab_microduck.runtime.ipc_probe import PROBE_NAME


def published_probes(results_dir: str | os.PathLike[str]) -> list[tuple[str, records.RunRecord]]:
    """``(folder name, record)`` of each interprocess-event probe record under ``results_dir``
    (kind ``probe``, ``config["probe"]`` :data:`~mjlab_microduck.runtime.ipc_probe.PROBE_NAME`),
    sorted by folder name."""
    return [(folder.name, record) for folder, record in records.find_records(results_dir)
            if record.kind == "probe" and record.config.get("probe") == PROBE_NAME]  # fmt: skip


def probe_row(name: str, record: records.RunRecord) -> dict[str, object]:
    """The table's row of one probe record: where it ran and how the probe ended."""
    summary = record.summary
    return {
        "record": name,
        "device": record.provenance.device_name,
        "backend": record.provenance.backend,
        "runtime": record.provenance.runtime_version,
        "driver": record.provenance.driver_version,
        "probe status": summary.get("probe_status"),
        "reuses done": summary.get("reuses_done"),
        "ring": summary.get("ring_size"),
        "conclusive": summary.get("conclusive"),
        "failed at": summary.get("failed_at"),
        "handle": summary.get("handle_prefix"),
        "date": record.provenance.date,
    }


def probe_records_table(results_dir: str | os.PathLike[str]) -> pd.DataFrame | None:
    """One row per published probe record, or ``None`` when none is published."""
    probes = published_probes(results_dir)
    if not probes:
        return None
    return pd.DataFrame([probe_row(name, record) for name, record in probes])
