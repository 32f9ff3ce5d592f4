"""hip_stepping: eager stepping on HIP devices only; CPU/CUDA behaviour stays exactly mjlab's.

No AMD GPU exists here, so HIP is simulated with fake Warp devices (``is_hip``/``is_cuda`` as
on the ROCm Warp fork, whose HIP devices are ``cuda:N`` devices with ``is_hip`` True) and with
fake modules shaped like the fork's ``put_model``/``put_data`` (ROCm/mujoco_warp io.py: graph
support from ``wp.is_conditional_graph_supported()``, ``_hip_graph`` attributes on HIP Data).
"""

from __future__ import annotations

import os
from types import ModuleType, SimpleNamespace

import mujoco
import pytest
from fakes import CPU, CUDA, HIP, FakeDevice  # noqa: F401

from mjlab_microduck import compat
from mjlab_microduck.compat import _hook, hip_stepping


class FakeSimulation:
    """Shaped like mjlab.sim.sim.Simulation: the decision reads ``self.wp_device``."""

    def __init__(self, device: FakeDevice) -> None:
        self.wp_device = device

    def _should_use_cuda_graph(self) -> bool:
        return self.wp_device.is_cuda  # stands for mjlab's driver/mempool checks


def fake_fork_mujoco_warp(current: dict) -> ModuleType:
    """put_model/put_data with the fork's HIP behaviour, keyed on the current fake device."""
    module = ModuleType("fake_rocm_mujoco_warp")

    def put_model(mjm):
        # Upstream 3.8.1 sets graph_conditional = True unconditionally; the fork asks Warp.
        return SimpleNamespace(opt=SimpleNamespace(graph_conditional=True), mjm=mjm)

    def put_data(mjm, mjd, nworld=1, **kwargs):
        d = SimpleNamespace(nworld=nworld)
        if current["device"].is_hip:
            d._hip_graph = None
            d._hip_graph_exec = None
            d._hip_step_warmup_count = 0
        return d

    module.put_model = put_model
    module.put_data = put_data
    return module


@pytest.fixture
def env(monkeypatch):
    """Clean compat state, no user WP_HIP_GRAPH_ENABLE, and a switchable fake current device."""
    compat.uninstall_all()
    monkeypatch.delenv(hip_stepping.ENV_VAR, raising=False)
    current = {"device": CPU}
    monkeypatch.setattr(_hook, "current_warp_device", lambda: current["device"])
    yield current
    compat.uninstall_all()
    compat.install_all()


def _install(current, **kwargs):
    fork = fake_fork_mujoco_warp(current)
    originals = (fork.put_model, fork.put_data)
    status = hip_stepping.install(
        hip_platform=True, mujoco_warp_modules=[fork], simulation_cls=FakeSimulation, **kwargs
    )
    return fork, originals, status


def test_no_hip_evidence_patches_nothing(env):
    original = FakeSimulation.__dict__["_should_use_cuda_graph"]
    fork = fake_fork_mujoco_warp(env)
    put_model = fork.put_model
    status = hip_stepping.install(
        hip_platform=False, mujoco_warp_modules=[fork], simulation_cls=FakeSimulation
    )
    assert status.active is False
    assert "no HIP evidence" in status.reason
    assert FakeSimulation.__dict__["_should_use_cuda_graph"] is original
    assert fork.put_model is put_model
    assert hip_stepping.ENV_VAR not in os.environ


def test_this_machine_has_no_hip_evidence(env):
    facts = _hook.platform_facts()
    assert facts.hip is False, facts.summary()
    assert hip_stepping.install().active is False


def test_hip_device_gets_eager_stepping(env):
    env["device"] = HIP
    fork, _, status = _install(env)
    assert status.active is True
    assert os.environ[hip_stepping.ENV_VAR] == "0"
    sim = FakeSimulation(HIP)
    assert sim._should_use_cuda_graph() is False
    assert "HIP device" in sim._microduck_graph_veto
    model = fork.put_model("mjm")
    assert model.opt.graph_conditional is False
    data = fork.put_data("mjm", "mjd")
    assert not hasattr(data, "_hip_graph")
    assert data._hip_step_warmup_count == 0  # only the switch attributes are removed
    details = hip_stepping.status().details
    assert details["graph_conditional_forced_off"] == 1
    assert details["hip_graph_data_attrs_removed"] == 1
    assert details["mjlab_captures_vetoed"] == 1


