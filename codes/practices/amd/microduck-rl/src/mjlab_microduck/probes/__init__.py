"""Runtime probes: short, bounded experiments that find runtime bugs before a workload does.

Each probe answers one question about the GPU runtime with a real measurement, under a hard
time limit, and returns a typed result instead of crashing; a matching ``require_*`` function
turns the result into a fail-closed gate (:class:`UnsupportedRuntimeError`, one explicit line).

* :mod:`~mjlab_microduck.probes.ipc_event`: can an interprocess GPU event be reused more than
  32 times? (ROCm 7.2 CLR bug, fixed upstream in a44f100faaa9.)

No-op cases: importing this package imports nothing else. The names below are loaded on first
use, so ``python -m mjlab_microduck.probes.ipc_event`` does not import the module twice.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "EmulatedClrBackend": "ipc_event",
    "EventBackend": "ipc_event",
    "IpcProbeResult": "ipc_event",
    "TorchEventBackend": "ipc_event",
    "UnsupportedRuntimeError": "ipc_event",
    "require_ipc_event_reuse": "ipc_event",
    "run_probe": "ipc_event",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
