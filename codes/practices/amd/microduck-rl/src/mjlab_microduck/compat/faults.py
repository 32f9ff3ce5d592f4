"""Opt-in fault injection: reproduce the ROCm broadphase cache bug on any backend.

The dangerous ROCm problem (chapter 2) is a broadphase candidate list that is computed once and
reused forever, so bodies that were not touching anything in the first frame never collide. No
AMD GPU is needed to see what that does to a simulation or to a training run: this module
freezes the broadphase result of the first step on CPU or CUDA too.

How: mujoco_warp 3.8.1's ``collision_driver.collision`` zeroes the counters, runs
``nxn_broadphase`` or ``sap_broadphase`` (looked up as module globals) to fill the candidate
arrays of a fresh ``CollisionContext`` (``collision_pair``, ``collision_pairid``,
``collision_worldid``) and the count ``d.ncollision``, then runs the narrowphase on them. While
the fault is on, both broadphase functions are wrapped: the first call per ``Data`` object runs
normally and snapshots those arrays; every later call puts the snapshot back instead of running
the broadphase, and the narrowphase runs on it. Two modes:

``"fork"`` (default)
    What the ROCm fork's stored ``collision()`` does: it reuses the cached context *after*
    ``_zero_nacon_ncollision`` has reset ``d.ncollision`` to 0, and mujoco_warp's narrowphase
    kernels skip every candidate at or beyond ``ncollision`` -- so after the first step nothing
    collides at all. This is the mode that reproduces the reported MicroDuck fall-through: the
    MicroDuck's feet *are* broadphase candidates at the first frame (their bounding radius,
    3.2 cm, exceeds their height above the floor), so keeping the first list alone would not
    make it sink.
``"list"``
    The candidate list and its count are both frozen: pairs that were candidates at the first
    step keep colliding, pairs that become close later never do (a dropped sphere falls
    through, a robot standing from the first frame does not).

mjlab captures ``step`` in a CUDA graph on NVIDIA GPUs; a captured graph would replay the real
broadphase and never run this Python-side freeze, so while the fault is on mjlab's capture is
vetoed (reported in the status). The fault must be switched on before the environment (its
``Simulation``) is created: graph capture is decided in ``Simulation.__init__``.

Use: ``with frozen_broadphase(): ...`` in-process, or ``MICRODUCK_FAULT_FROZEN_BROADPHASE=1`` (or
``=list``) in the environment of a process that imports :mod:`mjlab_microduck` (the package
applies it on import, so ``microduck train`` subprocesses inherit it). Never on by default.
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from mjlab_microduck.compat import _hook
from mjlab_microduck.compat._hook import HookStatus, PatchSet

FIX = "fault:frozen_broadphase"
ENV_VAR = "MICRODUCK_FAULT_FROZEN_BROADPHASE"
MODES = ("fork", "list")
# Env var values: a mode name, or a generic "on" meaning the default mode.
_ON_VALUES = {"1", "true", "yes", "on"}
BROADPHASE_FUNCTIONS = ("nxn_broadphase", "sap_broadphase")


@dataclass
class _FrozenList:
    """The first step's broadphase output for one ``Data`` object."""

    ncollision: Any
    collision_pair: Any
    collision_pairid: Any
    collision_worldid: Any


_patches = PatchSet()
_frozen: dict[int, _FrozenList] = {}
_counts = {"fresh_broadphase_calls": 0, "frozen_broadphase_calls": 0}
_source: str | None = None  # "context manager", "env var" or "enable()"
_mode: str = "fork"


def _forget(key: int) -> None:
    _frozen.pop(key, None)


def _wrap_broadphase(original: Any) -> Any:
    import warp as wp

    @functools.wraps(original)
    def broadphase(m: Any, d: Any, ctx: Any) -> Any:
        key = id(d)
        frozen = _frozen.get(key)
        if frozen is None:
            result = original(m, d, ctx)
            _frozen[key] = _FrozenList(
                ncollision=wp.clone(d.ncollision),
                collision_pair=wp.clone(ctx.collision_pair),
                collision_pairid=wp.clone(ctx.collision_pairid),
                collision_worldid=wp.clone(ctx.collision_worldid),
            )
            # Drop the snapshot when the Data object dies, so a new Data reusing the id is fresh.
            weakref.finalize(d, _forget, key)
            _counts["fresh_broadphase_calls"] += 1
            return result
        if _mode == "list":
            wp.copy(d.ncollision, frozen.ncollision)
        # "fork": d.ncollision stays as collision() left it before the broadphase (zero).
        wp.copy(ctx.collision_pair, frozen.collision_pair)
        wp.copy(ctx.collision_pairid, frozen.collision_pairid)
        wp.copy(ctx.collision_worldid, frozen.collision_worldid)
        _counts["frozen_broadphase_calls"] += 1
        return None

    return _hook.mark_wrapper(broadphase, FIX, original)


