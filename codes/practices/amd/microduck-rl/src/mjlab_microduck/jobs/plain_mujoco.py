"""An exported policy in plain MuJoCo (the C library, on the CPU), with no mjlab in the loop.

Problem it solves: sim-to-sim. A policy trained in MuJoCo Warp is only known to walk there. This
module loads an export (``scene.xml``, ``spec.json``, ``policy.onnx`` from ``jobs/export.py``),
steps the scene with ``mujoco.mj_step``, builds the observation vector from the spec term by
term, runs the actor with onnxruntime at the control rate and, in heading mode, applies mjlab's
heading law to the yaw-rate command. The page's JavaScript (``book/drive/src/policy.js``) is the
same loop, written the same way, so the two can be compared step by step.

Deterministic by design: no observation noise, no randomised robot, and every delay fixed at the
middle of the range the spec gives, rounded down (:func:`typical_lag`: the actuators' 0-3 physics
steps become 1, the IMU's 0-1 control steps 0, the joint velocities' fixed 1 stays 1). Training
drew a new delay every step; a rollout at the low end of every range (no delay at all) is the edge
of what the policy saw, and chapter 6 shows what that does to it. One control step is
what mjlab's ``env.step`` does: set the actuator targets, ``decimation`` physics steps,
``mj_forward``, update the command, observe. The gait test's cases run through
:func:`run_cases`, judged by ``analysis/gait.py``'s metrics.

No-op cases: nothing runs on import; MuJoCo and onnxruntime are imported when a rollout is made.
"""

from __future__ import annotations

import json
import math
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mjlab_microduck.analysis import gait
from mjlab_microduck.analysis.gait import GaitCase, Trajectory

SPEC_FILENAME = "spec.json"


class ExportFolderError(ValueError):
    """An export folder is missing a file or holds a spec of another format; one line."""


def wrap_to_pi(angle: float) -> float:
    """``angle`` in [-pi, pi), as mjlab's ``wrap_to_pi``."""
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


def typical_lag(delay_range) -> int:
    """The fixed delay a rollout uses for a ``[min, max]`` range: its middle, rounded down."""
    low, high = int(delay_range[0]), int(delay_range[1])
    return (low + high) // 2


def heading_law(target: float, heading: float, stiffness: float, clip: tuple[float, float]):
    """mjlab's heading command: the yaw rate that turns ``heading`` toward ``target``."""
    return float(np.clip(stiffness * wrap_to_pi(target - heading), clip[0], clip[1]))


def load_spec(folder: Path) -> dict:
    """``spec.json`` of an export folder, checked for its format and files."""
    from mjlab_microduck.jobs.drive_spec import SPEC_FORMAT, SPEC_VERSION

    path = Path(folder) / SPEC_FILENAME
    if not path.is_file():
        raise ExportFolderError(f"{folder}: no {SPEC_FILENAME} (not an export folder)")
    spec = json.loads(path.read_text())
    if spec.get("format") != SPEC_FORMAT or spec.get("version") != SPEC_VERSION:
        raise ExportFolderError(f"{path}: not a {SPEC_FORMAT} version {SPEC_VERSION} file")
    for name in spec["files"].values():
        if not (Path(folder) / name).is_file():
            raise ExportFolderError(f"{folder}: {name} is missing")
    return spec


class _Lag:
    """A fixed observation delay of ``lag`` steps, as mjlab's DelayBuffer with min = max: the
    first value after a reset fills the history, so early steps repeat it."""

    def __init__(self, lag: int):
        self.lag, self.values = lag, deque(maxlen=lag + 1)

    def reset(self) -> None:
        self.values.clear()

    def __call__(self, value: np.ndarray) -> np.ndarray:
        if not self.values:
            self.values.extend([value] * (self.lag + 1))
        else:
            self.values.append(value)
        return self.values[0]


