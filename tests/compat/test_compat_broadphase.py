"""broadphase: a fresh broadphase every HIP step, decided by behaviour, whatever the fork's shape.

The fake collision drivers in ``fakes.FORK_SOURCES`` reproduce the ways the ROCm MuJoCo Warp fork
keeps its broadphase cache (two revisions of ROCm/mujoco_warp, a public copy of the fork, a cache
moved into helpers, a name built at run time) plus two shapes the hook cannot clear and upstream
mujoco_warp. Each is written to a file and imported, so the hook reads its source as it reads
the real module. A 1-D sphere falls through each; the acceptance is the contact check's own
verdict (``contact_check.run_contact_check`` with the drop simulated through the fake driver).
"""

from __future__ import annotations

import functools
import warnings

import pytest
from fakes import (
    CLEARABLE_FORKS,
    CPU,
    CUDA,
    DROP_RADIUS,
    HIP,
    UNREACHABLE_FORKS,
    drop_sphere,
    fake_simulate_drop,
    load_fork,
)

from mjlab_microduck import compat
from mjlab_microduck.compat import _hook, broadphase
from mjlab_microduck.runtime import contact_check


@pytest.fixture
def current(monkeypatch):
    compat.uninstall_all()
    state = {"device": CPU}
    monkeypatch.setattr(_hook, "current_warp_device", lambda: state["device"])
    yield state
    compat.uninstall_all()
    compat.install_all()


@pytest.fixture
def fork(current, tmp_path):
    """``fork(variant, cache_enabled=True)`` -> (collision module, package) on a fake device."""
    return functools.partial(load_fork, current=current, directory=tmp_path)


def contact_verdict(monkeypatch, module):
    """The contact check's result with the drop simulated through ``module`` on a HIP device."""
    monkeypatch.setattr(contact_check, "simulate_drop", fake_simulate_drop(module))
    return contact_check.run_contact_check("cuda:0")


# --- acceptance: the contact check on a fake HIP device, per fork shape ------------------------


@pytest.mark.parametrize("variant", CLEARABLE_FORKS)
def test_contact_check_fails_without_the_hook_on_hip(current, fork, monkeypatch, variant):
    current["device"] = HIP
    module, _ = fork(variant)
    result = contact_verdict(monkeypatch, module)
    assert result.passed is False
    assert result.max_contacts == 0 and result.final_z < -1.0  # fell through the plane
    assert module.calls["broadphase"] == 1  # cached after the first step


@pytest.mark.parametrize("variant", CLEARABLE_FORKS)
def test_contact_check_passes_with_the_hook_on_hip(current, fork, monkeypatch, variant):
    current["device"] = HIP
    module, package = fork(variant)
    status = broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    assert status.active is True
    assert package.collision is module.collision  # the re-export is wrapped too
    result = contact_verdict(monkeypatch, module)
    assert result.passed is True
    assert result.max_contacts == 1 and result.final_z == pytest.approx(DROP_RADIUS)
    assert result.broadphase == "neutralised"
    assert module.calls["broadphase"] == 200  # a fresh broadphase on every step
    details = broadphase.status().details
    assert details["cache_state"] == "neutralised"
    assert details["cache_state_label"] == "cache present, neutralised by the hook"
    assert details["hip_calls"] == details["hip_calls_checked"] == 200
    assert details["hip_calls_without_broadphase"] == 0
    assert details["invalidations"] == 199  # nothing to drop before the first step
    assert broadphase.status().reason.startswith("cache present, neutralised by the hook")


def test_opt_in_cache_switched_off_is_reported_disabled(current, fork, monkeypatch):
    current["device"] = HIP
    module, package = fork("opt_in", cache_enabled=False)
    assert broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    result = contact_verdict(monkeypatch, module)
    assert result.passed is True and result.broadphase == "disabled"
    details = broadphase.status().details
    assert details["cache_state"] == "disabled"
    assert details["cache_flags"] == {"_BROADPHASE_CACHE_ENABLED": False}
    assert details["invalidations"] == 0 and details["hip_calls_without_broadphase"] == 0
    assert "switched off (_BROADPHASE_CACHE_ENABLED=False)" in details["verdict"]
    assert "caches" not in broadphase.status().reason  # never "caches" for a disabled cache