@pytest.mark.parametrize("device", [CPU, CUDA], ids=["cpu", "cuda"])
def test_cpu_and_cuda_devices_are_untouched_even_when_installed(env, device):
    env["device"] = device
    fork, _, _ = _install(env)
    sim = FakeSimulation(device)
    assert sim._should_use_cuda_graph() is device.is_cuda  # exactly the original decision
    assert not hasattr(sim, "_microduck_graph_veto")
    assert fork.put_model("mjm").opt.graph_conditional is True
    status = hip_stepping.status().details
    assert status["graph_conditional_forced_off"] == 0
    assert status["mjlab_captures_vetoed"] == 0


def test_user_setting_is_respected(env, monkeypatch):
    monkeypatch.setenv(hip_stepping.ENV_VAR, "1")
    env["device"] = HIP
    fork, _, status = _install(env)
    assert os.environ[hip_stepping.ENV_VAR] == "1"
    assert "set by the user" in status.details[hip_stepping.ENV_VAR]
    data = fork.put_data("mjm", "mjd")
    assert hasattr(data, "_hip_graph")  # the user opted into the fork's hipGraph path
    # mjlab's outer capture stays off regardless: nesting is the failure, not the fork's graph.
    assert FakeSimulation(HIP)._should_use_cuda_graph() is False
    hip_stepping.uninstall()
    assert os.environ[hip_stepping.ENV_VAR] == "1"  # never ours to remove


def test_idempotent_and_uninstall_restores_originals(env):
    env["device"] = HIP
    original_decision = FakeSimulation.__dict__["_should_use_cuda_graph"]
    fork, (put_model, put_data), first = _install(env)
    wrapped_model = fork.put_model
    second = hip_stepping.install(
        hip_platform=True, mujoco_warp_modules=[fork], simulation_cls=FakeSimulation
    )
    assert second is first
    assert fork.put_model is wrapped_model
    assert fork.put_model.__wrapped__ is put_model  # wrapped once, not twice
    hip_stepping.uninstall()
    assert fork.put_model is put_model
    assert fork.put_data is put_data
    assert FakeSimulation.__dict__["_should_use_cuda_graph"] is original_decision
    assert hip_stepping.ENV_VAR not in os.environ
    assert hip_stepping.status().reason == "not installed"


def test_real_mjlab_simulation_vetoed_on_hip_and_unchanged_on_cuda(env, monkeypatch):
    import warp as wp
    from mjlab.sim.sim import Simulation

    compat.install_all()  # warp.context alias, as in a real run
    wp.init()
    import warp._src.context as internal

    monkeypatch.setattr(wp, "is_mempool_enabled", lambda device: True)
    monkeypatch.setattr(internal.runtime, "driver_version", (12, 8))
    original = Simulation.__dict__["_should_use_cuda_graph"]
    cuda_sim = SimpleNamespace(wp_device=CUDA)
    hip_sim = SimpleNamespace(wp_device=HIP)
    expected_cuda = original(cuda_sim)
    assert expected_cuda is True
    hip_stepping.install(hip_platform=True, mujoco_warp_modules=[fake_fork_mujoco_warp(env)])
    assert Simulation._should_use_cuda_graph(cuda_sim) is expected_cuda
    assert Simulation._should_use_cuda_graph(hip_sim) is False
    hip_stepping.uninstall()
    assert Simulation.__dict__["_should_use_cuda_graph"] is original


def test_real_put_model_graph_conditional_forced_off_only_on_hip(env):
    import mujoco_warp as mjw
    import warp as wp
    from mujoco_warp._src import io as mjw_io

    mjm = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><geom size='1 1 .1' type='plane'/>"
        "<body><freejoint/><geom size='.05'/></body>"
        "</worldbody></mujoco>"
    )
    hip_stepping.install(hip_platform=True, simulation_cls=FakeSimulation)
    assert mjw.put_model is mjw_io.put_model  # package re-export and module both wrapped
    with wp.ScopedDevice("cpu"):
        env["device"] = CUDA
        assert bool(mjw.put_model(mjm).opt.graph_conditional) is True  # upstream default kept
        env["device"] = HIP
        assert bool(mjw.put_model(mjm).opt.graph_conditional) is False
    hip_stepping.uninstall()
    assert not _hook.is_our_wrapper(mjw.put_model, hip_stepping.FIX)
    assert mjw.put_model is mjw_io.put_model
