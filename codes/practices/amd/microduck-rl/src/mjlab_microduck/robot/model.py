"""Build the MicroDuck as a ``mujoco.MjSpec`` from its figures, with primitive geoms.

The kinematic tree, body poses, masses, inertias, joints and position servos are the upstream
model's own numbers (see ``microduck_figures.json``); only the shapes differ. Each link is drawn
as a capsule from its parent's origin to its own, the trunk, head and beak as simple solids, so
a rendered frame reads as a small duck. Visual geoms carry no mass (the inertials are explicit)
and never collide: the two foot soles, thin boxes of the figures' size, are the only colliders.
"""

from __future__ import annotations

import mujoco
import numpy as np

from mjlab_microduck.robot.figures import FIGURES

_VISUAL_GROUP = 2
_COLLISION_GROUP = 3
_GREY = (0.29, 0.29, 0.29, 1.0)
_BODY_WHITE = (0.92, 0.92, 0.90, 1.0)
_BEAK_ORANGE = (1.0, 0.62, 0.05, 1.0)
_FOOT_YELLOW = (1.0, 0.76, 0.05, 1.0)
_LINK_RADIUS_M = 0.006


def _quat_rotate(quat: list[float], vec: list[float]) -> np.ndarray:
    out = np.zeros(3)
    mujoco.mju_rotVecQuat(out, np.asarray(vec, dtype=float), np.asarray(quat, dtype=float))
    return out


def _add_visual(body: mujoco.MjsBody, **kwargs) -> mujoco.MjsGeom:
    return body.add_geom(contype=0, conaffinity=0, group=_VISUAL_GROUP, density=0, **kwargs)


def _add_link_capsule(parent: mujoco.MjsBody, child_pos: list[float], rgba) -> None:
    tip = np.asarray(child_pos, dtype=float)
    if np.linalg.norm(tip) < 1e-4:
        return
    _add_visual(
        parent,
        type=mujoco.mjtGeom.mjGEOM_CAPSULE,
        fromto=[0.0, 0.0, 0.0, *tip.tolist()],
        size=[_LINK_RADIUS_M, 0, 0],
        rgba=rgba,
    )


def build_spec() -> mujoco.MjSpec:
    """Return a fresh spec of the MicroDuck (free-floating trunk, 14 actuated hinges)."""
    spec = mujoco.MjSpec()
    spec.modelname = "microduck"
    # Masses come from the explicit inertials below, never from the primitive shapes.
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.compiler.autolimits = True
    # The figures are in radians; MjSpec's compiler defaults to degrees.
    spec.compiler.degree = False

    bodies: dict[str, mujoco.MjsBody] = {"world": spec.worldbody}
    for fig in FIGURES["bodies"]:
        parent = bodies[fig["parent"]]
        body = parent.add_body(name=fig["name"], pos=fig["pos"], quat=fig["quat"])
        body.explicitinertial = True
        body.mass = fig["mass"]
        body.ipos = fig["ipos"]
        body.iquat = fig["iquat"]
        body.inertia = fig["inertia_diag"]
        bodies[fig["name"]] = body
        if fig["parent"] != "world":
            rgba = (
                _BODY_WHITE if fig["parent"] in ("long_neck_plate2", "head_pitch_to_yaw") else _GREY
            )
            _add_link_capsule(parent, fig["pos"], rgba)

    for fig in FIGURES["joints"]:
        body = bodies[fig["body"]]
        if fig["type"] == int(mujoco.mjtJoint.mjJNT_FREE):
            body.add_freejoint(name=fig["name"])
            continue
        body.add_joint(
            name=fig["name"],
            type=mujoco.mjtJoint.mjJNT_HINGE,
            axis=fig["axis"],
            range=fig["range"],
            limited=mujoco.mjtLimited.mjLIMITED_TRUE
            if fig["limited"]
            else mujoco.mjtLimited.mjLIMITED_FALSE,
            damping=fig["damping"],
            frictionloss=fig["frictionloss"],
            armature=fig["armature"],
        )

    for fig in FIGURES["actuators"]:
        act = spec.add_actuator(name=fig["name"], target=fig["joint"])
        act.trntype = mujoco.mjtTrn.mjTRN_JOINT
        act.set_to_position(kp=fig["kp"], kv=0.0)
        act.forcerange = fig["forcerange"]
        act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.ctrlrange = fig["ctrlrange"]
        act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE

    for fig in FIGURES["sites"]:
        bodies[fig["body"]].add_site(
            name=fig["name"], pos=fig["pos"], quat=fig["quat"], group=_COLLISION_GROUP
        )

    for fig in FIGURES["collision_geoms"]:
        # The upstream sole is a mesh whose bounding box is centred off the geom frame; a box of
        # that half-size at that centre reproduces the contact surface.
        centre = np.asarray(fig["pos"]) + _quat_rotate(fig["quat"], fig["mesh_aabb_center_local"])
        common = dict(
            type=mujoco.mjtGeom.mjGEOM_BOX,
            pos=centre.tolist(),
            quat=fig["quat"],
            size=fig["mesh_aabb_halfsize_local"],
        )
        bodies[fig["body"]].add_geom(
            name=fig["name"], group=_COLLISION_GROUP, rgba=_FOOT_YELLOW, **common
        )
        _add_visual(bodies[fig["body"]], rgba=_FOOT_YELLOW, **common)

    _add_duck_shapes(bodies)
    _add_sensors(spec)
    return spec


