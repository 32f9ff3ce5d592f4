"""Fakes shared by the compat tests: Warp devices as the hooks see them (feature flags only).

A HIP device of the ROCm Warp fork is a CUDA-like device (``is_cuda``) that also reports
``is_hip``; the hooks decide by these flags, never by a device name.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class FakeDevice:
    alias: str
    is_cuda: bool = False
    is_hip: bool = False


CPU = FakeDevice("cpu")
CUDA = FakeDevice("cuda:0", is_cuda=True)
HIP = FakeDevice("cuda:0", is_cuda=True, is_hip=True)
