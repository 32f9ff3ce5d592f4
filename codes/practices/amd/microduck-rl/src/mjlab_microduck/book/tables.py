"""Tables of run records for the book's pages (pandas), and the cells that describe one run.

:func:`machine_text`, :func:`size_text` and :func:`wall_text` say where a run ran, how big it
was and how long it took, the same way wherever the book lists runs (chapter 4's stage tables,
the map of runs in ``book/results/README.md``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

import pandas as pd

from mjlab_microduck.book.chapter_times import duration_text
from mjlab_microduck.runs.records import Provenance, RunRecord

RUNTIME_NAMES = {"cuda": "CUDA", "hip": "HIP"}


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


# --------------------------------------------------------------------------- one run, in words


def gpu_count(record: RunRecord) -> int:
    """How many GPUs a run used: its ``config.gpu_ids`` (one when it does not say)."""
    return len(record.config.get("gpu_ids") or ()) or 1


def machine_text(provenance: Provenance, gpus: int = 1) -> str:
    """``one NVIDIA H200, driver 580, CUDA 13.0`` (``2 × NVIDIA H200, ...`` for two GPUs); on a
    CPU its ``machine_label`` (``2-core AMD EPYC, CPU only``) or ``<device>, CPU only``."""
    p = provenance
    if p.backend == "cpu":
        return p.machine_label or f"{p.device_name}, CPU only"
    parts = [f"{'one' if gpus == 1 else f'{gpus} ×'} {p.device_name}"]
    if p.driver_version:
        parts.append(f"driver {p.driver_version.split('.')[0]}")
    if p.runtime_version:
        parts.append(f"{RUNTIME_NAMES.get(p.backend, p.backend)} {p.runtime_version}")
    return ", ".join(parts)


def record_machine_text(record: RunRecord) -> str:
    """:func:`machine_text` of a record, with its number of GPUs."""
    return machine_text(record.provenance, gpu_count(record))


def _envs(values: Sequence[int]) -> str:
    values = sorted(values)
    if len(values) > 2:
        return f"{values[0]:,}–{values[-1]:,} envs"
    return ", ".join(f"{v:,}" for v in values) + " envs"


FOLDED_WORDS = {"gait_test": ("gait test", "gait tests"), "replay": ("replay", "replays"),
                "train": ("training", "trainings")}  # fmt: skip
"""How a summary record's size names the runs it folds, by kind (one, several)."""


def size_parts(record: RunRecord) -> tuple[str | None, str]:
    """The checkpoint a run used (``model_550.pt``; None if it used none) and the rest of its
    size from ``config`` (and a replay's ``summary.duration_s``), e.g.
    ``256 envs × 1,000 it, resumed from iteration 499``, ``5 seeds × 16 robots × 16 cases,
    10 s`` or, for a summary record, ``20 replays, 8 trainings folded``. A kind this does not
    know is ``see its config``."""
    c = record.config
    checkpoint = PurePosixPath(str(c["checkpoint"])).name if c.get("checkpoint") else None
    kind = record.kind
    if kind == "train":
        text = f"{c['num_envs']:,} envs × {c['iterations']:,} it"
        if gpu_count(record) > 1:
            text += " per GPU"
        if c.get("resume_from_iteration") is not None:
            text += f", resumed from iteration {c['resume_from_iteration']}"
        return checkpoint, text
    if kind == "replay":
        seconds = record.summary.get("duration_s")
        parts = ["1 env", "length not recorded" if seconds is None else f"{seconds:g} s"]
        if c.get("schedule"):
            parts.append(f"a {len(c['schedule'])}-part command schedule")
        if c.get("video"):
            parts.append("video")
        return checkpoint, ", ".join(parts)
    if kind == "gait_test":
        return checkpoint, (f"{len(c['seeds'])} seeds × {c['robots_per_case']} robots × "
                            f"{len(c['cases'])} cases, {c['duration_s']:g} s")  # fmt: skip
    if kind == "probe" and {"ring", "reuses"} <= set(c):
        return checkpoint, f"ring {c['ring']}, {c['reuses']} reuses"
    if kind == "bench" and c.get("physics_envs") and c.get("training_envs"):
        return checkpoint, (f"physics {_envs(c['physics_envs'])}, "
                            f"training {_envs(c['training_envs'])}")  # fmt: skip
    if kind == "export" and {"obs_dim", "action_dim", "policy_bytes"} <= set(record.summary):
        s = record.summary
        return checkpoint, (f"{s['obs_dim']} → {s['action_dim']} actor, "
                            f"{s['policy_bytes'] / 1e6:.2f} MB ONNX")  # fmt: skip
    if kind == "summary" and c.get("sources"):
        counts = [(k.removesuffix("_runs"), v) for k, v in record.summary.items()
                  if k.endswith("_runs") and isinstance(v, int)]  # fmt: skip
        words = [FOLDED_WORDS.get(k, (f"{k} run", f"{k} runs"))[n != 1] for k, n in counts]
        text = ", ".join(f"{n} {w}" for (_, n), w in zip(counts, words, strict=True)) + " folded"
        return checkpoint, text
    if kind == "book_build" and c.get("chapters"):
        return checkpoint, f"{len(c['chapters'])} chapters, {c.get('profile')} profile"
    return checkpoint, "see its config"


def size_text(record: RunRecord) -> str:
    """:func:`size_parts` in one string: ``model_79.pt, 1 env, 4 s, video``."""
    checkpoint, rest = size_parts(record)
    return f"{checkpoint}, {rest}" if checkpoint else rest


def wall_text(seconds: float | None) -> str:
    """``33 s`` under a minute and a half, else ``477 s (7.9 min)``; ``not recorded`` if None."""
    if seconds is None:
        return "not recorded"
    if seconds < 90:
        return duration_text(seconds)
    return f"{seconds:.0f} s ({duration_text(seconds)})"


# --------------------------------------------------------------------------- values read from runs


def facts_table(columns: Mapping[str, tuple[RunRecord, Mapping[str, Any]]]) -> pd.DataFrame:
    """Named values read from runs, one column per labelled run.

    The first three rows say which run, on which machine and in which profile the column comes
    from, so a page shows a run's figures in one table instead of restating them in its prose.
    A value one column has and another lacks is left missing there.
    """
    frame = pd.DataFrame(
        {
            label: {
                "run": record.run_id,
                "machine": record_machine_text(record),
                "profile": record.provenance.profile or "unknown",
                **values,
            }
            for label, (record, values) in columns.items()
        }
    )
    frame.index.name = "value"
    return frame


def run_facts(
    record: RunRecord, values: Mapping[str, Any], label: str | None = None
) -> pd.DataFrame:
    """:func:`facts_table` of one run, its column labelled ``label`` (default: the run id)."""
    return facts_table({label or record.run_id: (record, values)})
