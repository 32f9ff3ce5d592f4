"""Skip texture creation in MuJoCo Warp render contexts on HIP when nothing samples textures.

Problem: ``mujoco_warp.create_render_context`` (3.8.1, ``mujoco_warp/_src/io.py``) turns every
model texture into a ``wp.Texture2D`` (``render_util.create_warp_texture``) even when it is called
with ``use_textures=False``. mjlab builds a render context for raycast sensors too
(``mjlab/sensor/sensor_context.py::SensorContext._create_context``, raycast-only ->
``use_textures=False``), and on HIP creating those hardware textures fails (HIP error 801, "not
supported"), so a task with a height scanner cannot even start, although rays never read a
texture.

Fix: on a HIP device, when no camera needs textures (``use_textures`` is False, or no active
camera renders RGB, and no skybox is requested), call the original with ``use_textures=False``
while ``render_util.create_warp_texture`` temporarily returns a null texture handle. The
context's ``textures`` array keeps one (never sampled) entry per model texture, because the render
kernel only indexes it under ``wp.static(rc.use_textures)`` or for the skybox.

No-op: on CPU and CUDA devices, and on HIP whenever an RGB camera asks for textures (then the
original error is the honest answer: RGB camera sensors with textures are unsupported on HIP).
Nothing is patched at all when no HIP evidence exists.
"""

from __future__ import annotations

import functools
import inspect
from types import ModuleType
from typing import Any

from mjlab_microduck.compat import _hook
from mjlab_microduck.compat._hook import HookStatus

FIX = "render_textures"

_state = _hook.HookState(FIX, {"contexts_without_textures": 0, "contexts_passed_through": 0})
_patches = _state.patches
_counts = _state.counts


class NullTexture2D:
    """Stands in for a ``wp.Texture2D`` that is never sampled: its handle is 0 and it owns no
    device memory. ``wp.array(..., dtype=wp.Texture2D)`` only needs ``__ctype__()``."""

    def __init__(self, ctype: Any) -> None:
        self._ctype = ctype

    def __ctype__(self) -> Any:
        return self._ctype()


def textures_needed(arguments: dict[str, Any]) -> bool:
    """Whether a render context built with these (bound) arguments will sample textures."""
    if arguments.get("render_skybox"):
        return True
    if not arguments.get("use_textures", True):
        return False
    cam_active = arguments.get("cam_active")
    if cam_active is not None and not any(cam_active):
        return False
    render_rgb = arguments.get("render_rgb")
    if render_rgb is None:
        # Model defaults decide per camera; be conservative unless the model has no cameras.
        return getattr(arguments.get("mjm"), "ncam", 1) > 0
    if isinstance(render_rgb, bool):
        return render_rgb
    return any(render_rgb)


def _wrap_create_render_context(original: Any, render_util: ModuleType, texture_type: Any) -> Any:
    signature = inspect.signature(original)

    @functools.wraps(original)
    def create_render_context(*args: Any, **kwargs: Any) -> Any:
        if not _hook.device_is_hip(_hook.current_warp_device()):
            return original(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if textures_needed(bound.arguments):
            _counts["contexts_passed_through"] += 1
            return original(*args, **kwargs)
        bound.arguments["use_textures"] = False
        real_create = render_util.create_warp_texture
        ctype = texture_type._wp_ctype_

        def null_texture(mjm: Any, tex_id: int) -> NullTexture2D:
            return NullTexture2D(ctype)

        render_util.create_warp_texture = null_texture
        try:
            context = original(*bound.args, **bound.kwargs)
        finally:
            render_util.create_warp_texture = real_create
        _counts["contexts_without_textures"] += 1
        return context

    return _hook.mark_wrapper(create_render_context, FIX, original)


def install(
    *,
    hip_platform: bool | None = None,
    mujoco_warp_modules: list[ModuleType] | None = None,
    render_util: ModuleType | None = None,
    texture_type: Any | None = None,
) -> HookStatus:
    """Wrap ``create_render_context`` when HIP is present. Idempotent.

    Test seams: ``hip_platform`` overrides detection; ``mujoco_warp_modules`` (default
    ``mujoco_warp`` and ``mujoco_warp._src.io``), ``render_util`` (default
    ``mujoco_warp._src.render_util``) and ``texture_type`` (default ``wp.Texture2D``).
    """
    if _state.active():
        return _state.active()
    facts = _hook.platform_facts()
    on_hip = facts.hip if hip_platform is None else hip_platform
    details: dict[str, Any] = {"platform": facts.summary()}
    if not on_hip:
        _state.set(
            False,
            "no HIP evidence; render contexts create textures as usual (CPU/CUDA support them)",
            details,
        )
        return _state.status
    if mujoco_warp_modules is None:
        import mujoco_warp
        from mujoco_warp._src import io as mjw_io

        mujoco_warp_modules = [mujoco_warp, mjw_io]
    if render_util is None:
        from mujoco_warp._src import render_util  # type: ignore[no-redef]
    if texture_type is None:
        import warp as wp

        texture_type = wp.Texture2D
    target = next(
        (
            module.create_render_context
            for module in mujoco_warp_modules
            if hasattr(module, "create_render_context")
            and not _hook.is_our_wrapper(module.create_render_context, FIX)
        ),
        None,
    )
    if target is None:
        _state.set(False, "create_render_context not found or already wrapped", details)
        return _state.status
    wrapper = _wrap_create_render_context(target, render_util, texture_type)
    wrapped = []
    for module in mujoco_warp_modules:
        if getattr(module, "create_render_context", None) is target:
            _patches.replace(module, "create_render_context", wrapper)
            wrapped.append(f"{module.__name__}.create_render_context")
    details["wrapped"] = wrapped
    _state.set(
        True,
        "HIP present; render contexts on HIP skip texture creation unless an RGB camera "
        "needs textures (raycast sensors never sample them)",
        details,
    )
    return _state.status


def uninstall() -> None:
    _state.reset()


def status() -> HookStatus:
    return _state.report()