def _rotate_inverse(quat_wxyz: np.ndarray, vec: np.ndarray) -> np.ndarray:
    """``vec`` rotated by the inverse of a unit quaternion (world -> body)."""
    import mujoco

    out = np.zeros(3)
    conj = np.array([quat_wxyz[0], -quat_wxyz[1], -quat_wxyz[2], -quat_wxyz[3]])
    mujoco.mju_rotVecQuat(out, np.asarray(vec, dtype=float), conj)
    return out


class Observer:
    """The actor's observation vector, built from the spec's terms in their order."""

    def __init__(self, spec: dict, delays: dict[str, int] | None = None):
        """``delays``: a fixed delay (control steps) per term name, over :func:`typical_lag`."""
        self.spec = spec
        self.terms = spec["observation"]["terms"]
        self.qpos = np.array([j["qpos"] for j in spec["joints"]])
        self.dof = np.array([j["dof"] for j in spec["joints"]])
        self.default = np.array([j["default_pos"] for j in spec["joints"]])
        delays = delays or {}
        self.lags = [_Lag(delays.get(t["name"], typical_lag(t["delay_steps"]))) for t in self.terms]

    def reset(self) -> None:
        for lag in self.lags:
            lag.reset()

    def _raw(self, term: dict, data, last_action: np.ndarray, command: np.ndarray) -> np.ndarray:
        kind = term["kind"]
        if kind == "sensor":
            return data.sensordata[term["adr"] : term["adr"] + term["size"]].copy()
        if kind == "projected_gravity":
            return _rotate_inverse(data.xquat[term["body_id"]], term["gravity_w"])
        if kind == "joint_pos_rel":
            return data.qpos[self.qpos] - self.default
        if kind == "joint_vel_rel":
            return data.qvel[self.dof].copy()
        if kind == "last_action":
            return np.asarray(last_action, dtype=float).copy()
        if kind == "velocity_command":
            return np.asarray(command, dtype=float).copy()
        raise ExportFolderError(f"observation term kind {kind!r} is not known here")

    def __call__(self, data, last_action, command) -> np.ndarray:
        """The observation after ``data`` was brought up to date (``mj_forward``)."""
        parts = []
        for term, lag in zip(self.terms, self.lags, strict=True):
            value = self._raw(term, data, last_action, command)
            if term["clip"] is not None:
                value = np.clip(value, term["clip"][0], term["clip"][1])
            if term["scale"] is not None:
                value = value * np.asarray(term["scale"])
            parts.append(lag(value))
        return np.concatenate(parts).astype(np.float32)


class OnnxPolicy:
    """``policy.onnx`` under onnxruntime: one observation in, one action out."""

    def __init__(self, path: Path):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = 1  # one robot, a 51x512 MLP: threads only cost here
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.input = self.session.get_inputs()[0].name

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        out = self.session.run(None, {self.input: obs.reshape(1, -1).astype(np.float32)})[0]
        return out[0].astype(np.float64)


@dataclass
class Command:
    """The velocity command (heading frame): ``hold_heading`` replaces ``wz`` by the heading
    law toward ``target_heading``."""

    vx: float = 0.0
    vy: float = 0.0
    wz: float = 0.0
    hold_heading: bool = False
    target_heading: float = 0.0


