"""The one backend and device decider (mjlab_microduck.runtime.backend)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mjlab_microduck.runtime import backend


@pytest.mark.parametrize(("device", "index"), [("cpu", None), ("cuda", 0), ("cuda:3", 3)])
def test_device_strings_and_their_gpu_index(device, index):
    assert backend.parse_device(device) == device
    assert backend.cuda_index(device) == index


@pytest.mark.parametrize("device", ["gpu0", "cuda:", "cuda:x", "CUDA:0", "rocm:0", "", "cpu:0"])
def test_malformed_devices_are_one_line(device):
    with pytest.raises(backend.DeviceError) as info:
        backend.parse_device(device)
    assert str(info.value) == (
        f"device {device!r}: expected cpu, cuda or cuda:N (ROCm torch also says cuda)"
    )


def test_a_gpu_this_machine_lacks_is_refused(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(backend.DeviceError, match="torch sees no GPU"):
        backend.check_device("cuda:0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert backend.check_device("cuda:1") == "cuda:1"
    with pytest.raises(backend.DeviceError, match="only 2 GPU"):
        backend.check_device("cuda:2")
    assert backend.check_device("cpu") == "cpu"


def test_warp_devices_are_told_apart_by_feature():
    hip = SimpleNamespace(alias="cuda:0", is_hip=True, is_cuda=True)  # the ROCm fork's device
    cuda = SimpleNamespace(alias="cuda:0", is_cuda=True)  # upstream Warp: no is_hip at all
    cpu = SimpleNamespace(alias="cpu", is_cuda=False)
    assert [backend.device_kind(d) for d in (hip, cuda, cpu)] == ["hip", "cuda", "cpu"]
    assert backend.describe_device(hip) == "cuda:0 (hip)"


@pytest.mark.parametrize(
    ("version", "rocm"), [("1.13.0+rocm.0", True), ("1.13.0", False), (None, False)]
)
def test_rocm_warp_is_recognised_by_its_version(version, rocm):
    assert backend.is_rocm_warp_version(version) is rocm


def test_torch_backend_follows_the_build_that_drives_the_device(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.version, "hip", "7.2.53211", raising=False)
    assert backend.torch_backend() == ("hip", "7.2.53211")
    assert backend.default_device() == "cuda:0"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert backend.torch_backend() == ("cpu", None)
    assert backend.default_device() == "cpu"