def _add_duck_shapes(bodies: dict[str, mujoco.MjsBody]) -> None:
    trunk = bodies["trunk_base"]
    trunk_com = FIGURES["bodies"][0]["ipos"]
    _add_visual(
        trunk,
        type=mujoco.mjtGeom.mjGEOM_ELLIPSOID,
        pos=[trunk_com[0], trunk_com[1], trunk_com[2] + 0.005],
        size=[0.055, 0.040, 0.032],
        rgba=_BODY_WHITE,
    )
    head_sites = {s["name"]: s for s in FIGURES["sites"] if s["body"] == "head_base_plate"}
    head = bodies["head_base_plate"]
    mouth = np.asarray(head_sites["mouth_tip"]["pos"])
    camera = np.asarray(head_sites["head_camera"]["pos"])
    # The head sits between the camera and the mouth tip, the beak pokes out past the mouth tip.
    head_centre = camera + 0.5 * (mouth - camera) - np.array([0.0, 0.0, 0.03])
    _add_visual(
        head,
        type=mujoco.mjtGeom.mjGEOM_SPHERE,
        pos=head_centre.tolist(),
        size=[0.032, 0, 0],
        rgba=_BODY_WHITE,
    )
    beak_dir = mouth - head_centre
    beak_dir /= np.linalg.norm(beak_dir)
    _add_visual(
        head,
        type=mujoco.mjtGeom.mjGEOM_CAPSULE,
        fromto=[*mouth.tolist(), *(mouth + 0.025 * beak_dir).tolist()],
        size=[0.008, 0, 0],
        rgba=_BEAK_ORANGE,
    )


def _add_sensors(spec: mujoco.MjSpec) -> None:
    # Names match what mjlab's velocity observations read ("robot/imu_ang_vel", ...).
    for name, sensor_type in (
        ("imu_ang_vel", mujoco.mjtSensor.mjSENS_GYRO),
        ("imu_lin_vel", mujoco.mjtSensor.mjSENS_VELOCIMETER),
    ):
        spec.add_sensor(
            name=name, type=sensor_type, objtype=mujoco.mjtObj.mjOBJ_SITE, objname="imu"
        )
    spec.add_sensor(
        name="root_angmom",
        type=mujoco.mjtSensor.mjSENS_SUBTREEANGMOM,
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        objname="trunk_base",
    )
