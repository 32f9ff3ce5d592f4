"""Restore the public ``warp.context`` alias that mjlab 1.3 expects.

Problem: Warp 1.13 moved its runtime module to ``warp._src.context`` and no longer exposes
``warp.context``. mjlab 1.3.0 reads ``wp.context.runtime.driver_version`` in
``mjlab.sim.sim.Simulation._should_use_cuda_graph`` whenever the simulation device is a CUDA
device, so on any GPU (ROCm Warp 1.13.0+rocm.0 and PyPI warp-lang 1.13.0 alike) creating an
environment fails with ``AttributeError: module 'warp' has no attribute 'context'``.

Fix: when (and only when) ``warp.context`` is missing, bind it to Warp's internal context module
itself. It is the module object, not a copy, so ``wp.context.runtime`` is whatever
``warp._src.context.runtime`` is at the time of reading, including the runtime that ``wp.init()``
creates later.

No-op: when the Warp in use still exposes ``warp.context`` (Warp <= 1.12, or a future release that
restores the alias). On a CPU-only machine with warp-lang 1.13.0 the hook is *active*: the alias is
missing there too; mjlab only needs it on a CUDA/HIP device, but adding it costs nothing.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import Any

from mjlab_microduck.compat._hook import HookStatus, PatchSet

FIX = "warp_alias"

_patches = PatchSet()
_status: HookStatus | None = None


def _find_context_module(warp: ModuleType) -> ModuleType | None:
    """Warp's internal runtime module: ``<warp>._src.context`` in Warp 1.13."""
    name = f"{warp.__name__}._src.context"
    module = sys.modules.get(name)
    if module is None:
        try:
            module = importlib.import_module(name)
        except ImportError:
            return None
    # Sanity check that this is the runtime module mjlab means: it owns ``runtime`` and ``init``.
    if not (hasattr(module, "runtime") and callable(getattr(module, "init", None))):
        return None
    return module


def install(warp_module: ModuleType | None = None) -> HookStatus:
    """Add ``warp.context`` if missing. Idempotent: a second call reports the first result."""
    global _status
    if _status is not None and _patches.patches:
        return _status
    if warp_module is None:
        import warp as warp_module  # type: ignore[no-redef]
    version = getattr(warp_module, "__version__", "unknown")
    details: dict[str, Any] = {"warp_version": version}
    if hasattr(warp_module, "context"):
        existing = warp_module.context
        details["warp.context"] = getattr(existing, "__name__", repr(existing))
        _status = HookStatus(
            FIX, False, f"warp {version} still exposes warp.context; nothing to add", details
        )
        return _status
    context = _find_context_module(warp_module)
    if context is None:
        _status = HookStatus(
            FIX,
            False,
            f"warp {version} has neither warp.context nor warp._src.context with a runtime; "
            "cannot add the alias (mjlab graph capture on GPU will fail)",
            details,
        )
        return _status
    _patches.replace(warp_module, "context", context)
    details["alias_target"] = context.__name__
    _status = HookStatus(
        FIX,
        True,
        f"warp {version} has no warp.context (moved to {context.__name__}); added the alias "
        "mjlab 1.3 reads as wp.context.runtime.driver_version",
        details,
    )
    return _status


def uninstall() -> None:
    """Remove the alias if we added it; leave it if someone else replaced it since."""
    global _status
    _patches.revert_all()
    _status = None


def status() -> HookStatus:
    return _status or HookStatus(FIX, False, "not installed", {})
