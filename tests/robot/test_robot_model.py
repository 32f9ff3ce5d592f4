"""The built MicroDuck matches the figures it is built from, and stands on its own feet."""

import mujoco
import numpy as np
import pytest

from mjlab_microduck.robot import FIGURES, HOME_POSE, build_spec


@pytest.fixture(scope="module")
def model():
    return build_spec().compile()


def _with_floor():
    spec = build_spec()
    spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[2, 2, 0.1])
    for geom in spec.geoms:
        if geom.name.endswith("_foot_collision"):
            geom.contype, geom.conaffinity, geom.condim = 0, 1, 3
            geom.priority, geom.friction = 1, [0.6, 0.005, 0.0001]
        elif geom.type != mujoco.mjtGeom.mjGEOM_PLANE:
            geom.contype = geom.conaffinity = 0
    model = spec.compile()
    model.opt.timestep = 0.005
    return model


def test_total_mass_matches_figures(model):
    assert model.body_subtreemass[1] == pytest.approx(FIGURES["total_mass_kg"], rel=1e-6)
    assert model.body_subtreemass[1] == pytest.approx(0.889, abs=1e-3)


def test_joints_ranges_and_dynamics_match(model):
    hinges = [j for j in FIGURES["joints"] if j["type"] == mujoco.mjtJoint.mjJNT_HINGE]
    assert len(hinges) == 14
    for fig in hinges:
        joint = model.joint(fig["name"])
        np.testing.assert_allclose(joint.range, fig["range"], atol=1e-9)
        assert joint.damping[0] == pytest.approx(fig["damping"])
        assert joint.frictionloss[0] == pytest.approx(fig["frictionloss"])
        assert joint.armature[0] == pytest.approx(fig["armature"])
        assert model.body(fig["body"]).id == joint.bodyid[0]


def test_actuators_are_the_xml_servos(model):
    assert model.nu == 14
    for i in range(model.nu):
        assert model.actuator_gainprm[i, 0] == pytest.approx(0.52)
        assert model.actuator_biasprm[i, 1] == pytest.approx(-0.52)
        np.testing.assert_allclose(model.actuator_forcerange[i], [-0.91, 0.91])
        np.testing.assert_allclose(model.actuator_ctrlrange[i], [-10.0, 10.0])


def test_sites_and_inertials(model):
    for name in ("imu", "left_foot", "right_foot"):
        assert model.site(name).id >= 0
    for fig in FIGURES["bodies"]:
        body = model.body(fig["name"])
        assert body.mass[0] == pytest.approx(fig["mass"])
        np.testing.assert_allclose(body.inertia, fig["inertia_diag"], rtol=1e-6)


def test_only_the_soles_can_collide(model):
    colliders = [
        model.geom(i).name
        for i in range(model.ngeom)
        if model.geom_contype[i] or model.geom_conaffinity[i]
    ]
    assert sorted(colliders) == ["left_foot_collision", "right_foot_collision"]


def test_servos_alone_hold_the_crouch_briefly_then_topple():
    """Zero action from the home pose: the weak servos (kp 0.52 N m/rad) hold the robot up on
    both feet for half a second, then the crouch sags and it pitches forward within 2 s.
    Standing is therefore a skill the policy must learn, not a property of the model."""
    model = _with_floor()
    data = mujoco.MjData(model)
    for name, value in HOME_POSE.items():
        data.qpos[model.jnt_qposadr[model.joint(name).id]] = value
    data.ctrl[:] = [
        data.qpos[model.jnt_qposadr[model.actuator_trnid[i, 0]]] for i in range(model.nu)
    ]
    feet = {model.geom("left_foot_collision").id, model.geom("right_foot_collision").id}
    heights, uprights = [], []
    for step in range(400):  # 2 s at 5 ms
        mujoco.mj_step(model, data)
        heights.append(data.qpos[2])
        uprights.append(data.xmat[1][8])
        if step == 99:  # 0.5 s: settled on both soles, upright
            touching = {g for c in data.contact[: data.ncon] for g in (c.geom1, c.geom2)} & feet
            assert touching == feet
    heights, uprights = np.array(heights), np.array(uprights)
    assert 0.085 < heights[40:100].min() and heights[40:100].max() < 0.105
    assert uprights[:100].min() > 0.95
    assert uprights.min() < 0.5  # toppled before 2 s
