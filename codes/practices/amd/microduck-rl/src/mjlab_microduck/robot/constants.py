"""MicroDuck figures and the mjlab entity configuration built on them.

The upstream MicroDuck model and its meshes are under a non-commercial licence, so the package
carries only the *figures* read off that model (masses, inertias, poses, joint ranges, actuator
gains) in ``microduck_figures.json`` and builds its own model from them (``model.py``). When
``MICRODUCK_ASSETS`` points at a checkout of the upstream robot folder, ``get_spec`` loads that
mesh model instead; the built-in model stays the default.
"""

from __future__ import annotations

import os
from pathlib import Path

import mujoco
from mjlab.actuator import XmlActuatorCfg
from mjlab.entity import EntityArticulationInfoCfg, EntityCfg
from mjlab.utils.spec_config import CollisionCfg

from mjlab_microduck.robot.figures import FIGURES
from mjlab_microduck.robot.model import build_spec

HOME_POSE: dict[str, float] = dict(FIGURES["home_pose"])
ROOT_BODY = "trunk_base"
FOOT_SITES = ("left_foot", "right_foot")
FOOT_GEOMS = ("left_foot_collision", "right_foot_collision")
LEG_JOINT_SUFFIXES = ("hip_yaw", "hip_roll", "hip_pitch", "knee", "ankle")
LEG_JOINTS = tuple(f"{side}_{j}" for side in ("left", "right") for j in LEG_JOINT_SUFFIXES)
HEAD_JOINTS = ("neck_pitch", "head_pitch", "head_yaw", "head_roll")
# Reset height of the trunk: the upstream task samples z in [0.12, 0.13] m, the feet then drop
# about 2 cm onto the ground (the home pose leaves them slightly above it).
INIT_TRUNK_Z_M = 0.12

ASSETS_ENV = "MICRODUCK_ASSETS"


def get_spec() -> mujoco.MjSpec:
    """The MicroDuck spec: the built-in primitive model, or the upstream mesh model if asked."""
    assets = os.environ.get(ASSETS_ENV)
    if assets:
        xml = Path(assets) / "robot_walk.xml"
        if not xml.is_file():
            raise FileNotFoundError(f"{ASSETS_ENV}={assets}: no robot_walk.xml in that folder")
        return mujoco.MjSpec.from_file(str(xml))
    return build_spec()


# Only the soles touch the world. condim 3 with priority 1 makes the feet's friction win
# against the plane's; other geoms never collide (they are visual only in the built model).
FEET_COLLISION = CollisionCfg(
    geom_names_expr=FOOT_GEOMS,
    contype=0,
    conaffinity=1,
    condim=3,
    priority=1,
    friction=(0.6,),
)

# The XML position servos (kp 0.52, +-0.91 N m) keep their gains; mjlab adds a command delay
# of 0-3 physics steps (0-15 ms), a cheap model of the servo bus latency.
# The servos are named after their joints; naming them (rather than ".*") keeps the sites
# (imu, feet, cameras) out of the match, and the order is the model's either way.
MICRODUCK_ACTUATORS = XmlActuatorCfg(
    target_names_expr=LEG_JOINTS + HEAD_JOINTS, delay_min_lag=0, delay_max_lag=3
)

MICRODUCK_ARTICULATION = EntityArticulationInfoCfg(
    actuators=(MICRODUCK_ACTUATORS,),
    soft_joint_pos_limit_factor=0.9,
)


def get_microduck_robot_cfg() -> EntityCfg:
    """A fresh entity config each call, so task factories can mutate it freely."""
    return EntityCfg(
        init_state=EntityCfg.InitialStateCfg(
            pos=(0.0, 0.0, INIT_TRUNK_Z_M),
            joint_pos={".*": 0.0, **HOME_POSE},
            joint_vel={".*": 0.0},
        ),
        collisions=(FEET_COLLISION,),
        spec_fn=get_spec,
        articulation=MICRODUCK_ARTICULATION,
    )
