"""compat package: install_all when the tasks load, idempotent, fully reversible, and a
readable report."""

from __future__ import annotations

import pandas as pd
import pytest
import warp as wp

import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)
from mjlab_microduck import compat
from mjlab_microduck.compat import _hook, faults

HOOKS = ["warp_alias", "hip_stepping", "broadphase", "render_textures", "buffer_syncs",
         "quat_syncs", "manager_graphs"]
FIXES = [*HOOKS, faults.FIX]


@pytest.fixture
def restore():
    yield
    # Without the fault's environment variable, whichever fixture restores it last: reinstalling
    # with it still set would switch the fault back on for every later test of this process.
    with pytest.MonkeyPatch.context() as env:
        env.delenv(faults.ENV_VAR, raising=False)
        faults.disable()
        compat.install_all()


def test_package_import_installed_the_hooks():
    import warp._src.context as internal

    assert wp.context is internal  # warp_alias acted at import time
    statuses = {s.fix: s for s in compat.report()}
    assert list(statuses) == FIXES
    # What this CPU machine with upstream warp-lang/mujoco_warp should report:
    assert statuses["warp_alias"].active is True
    assert statuses["hip_stepping"].active is False
    assert statuses["broadphase"].active is False
    assert statuses["render_textures"].active is False
    assert statuses["buffer_syncs"].active is True  # mjlab 1.3's buffer asks the host
    assert statuses[faults.FIX].active is False


def test_every_status_explains_itself():
    for status in compat.report():
        assert isinstance(status, compat.HookStatus)
        assert status.reason and status.reason != "not installed", status
        assert isinstance(status.details, dict)


def test_report_frame_has_the_documented_columns():
    frame = compat.report_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame.columns) == ["fix", "active", "reason"]
    assert list(frame["fix"]) == FIXES
    assert frame["active"].dtype == bool


def test_install_all_is_idempotent(restore):
    from mjlab.sim.sim import Simulation

    decision = Simulation.__dict__["_should_use_cuda_graph"]
    first = compat.install_all()
    second = compat.install_all()
    assert [s.fix for s in first] == [s.fix for s in second] == HOOKS
    assert [(s.active, s.reason) for s in first] == [(s.active, s.reason) for s in second]
    assert Simulation.__dict__["_should_use_cuda_graph"] is decision


def test_uninstall_all_restores_everything_and_install_all_brings_it_back(restore):
    import mujoco_warp as mjw
    from mjlab.utils.buffers.circular_buffer import CircularBuffer
    from mujoco_warp._src import collision_driver

    before = (
        mjw.put_model,
        mjw.create_render_context,
        collision_driver.collision,
        collision_driver.nxn_broadphase,
    )
    buffer_methods = ("append", "__getitem__")
    faults.enable()
    compat.uninstall_all()
    assert not hasattr(wp, "context")
    assert not faults.is_enabled()
    assert (
        mjw.put_model,
        mjw.create_render_context,
        collision_driver.collision,
        collision_driver.nxn_broadphase,
    ) == before
    assert not any(_hook.is_our_wrapper(CircularBuffer.__dict__[m], "buffer_syncs")
                   for m in buffer_methods)  # fmt: skip
    assert all(s.reason == "not installed" for s in compat.report()[: len(HOOKS)])
    compat.install_all()
    assert hasattr(wp, "context")
    assert all(_hook.is_our_wrapper(CircularBuffer.__dict__[m], "buffer_syncs")
               for m in buffer_methods)  # fmt: skip


def test_install_all_reports_the_fault_when_the_env_var_asks(monkeypatch, restore):
    monkeypatch.setenv(faults.ENV_VAR, "list")
    statuses = compat.install_all()
    assert statuses[-1].fix == faults.FIX and statuses[-1].active
    assert statuses[-1].details["mode"] == "list"
    assert compat.report_frame().set_index("fix").loc[faults.FIX, "active"]
