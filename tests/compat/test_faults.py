"""Frozen-broadphase fault injection: switchable, reversible, env-var driven, and it really breaks
contacts (sphere scenes with the real mujoco_warp 3.8.1 on CPU, and a MicroDuck env)."""

from __future__ import annotations

import json
import os
import sys
from types import SimpleNamespace

import mujoco
import numpy as np
import pytest
import suite_memo
import warp as wp

from mjlab_microduck import compat
from mjlab_microduck.compat import faults


@pytest.fixture(autouse=True)
def fault_off():
    faults.disable()
    yield
    faults.disable()


def _sphere_model(z0: float) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(f"""
<mujoco><option timestep="0.005"/><worldbody>
  <geom type="plane" size="1 1 .1"/>
  <body pos="0 0 {z0}"><freejoint/><geom type="sphere" size="0.05" mass="0.1"/></body>
</worldbody></mujoco>""")


def _simulate(mjm: mujoco.MjModel, steps: int) -> tuple[float, int]:
    import mujoco_warp as mjw

    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    with wp.ScopedDevice("cpu"):
        m = mjw.put_model(mjm)
        d = mjw.put_data(mjm, mjd, nworld=1, nconmax=8, njmax=32)
        contacts = 0
        for _ in range(steps):
            mjw.step(m, d)
            contacts = max(contacts, int(d.nacon.numpy()[0]))
        return float(np.asarray(d.qpos.numpy())[0, 2]), contacts


def test_enable_wraps_and_disable_restores_the_broadphase():
    import mujoco_warp as mjw
    from mujoco_warp._src import collision_driver

    originals = {name: getattr(collision_driver, name) for name in faults.BROADPHASE_FUNCTIONS}
    exported = mjw.nxn_broadphase
    status = faults.enable()
    assert status.active is True and faults.is_enabled()
    for name, original in originals.items():
        assert getattr(collision_driver, name) is not original
        assert getattr(collision_driver, name).__wrapped__ is original
    assert faults.enable().active  # idempotent: no second layer of wrapping
    assert collision_driver.nxn_broadphase.__wrapped__ is originals["nxn_broadphase"]
    faults.disable()
    assert not faults.is_enabled()
    for name, original in originals.items():
        assert getattr(collision_driver, name) is original
    assert mjw.nxn_broadphase is exported  # public re-export never touched
    assert faults.status().active is False


def test_unknown_mode_is_rejected():
    with pytest.raises(ValueError, match="unknown frozen-broadphase mode"):
        faults.enable("sometimes")
    assert not faults.is_enabled()


@pytest.mark.parametrize(
    ("value", "mode"),
    [
        ("1", "fork"),
        ("true", "fork"),
        ("ON", "fork"),
        ("fork", "fork"),
        ("list", "list"),
        ("0", None),
        ("", None),
        ("off", None),
        ("maybe", None),
    ],
)
def test_env_var_values(value, mode):
    assert faults.mode_from_env({faults.ENV_VAR: value}) == mode
    status = faults.install_from_env({faults.ENV_VAR: value})
    assert status.active is (mode is not None)
    if mode:
        assert status.details["mode"] == mode and status.details["source"] == "env var"
    faults.disable()


def test_env_var_unset_means_off():
    assert faults.install_from_env({}).active is False


def test_context_manager_switches_on_and_off_even_on_error():
    with faults.frozen_broadphase() as status:
        assert status.active and faults.is_enabled()
    assert not faults.is_enabled()
    with pytest.raises(RuntimeError), faults.frozen_broadphase():
        raise RuntimeError("boom")
    assert not faults.is_enabled()


def test_context_manager_keeps_an_outer_fault_on():
    faults.enable("list", source="env var")
    with faults.frozen_broadphase():
        assert faults.status().details["mode"] == "list"
    assert faults.is_enabled()


@pytest.mark.slow
def test_first_call_per_data_is_fresh_and_later_calls_are_frozen():
    with faults.frozen_broadphase():
        _simulate(_sphere_model(0.2), steps=5)
        details = faults.status().details
        assert details["fresh_broadphase_calls"] == 1
        assert details["frozen_broadphase_calls"] == 4
        _simulate(_sphere_model(0.2), steps=3)  # a new Data object starts fresh
        details = faults.status().details
        assert details["fresh_broadphase_calls"] == 2
        assert details["frozen_broadphase_calls"] == 6