class PlainMujocoRobot:
    """One robot of an export in plain MuJoCo: reset, then control steps under a command.

    ``action_delay`` (physics steps) and ``observation_delays`` (control steps, per term) fix
    the delays instead of :func:`typical_lag` of the spec's ranges.
    """

    def __init__(
        self,
        folder: Path,
        action_delay: int | None = None,
        observation_delays: dict[str, int] | None = None,
    ):
        import mujoco

        self.folder = Path(folder)
        self.spec = load_spec(self.folder)
        self.model = mujoco.MjModel.from_xml_path(str(self.folder / self.spec["files"]["scene"]))
        self.data = mujoco.MjData(self.model)
        self.policy = OnnxPolicy(self.folder / self.spec["files"]["policy"])
        self.observer = Observer(self.spec, observation_delays)
        act = self.spec["actions"]
        self.ctrl = np.array(act["ctrl"])
        self.scale, self.offset = np.array(act["scale"]), np.array(act["offset"])
        self.clip = np.array(act["clip"]) if act["clip"] is not None else None
        self.action_lag = (
            typical_lag(act["delay_physics_steps"]) if action_delay is None else int(action_delay)
        )
        robot = self.spec["robot"]
        self.root_body, self.root_qpos = robot["root_body_id"], robot["root_qpos"]
        self.root_dof = robot["root_dof"]
        self.decimation = int(self.spec["sim"]["decimation"])
        self.dt = float(self.spec["sim"]["control_dt_s"])
        heading = self.spec["command"]["heading"]
        self.stiffness, self.heading_clip = heading["stiffness"], tuple(heading["clip"])
        self.command = Command()

    def reset(self, yaw: float = 0.0, command: Command | None = None) -> np.ndarray:
        """The default pose at the spec's start position, turned by ``yaw``; the first
        observation (a heading hold aims at the start heading)."""
        import mujoco

        mujoco.mj_resetData(self.model, self.data)
        q = self.root_qpos
        self.data.qpos[q : q + 3] = self.spec["robot"]["init_pos"]
        self.data.qpos[q + 3 : q + 7] = [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]
        for joint in self.spec["joints"]:
            self.data.qpos[joint["qpos"]] = joint["default_pos"]
        mujoco.mj_forward(self.model, self.data)
        self.command = command or Command()
        self.command.target_heading = self.heading()
        self.last_action = np.zeros(self.spec["actions"]["size"])
        # mjlab's actuator delay: a DelayBuffer that the first target after a reset fills.
        self.targets = _Lag(self.action_lag)
        self.observer.reset()
        # mjlab's first observation holds the command as resampled: the heading law runs from
        # the first step on.
        self.obs = self.observer(self.data, self.last_action, self.command_vector(False))
        return self.obs

    def heading(self) -> float:
        """Yaw of the trunk's forward axis in the world, as mjlab's ``heading_w``."""
        m = self.data.xmat[self.root_body].reshape(3, 3)
        return math.atan2(m[1, 0], m[0, 0])

    def command_vector(self, steer: bool = True) -> np.ndarray:
        c = self.command
        wz = c.wz
        if c.hold_heading and steer:
            wz = heading_law(c.target_heading, self.heading(), self.stiffness, self.heading_clip)
        return np.array([c.vx, c.vy, wz])

    def step(self) -> np.ndarray:
        """One control step; returns the next observation."""
        import mujoco

        action = self.policy(self.obs)
        target = action * self.scale + self.offset
        if self.clip is not None:
            target = np.clip(target, self.clip[:, 0], self.clip[:, 1])
        for _ in range(self.decimation):
            self.data.ctrl[self.ctrl] = self.targets(target)
            mujoco.mj_step(self.model, self.data)
        mujoco.mj_forward(self.model, self.data)
        self.last_action = action
        self.obs = self.observer(self.data, self.last_action, self.command_vector())
        return self.obs

    # ------------------------------------------------------------------ what the gait test reads

    def sample(self) -> dict[str, float]:
        """The trunk and feet now, in the gait test's fields (``analysis.gait.Trajectory``)."""
        d, b = self.data, self.root_body
        heading = self.heading()
        vel = d.qvel[self.root_dof : self.root_dof + 3]  # a free joint's: world frame
        rot = d.xmat[b].reshape(3, 3)
        wz = float((rot @ d.qvel[self.root_dof + 3 : self.root_dof + 6])[2])  # body -> world
        up = -_rotate_inverse(d.xquat[b], (0.0, 0.0, -1.0))[2]
        cos, sin = math.cos(heading), math.sin(heading)
        contact = self.spec["robot"]["foot_contact"]
        on = {s: float(d.sensordata[c["adr"]] > 0) if c else 0.0 for s, c in contact.items()}
        x, y, z = d.xpos[b]
        return {"x": x, "y": y, "z": z, "heading": heading,
                "v_forward": cos * vel[0] + sin * vel[1], "v_left": -sin * vel[0] + cos * vel[1],
                "yaw_rate": wz, "upright": up, "contact_left": on["left"],
                "contact_right": on["right"]}  # fmt: skip

    def terminated(self) -> list[str]:
        """The spec's terminations that hold now (time-outs aside)."""
        d, fired = self.data, []
        z = float(d.xpos[self.root_body][2])
        for term in self.spec["terminations"]:
            kind = term["kind"]
            if kind == "tilt":
                up = -_rotate_inverse(d.xquat[self.root_body], (0.0, 0.0, -1.0))[2]
                hit = abs(math.acos(float(np.clip(up, -1.0, 1.0)))) > term["limit_rad"]
            elif kind == "nan":
                hit = not (np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all())
            elif kind == "trunk_below":
                hit = z < term["min_height_m"]
            elif kind == "trunk_above_feet":
                feet = min(float(d.site_xpos[i][2]) for i in term["site_ids"])
                hit = z - feet < term["min_height_m"]
            else:
                hit = False
            if hit:
                fired.append(term["name"])
        return fired


