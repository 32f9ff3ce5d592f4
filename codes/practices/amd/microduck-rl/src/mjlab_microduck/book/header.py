"""The line every chapter prints first: which profile, backend, device, date and commit ran it."""

from __future__ import annotations

import datetime as _dt

from mjlab_microduck.runtime import backend, profiles, provenance


def device_name() -> str:
    """Name of GPU 0 when torch sees one, else the CPU model."""
    kind, _ = backend.torch_backend()
    if kind != "cpu":
        import torch

        return str(torch.cuda.get_device_name(0))
    return provenance.cpu_model()


def banner(now: _dt.datetime | None = None) -> str:
    """One line saying what this notebook runs with: profile, backend, device, date, commit."""
    profile = profiles.current()
    kind, version = backend.torch_backend()
    backend_text = kind if version is None else f"{kind} {version}"
    when = (now or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y-%m-%d %H:%M %Z").strip()
    return (
        f"profile={profile.name} | backend={backend_text} | device={device_name()} | "
        f"date={when} | commit={provenance.git_commit(short=True)}"
    )