@pytest.mark.slow
def test_dropped_sphere_falls_through_in_both_modes_and_lands_without_fault():
    z, contacts = _simulate(_sphere_model(0.2), steps=200)
    assert contacts >= 1 and 0.045 <= z <= 0.055
    for mode in faults.MODES:
        with faults.frozen_broadphase(mode):
            z, contacts = _simulate(_sphere_model(0.2), steps=200)
        assert contacts == 0 and z < -1.0, mode


def test_modes_differ_for_a_body_touching_at_the_first_frame():
    # A sphere resting on the plane is a candidate at step 1: "list" keeps the pair, while the
    # fork's re-zeroed candidate count ("fork") drops every contact after the first step.
    with faults.frozen_broadphase("list"):
        z, contacts = _simulate(_sphere_model(0.05), steps=100)
    assert contacts >= 1 and 0.045 <= z <= 0.055
    with faults.frozen_broadphase("fork"):
        z, _ = _simulate(_sphere_model(0.05), steps=100)
    assert z < -0.1


def test_fault_vetoes_mjlab_graph_capture_and_releases_it(monkeypatch):
    from mjlab.sim.sim import Simulation

    compat.install_all()  # warp.context alias, as in a real run
    wp.init()
    import warp._src.context as internal

    monkeypatch.setattr(wp, "is_mempool_enabled", lambda device: True)
    monkeypatch.setattr(internal.runtime, "driver_version", (12, 8))
    cuda_sim = SimpleNamespace(wp_device=SimpleNamespace(is_cuda=True, is_hip=False))
    assert Simulation._should_use_cuda_graph(cuda_sim) is True
    original = Simulation.__dict__["_should_use_cuda_graph"]
    with faults.frozen_broadphase():
        assert Simulation._should_use_cuda_graph(cuda_sim) is False
        assert "fault" in cuda_sim._microduck_graph_veto
        assert faults.status().details["mjlab_captures_vetoed"] == 1
    assert Simulation.__dict__["_should_use_cuda_graph"] is original
    assert Simulation._should_use_cuda_graph(cuda_sim) is True


@pytest.mark.slow
def test_env_var_is_honoured_when_the_tasks_load():
    code = (
        "import json, mjlab_microduck.tasks\n"
        "from mjlab_microduck import compat\n"
        "print(json.dumps({s.fix: [s.active, s.details.get('mode')] for s in compat.report()}))\n"
    )
    env = dict(os.environ, **{faults.ENV_VAR: "1", "MJLAB_WARP_QUIET": "1"})
    result = suite_memo.run("faults_env_var", [sys.executable, "-c", code], env=env, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report[faults.FIX] == [True, "fork"]


# --- MicroDuck: the fault must make the robot sink and the below_ground guard fire -------------


def _microduck_env_factory():
    from mjlab_microduck.tasks.velocity import microduck_flat_env_cfg

    return microduck_flat_env_cfg


def _termination_counts(num_envs: int, steps: int) -> dict[str, int]:
    import torch
    from mjlab.envs import ManagerBasedRlEnv

    cfg = _microduck_env_factory()(play=False)
    cfg.scene.num_envs = num_envs
    env = ManagerBasedRlEnv(cfg, device="cpu")
    try:
        env.reset()
        counts: dict[str, int] = {}
        actions = torch.zeros(env.num_envs, env.action_manager.total_action_dim)
        for _ in range(steps):
            env.step(actions)
            manager = env.termination_manager
            for name in manager.active_terms:
                counts[name] = counts.get(name, 0) + int(manager.get_term(name).sum())
        return counts
    finally:
        env.close()


@pytest.mark.slow
def test_microduck_sinks_and_below_ground_fires_with_the_fault():
    with faults.frozen_broadphase():
        counts = _termination_counts(num_envs=4, steps=40)
    assert counts["below_ground"] > 0
    assert counts["nan_state"] == 0  # the dangerous part: numbers stay finite


@pytest.mark.slow
def test_microduck_never_goes_below_ground_without_the_fault():
    counts = _termination_counts(num_envs=4, steps=40)
    assert counts["below_ground"] == 0
