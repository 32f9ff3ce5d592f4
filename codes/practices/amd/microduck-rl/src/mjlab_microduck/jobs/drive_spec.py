"""What a policy sees and does, read off a built mjlab env and written down for plain MuJoCo.

Problem it solves: a checkpoint only holds weights. To run it outside mjlab, another simulator
has to rebuild the observation vector the actor was trained on (which terms, in which order,
from which sensor or body, with which scale and delay), turn an action into actuator targets the
way the task's action term does, and update the velocity command the way mjlab's command term
does. :func:`build_spec` reads all of that from the env's managers and returns one JSON-ready
dict (``spec.json`` of an export); :func:`portable_scene_xml` writes the env's scene so that
MuJoCo 3.3.8 (npm ``mujoco-js`` 0.0.7, the page's) and this Python's MuJoCo both compile it to the
env's own model. ``jobs/plain_mujoco.py`` and ``book/drive/src/policy.js`` are the two readers.

Terms with no plain-MuJoCo counterpart (a height scan, a gait clock, observation history, a
biased joint position) are refused with :class:`SpecError`, never exported half right.
No-op cases: nothing runs on import; mjlab and MuJoCo are imported by the functions.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from typing import Any

SPEC_FORMAT = "microduck-drive-spec"
SPEC_VERSION = 1
GRAVITY_DIRECTION_W = (0.0, 0.0, -1.0)
"""mjlab's ``gravity_vec_w``: the unit vector the projected-gravity term rotates."""
FORWARD_AXIS_B = (1.0, 0.0, 0.0)
"""mjlab's ``forward_vec_b``: the body axis whose world direction defines the heading."""
# mjlab writes the simulation options into the compiled model (MujocoCfg.apply), not into the
# spec; these are copied into <option> so the exported XML compiles to the same model.
_OPTION_FIELDS = (
    "timestep", "impratio", "tolerance", "ls_tolerance", "noslip_tolerance", "ccd_tolerance",
    "iterations", "ls_iterations", "noslip_iterations", "ccd_iterations", "integrator", "cone",
    "jacobian", "solver", "disableflags", "enableflags", "density", "viscosity", "o_margin",
)  # fmt: skip
_OPTION_VECTORS = ("gravity", "wind", "magnetic", "o_solref", "o_solimp", "o_friction")


class SpecError(ValueError):
    """The env holds something the export cannot write for plain MuJoCo; one line."""


# --------------------------------------------------------------------------- the scene


def _copy_options(spec_option, model_option) -> None:
    for name in _OPTION_FIELDS:
        setattr(spec_option, name, getattr(model_option, name))
    for name in _OPTION_VECTORS:
        setattr(spec_option, name, getattr(model_option, name).copy())


def _drop_empty_defaults(root: ET.Element) -> int:
    """Remove ``<default>`` elements that set nothing and that no element names as its class.

    MuJoCo 3.10 writes an attached entity's (empty) defaults as ``<default><default/>
    <default class="robot/main"/></default>``; 3.3.8's parser rejects a nested default without
    a class. Such a default carries no value, so dropping it leaves the compiled model as it
    was. Returns how many were removed.
    """
    used = {
        el.get(key) for el in root.iter() for key in ("class", "childclass") if el.tag != "default"
    }
    removed = 0

    def prune(parent: ET.Element) -> None:
        nonlocal removed
        for child in list(parent):
            if child.tag != "default":
                continue
            prune(child)
            empty = len(child) == 0 and set(child.attrib) <= {"class"}
            if empty and child.get("class") not in used - {None}:
                parent.remove(child)
                removed += 1

    prune(root)
    return removed


def portable_scene_xml(env) -> tuple[str, dict[str, Any]]:
    """The env's scene as MJCF text that MuJoCo 3.3.8 and newer compile alike, and what was
    changed to get there (``{"options_written": [...], "empty_defaults_dropped": n}``)."""
    spec = env.scene.spec.copy()
    _copy_options(spec.option, env.sim.mj_model.opt)
    root = ET.fromstring(spec.to_xml())
    dropped = _drop_empty_defaults(root)
    ET.indent(root, space="  ")
    text = ET.tostring(root, encoding="unicode") + "\n"
    return text, {"options_written": [*_OPTION_FIELDS, *_OPTION_VECTORS],
                  "empty_defaults_dropped": dropped}  # fmt: skip


