"""What a policy job writes last: the request as config and a finished, ok run record.

Replay and the gait test both replay a checkpoint and end the same way; the config names the
weights by their SHA-256 (whatever the file is called or wherever it was copied), and the
command is the one this process was started with (``microduck replay ...``).
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mjlab_microduck.runs import records


def checkpoint_config(request: Any) -> dict[str, Any]:
    """A request dataclass with a ``checkpoint`` as record config (paths as strings)."""
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(request).items()}
    config["checkpoint_sha256"] = records.sha256_file(request.checkpoint)
    return config


def write_finished_record(
    run_dir: Path,
    kind: records.RunKind,
    config: dict[str, Any],
    device: str,
    started_iso: str,
    started: float,
    summary: dict[str, Any],
    artifacts: list[records.Artifact],
    notes: str | None = None,
) -> records.RunRecord:
    """Write the ok record of a run that started at ``started_iso`` (``started``: monotonic)."""
    from mjlab_microduck.runtime import provenance

    command = [Path(sys.argv[0]).name, *sys.argv[1:]]
    record = records.RunRecord(
        run_id=run_dir.name,
        kind=kind,
        status="ok",
        command=command,
        config=config,
        provenance=provenance.collect(command=command, device=device),
        started_at=started_iso,
        finished_at=records.utc_now_iso(),
        wall_seconds=round(time.monotonic() - started, 3),
        summary=summary,
        artifacts=artifacts,
        notes=notes,
    )
    records.write_record(record, run_dir)
    return record
