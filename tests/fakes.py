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


# --- collision drivers shaped like the ROCm MuJoCo Warp fork's revisions ------------------------
#
# Each source below is a paraphrase of one way the fork's ``collision_driver.collision`` keeps
# its broadphase "AMD Opt 5" cache (read from ROCm/mujoco_warp and a public copy of it; see
# mjlab_microduck/compat/broadphase.py), reduced to a one-dimensional falling sphere: the
# broadphase makes the sphere-plane pair a candidate when the gap is within a margin, the
# narrowphase turns candidates below ``d.ncollision`` into a contact when they touch (as
# mujoco_warp's narrowphase stops at that count), and a contact stops the fall. The modules are
# written to files and imported, so the hook reads their source as it reads the real one.

_FAKE_PRELUDE = """
import dataclasses
import os
from types import SimpleNamespace

wp = None  # replaced by the test: wp.get_device() returns the current fake device
MARGIN = 0.01
RADIUS = 0.05
calls = {"broadphase": 0}


@dataclasses.dataclass
class Data:
  z: float
  v: float
  naconmax: int = 8
  nacon: int = 0
  ncollision: int = 0
  qpos: object = None


def create_collision_context(naconmax):
  return SimpleNamespace(collision_pair=[])


def _zero_nacon_ncollision(d):
  d.nacon = 0
  d.ncollision = 0


def nxn_broadphase(m, d, ctx):
  calls["broadphase"] += 1
  if d.z - RADIUS <= MARGIN:
    ctx.collision_pair.append(("floor", "ball"))
  d.ncollision = len(ctx.collision_pair)


def _narrowphase(m, d, ctx):
  candidates = ctx.collision_pair[: d.ncollision]
  d.nacon = sum(1 for _ in candidates if d.z - RADIUS <= 0.0)
"""

FORK_SOURCES = {
    # ROCm/mujoco_warp 7215199606ef: cached unconditionally on HIP.
    "static_ctx": """
def collision(m, d):
  ctx = create_collision_context(d.naconmax)
  _zero_nacon_ncollision(d)
  run_broadphase = True
  if wp.get_device().is_hip and hasattr(d, "_static_collision_ctx"):
    if getattr(d, "_static_cache_valid", False):
      ctx = d._static_collision_ctx
      run_broadphase = False
  if run_broadphase:
    nxn_broadphase(m, d, ctx)
    if wp.get_device().is_hip:
      d._static_collision_ctx = ctx
      d._static_cache_valid = True
  _narrowphase(m, d, ctx)
""",
    # ROCm/mujoco_warp f1bb46ee40fa: opt-in through MJW_HIP_BROADPHASE_CACHE (default off).
    "opt_in": """
_BROADPHASE_CACHE_ENABLED = os.environ.get("MJW_HIP_BROADPHASE_CACHE", "0") == "1"


def collision(m, d):
  ctx = create_collision_context(d.naconmax)
  _zero_nacon_ncollision(d)
  run_broadphase = True
  device = wp.get_device()
  if device.is_hip and _BROADPHASE_CACHE_ENABLED:
    if hasattr(d, "_bvh_cached_ctx") and d._bvh_cached_ctx is not None:
      ctx = d._bvh_cached_ctx
      run_broadphase = False
    elif not hasattr(d, "_bvh_cached_ctx"):
      d._bvh_cached_ctx = None
  if run_broadphase:
    nxn_broadphase(m, d, ctx)
    if device.is_hip and _BROADPHASE_CACHE_ENABLED:
      d._bvh_cached_ctx = ctx
  else:
    _zero_nacon_ncollision(d)
  _narrowphase(m, d, ctx)
""",
    # zhihuidu-amd/mujoco_warp 28a3a23d855b: cached unconditionally on HIP, plus a preallocated
    # context that collision() only reads (a buffer, not a cache: the hook must leave it alone).
    "bvh_always": """
def collision(m, d):
  if hasattr(d, "_collision_ctx"):
    ctx = d._collision_ctx
    ctx.collision_pair.clear()
  else:
    ctx = create_collision_context(d.naconmax)
  _zero_nacon_ncollision(d)
  run_broadphase = True
  device = wp.get_device()
  if device.is_hip:
    if hasattr(d, "_bvh_cached_ctx") and d._bvh_cached_ctx is not None:
      ctx = d._bvh_cached_ctx
      run_broadphase = False
    elif not hasattr(d, "_bvh_cached_ctx"):
      d._bvh_cached_ctx = None
  if run_broadphase:
    nxn_broadphase(m, d, ctx)
    if device.is_hip:
      d._bvh_cached_ctx = ctx
  _narrowphase(m, d, ctx)
""",
    # A revision that moves the cache into helpers under a new name given by a module constant:
    # collision() itself names no cache attribute (the first hook's check read only that).
    "helper": """
_PAIR_ATTR = "_hip_pair_ctx"


def _cached_pairs(d):
  return getattr(d, _PAIR_ATTR, None) if wp.get_device().is_hip else None


def _remember_pairs(d, ctx):
  if wp.get_device().is_hip:
    setattr(d, _PAIR_ATTR, ctx)


def collision(m, d):
  _zero_nacon_ncollision(d)
  ctx = _cached_pairs(d)
  if ctx is None:
    ctx = create_collision_context(d.naconmax)
    nxn_broadphase(m, d, ctx)
    _remember_pairs(d, ctx)
  _narrowphase(m, d, ctx)
""",
    # The attribute name is built at run time: no source reading finds it; the hook learns it
    # from the Data object after the first HIP step.
    "dynamic": """
def collision(m, d):
  name = "_" + "_".join(("broadphase", "memo"))
  _zero_nacon_ncollision(d)
  ctx = d.__dict__.get(name) if wp.get_device().is_hip else None
  if ctx is None:
    ctx = create_collision_context(d.naconmax)
    nxn_broadphase(m, d, ctx)
    if wp.get_device().is_hip:
      d.__dict__[name] = ctx
  _narrowphase(m, d, ctx)
""",
    # Unknown shape: the cache lives in a module-level store named as a cache, keyed by the
    # Data object's id; the hook can see it in the source but cannot clear it.
    "module_cache": """
_PAIR_CACHE = {}


def collision(m, d):
  _zero_nacon_ncollision(d)
  ctx = _PAIR_CACHE.get(id(d)) if wp.get_device().is_hip else None
  if ctx is None:
    ctx = create_collision_context(d.naconmax)
    nxn_broadphase(m, d, ctx)
    if wp.get_device().is_hip:
      _PAIR_CACHE[id(d)] = ctx
  _narrowphase(m, d, ctx)
""",
    # Unknown shape with no hint at all in the source: only the behaviour gives it away.
    "hidden": """
_STORE = {}


def collision(m, d):
  _zero_nacon_ncollision(d)
  ctx = _STORE.get(id(d)) if wp.get_device().is_hip else None
  if ctx is None:
    ctx = create_collision_context(d.naconmax)
    nxn_broadphase(m, d, ctx)
    if wp.get_device().is_hip:
      _STORE[id(d)] = ctx
  _narrowphase(m, d, ctx)
""",
    # Upstream mujoco_warp 3.8.1: no cache.
    "upstream": """
def collision(m, d):
  if d.naconmax == 0:
    d.nacon = 0
    return
  ctx = create_collision_context(d.naconmax)
  _zero_nacon_ncollision(d)
  nxn_broadphase(m, d, ctx)
  _narrowphase(m, d, ctx)
""",
}
# Shapes whose cache the hook clears (the contact check passes with the hook, fails without).
CLEARABLE_FORKS = ("static_ctx", "opt_in", "bvh_always", "helper", "dynamic")
# Shapes whose cache the hook cannot reach (reported as unrecognised; the contact check fails).
UNREACHABLE_FORKS = ("module_cache", "hidden")