MODEL_RTOL = 1e-5
"""MuJoCo's XML writer keeps six significant digits, so a compiled field may move by a few parts
in a million (a joint limit of 1.5707963 rad is written 1.5708)."""


def model_differences(
    a, b, ignore: tuple[str, ...] = (), rtol: float = MODEL_RTOL
) -> dict[str, float]:
    """Numeric fields (and options) in which two compiled models differ beyond ``rtol`` (and
    1e-9 absolute), each with its largest absolute difference; a shape mismatch is infinite."""
    import numpy as np

    out: dict[str, float] = {}

    def compare(name: str, x, y) -> None:
        x, y = np.asarray(x), np.asarray(y)
        if x.dtype.kind not in "fiub":
            return
        if x.shape != y.shape:
            out[name] = math.inf
        elif x.size and not np.allclose(x, y, rtol=rtol, atol=1e-9, equal_nan=True):
            out[name] = float(np.nanmax(np.abs(x.astype(float) - y.astype(float))))

    for name in dir(a):
        if name.startswith("_") or name in ignore:
            continue
        value = getattr(a, name, None)
        if isinstance(value, np.ndarray):
            compare(name, value, getattr(b, name))
    for name in (*_OPTION_FIELDS, *_OPTION_VECTORS):
        compare(f"opt.{name}", getattr(a.opt, name), getattr(b.opt, name))
    return out


# --------------------------------------------------------------------------- the spec


def _floats(value, size: int) -> list[float] | None:
    """A scale or clip as a list of ``size`` floats (a scalar repeated); None stays None."""
    if value is None:
        return None
    import torch

    if isinstance(value, torch.Tensor):
        value = value.detach().cpu().flatten().tolist()
    if isinstance(value, (int, float)):
        return [float(value)] * size
    values = [float(v) for v in value]
    if len(values) == 1:
        values *= size
    if len(values) != size:
        raise SpecError(f"a scale of {len(values)} values for a term of size {size}")
    return values


def _observation_term(name: str, cfg, size: int, model, root_body: str, delay_cfg=None):
    """One actor term as the spec writes it, or a SpecError for a term plain MuJoCo lacks."""
    import mujoco
    from mjlab.envs.mdp import observations as obs

    params = dict(cfg.params)
    term: dict[str, Any] = {"name": name, "size": size}
    if getattr(cfg, "history_length", 0):
        raise SpecError(f"observation term {name!r} keeps a history; the export has none")
    if cfg.func is obs.builtin_sensor:
        sensor = params["sensor_name"]
        sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, sensor)
        if sid < 0 or int(model.sensor_dim[sid]) != size:
            raise SpecError(f"observation term {name!r}: no sensor {sensor!r} of size {size}")
        term.update(kind="sensor", sensor=sensor, adr=int(model.sensor_adr[sid]))
    elif cfg.func is obs.projected_gravity:
        term.update(kind="projected_gravity", body=root_body,
                    body_id=mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, root_body),
                    gravity_w=list(GRAVITY_DIRECTION_W))  # fmt: skip
    elif cfg.func is obs.joint_pos_rel:
        if params.get("biased"):
            raise SpecError(f"observation term {name!r} reads biased encoders")
        term["kind"] = "joint_pos_rel"
    elif cfg.func is obs.joint_vel_rel:
        term["kind"] = "joint_vel_rel"
    elif cfg.func is obs.last_action:
        term["kind"] = "last_action"
    elif cfg.func is obs.generated_commands:
        term.update(kind="velocity_command", command=params["command_name"])
    else:
        fn = getattr(cfg.func, "__name__", repr(cfg.func))
        raise SpecError(f"observation term {name!r} ({fn}) has no plain-MuJoCo counterpart")
    asset = params.get("asset_cfg")
    if asset is not None and getattr(asset, "joint_ids", slice(None)) != slice(None):
        raise SpecError(f"observation term {name!r} reads a subset of the joints")
    term["scale"] = _floats(cfg.scale, size)
    term["clip"] = list(cfg.clip) if cfg.clip is not None else None
    delay = delay_cfg if delay_cfg is not None else cfg
    term["delay_steps"] = [int(delay.delay_min_lag), int(delay.delay_max_lag)]
    return term


