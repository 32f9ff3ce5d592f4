"""Which backend runs the work, and which device a command names: the one place that decides.

Detection is by feature only, never by GPU product name: a Warp device's ``is_hip`` attribute
(it exists only in the ROCm fork, where ``is_cuda`` is true as well because HIP poses as CUDA),
``torch.version.hip``, and a ``+rocm`` suffix on Warp's version. Device strings are the ones
torch and mjlab take: ``cpu``, ``cuda`` or ``cuda:N`` (a ROCm build of torch also says cuda).

This module imports nothing from the package, so the compatibility hooks below it can use it
too. torch and Warp are imported only inside the functions that need them.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import Any

_DEVICE_RE = re.compile(r"cpu|cuda(?::(\d+))?")


class DeviceError(ValueError):
    """A device string that is malformed or names a device this machine does not have."""


def parse_device(text: str) -> str:
    """``text`` if it is ``cpu``, ``cuda`` or ``cuda:N``; else :class:`DeviceError` (one line).

    Only the spelling is checked here (no torch import), so a CLI can refuse ``gpu0`` at once.
    """
    if not _DEVICE_RE.fullmatch(text or ""):
        raise DeviceError(
            f"device {text!r}: expected cpu, cuda or cuda:N (ROCm torch also says cuda)"
        )
    return text


def cuda_index(device: str) -> int | None:
    """The GPU index of ``device`` (``cuda`` is 0); None for ``cpu``."""
    match = _DEVICE_RE.fullmatch(parse_device(device))
    assert match is not None  # parse_device accepted it
    if device == "cpu":
        return None
    return int(match.group(1) or 0)


def check_device(device: str) -> str:
    """``device`` if it is well formed and present on this machine, else :class:`DeviceError`."""
    index = cuda_index(device)
    if index is None:
        return device
    import torch

    if not torch.cuda.is_available():
        raise DeviceError(f"device {device!r}: torch sees no GPU on this machine (use cpu)")
    count = torch.cuda.device_count()
    if index >= count:
        raise DeviceError(f"device {device!r}: only {count} GPU(s) visible")
    return device


def default_device() -> str:
    """``cuda:0`` when torch sees a GPU, else ``cpu``."""
    return "cpu" if torch_backend()[0] == "cpu" else "cuda:0"


def device_is_hip(device: Any) -> bool:
    """True for a Warp device of the ROCm fork that runs on HIP. Upstream Warp devices have no
    ``is_hip`` attribute at all, which reads as False."""
    return bool(getattr(device, "is_hip", False))


def device_is_cuda(device: Any) -> bool:
    return bool(getattr(device, "is_cuda", False))


def device_kind(device: Any) -> str:
    """``hip``, ``cuda`` or ``cpu`` for a Warp device object."""
    return "hip" if device_is_hip(device) else "cuda" if device_is_cuda(device) else "cpu"


def describe_device(device: Any) -> str:
    alias = getattr(device, "alias", None) or str(device)
    return f"{alias} ({device_kind(device)})"


def warp_backend(device: str) -> str:
    """``cpu``, ``cuda`` or ``hip`` for the Warp device behind a device string."""
    if cuda_index(device) is None:
        return "cpu"
    import warp as wp

    return device_kind(wp.get_device(device))


def is_rocm_warp_version(version: str | None) -> bool:
    """The ROCm fork publishes versions such as ``1.13.0+rocm.0``."""
    return "rocm" in (version or "").lower()


def torch_backend() -> tuple[str, str | None]:
    """``("hip", ver)``, ``("cuda", ver)`` or ``("cpu", None)`` for the torch in use.

    The backend is the *build* of torch that can drive the visible device: a CUDA build on a
    machine without a GPU is reported as ``cpu`` because that is where the work runs.
    """
    try:
        import torch
    except ImportError:  # a bare tooling environment: no torch, so certainly no GPU run
        return "cpu", None
    if not torch.cuda.is_available():
        return "cpu", None
    hip = getattr(torch.version, "hip", None)
    if hip:
        return "hip", str(hip)
    return "cuda", str(torch.version.cuda)


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


def _module_or_none(name: str) -> Any:
    if name in sys.modules:
        return sys.modules[name]
    try:
        return __import__(name)
    except ImportError:
        return None


def platform_facts() -> PlatformFacts:
    """Collect HIP evidence. Never calls ``wp.init()``: it only lists devices when Warp's
    runtime is already initialised, so installing the hooks stays quiet and fast."""
    warp_version: str | None = None
    hip_devices: list[str] = []
    warp = _module_or_none("warp")
    if warp is not None:
        warp_version = getattr(warp, "__version__", None)
        context = sys.modules.get(f"{warp.__name__}._src.context") or getattr(warp, "context", None)
        runtime = getattr(context, "runtime", None) if context is not None else None
        for device in getattr(runtime, "cuda_devices", None) or []:
            if device_is_hip(device):
                hip_devices.append(str(getattr(device, "alias", device)))
    torch = _module_or_none("torch")
    torch_hip = getattr(getattr(torch, "version", None), "hip", None) if torch else None
    return PlatformFacts(
        warp_version=warp_version,
        warp_is_rocm_build="+rocm" in (warp_version or ""),
        torch_hip_version=torch_hip,
        hip_devices=tuple(hip_devices),
    )
