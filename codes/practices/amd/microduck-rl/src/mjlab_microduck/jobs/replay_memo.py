"""Replays done once per build: a video-less replay's trajectory, kept for an identical request.

Problem it solves: the build replays the published checkpoints (chapter 6's protocol replays,
its command sweep) and the test suite then replays some of the same checkpoints under the same
requests to check what the chapters claim, so a CI run computed those trajectories twice. With
:data:`ENV_VAR` naming a folder (``make`` sets it to ``_build/.replay_memo``, which goes with
the execution cache), :func:`~mjlab_microduck.jobs.replay.simulate` first looks there for a
trajectory of the same replay and stores the ones it computes.

"The same replay" is everything that decides the physics and the policy: every field of the
request except the rendering ones, the checkpoint's SHA-256 (not its path), the fault injection
in force, the package's own source (every ``.py`` file of ``mjlab_microduck``) and the versions
of torch, Warp, MuJoCo Warp, MuJoCo and mjlab. A replay with video is never kept nor served
(its frames are not kept); one without the variable set is computed as always.

Entries are written atomically (the trajectory as a pickle, then renamed), so two processes
replaying at once at worst compute the same entry twice.

No-op cases: importing reads no file; without :data:`ENV_VAR` nothing is read or written.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mjlab_microduck.runs import records

if TYPE_CHECKING:
    import pandas as pd

ENV_VAR = "MICRODUCK_REPLAY_MEMO"
RENDER_ONLY = ("video", "gif", "width", "height", "shadows", "camera")
VERSIONED = ("torch", "warp", "mujoco_warp", "mujoco", "mjlab")


def folder() -> Path | None:
    """The memo's folder, or None when :data:`ENV_VAR` is not set."""
    value = os.environ.get(ENV_VAR, "").strip()
    return Path(value) if value else None


@functools.lru_cache(maxsize=1)
def _versions() -> tuple[tuple[str, str | None], ...]:
    from mjlab_microduck.runtime import provenance

    found = provenance.package_versions()
    return tuple((name, found.get(name)) for name in VERSIONED)


def key(request: Any) -> str | None:
    """The memo key of a replay request, or None for a replay that is never kept (video)."""
    from mjlab_microduck.compat import faults
    from mjlab_microduck.runtime import provenance

    if request.video or request.gif:
        return None
    fields = {k: v for k, v in asdict(request).items() if k not in RENDER_ONLY}
    fields["checkpoint"] = records.sha256_file(request.checkpoint)
    fields["fault_mode"] = faults.status().details.get("mode") if faults.is_enabled() else None
    fields["source"] = provenance.package_source_digest()
    fields["versions"] = _versions()
    text = json.dumps(fields, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _paths(where: Path, digest: str) -> tuple[Path, Path]:
    return where / f"{digest}.pkl", where / f"{digest}.json"


def load(request: Any) -> tuple[pd.DataFrame, float] | None:
    """The kept (trajectory, control dt) of this replay, or None."""
    where = folder()
    digest = key(request) if where is not None else None
    if digest is None:
        return None
    frame_path, meta_path = _paths(where, digest)
    if not (frame_path.is_file() and meta_path.is_file()):
        return None
    import pandas as pd

    meta = json.loads(meta_path.read_text())
    return pd.read_pickle(frame_path), float(meta["dt"])


def store(request: Any, trajectory: pd.DataFrame, dt: float) -> Path | None:
    """Keep this replay's trajectory (atomically); None when no memo is in use or it has video."""
    where = folder()
    digest = key(request) if where is not None else None
    if digest is None:
        return None
    import io

    frame_path, meta_path = _paths(where, digest)
    buffer = io.BytesIO()
    trajectory.to_pickle(buffer)
    records.atomic_write_bytes(frame_path, buffer.getvalue())
    records.atomic_write_text(
        meta_path, json.dumps({"dt": dt, "checkpoint": str(request.checkpoint)})
    )
    return frame_path