_FIELDS = ("x", "y", "z", "heading", "v_forward", "v_left", "yaw_rate", "upright",
           "contact_left", "contact_right")  # fmt: skip


def rollout(
    robot: PlainMujocoRobot, command: Command, duration_s: float, yaw: float = 0.0
) -> Trajectory:
    """One robot for ``duration_s`` under ``command``, as an ``analysis.gait.Trajectory``.

    A robot that meets a termination stops there: its row says ``done`` and later rows repeat
    it (the gait metrics freeze a robot at its first termination anyway).
    """
    steps = max(1, round(duration_s / robot.dt))
    names = tuple(t["name"] for t in robot.spec["terminations"])
    robot.reset(yaw, command)
    rows = [robot.sample()]
    done = np.zeros(steps + 1, dtype=bool)
    mask = np.zeros(steps + 1)
    for step in range(1, steps + 1):
        robot.step()
        rows.append(robot.sample())
        fired = robot.terminated()
        if fired:
            done[step] = True
            mask[step] = sum(2 ** names.index(n) for n in fired)
            rows.extend([rows[-1]] * (steps - step))
            break
    columns = {f: np.array([[r[f]] for r in rows], dtype=float) for f in _FIELDS}
    return Trajectory(dt=robot.dt, done=done[:, None], term_mask=mask[:, None],
                      term_names=names, **columns)  # fmt: skip


def case_command(case: GaitCase, mode: str) -> Command:
    """The gait test's command for ``case``: a heading hold where the heading mode steers."""
    return Command(case.lin_vel_x, case.lin_vel_y, case.ang_vel_z,
                   hold_heading=gait.steers_heading(case, mode))  # fmt: skip


def run_cases(
    folder: Path,
    cases: tuple[GaitCase, ...],
    modes: tuple[str, ...] = gait.MODES,
    duration_s: float = 10.0,
    yaws: tuple[float, ...] = (0.0,),
    action_delay: int | None = None,
) -> pd.DataFrame:
    """The gait metrics (``analysis.gait.robot_metrics``) of every case, mode and start yaw,
    one row per rollout, with ``mode`` and ``robot`` (the start-yaw index) columns."""
    robot = PlainMujocoRobot(folder, action_delay=action_delay)
    frames = []
    for mode in modes:
        for case in gait.cases_of_mode(tuple(cases), mode):
            for i, yaw in enumerate(yaws):
                traj = rollout(robot, case_command(case, mode), duration_s, yaw)
                metrics = gait.robot_metrics(traj, case).assign(robot=i, start_yaw_rad=yaw)
                metrics.insert(0, "mode", mode)
                frames.append(metrics)
    return pd.concat(frames, ignore_index=True)
