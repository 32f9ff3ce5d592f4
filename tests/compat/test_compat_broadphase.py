"""broadphase: the fork's cached candidate list is recomputed every HIP step; no-op elsewhere.

The fakes reproduce the structure of ``collision()`` in ROCm/mujoco_warp
``mujoco_warp/_src/collision_driver.py`` as stored in the search index (the pinned commit 9229bb9
itself is not stored):

* ``static_ctx`` - commit 7215199606ef: ``if wp.get_device().is_hip and hasattr(d,
  "_static_collision_ctx")`` and ``d._static_cache_valid`` -> reuse; cache after a fresh run.
* ``opt_in`` - commit f1bb46ee40fa: ``_BROADPHASE_CACHE_ENABLED`` (from
  ``MJW_HIP_BROADPHASE_CACHE``), attribute ``d._bvh_cached_ctx``.
* ``bvh_always`` - what the AMD chapter's hook implies for 9229bb9: ``_bvh_cached_ctx`` cached
  whenever the device is HIP.

Each fake drives a one-dimensional falling sphere: broadphase makes the sphere-plane pair a
candidate when the gap is within a margin, narrowphase turns a candidate into a contact when
they touch, and a contact stops the fall. With a stale list the sphere falls through.
"""

from __future__ import annotations

from types import ModuleType, SimpleNamespace

import pytest
from fakes import CPU, CUDA, HIP, FakeDevice  # noqa: F401

from mjlab_microduck import compat
from mjlab_microduck.compat import _hook, broadphase

RADIUS = 0.05
MARGIN = 0.01
DT = 0.005
GRAVITY = 9.81

_FORK_SOURCES = {
    "static_ctx": """
def collision(m, d):
  ctx = create_collision_context(d.naconmax)
  d.ncollision = 0
  d.nacon = 0
  _run_broadphase = True
  if wp.get_device().is_hip and hasattr(d, "_static_collision_ctx"):
    if getattr(d, "_static_cache_valid", False):
      ctx = d._static_collision_ctx
      _run_broadphase = False
  if _run_broadphase:
    nxn_broadphase(m, d, ctx)
    if wp.get_device().is_hip:
      d._static_collision_ctx = ctx
      d._static_cache_valid = True
  _narrowphase(m, d, ctx)
""",
    "opt_in": """
def collision(m, d):
  ctx = create_collision_context(d.naconmax)
  d.ncollision = 0
  d.nacon = 0
  _run_broadphase = True
  device = wp.get_device()
  if device.is_hip and _BROADPHASE_CACHE_ENABLED:
    if hasattr(d, "_bvh_cached_ctx") and d._bvh_cached_ctx is not None:
      ctx = d._bvh_cached_ctx
      _run_broadphase = False
    elif not hasattr(d, "_bvh_cached_ctx"):
      d._bvh_cached_ctx = None
  if _run_broadphase:
    nxn_broadphase(m, d, ctx)
    if device.is_hip and _BROADPHASE_CACHE_ENABLED:
      d._bvh_cached_ctx = ctx
  _narrowphase(m, d, ctx)
""",
    "bvh_always": """
def collision(m, d):
  ctx = create_collision_context(d.naconmax)
  d.ncollision = 0
  d.nacon = 0
  _run_broadphase = True
  device = wp.get_device()
  if device.is_hip:
    if hasattr(d, "_bvh_cached_ctx") and d._bvh_cached_ctx is not None:
      ctx = d._bvh_cached_ctx
      _run_broadphase = False
    elif not hasattr(d, "_bvh_cached_ctx"):
      d._bvh_cached_ctx = None
  if _run_broadphase:
    nxn_broadphase(m, d, ctx)
    if device.is_hip:
      d._bvh_cached_ctx = ctx
  _narrowphase(m, d, ctx)
""",
    "upstream": """
def collision(m, d):
  ctx = create_collision_context(d.naconmax)
  d.ncollision = 0
  d.nacon = 0
  nxn_broadphase(m, d, ctx)
  _narrowphase(m, d, ctx)
""",
}


def make_fork(variant: str, current: dict) -> tuple[ModuleType, ModuleType]:
    """A fake ``collision_driver`` module (and a package re-exporting ``collision``)."""
    module = ModuleType(f"fake_mujoco_warp_{variant}._src.collision_driver")
    module.wp = SimpleNamespace(get_device=lambda: current["device"])
    module._BROADPHASE_CACHE_ENABLED = True
    module.calls = {"broadphase": 0}

    def create_collision_context(naconmax):
        return SimpleNamespace(collision_pair=[])

    def nxn_broadphase(m, d, ctx):
        module.calls["broadphase"] += 1
        if d.z - RADIUS <= MARGIN:  # plane filter: within the margin of the plane
            ctx.collision_pair.append(("floor", "ball"))
        d.ncollision = len(ctx.collision_pair)

    def _narrowphase(m, d, ctx):
        d.nacon = sum(1 for _ in ctx.collision_pair if d.z - RADIUS <= 0.0)

    module.create_collision_context = create_collision_context
    module.nxn_broadphase = nxn_broadphase
    module._narrowphase = _narrowphase
    exec(_FORK_SOURCES[variant], module.__dict__)
    package = ModuleType(f"fake_mujoco_warp_{variant}")
    package.collision = module.collision
    return module, package


