"""Eager physics stepping on HIP: no nested graph capture, no conditional graph nodes.

Problem: on ROCm three layers may try to record the physics step as a GPU graph.
  1. mjlab 1.3 captures ``mjwarp.step`` in a graph whenever ``Simulation._should_use_cuda_graph``
     says so;
  2. the ROCm MuJoCo Warp fork has its own experimental hipGraph path (stored fork sources key it
     on ``Data`` attributes ``_hip_graph``/``_hip_graphs`` that ``put_data`` creates on HIP; its
     docstring ties it to ``WP_HIP_GRAPH_ENABLE=1``), which does host-side convergence checks and
     secondary-stream synchronisation that cannot run inside mjlab's outer capture: the result is
     a capture error during stream synchronisation, and on gfx1201 the fork's hipGraph path gave
     non-finite MicroDuck state;
  3. the solver uses a conditional graph node (``wp.capture_while``) when
     ``Model.opt.graph_conditional`` is True, a CUDA 12.4 feature HIP does not provide. Upstream
     mujoco_warp 3.8.1 sets it True unconditionally in ``put_model``.

Fix (HIP only, each part reported):
  * ``WP_HIP_GRAPH_ENABLE=0`` unless the user set the variable (an explicit ``1`` is respected);
  * while it is ``0``, drop the fork's ``_hip_graph*`` attributes from a freshly created ``Data`` so
    the fork's ``step`` takes its eager path even if its ``put_data`` ignored the variable;
  * mjlab's own capture is vetoed on a HIP device (``_should_use_cuda_graph`` returns False);
  * ``m.opt.graph_conditional`` is forced False after ``put_model`` on a HIP device.

No-op: when no HIP evidence exists (Warp version without ``+rocm``, ``torch.version.hip`` unset,
no HIP Warp device), nothing is patched. Even when installed, every wrapper checks the device of
the call: on CUDA ``_should_use_cuda_graph`` returns exactly mjlab's own answer and ``put_model``
is untouched, so NVIDIA behaviour is unchanged.
"""

from __future__ import annotations

import functools
import os
from types import ModuleType
from typing import Any

from mjlab_microduck.compat import _hook
from mjlab_microduck.compat._hook import HookStatus

FIX = "hip_stepping"
ENV_VAR = "WP_HIP_GRAPH_ENABLE"
# Data attributes that switch on the fork's hipGraph step path (ROCm/mujoco_warp io.py put_data,
# forward.py step: ``_use_graph = hasattr(d, '_hip_graph')`` / ``hasattr(d, '_hip_graphs')``).
HIP_GRAPH_DATA_ATTRS = ("_hip_graph", "_hip_graphs")

_state = _hook.HookState(
    FIX, {"graph_conditional_forced_off": 0, "hip_graph_data_attrs_removed": 0}
)
_patches = _state.patches
_counts = _state.counts


def _hip_capture_veto(sim: Any) -> str | None:
    device = getattr(sim, "wp_device", None)
    if _hook.device_is_hip(device):
        return (
            f"{_hook.describe_device(device)} is a HIP device: nested graph capture is "
            "unsupported, stepping eagerly"
        )
    return None


def _wrap_put_model(original: Any) -> Any:
    @functools.wraps(original)
    def put_model(*args: Any, **kwargs: Any) -> Any:
        model = original(*args, **kwargs)
        if _hook.device_is_hip(_hook.current_warp_device()):
            opt = getattr(model, "opt", None)
            if opt is not None and getattr(opt, "graph_conditional", False):
                # Conditional graph nodes (capture_while) are a CUDA 12.4 feature; HIP lacks them.
                opt.graph_conditional = False
                _counts["graph_conditional_forced_off"] += 1
        return model

    return _hook.mark_wrapper(put_model, FIX, original)


def _wrap_put_data(original: Any) -> Any:
    @functools.wraps(original)
    def put_data(*args: Any, **kwargs: Any) -> Any:
        data = original(*args, **kwargs)
        if os.environ.get(ENV_VAR) == "0" and _hook.device_is_hip(_hook.current_warp_device()):
            for name in HIP_GRAPH_DATA_ATTRS:
                if name in getattr(data, "__dict__", {}):
                    delattr(data, name)
                    _counts["hip_graph_data_attrs_removed"] += 1
        return data

    return _hook.mark_wrapper(put_data, FIX, original)


def _patch_function(
    owners: list[ModuleType], name: str, make_wrapper: Any, patched: list[str]
) -> None:
    """Wrap ``name`` on every owner module that holds the same function object (the package
    re-export and its defining module), so callers reach the wrapper whichever path they use."""
    target = None
    for owner in owners:
        candidate = getattr(owner, name, None)
        if candidate is not None and not _hook.is_our_wrapper(candidate, FIX):
            target = candidate
            break
    if target is None:
        return
    wrapper = make_wrapper(target)
    for owner in owners:
        if getattr(owner, name, None) is target:
            _patches.replace(owner, name, wrapper)
            patched.append(f"{owner.__name__}.{name}")


def install(
    *,
    hip_platform: bool | None = None,
    mujoco_warp_modules: list[ModuleType] | None = None,
    simulation_cls: Any | None = None,
) -> HookStatus:
    """Install the HIP stepping fixes when HIP is present. Idempotent.

    The keyword arguments exist for tests: ``hip_platform`` overrides detection,
    ``mujoco_warp_modules`` are the modules whose ``put_model``/``put_data`` are wrapped (default:
    ``mujoco_warp`` and ``mujoco_warp._src.io``), ``simulation_cls`` defaults to mjlab's.
    """
    if _state.active():
        return _state.active()
    facts = _hook.platform_facts()
    on_hip = facts.hip if hip_platform is None else hip_platform
    details: dict[str, Any] = {"platform": facts.summary()}
    if not on_hip:
        _state.set(
            False,
            "no HIP evidence (feature checks: Warp +rocm build, torch.version.hip, HIP Warp "
            "devices); graph capture and solver options left to mjlab/mujoco_warp",
            details,
        )
        return _state.status

    user_value = os.environ.get(ENV_VAR)
    if _patches.env_default(ENV_VAR, "0") is not None:
        details[ENV_VAR] = "0 (set by this hook: eager HIP stepping)"
    else:
        details[ENV_VAR] = f"{user_value} (set by the user, respected)"

    if mujoco_warp_modules is None:
        import mujoco_warp
        from mujoco_warp._src import io as mjw_io

        mujoco_warp_modules = [mujoco_warp, mjw_io]
    patched: list[str] = []
    _patch_function(mujoco_warp_modules, "put_model", _wrap_put_model, patched)
    _patch_function(mujoco_warp_modules, "put_data", _wrap_put_data, patched)
    details["wrapped"] = patched

    try:
        _hook.add_graph_veto(FIX, _hip_capture_veto, simulation_cls)
        details["mjlab_graph_capture"] = "vetoed on HIP devices, mjlab decides elsewhere"
    except ImportError as exc:  # mjlab missing: nothing to veto
        details["mjlab_graph_capture"] = f"mjlab not importable ({exc})"

    _state.set(
        True,
        f"HIP present; eager stepping: {ENV_VAR}={os.environ.get(ENV_VAR)}, mjlab graph capture "
        "off on HIP devices, graph_conditional forced off after put_model on HIP",
        details,
    )
    return _state.status


def uninstall() -> None:
    _hook.remove_graph_veto(FIX)
    _state.reset()


def status() -> HookStatus:
    return _state.report(mjlab_captures_vetoed=_hook.graph_veto_count(FIX))