DROP_RADIUS = 0.05
DROP_DT = 0.005
DROP_GRAVITY = 9.81


def load_fork(variant, current, directory, cache_enabled=True):
    """Write the fake driver for ``variant`` under ``directory``, import it and return
    ``(collision_module, package_module)``; ``current["device"]`` is what ``wp.get_device()``
    returns. ``cache_enabled`` sets the opt-in revision's module flag."""
    import importlib.util
    import sys
    from pathlib import Path
    from types import ModuleType, SimpleNamespace

    name = f"fake_mujoco_warp_{variant}_{id(current)}"
    path = Path(directory) / f"{name}.py"
    path.write_text(_FAKE_PRELUDE + FORK_SOURCES[variant])
    spec = importlib.util.spec_from_file_location(f"{name}._src.collision_driver", path)
    module = importlib.util.module_from_spec(spec)
    # Registered like an imported module, so inspect.getmodule() finds it from its functions.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.wp = SimpleNamespace(get_device=lambda: current["device"])
    if hasattr(module, "_BROADPHASE_CACHE_ENABLED"):
        module._BROADPHASE_CACHE_ENABLED = cache_enabled
    package = ModuleType(name)
    package.collision = module.collision
    return module, package


def drop_sphere(module, steps=200, z0=0.2):
    """Semi-implicit Euler fall through ``module.collision`` (looked up on every step, as
    mujoco_warp's forward.py does); a contact makes the sphere rest on the plane. Returns the
    per-step heights and contact counts."""
    d = module.Data(z=z0, v=0.0)
    heights, contacts = [], []
    for _ in range(steps):
        module.collision(None, d)
        contacts.append(d.nacon)
        if d.nacon:
            d.z, d.v = DROP_RADIUS, 0.0
        else:
            d.v -= DROP_GRAVITY * DROP_DT
            d.z += d.v * DROP_DT
        heights.append(d.z)
    return heights, contacts


def fake_simulate_drop(module, device=HIP):
    """A stand-in for ``contact_check.simulate_drop`` that drops the sphere through ``module``."""
    from mjlab_microduck.runtime.contact_check import DropTrace

    def simulate(device_name="cpu", steps=200, frozen_broadphase=False):
        heights, contacts = drop_sphere(module, steps)
        return DropTrace(tuple(heights), tuple(contacts), device.alias, bool(device.is_hip))

    return simulate