def drop_sphere(module: ModuleType, steps: int = 200, z0: float = 0.2) -> tuple[float, int]:
    """Semi-implicit Euler fall; a contact makes the sphere rest on the plane."""
    d = SimpleNamespace(z=z0, v=0.0, naconmax=8, qpos=SimpleNamespace(device=None))
    max_contacts = 0
    for _ in range(steps):
        module.collision(None, d)  # forward.py calls collision_driver.collision(m, d)
        max_contacts = max(max_contacts, d.nacon)
        if d.nacon:
            d.z, d.v = RADIUS, 0.0
        else:
            d.v -= GRAVITY * DT
            d.z += d.v * DT
    return d.z, max_contacts


@pytest.fixture
def current(monkeypatch):
    compat.uninstall_all()
    state = {"device": CPU}
    monkeypatch.setattr(_hook, "current_warp_device", lambda: state["device"])
    yield state
    compat.uninstall_all()
    compat.install_all()


@pytest.mark.parametrize("variant", ["static_ctx", "opt_in", "bvh_always"])
def test_fake_fork_loses_contact_on_hip_without_the_hook(current, variant):
    current["device"] = HIP
    module, _ = make_fork(variant, current)
    z, contacts = drop_sphere(module)
    assert module.calls["broadphase"] == 1  # cached after the first step
    assert contacts == 0 and z < -1.0  # fell through the plane


@pytest.mark.parametrize("variant", ["static_ctx", "opt_in", "bvh_always"])
def test_hook_makes_fake_fork_recompute_every_hip_step(current, variant):
    current["device"] = HIP
    module, package = make_fork(variant, current)
    status = broadphase.install(collision_module=module, package_module=package)
    assert status.active is True
    assert status.details["cache_markers"]
    assert package.collision is module.collision  # re-export wrapped too
    z, contacts = drop_sphere(module, steps=200)
    assert module.calls["broadphase"] == 200
    assert contacts >= 1 and z == pytest.approx(RADIUS)
    assert broadphase.status().details["invalidations"] == 199  # nothing to drop before step 1


@pytest.mark.parametrize("device", [CPU, CUDA], ids=["cpu", "cuda"])
@pytest.mark.parametrize("variant", ["static_ctx", "bvh_always"])
def test_hook_is_a_passthrough_on_cpu_and_cuda(current, device, variant):
    current["device"] = device
    module, package = make_fork(variant, current)
    broadphase.install(collision_module=module, package_module=package)
    z, contacts = drop_sphere(module)
    assert module.calls["broadphase"] == 200  # the fork never caches off HIP
    assert contacts >= 1 and z == pytest.approx(RADIUS)
    details = broadphase.status().details
    assert details["hip_calls"] == 0 and details["invalidations"] == 0


def test_upstream_driver_without_cache_is_a_reported_noop(current):
    module, package = make_fork("upstream", current)
    original = module.collision
    status = broadphase.install(collision_module=module, package_module=package)
    assert status.active is False
    assert "no broadphase cache" in status.reason
    assert module.collision is original and package.collision is original


def test_installed_mujoco_warp_381_has_no_cache(current):
    from mujoco_warp._src import collision_driver

    original = collision_driver.collision
    status = broadphase.install()
    assert status.active is False
    assert status.details["cache_markers"] == []
    assert collision_driver.collision is original


def test_markers_are_read_through_event_scope_style_wrappers(current):
    import functools

    module, _ = make_fork("static_ctx", current)

    @functools.wraps(module.collision)
    def event_scope_wrapper(m, d):
        return module.collision(m, d)

    assert broadphase.cache_markers(event_scope_wrapper) == {
        "_static_collision_ctx",
        "_static_cache_valid",
    }


def test_idempotent_and_uninstall_restores_originals(current):
    current["device"] = HIP
    module, package = make_fork("bvh_always", current)
    original = module.collision
    first = broadphase.install(collision_module=module, package_module=package)
    wrapper = module.collision
    second = broadphase.install(collision_module=module, package_module=package)
    assert second is first and module.collision is wrapper
    assert wrapper.__wrapped__ is original
    broadphase.uninstall()
    assert module.collision is original and package.collision is original
    _, contacts = drop_sphere(module)
    assert contacts == 0  # the fork's bug is back once the fix is removed
