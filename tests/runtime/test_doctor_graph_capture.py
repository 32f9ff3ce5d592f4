"""The doctor's "mjlab graph capture" row: mjlab's own decision, with the package's vetoes."""

from types import SimpleNamespace

import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)
from mjlab_microduck.compat import faults
from mjlab_microduck.runtime import doctor


def test_cpu_never_captures():
    row = doctor.graph_capture_check("cpu")
    assert (row.name, row.value) == ("mjlab graph capture", "off")
    assert row.detail == "not a CUDA device"


def test_cuda_device_follows_mjlab(monkeypatch):
    import warp as wp

    # A fake NVIDIA device with a mempool and a recent driver: mjlab itself says capture.
    fake = SimpleNamespace(is_cuda=True, is_hip=False, alias="cuda:0")
    monkeypatch.setattr(wp, "is_mempool_enabled", lambda device: True)
    monkeypatch.setattr(wp.context.runtime, "driver_version", (13, 0), raising=False)
    row = doctor.graph_capture_check("cuda:0", wp_device=fake)
    assert row.value == "on"
    # The frozen-broadphase fault vetoes capture (a captured graph would skip the freeze).
    with faults.frozen_broadphase():
        vetoed = doctor.graph_capture_check("cuda:0", wp_device=fake)
    assert vetoed.value == "off" and "frozen_broadphase" in vetoed.detail
    assert doctor.graph_capture_check("cuda:0", wp_device=fake).value == "on"