def test_disabled_cache_switched_on_later_is_neutralised(current, fork):
    current["device"] = HIP
    module, package = fork("opt_in", cache_enabled=False)
    broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    module._BROADPHASE_CACHE_ENABLED = True  # e.g. the variable set after import
    _, contacts = drop_sphere(module)
    assert max(contacts) == 1
    assert broadphase.status().details["cache_state"] == "neutralised"


@pytest.mark.parametrize("variant", UNREACHABLE_FORKS)
def test_unreachable_cache_is_unrecognised_and_the_contact_check_fails(
    current, fork, monkeypatch, variant
):
    current["device"] = HIP
    module, package = fork(variant)
    broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    with pytest.warns(RuntimeWarning, match="ran no broadphase"):
        result = contact_verdict(monkeypatch, module)
    assert result.passed is False and result.max_contacts == 0
    assert result.broadphase == "unrecognised"
    details = broadphase.status().details
    assert details["cache_state"] == "unrecognised"
    assert details["hip_calls_without_broadphase"] == 199
    assert "the contact check decides" in details["verdict"]


def test_module_level_cache_is_unrecognised_before_any_step(current, fork):
    module, package = fork("module_cache")
    status = broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    assert status.details["module_level_caches"] == ["_PAIR_CACHE"]
    assert broadphase.status().details["cache_state"] == "unrecognised"


def test_hidden_cache_reads_as_no_cache_until_a_hip_step_shows_it(current, fork):
    current["device"] = HIP
    module, package = fork("hidden")
    broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    assert broadphase.status().details["cache_state"] == "none"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        drop_sphere(module, steps=3)
    assert [w.category for w in caught] == [RuntimeWarning]  # warned once, not every step
    assert broadphase.status().details["cache_state"] == "unrecognised"


# --- what the hook reads and learns -------------------------------------------------------------


@pytest.mark.parametrize(
    ("variant", "attrs", "read_only"),
    [
        ("static_ctx", ["_static_cache_valid", "_static_collision_ctx"], []),
        ("opt_in", ["_bvh_cached_ctx"], []),
        ("bvh_always", ["_bvh_cached_ctx"], ["_collision_ctx"]),
        (
            "helper",
            ["_hip_pair_ctx"],
            [],
        ),  # in helpers, named through a module constant
        ("dynamic", [], []),
        ("upstream", [], []),
    ],
)
def test_source_reading_finds_assigned_cache_attributes(fork, variant, attrs, read_only):
    module, _ = fork(variant)
    scan = broadphase.scan_module(module)
    assert scan.source_read is True
    assert sorted(scan.cache_attrs) == attrs
    assert sorted(scan.read_only_attrs) == read_only
    assert scan.broadphase_functions == ["nxn_broadphase"]


@pytest.mark.parametrize(
    ("variant", "enabled", "label"),
    [
        ("static_ctx", True, "cache present, neutralised by the hook"),
        ("opt_in", True, "cache present, neutralised by the hook"),
        ("opt_in", False, "cache present, disabled"),
        ("bvh_always", True, "cache present, neutralised by the hook"),
        ("helper", True, "cache present, neutralised by the hook"),
        ("upstream", True, "no cache in this mujoco_warp"),
    ],
)
def test_install_reports_the_state_before_any_step(fork, variant, enabled, label):
    module, package = fork(variant, cache_enabled=enabled)
    status = broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    assert status.reason.startswith(f"{label}; fresh broadphase forced on HIP: ")
    assert "no HIP step observed yet" in status.reason


def test_cache_markers_are_read_through_event_scope_style_wrappers(fork):
    module, _ = fork("helper")

    @functools.wraps(module.collision)
    def event_scope_wrapper(m, d):
        return module.collision(m, d)

    assert broadphase.cache_markers(event_scope_wrapper) == {"_hip_pair_ctx"}


def test_a_name_built_at_run_time_is_learned_from_the_data_object(current, fork):
    current["device"] = HIP
    module, package = fork("dynamic")
    broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    _, contacts = drop_sphere(module)
    assert max(contacts) == 1
    details = broadphase.status().details
    assert details["cache_attrs_learned"] == ["_broadphase_memo"]
    assert details["cache_state"] == "neutralised"