def _terminations(env, model) -> list[dict[str, Any]]:
    """The task's terminations that plain MuJoCo can evaluate; any other is a SpecError."""
    import mujoco
    from mjlab.envs import mdp as envs_mdp
    from mjlab.tasks.velocity import mdp

    from mjlab_microduck.tasks import mdp as duck_mdp

    out = []
    for name in env.termination_manager.active_terms:
        cfg = env.termination_manager.get_term_cfg(name)
        params = dict(cfg.params)
        if cfg.func is mdp.time_out:
            out.append(
                {"name": name, "kind": "time_out", "after_s": float(env.max_episode_length_s)}
            )
        elif cfg.func is mdp.bad_orientation:
            out.append({"name": name, "kind": "tilt", "limit_rad": float(params["limit_angle"])})
        elif cfg.func is envs_mdp.nan_detection:
            out.append({"name": name, "kind": "nan"})
        elif cfg.func is duck_mdp.below_ground:
            out.append({"name": name, "kind": "trunk_below",
                        "min_height_m": float(params.get("min_height_m", -0.05))})  # fmt: skip
        elif cfg.func is duck_mdp.legs_collapsed:
            asset = params["asset_cfg"]
            sites = [f"robot/{s}" for s in asset.site_names]
            ids = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, s) for s in sites]
            out.append({"name": name, "kind": "trunk_above_feet", "sites": sites, "site_ids": ids,
                        "min_height_m": float(params["min_height_above_feet_m"])})  # fmt: skip
        else:
            fn = getattr(cfg.func, "__name__", repr(cfg.func))
            raise SpecError(f"termination {name!r} ({fn}) has no plain-MuJoCo counterpart")
    return out


