"""Shared machinery for the compatibility hooks: status records, reversible patches, detection.

Every hook in :mod:`mjlab_microduck.compat` changes third-party behaviour at run time, never by
editing files in site-packages. To keep that safe each change is recorded as a :class:`Patch`
(an attribute replaced on a module or class) or an :class:`EnvDefault` (an environment variable
set only because it was missing), so that ``uninstall()`` can put back exactly what was there.

Detection is by feature only: a Warp device's ``is_hip`` attribute, ``torch.version.hip`` and the
Warp version string. GPU product names are never consulted.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Marker attribute put on every wrapper function we install, holding the fix name. It lets an
# install step recognise its own wrapper (idempotency) even after a module reload.
WRAPPER_MARK = "__microduck_compat__"

_MISSING = object()


@dataclass
class HookStatus:
    """What one fix did on this machine.

    ``active`` is True when the fix currently changes behaviour here; ``reason`` says why (or why
    not) in one sentence; ``details`` holds the facts the decision was based on.
    """

    fix: str
    active: bool
    reason: str
    details: dict[str, Any] = field(default_factory=dict)


def _own_attribute(owner: Any, name: str) -> Any:
    """The attribute as stored on ``owner`` itself: for a class, its own ``__dict__`` entry (so an
    inherited method reads as missing and reverting restores inheritance)."""
    if isinstance(owner, type):
        return owner.__dict__.get(name, _MISSING)
    return getattr(owner, name, _MISSING)


@dataclass
class Patch:
    """One attribute replaced on a module or class, with what was there before."""

    owner: Any
    name: str
    replacement: Any
    original: Any = _MISSING

    def apply(self) -> None:
        self.original = _own_attribute(self.owner, self.name)
        setattr(self.owner, self.name, self.replacement)

    def revert(self) -> bool:
        """Restore the original; returns False (and leaves things alone) if someone else has
        replaced our replacement in the meantime, because restoring then would drop their change."""
        if _own_attribute(self.owner, self.name) is not self.replacement:
            return False
        if self.original is _MISSING:
            delattr(self.owner, self.name)
        else:
            setattr(self.owner, self.name, self.original)
        return True


@dataclass
class EnvDefault:
    """An environment variable we set because the user had not set it."""

    name: str
    value: str

    def revert(self) -> bool:
        if os.environ.get(self.name) == self.value:
            del os.environ[self.name]
            return True
        return False


@dataclass
class PatchSet:
    """The changes one hook made, reverted in reverse order."""

    patches: list[Patch | EnvDefault] = field(default_factory=list)

    def replace(self, owner: Any, name: str, replacement: Any) -> Patch:
        patch = Patch(owner, name, replacement)
        patch.apply()
        self.patches.append(patch)
        return patch

    def env_default(self, name: str, value: str) -> EnvDefault | None:
        if name in os.environ:
            return None
        os.environ[name] = value
        record = EnvDefault(name, value)
        self.patches.append(record)
        return record

    def revert_all(self) -> list[str]:
        """Revert everything; returns a description of each change that could not be reverted."""
        problems: list[str] = []
        for patch in reversed(self.patches):
            if not patch.revert():
                problems.append(f"{patch.name}: changed by someone else since, left as is")
        self.patches.clear()
        for problem in problems:
            warnings.warn(f"mjlab_microduck.compat uninstall: {problem}", RuntimeWarning, 2)
        return problems


def mark_wrapper(wrapper: Callable, fix: str, original: Callable) -> Callable:
    """Tag a wrapper with the fix name and the function it wraps."""
    setattr(wrapper, WRAPPER_MARK, fix)
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    return wrapper


def is_our_wrapper(obj: Any, fix: str) -> bool:
    return getattr(obj, WRAPPER_MARK, None) == fix


def unwrap_ours(obj: Any) -> Any:
    """Follow ``__wrapped__`` through our own wrappers only (not third-party decorators)."""
    while getattr(obj, WRAPPER_MARK, None) is not None and hasattr(obj, "__wrapped__"):
        obj = obj.__wrapped__
    return obj


# --- detection --------------------------------------------------------------------------------


def current_warp_device() -> Any:
    """The Warp device that kernels launch on right now (respects ``wp.ScopedDevice``).

    Tests replace this function to simulate HIP or CUDA devices on a CPU-only machine.
    """
    import warp as wp

    return wp.get_device()


def device_is_hip(device: Any) -> bool:
    """True for a Warp device of the ROCm fork that runs on HIP. Upstream Warp devices have no
    ``is_hip`` attribute at all, which reads as False."""
    return bool(getattr(device, "is_hip", False))


def device_is_cuda(device: Any) -> bool:
    return bool(getattr(device, "is_cuda", False))


def describe_device(device: Any) -> str:
    alias = getattr(device, "alias", None) or str(device)
    kind = "hip" if device_is_hip(device) else "cuda" if device_is_cuda(device) else "cpu"
    return f"{alias} ({kind})"


@dataclass(frozen=True)
class PlatformFacts:
    """Feature facts about the installed stack, read without initialising any GPU runtime."""

    warp_version: str | None
    warp_is_rocm_build: bool
    torch_hip_version: str | None
    hip_devices: tuple[str, ...]

    @property
    def hip(self) -> bool:
        return (
            self.warp_is_rocm_build or self.torch_hip_version is not None or bool(self.hip_devices)
        )

    def summary(self) -> str:
        return (
            f"warp {self.warp_version} (ROCm build: {self.warp_is_rocm_build}), "
            f"torch.version.hip={self.torch_hip_version}, "
            f"HIP Warp devices={list(self.hip_devices) or 'none seen'}"
        )


def platform_facts() -> PlatformFacts:
    """Collect HIP evidence. Never calls ``wp.init()``: it only lists devices when Warp's
    runtime is already initialised, so importing the package stays quiet and fast."""
    warp_version: str | None = None
    hip_devices: list[str] = []
    warp = sys.modules.get("warp")
    if warp is None:
        try:
            import warp  # noqa: F811
        except ImportError:
            warp = None
    if warp is not None:
        warp_version = getattr(warp, "__version__", None)
        context = sys.modules.get(f"{warp.__name__}._src.context") or getattr(warp, "context", None)
        runtime = getattr(context, "runtime", None) if context is not None else None
        for device in getattr(runtime, "cuda_devices", None) or []:
            if device_is_hip(device):
                hip_devices.append(str(getattr(device, "alias", device)))
    torch_hip: str | None = None
    torch = sys.modules.get("torch")
    if torch is None:
        try:
            import torch  # noqa: F811
        except ImportError:
            torch = None
    if torch is not None:
        torch_hip = getattr(getattr(torch, "version", None), "hip", None)
    return PlatformFacts(
        warp_version=warp_version,
        # The ROCm fork publishes versions such as "1.13.0+rocm.0".
        warp_is_rocm_build="+rocm" in (warp_version or ""),
        torch_hip_version=torch_hip,
        hip_devices=tuple(hip_devices),
    )


# --- mjlab graph-capture vetoes -----------------------------------------------------------------
#
# Two independent features need mjlab's own CUDA-graph capture off: HIP stepping (nested capture
# fails on HIP) and the frozen-broadphase fault (a captured graph would never run our Python-side
# freeze). Both wrapping ``Simulation._should_use_cuda_graph`` separately would make uninstall
# order-dependent, so there is one shared wrapper that asks a registry of vetoes.

GraphVeto = Callable[[Any], "str | None"]
_graph_vetoes: dict[str, GraphVeto] = {}
_graph_patch: PatchSet = PatchSet()
_graph_decisions: dict[str, int] = {}
_GRAPH_FIX = "graph_capture_veto"


def _simulation_class() -> Any:
    from mjlab.sim.sim import Simulation

    return Simulation


def add_graph_veto(name: str, veto: GraphVeto, simulation_cls: Any | None = None) -> None:
    """Register ``veto(sim) -> reason | None``; the first veto giving a reason turns capture off."""
    _graph_vetoes[name] = veto
    cls = simulation_cls if simulation_cls is not None else _simulation_class()
    if is_our_wrapper(cls.__dict__.get("_should_use_cuda_graph"), _GRAPH_FIX):
        return
    original = cls._should_use_cuda_graph

    def _should_use_cuda_graph(self: Any) -> bool:
        for veto_name, check in list(_graph_vetoes.items()):
            reason = check(self)
            if reason:
                _graph_decisions[veto_name] = _graph_decisions.get(veto_name, 0) + 1
                self._microduck_graph_veto = f"{veto_name}: {reason}"
                return False
        # No veto applies: exactly mjlab's own decision (NVIDIA behaviour unchanged).
        return original(self)

    mark_wrapper(_should_use_cuda_graph, _GRAPH_FIX, original)
    _should_use_cuda_graph.__doc__ = original.__doc__
    _graph_patch.replace(cls, "_should_use_cuda_graph", _should_use_cuda_graph)


def remove_graph_veto(name: str) -> None:
    _graph_vetoes.pop(name, None)
    _graph_decisions.pop(name, None)
    if not _graph_vetoes:
        _graph_patch.revert_all()


def graph_veto_count(name: str) -> int:
    """How many times a veto turned mjlab's graph capture off since it was registered."""
    return _graph_decisions.get(name, 0)


class HookState:
    """The module-level state every compat hook keeps: its patches, its counters and the
    status of its last install, with the uninstall and report logic they all share."""

    def __init__(self, fix: str, counts: dict[str, int]) -> None:
        self.fix = fix
        self.patches = PatchSet()
        self.counts = counts
        self.status: HookStatus | None = None

    def active(self) -> HookStatus | None:
        """The current status when the hook is installed and acting (install is idempotent)."""
        return self.status if self.status is not None and self.status.active else None

    def set(self, active: bool, reason: str, details: dict[str, Any]) -> HookStatus:
        self.status = HookStatus(self.fix, active, reason, details)
        return self.status

    def reset(self) -> None:
        """Undo every patch and forget counters and status (the hook's ``uninstall``)."""
        self.patches.revert_all()
        self.counts.update({key: 0 for key in self.counts})
        self.status = None

    def report(self, **extra: Any) -> HookStatus:
        """The last status with live counters (and ``extra`` details) merged in."""
        if self.status is None:
            return HookStatus(self.fix, False, "not installed", {})
        details = {**self.status.details, **self.counts, **extra}
        return HookStatus(self.fix, self.status.active, self.status.reason, details)