def test_a_buffer_collision_only_reads_is_left_alone(current, fork):
    current["device"] = HIP
    module, package = fork("bvh_always")
    broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    d = module.Data(z=0.2, v=0.0)
    buffer = module.create_collision_context(8)
    d._collision_ctx = buffer  # preallocated elsewhere (put_data in the fork)
    for _ in range(3):
        module.collision(None, d)
    assert d._collision_ctx is buffer


def test_installed_mujoco_warp_381_has_no_cache(current):
    from mujoco_warp._src import collision_driver

    original = collision_driver.collision
    status = broadphase.install(hip_platform=False)
    assert status.active is False
    assert status.details["cache_attrs_in_source"] == []
    assert status.details["broadphase_functions"] == [
        "nxn_broadphase",
        "sap_broadphase",
    ]
    assert collision_driver.collision is original
    assert broadphase.status().details["cache_state"] == "none"


def test_upstream_driver_without_cache_off_hip_is_a_reported_noop(current, fork):
    module, package = fork("upstream")
    original = module.collision
    status = broadphase.install(hip_platform=False, collision_module=module, package_module=package)
    assert status.active is False
    assert "no broadphase cache" in status.reason
    assert module.collision is original and package.collision is original


def test_upstream_driver_on_hip_is_watched_and_reports_no_cache(current, fork, monkeypatch):
    current["device"] = HIP
    module, package = fork("upstream")
    status = broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    assert status.active is True  # on HIP the hook always watches the broadphase
    result = contact_verdict(monkeypatch, module)
    assert result.passed is True and result.broadphase == "none"
    details = broadphase.status().details
    assert details["cache_state_label"] == "no cache in this mujoco_warp"
    assert "broadphase ran on all 200 HIP steps checked" in details["verdict"]


def test_no_broadphase_function_to_watch_is_unrecognised_on_hip(current, fork):
    module, package = fork("static_ctx")
    del module.nxn_broadphase  # e.g. a revision that renamed it
    broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    details = broadphase.status().details
    assert details["cache_state"] == "unrecognised"
    assert "no public *_broadphase function" in details["verdict"]


# --- guard, idempotency, reversibility ----------------------------------------------------------


@pytest.mark.parametrize("device", [CPU, CUDA], ids=["cpu", "cuda"])
@pytest.mark.parametrize("variant", ["static_ctx", "bvh_always", "hidden"])
def test_hook_is_a_passthrough_on_cpu_and_cuda(current, fork, device, variant):
    current["device"] = device
    module, package = fork(variant)
    broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    heights, contacts = drop_sphere(module)
    assert module.calls["broadphase"] == 200  # the fork never caches off HIP
    assert max(contacts) == 1 and heights[-1] == pytest.approx(DROP_RADIUS)
    details = broadphase.status().details
    assert details["hip_calls"] == 0 and details["invalidations"] == 0


def test_contacts_disabled_step_is_not_counted_as_stale(current, fork):
    current["device"] = HIP
    module, package = fork("upstream")
    broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    # Without a contact buffer collision() returns before the broadphase by design.
    module.collision(None, module.Data(z=0.2, v=0.0, naconmax=0))
    details = broadphase.status().details
    assert module.calls["broadphase"] == 0
    assert details["hip_calls"] == 1 and details["hip_calls_checked"] == 0
    assert details["hip_calls_without_broadphase"] == 0
    assert details["cache_state"] == "none"


def test_idempotent_and_uninstall_restores_originals(current, fork):
    current["device"] = HIP
    module, package = fork("bvh_always")
    original, original_bp = module.collision, module.nxn_broadphase
    first = broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    wrapper = module.collision
    second = broadphase.install(hip_platform=True, collision_module=module, package_module=package)
    assert second is first and module.collision is wrapper
    assert wrapper.__wrapped__ is original
    assert module.nxn_broadphase.__wrapped__ is original_bp
    broadphase.uninstall()
    assert module.collision is original and package.collision is original
    assert module.nxn_broadphase is original_bp
    assert broadphase.status().reason == "not installed"
    _, contacts = drop_sphere(module)
    assert max(contacts) == 0  # the fork's bug is back once the fix is removed