def _capture_veto(sim: Any) -> str:
    return "frozen-broadphase fault injection needs eager stepping (a captured graph would skip it)"


def is_enabled() -> bool:
    return bool(_patches.patches)


def enable(
    mode: str = "fork",
    *,
    collision_module: ModuleType | None = None,
    simulation_cls: Any | None = None,
    source: str = "enable()",
) -> HookStatus:
    """Freeze the broadphase after the first step of every ``Data`` from now on (see the module
    docstring for ``mode``). Idempotent: while on, a second call changes nothing."""
    global _source, _mode
    if mode not in MODES:
        raise ValueError(f"unknown frozen-broadphase mode {mode!r}; expected one of {MODES}")
    if is_enabled():
        return status()
    _mode = mode
    if collision_module is None:
        from mujoco_warp._src import collision_driver as collision_module  # type: ignore
    for name in BROADPHASE_FUNCTIONS:
        original = getattr(collision_module, name, None)
        if original is not None and not _hook.is_our_wrapper(original, FIX):
            _patches.replace(collision_module, name, _wrap_broadphase(original))
    try:
        _hook.add_graph_veto(FIX, _capture_veto, simulation_cls)
    except ImportError:
        pass  # no mjlab: nothing captures graphs of step on our behalf
    _source = source
    return status()


def disable() -> None:
    """Restore the real broadphase and forget every frozen list."""
    global _source, _mode
    if not is_enabled() and _source is None:
        return
    _hook.remove_graph_veto(FIX)
    _patches.revert_all()
    _frozen.clear()
    _counts.update({key: 0 for key in _counts})
    _source = None
    _mode = "fork"


@contextmanager
def frozen_broadphase(mode: str = "fork", **kwargs: Any) -> Iterator[HookStatus]:
    """Context manager: the fault is on inside the block (create the env inside it too).

    If the fault was already on (env var, outer block) it stays on afterwards, in its mode.
    """
    was_enabled = is_enabled()
    status_now = enable(mode, source="context manager", **kwargs)
    try:
        yield status_now
    finally:
        if not was_enabled:
            disable()


def mode_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The mode ``MICRODUCK_FAULT_FROZEN_BROADPHASE`` asks for: 1/true/yes/on -> "fork",
    "fork"/"list" -> that mode, anything else (unset, 0, off) -> None."""
    environ = os.environ if environ is None else environ
    value = environ.get(ENV_VAR, "").strip().lower()
    if value in _ON_VALUES:
        return "fork"
    return value if value in MODES else None


def install_from_env(environ: Mapping[str, str] | None = None) -> HookStatus:
    """Enable the fault when ``MICRODUCK_FAULT_FROZEN_BROADPHASE`` asks for it."""
    mode = mode_from_env(environ)
    if mode is not None:
        return enable(mode, source="env var")
    return status()


def status() -> HookStatus:
    if not is_enabled():
        return HookStatus(
            FIX,
            False,
            f"off (opt-in: {ENV_VAR}=1 or faults.frozen_broadphase())",
            {},
        )
    details: dict[str, Any] = dict(_counts)
    details["source"] = _source
    details["mode"] = _mode
    details["data_objects_frozen"] = len(_frozen)
    details["mjlab_captures_vetoed"] = _hook.graph_veto_count(FIX)
    details["wrapped"] = [p.name for p in _patches.patches if hasattr(p, "owner")]
    return HookStatus(
        FIX,
        True,
        f"ON ({_source}, mode {_mode}): broadphase candidate list frozen after the first step of "
        "each Data, as the ROCm fork's cache does; mjlab graph capture vetoed",
        details,
    )
