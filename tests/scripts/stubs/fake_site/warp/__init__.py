"""Fake ``warp`` for tests/scripts/test_setup_rocm.py, shaped like the ROCm fork's device API.

The fork adds ``Device.is_hip`` and ``Device.arch_str``; FAKE_WARP_HIP=0 makes the device a
non-HIP one (as with NVIDIA's warp-lang), FAKE_WARP_ARCH sets its architecture string.
"""

import os

__version__ = "1.13.0+rocm.0"


class Device:
    def __init__(self, alias: str) -> None:
        self.alias = alias
        self.is_hip = os.environ.get("FAKE_WARP_HIP", "1") == "1"
        self.arch_str = os.environ.get("FAKE_WARP_ARCH", "gfx1201")

    def __str__(self) -> str:
        return self.alias


def init() -> None:
    pass


def get_device(alias: str = "cuda:0") -> Device:
    return Device(alias)
