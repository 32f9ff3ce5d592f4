"""warp_alias: ``warp.context`` is added only when missing, is the live module, and is removable."""

from __future__ import annotations

import sys
from types import ModuleType, SimpleNamespace

import pytest
import warp as wp

from mjlab_microduck import compat
from mjlab_microduck.compat import warp_alias


@pytest.fixture
def clean_compat():
    compat.uninstall_all()
    yield
    compat.uninstall_all()
    compat.install_all()


def _fake_warp(name: str, with_context: bool) -> tuple[ModuleType, ModuleType]:
    """A module shaped like warp 1.13: runtime module at <name>._src.context."""
    fake = ModuleType(name)
    fake.__version__ = "1.13.0+rocm.0"
    src = ModuleType(f"{name}._src")
    context = ModuleType(f"{name}._src.context")
    context.runtime = None

    def init() -> None:
        context.runtime = SimpleNamespace(driver_version=(6, 4))

    context.init = init
    fake._src = src
    src.context = context
    if with_context:
        fake.context = context
    return fake, context


def test_installed_warp_lacks_context_so_the_hook_is_active(clean_compat):
    # warp-lang 1.13.0 here has no warp.context: the precondition the hook exists for.
    assert not hasattr(wp, "context")
    status = warp_alias.install()
    assert status.active is True
    assert status.details["alias_target"] == "warp._src.context"
    assert "no warp.context" in status.reason
    import warp._src.context as internal

    assert wp.context is internal


def test_alias_is_the_live_module_so_runtime_follows_init(clean_compat):
    warp_alias.install()
    wp.init()
    import warp._src.context as internal

    assert internal.runtime is not None
    assert wp.context.runtime is internal.runtime
    # The attribute mjlab 1.3 reads exists (None on a machine without a CUDA driver).
    assert hasattr(wp.context.runtime, "driver_version")


def test_mjlab_graph_decision_crashes_without_alias_and_works_with_it(monkeypatch, clean_compat):
    from mjlab.sim.sim import Simulation

    wp.init()
    import warp._src.context as internal

    # Pretend to be a CUDA device with a 12.8 driver and memory pools, as on an NVIDIA GPU.
    monkeypatch.setattr(wp, "is_mempool_enabled", lambda device: True)
    monkeypatch.setattr(internal.runtime, "driver_version", (12, 8))
    fake_cuda_sim = SimpleNamespace(wp_device=SimpleNamespace(is_cuda=True, is_hip=False))
    with pytest.raises(AttributeError, match="context"):
        Simulation._should_use_cuda_graph(fake_cuda_sim)
    warp_alias.install()
    # mjlab now reads the driver version through the alias and decides to capture.
    assert Simulation._should_use_cuda_graph(fake_cuda_sim) is True
    monkeypatch.setattr(internal.runtime, "driver_version", (12, 2))
    assert Simulation._should_use_cuda_graph(fake_cuda_sim) is False


def test_install_is_idempotent_and_uninstall_removes_only_our_alias(clean_compat):
    first = warp_alias.install()
    second = warp_alias.install()
    assert first is second
    assert len(warp_alias._patches.patches) == 1
    warp_alias.uninstall()
    assert not hasattr(wp, "context")
    assert warp_alias.status().reason == "not installed"


def test_noop_when_warp_still_exposes_context(monkeypatch, clean_compat):
    fake, context = _fake_warp("fakewarp_ctx", with_context=True)
    status = warp_alias.install(fake)
    assert status.active is False
    assert "still exposes" in status.reason
    assert fake.context is context
    warp_alias.uninstall()
    assert fake.context is context  # never ours, never removed


def test_fake_rocm_warp_gets_alias_and_live_runtime(monkeypatch, clean_compat):
    fake, context = _fake_warp("fakewarp_rocm", with_context=False)
    monkeypatch.setitem(sys.modules, "fakewarp_rocm", fake)
    monkeypatch.setitem(sys.modules, "fakewarp_rocm._src", fake._src)
    monkeypatch.setitem(sys.modules, "fakewarp_rocm._src.context", context)
    status = warp_alias.install(fake)
    assert status.active is True
    assert fake.context is context
    context.init()
    assert fake.context.runtime.driver_version == (6, 4)
    warp_alias.uninstall()
    assert not hasattr(fake, "context")


def test_someone_elses_replacement_is_left_alone(clean_compat):
    warp_alias.install()
    sentinel = SimpleNamespace(runtime=None)
    wp.context = sentinel
    try:
        with pytest.warns(RuntimeWarning, match="context: changed by someone else"):
            warp_alias.uninstall()
        assert wp.context is sentinel
    finally:
        del wp.context
