"""Recompute the broadphase every step on HIP (undo the ROCm fork's candidate-list cache).

Problem: the ROCm MuJoCo Warp fork ("AMD Opt 5") caches the broadphase result of the first
``collision()`` call on the ``Data`` object when the current Warp device is HIP, and reuses that
candidate-pair list on every later step; only the narrowphase runs again. The candidate set is
not static: a body that does not touch anything in the first frame (a robot dropped ~2 cm at
reset, a sphere released above a plane) never becomes a candidate, so it falls through the floor
while training carries on with finite numbers.

What the fork does (read from ROCm/mujoco_warp ``mujoco_warp/_src/collision_driver.py``;
the pinned commit 9229bb9 is not in the searchable index, so the shapes below come from the two
stored revisions and from the AMD chapter's own hook):
  * commit 7215199606ef: unconditional on HIP. ``if wp.get_device().is_hip and
    hasattr(d, "_static_collision_ctx")`` and ``d._static_cache_valid`` -> reuse
    ``d._static_collision_ctx``; after a fresh broadphase on HIP it stores the context there and
    sets ``_static_cache_valid = True``.
  * commit f1bb46ee40fa: opt-in. Module flag ``_BROADPHASE_CACHE_ENABLED`` read from
    ``MJW_HIP_BROADPHASE_CACHE`` (default "0"); cache attribute ``d._bvh_cached_ctx``.
  * for 9229bb9 the AMD chapter's own hook deletes ``d._bvh_cached_ctx`` on HIP without setting
    any opt-in variable, so that revision presumably cached under that name by default.
  In every stored variant the reused context is read after ``_zero_nacon_ncollision`` has reset
  ``d.ncollision`` to 0, so (with mujoco_warp's narrowphase, which stops at that count) no pair
  is a candidate after the first step.

Fix: wrap ``collision_driver.collision`` (``forward.py`` calls it as
``collision_driver.collision(m, d)``) so that, on HIP, every call first drops whichever cache
attributes exist on ``d``. The fork then runs its broadphase as on the first step, every step.
Throughput drops a little (the broadphase has to follow the robot), which is correct.

No-op: when the installed collision driver has no cache (upstream mujoco_warp 3.8.1, as on the
CPU/CUDA machines) nothing is patched and the status says so. On CPU/CUDA devices the wrapper,
if installed, passes straight through.
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

from mjlab_microduck.compat import _hook
from mjlab_microduck.compat._hook import HookStatus

FIX = "broadphase"
# Data attributes under which the fork's stored revisions keep the cached candidate context.
CACHE_DATA_ATTRS = ("_bvh_cached_ctx", "_static_collision_ctx", "_static_cache_valid")
# Module-level switch of the opt-in revision (from MJW_HIP_BROADPHASE_CACHE).
CACHE_MODULE_FLAG = "_BROADPHASE_CACHE_ENABLED"

_state = _hook.HookState(FIX, {"invalidations": 0, "hip_calls": 0})
_patches = _state.patches
_counts = _state.counts


def cache_markers(collision_fn: Any) -> set[str]:
    """Cache attribute names the collision function mentions (by attribute access or string),
    read from its code object so it works without source files."""
    fn = _hook.unwrap_ours(collision_fn)
    fn = getattr(fn, "__wrapped__", fn)  # through mujoco_warp's @event_scope (functools.wraps)
    code = getattr(fn, "__code__", None)
    if code is None:
        return set()
    names = set(code.co_names) | {c for c in code.co_consts if isinstance(c, str)}
    return names & set(CACHE_DATA_ATTRS)


def _data_device(data: Any) -> Any:
    qpos = getattr(data, "qpos", None)
    return getattr(qpos, "device", None)


def _wrap_collision(original: Any) -> Any:
    @functools.wraps(original)
    def collision(m: Any, d: Any) -> Any:
        # The fork decides on the current device; the data's device is checked too in case a
        # caller steps HIP data outside a ScopedDevice.
        if _hook.device_is_hip(_hook.current_warp_device()) or _hook.device_is_hip(_data_device(d)):
            _counts["hip_calls"] += 1
            dropped = False
            for name in CACHE_DATA_ATTRS:
                if name in getattr(d, "__dict__", {}):
                    delattr(d, name)
                    dropped = True
            if dropped:
                _counts["invalidations"] += 1
        return original(m, d)

    return _hook.mark_wrapper(collision, FIX, original)


def install(
    *,
    collision_module: ModuleType | None = None,
    package_module: ModuleType | None = None,
) -> HookStatus:
    """Wrap the fork's ``collision`` when it carries a broadphase cache. Idempotent.

    ``collision_module`` defaults to ``mujoco_warp._src.collision_driver`` and ``package_module``
    to ``mujoco_warp`` (whose ``collision`` re-export is wrapped too if it is the same function).
    """
    if _state.active():
        return _state.active()
    if collision_module is None:
        from mujoco_warp._src import collision_driver as collision_module  # type: ignore
    if package_module is None:
        import mujoco_warp as package_module  # type: ignore[no-redef]
    collision = getattr(collision_module, "collision", None)
    markers = cache_markers(collision)
    details: dict[str, Any] = {
        "collision_module": collision_module.__name__,
        "cache_markers": sorted(markers),
    }
    if hasattr(collision_module, CACHE_MODULE_FLAG):
        details[CACHE_MODULE_FLAG] = getattr(collision_module, CACHE_MODULE_FLAG)
    if collision is None or not markers:
        _state.set(
            False,
            "this collision driver has no broadphase cache (upstream mujoco_warp): it already "
            "recomputes the broadphase every step",
            details,
        )
        return _state.status
    if _hook.is_our_wrapper(collision, FIX):
        _state.set(True, "already wrapped", details)
        return _state.status
    wrapper = _wrap_collision(collision)
    _patches.replace(collision_module, "collision", wrapper)
    wrapped = [f"{collision_module.__name__}.collision"]
    if getattr(package_module, "collision", None) is collision:
        _patches.replace(package_module, "collision", wrapper)
        wrapped.append(f"{package_module.__name__}.collision")
    details["wrapped"] = wrapped
    _state.set(
        True,
        "collision driver caches the first broadphase candidate list on HIP "
        f"({', '.join(sorted(markers))}); the cache is dropped before every HIP step",
        details,
    )
    return _state.status


def uninstall() -> None:
    _state.reset()


def status() -> HookStatus:
    return _state.report()
