"""render_textures: raycast-only render contexts skip texture creation on HIP, nowhere else.

The HIP failure (texture creation, HIP error 801) is emulated by making
``render_util.create_warp_texture`` raise while the current fake device is HIP; the render
context itself is the real mujoco_warp 3.8.1 ``create_render_context`` running on the CPU.
"""

from __future__ import annotations

import mujoco
import pytest
import warp as wp
from fakes import CPU, CUDA, HIP, FakeDevice  # noqa: F401

from mjlab_microduck import compat
from mjlab_microduck.compat import _hook, render_textures

_XML = """
<mujoco>
  <asset>
    <texture name="grid" type="2d" builtin="checker" width="8" height="8"
             rgb1="1 1 1" rgb2="0 0 0"/>
    <material name="grid" texture="grid"/>
  </asset>
  <worldbody>
    <camera name="cam" pos="0 0 1"/>
    <geom type="plane" size="1 1 .1" material="grid"/>
    <body pos="0 0 .2"><freejoint/><geom size=".05"/></body>
  </worldbody>
</mujoco>
"""

# The arguments mjlab 1.3 passes for a raycast-only SensorContext (sensor_context.py).
RAYCAST_ONLY = dict(
    nworld=1,
    cam_res=None,
    render_rgb=None,
    render_depth=None,
    use_textures=False,
    use_shadows=False,
    enabled_geom_groups=[0, 1, 2],
    cam_active=[False],
    use_precomputed_rays=True,
    render_seg=None,
)
RGB_CAMERA = dict(
    RAYCAST_ONLY,
    cam_res=[(8, 8)],
    render_rgb=[True],
    render_depth=[False],
    render_seg=[False],
    use_textures=True,
    cam_active=[True],
)


@pytest.fixture
def hip_sim(monkeypatch):
    """Clean compat state; current device switchable; texture creation fails on 'HIP'."""
    from mujoco_warp._src import render_util

    compat.uninstall_all()
    state = {"device": CPU, "textures_created": 0}
    monkeypatch.setattr(_hook, "current_warp_device", lambda: state["device"])
    real_create = render_util.create_warp_texture

    def create_warp_texture(mjm, tex_id):
        if state["device"].is_hip:
            raise RuntimeError("Failed to create CUDA texture: error 801 (operation not supported)")
        state["textures_created"] += 1
        return real_create(mjm, tex_id)

    monkeypatch.setattr(render_util, "create_warp_texture", create_warp_texture)
    state["fake_create"] = create_warp_texture
    yield state
    compat.uninstall_all()
    compat.install_all()


@pytest.fixture(scope="module")
def mjm():
    return mujoco.MjModel.from_xml_string(_XML)


def _create(mjm, kwargs):
    import mujoco_warp as mjw

    with wp.ScopedDevice("cpu"):
        return mjw.create_render_context(mjm, **kwargs)


def test_without_hook_raycast_context_fails_on_hip(hip_sim, mjm):
    hip_sim["device"] = HIP
    with pytest.raises(RuntimeError, match="801"):
        _create(mjm, RAYCAST_ONLY)


def test_hook_skips_textures_for_raycast_only_context_on_hip(hip_sim, mjm):
    from mujoco_warp._src import render_util

    status = render_textures.install(hip_platform=True)
    assert status.active is True
    hip_sim["device"] = HIP
    rc = _create(mjm, RAYCAST_ONLY)
    assert rc.use_textures is False
    assert rc.textures.shape == (mjm.ntex,)  # one null handle per model texture, never sampled
    assert hip_sim["textures_created"] == 0
    assert render_util.create_warp_texture is hip_sim["fake_create"]  # swap was temporary
    assert render_textures.status().details["contexts_without_textures"] == 1


@pytest.mark.slow
def test_raycasts_work_through_a_context_without_textures(hip_sim, mjm):
    import mujoco_warp as mjw

    render_textures.install(hip_platform=True)
    hip_sim["device"] = HIP
    rc = _create(mjm, RAYCAST_ONLY)
    hip_sim["device"] = CPU
    with wp.ScopedDevice("cpu"):
        mjd = mujoco.MjData(mjm)
        mujoco.mj_forward(mjm, mjd)
        m = mjw.put_model(mjm)
        d = mjw.put_data(mjm, mjd)
        mjw.forward(m, d)
        mjw.refit_bvh(m, d, rc)
        pnt = wp.array([[wp.vec3(0.0, 0.0, 1.0)]], dtype=wp.vec3)
        vec = wp.array([[wp.vec3(0.0, 0.0, -1.0)]], dtype=wp.vec3)
        dist, geomid, _ = mjw.ray(m, d, pnt, vec, rc=rc)
    # Straight down from z=1 onto the sphere (centre 0.2, radius 0.05): hit at 0.75 m, geom 1.
    assert float(dist.numpy()[0, 0]) == pytest.approx(0.75, abs=1e-5)
    assert int(geomid.numpy()[0, 0]) == 1


def test_rgb_camera_with_textures_is_left_alone_on_hip(hip_sim, mjm):
    render_textures.install(hip_platform=True)
    hip_sim["device"] = HIP
    with pytest.raises(RuntimeError, match="801"):  # honest failure: RGB textures unsupported
        _create(mjm, RGB_CAMERA)
    assert render_textures.status().details["contexts_passed_through"] == 1


@pytest.mark.parametrize("device", [CPU, CUDA], ids=["cpu", "cuda"])
def test_cpu_and_cuda_create_textures_as_usual(hip_sim, mjm, device):
    render_textures.install(hip_platform=True)
    hip_sim["device"] = device
    rc = _create(mjm, RAYCAST_ONLY)
    assert hip_sim["textures_created"] == mjm.ntex  # original behaviour, untouched
    assert render_textures.status().details["contexts_without_textures"] == 0
    assert rc.textures.shape == (mjm.ntex,)


def test_no_hip_evidence_patches_nothing(hip_sim):
    import mujoco_warp as mjw

    original = mjw.create_render_context
    status = render_textures.install(hip_platform=False)
    assert status.active is False
    assert mjw.create_render_context is original


def test_idempotent_and_uninstall_restores_originals(hip_sim):
    import mujoco_warp as mjw
    from mujoco_warp._src import io as mjw_io

    original = mjw.create_render_context
    assert mjw_io.create_render_context is original
    first = render_textures.install(hip_platform=True)
    wrapper = mjw.create_render_context
    assert render_textures.install(hip_platform=True) is first
    assert mjw.create_render_context is wrapper and wrapper.__wrapped__ is original
    assert mjw_io.create_render_context is wrapper
    render_textures.uninstall()
    assert mjw.create_render_context is original
    assert mjw_io.create_render_context is original


@pytest.mark.parametrize(
    ("overrides", "needed"),
    [
        ({}, False),
        ({"use_textures": True, "cam_active": [False]}, False),
        ({"use_textures": True, "cam_active": [True], "render_rgb": [False]}, False),
        ({"use_textures": True, "cam_active": [True], "render_rgb": [True]}, True),
        ({"use_textures": True, "cam_active": None, "render_rgb": True}, True),
        ({"render_skybox": True}, True),
    ],
)
def test_textures_needed_decision(overrides, needed):
    arguments = dict(RAYCAST_ONLY, **overrides)
    assert render_textures.textures_needed(arguments) is needed
