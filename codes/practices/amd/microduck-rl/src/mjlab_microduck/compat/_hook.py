"""Shared machinery for the compatibility hooks: status records, reversible patches, detection.

Every hook in :mod:`mjlab_microduck.compat` changes third-party behaviour at run time, never by
editing files in site-packages. To keep that safe each change is recorded as a :class:`Patch`
(an attribute replaced on a module or class) or an :class:`EnvDefault` (an environment variable
set only because it was missing), so that ``uninstall()`` can put back exactly what was there.

Detection is by feature only and lives in :mod:`mjlab_microduck.runtime.backend` (a module that
imports nothing from the package); the names are re-exported here for the hooks.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from mjlab_microduck.runtime.backend import (  # noqa: F401  (the hooks read them from here)
    PlatformFacts,
    describe_device,
    device_is_cuda,
    device_is_hip,
    platform_facts,
)

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
    own = getattr(owner, "__dict__", None)
    if own is not None and not isinstance(owner, ModuleType):
        # An instance: a method found on its class is not its own, so reverting deletes the
        # instance attribute and the class's method shows through again.
        return own.get(name, _MISSING)
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

    def wrap(self, owner: Any, name: str, make: Callable[[Any], Any]) -> Patch:
        """Replace ``owner.name`` by ``make(current value)``."""
        return self.replace(owner, name, make(getattr(owner, name)))

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


def stand_in(replacement: Callable, fix: str, original: Callable) -> Callable:
    """A marked wrapper that calls ``replacement`` under ``original``'s name and docstring, so
    that what is installed is recognisably ours and unwraps to ``original``."""

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return replacement(*args, **kwargs)

    return mark_wrapper(wrapper, fix, original)


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

    def gate(
        self,
        env_var: str,
        off_reason: str,
        check: Callable[[], tuple[bool, str, dict[str, Any]]],
        details: dict[str, Any],
    ) -> HookStatus | None:
        """The inactive status when ``env_var`` is ``0`` or ``check()`` refuses (its counts go
        into ``details`` either way); None when the hook may install."""
        if os.environ.get(env_var, "1") == "0":
            return self.set(False, f"turned off by {env_var}=0: {off_reason}", details)
        allowed, why, counts = check()
        details.update(counts)
        return None if allowed else self.set(False, why, details)

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