def build_spec(env, model, task: str, checkpoint: dict[str, Any], task_cfg=None) -> dict[str, Any]:
    """The spec of ``env`` (a built ManagerBasedRlEnv) against ``model``, the MjModel compiled
    from the exported scene (indices are that model's); ``checkpoint`` names the weights.

    ``task_cfg`` is the task's own env config when ``env`` was built from a changed copy (the
    export's check env fixes every delay): the delay ranges are read from it.
    """
    task_cfg = task_cfg if task_cfg is not None else env.cfg
    import mujoco
    from mjlab.envs.mdp.actions import JointPositionAction
    from mjlab.tasks.velocity.mdp import UniformVelocityCommandCfg

    from mjlab_microduck.robot.constants import FOOT_GEOMS, FOOT_SITES, ROOT_BODY

    robot = env.scene["robot"]
    prefix = "robot/"
    root_body = prefix + ROOT_BODY

    def jid(name: str) -> int:
        i = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, prefix + name)
        if i < 0:
            raise SpecError(f"joint {name!r} is not in the exported scene")
        return i

    default = robot.data.default_joint_pos[0].cpu().tolist()
    joints = [
        {"name": prefix + n, "qpos": int(model.jnt_qposadr[jid(n)]),
         "dof": int(model.jnt_dofadr[jid(n)]), "default_pos": float(default[k])}
        for k, n in enumerate(robot.joint_names)
    ]  # fmt: skip
    action = env.action_manager.get_term("joint_pos")
    if not isinstance(action, JointPositionAction) or len(env.action_manager.active_terms) != 1:
        raise SpecError("the task's action is not one joint-position term")
    targets = list(action._target_names)
    ctrl = [mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_ACTUATOR, prefix + n) for n in targets]
    if min(ctrl) < 0:
        raise SpecError("an action target has no actuator of its name in the exported scene")
    # The joints' actuators: one delay range for all (MICRODUCK_ACTUATORS), in physics steps.
    actuators = task_cfg.scene.entities["robot"].articulation.actuators
    delays = {(a.delay_min_lag, a.delay_max_lag) for a in actuators}
    if len(delays) != 1:
        raise SpecError(f"actuator groups with different delays {sorted(delays)}")
    ((delay_min, delay_max),) = delays
    n = len(targets)
    actions = {
        "size": n,
        "joints": [prefix + t for t in targets],
        "ctrl": ctrl,
        "scale": _floats(action._scale, n),
        "offset": _floats(action._offset, n),
        "clip": action._clip[0].cpu().tolist() if action.cfg.clip is not None else None,
        "delay_physics_steps": [int(delay_min), int(delay_max)],
    }
    group = env.observation_manager
    names = group.active_terms["actor"]
    dims = group.group_obs_term_dim["actor"]
    cfgs = group._group_obs_term_cfgs["actor"]
    own = task_cfg.observations["actor"].terms
    terms = [
        _observation_term(name, cfg, int(math.prod(dim)), model, root_body, own.get(name))
        for name, dim, cfg in zip(names, dims, cfgs, strict=True)
    ]
    for term in terms:
        if term["kind"] in ("joint_pos_rel", "joint_vel_rel") and term["size"] != len(joints):
            raise SpecError(f"observation term {term['name']!r} does not cover every joint")
    command_names = {t["command"] for t in terms if t["kind"] == "velocity_command"}
    if len(command_names) != 1:
        raise SpecError("the actor must observe exactly one velocity command")
    (command_name,) = command_names
    twist = env.command_manager.get_term(command_name).cfg
    if not isinstance(twist, UniformVelocityCommandCfg):
        raise SpecError(f"command {command_name!r} is not mjlab's velocity command")
    ranges = twist.ranges
    root_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, root_body)
    contact = {}
    for side, geom in zip(("left", "right"), FOOT_GEOMS, strict=True):
        sensor = f"feet_ground_contact_{geom}_found"
        sid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SENSOR, sensor)
        contact[side] = {"sensor": sensor, "adr": int(model.sensor_adr[sid])} if sid >= 0 else None
    init = env.cfg.scene.entities["robot"].init_state
    return {
        "format": SPEC_FORMAT,
        "version": SPEC_VERSION,
        "task": task,
        "checkpoint": checkpoint,
        "files": {"policy": "policy.onnx", "scene": "scene.xml"},
        "sim": {
            "timestep_s": float(model.opt.timestep),
            "decimation": int(env.cfg.decimation),
            "control_dt_s": float(env.step_dt),
        },
        "robot": {
            "root_body": root_body,
            "root_body_id": int(root_id),
            "root_qpos": int(model.jnt_qposadr[model.body_jntadr[root_id]]),
            "root_dof": int(model.jnt_dofadr[model.body_jntadr[root_id]]),
            "init_pos": [float(v) for v in init.pos],
            "forward_axis_b": list(FORWARD_AXIS_B),
            "foot_sites": [prefix + s for s in FOOT_SITES],
            "foot_contact": contact,
        },
        "joints": joints,
        "actions": actions,
        "observation": {"size": sum(t["size"] for t in terms), "terms": terms},
        "command": {
            "name": command_name,
            "ranges": {
                "lin_vel_x": list(ranges.lin_vel_x),
                "lin_vel_y": list(ranges.lin_vel_y),
                "ang_vel_z": list(ranges.ang_vel_z),
            },
            # mjlab's heading command: every step the yaw-rate command becomes
            # clip(stiffness * wrap_to_pi(target - heading), ang_vel_z range).
            "heading": {
                "stiffness": float(twist.heading_control_stiffness),
                "clip": list(ranges.ang_vel_z),
            },  # fmt: skip
        },
        "terminations": _terminations(env, model),
    }
