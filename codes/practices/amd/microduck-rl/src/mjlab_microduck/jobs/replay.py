"""Replay a checkpoint in the task's own play environment: metrics, MP4 and a run record.

A reward curve says how well a policy scored on the training distribution; the question the
book asks is whether it *walks*. The replay puts the policy back in the real environment (its
actuators, delays, observations and terminations), one env, a fixed seed and a fixed command,
for N frames (default 200 = 4 s at 50 Hz), and measures what happened: terminations, the lowest
trunk height, the lowest "upright" value (world z of the trunk's z axis), the fraction of frames
that look fallen, forward displacement and velocity, and the velocity-tracking error.
Frames are rendered offscreen (EGL on a GPU, OSMesa on a CPU) into an H.264 MP4.

Command schedules: instead of one command, a replay may follow a schedule of
``(start_s, lin_vel_x, lin_vel_y, ang_vel_z)`` segments (:data:`WALK_THEN_TURN` is the front
page's). Resampling stays off; after mjlab updates the twist command each step, the replay
writes the schedule's value into the term's buffer (``vel_command_b``) and checks, every step,
that the buffer and the command in the policy's observation still hold it. Every trajectory
row (the state after one control step) carries the time that step began (``t_s``), the command
in force during it (``cmd_vx``, ``cmd_vy``, ``cmd_wz``), its schedule ``segment`` and the
trunk's yaw rate (``wz_b``); a fixed command is a one-segment schedule.

Camera: ``follow`` (the default, and what the task's play config always did) is MuJoCo's
tracking camera on the robot's root body (the trunk), at the task's framing (0.6 m, 15 degrees
down): its look-at point is the robot's centre of mass every frame, its viewing direction stays
fixed in the world, so a turn shows as the robot turning in the picture. ``fixed`` looks at the
trunk's starting point from the same angle and stays there, so the floor does not slide under
the picture and the reader sees how far the robot went. With video, the camera's look-at point
is stored per frame (``cam_x``, ``cam_y``, ``cam_z``).

Checkpoints may be full rsl_rl files or the slim published form (policy weights, observation
normaliser, iteration). Bad input (a missing, unreadable or ill-fitting checkpoint, frames < 1,
an unknown task, device or camera, a bad schedule, a bad run name) fails with one
:class:`ReplayError` line before the run directory exists; a failure after it was created
removes it again, so a run directory always holds a complete replay (trajectory, video,
record) or does not exist.

Shadows: MuJoCo renders shadows with an extra depth pass per light. Under OSMesa (software
rendering on a CPU) that triples the time per frame, so ``shadows=None`` (the default) turns
them off there and keeps them on with EGL.

Command line: ``microduck replay`` (:mod:`mjlab_microduck.cli.replay`) parses the options of
:class:`ReplayCli` and turns them into a request and a run name with :func:`request_from_cli`,
which refuses what it can see without the environment before mjlab is imported or anything is
written.
"""

from __future__ import annotations

import bisect
import math
import os
import re
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pandas as pd
import tyro

from mjlab_microduck.analysis.acceptance import FELL_TRUNK_Z_M, FELL_UPRIGHT
from mjlab_microduck.jobs import recording
from mjlab_microduck.runs import names
from mjlab_microduck.runtime import backend
from mjlab_microduck.runtime.capture import held_output, init_warp_quietly

TRAJECTORY_FILENAME = "trajectory.csv"
VIDEO_FILENAME = "replay.mp4"
GIF_FILENAME = "replay.gif"

Segment = tuple[float, float, float, float]
"""One schedule segment: ``(start_s, lin_vel_x, lin_vel_y, ang_vel_z)``."""
Camera = Literal["follow", "fixed"]
CAMERAS: tuple[Camera, ...] = ("follow", "fixed")
COMMAND_COLUMNS = ("cmd_vx", "cmd_vy", "cmd_wz")
CAMERA_COLUMNS = ("cam_x", "cam_y", "cam_z")

WALK_THEN_TURN: tuple[Segment, ...] = ((0.0, 0.2, 0.0, 0.0), (5.0, 0.15, 0.0, 0.5))
"""The front page's video: 5 s straight at 0.2 m/s, then 5 s at 0.15 m/s turning left at
0.5 rad/s (143 degrees commanded), both inside the command ranges FORWARD_TRACKING trained on.
Whether a policy followed it is in the record's ``segment_<i>_mean_wz_b_radps``."""
WALK_THEN_TURN_FRAMES = 500
TOUR: tuple[Segment, ...] = (
    (0.0, 0.2, 0.0, 0.0),
    (4.0, 0.0, 0.15, 0.0),
    (7.0, 0.0, 0.0, 1.0),
    (10.0, 0.0, 0.0, 0.0),
)
"""The walker's video: 4 s forward at 0.2 m/s, 3 s sideways left at 0.15 m/s, 3 s turning in
place at 1.0 rad/s, 2 s standing: one clip of every kind of command the gait test checks, each
inside the walker recipe's command ranges."""
TOUR_FRAMES = 600
ScheduleName = Literal["walk_then_turn", "tour"]
SCHEDULES: dict[ScheduleName, tuple[tuple[Segment, ...], int]] = {
    "walk_then_turn": (WALK_THEN_TURN, WALK_THEN_TURN_FRAMES),
    "tour": (TOUR, TOUR_FRAMES),
}
"""Named schedules for the CLI (``--schedule``, one of :data:`ScheduleName`): segments and the
frames (at 50 Hz) they are meant for."""


class ReplayError(Exception):
    """Bad replay input: the message is the one line the CLI prints."""


@dataclass(frozen=True)
class ReplayRequest:
    checkpoint: Path
    task: str = "Mjlab-Velocity-Flat-MicroDuck"
    frames: int = 200
    seed: int = 42
    lin_vel_x: float = 0.15
    lin_vel_y: float = 0.0
    ang_vel_z: float = 0.0
    device: str = "cpu"
    video: bool = True
    gif: bool = False
    width: int = 480
    height: int = 360
    frozen_broadphase: bool = False
    # None: shadows on with EGL, off with OSMesa (see the module docstring).
    shadows: bool | None = None
    # Overrides lin_vel_x, lin_vel_y and ang_vel_z, which are then recorded as None.
    schedule: tuple[Segment, ...] | None = None
    camera: Camera = "follow"

    def segments(self) -> tuple[Segment, ...]:
        """The schedule, or the fixed command as a one-segment schedule."""
        if self.schedule is not None:
            return self.schedule
        return ((0.0, self.lin_vel_x, self.lin_vel_y, self.ang_vel_z),)


@dataclass(frozen=True)
class ReplayMetrics:
    frames: int
    duration_s: float
    done_count: int
    min_trunk_z_m: float
    min_upright_proxy: float
    fell_like_frames: int
    fell_like_fraction: float
    forward_displacement_m: float
    mean_forward_velocity_mps: float
    mean_abs_velocity_error_mps: float


def compute_metrics(
    trajectory: pd.DataFrame, command_xy: tuple[float, float] | None, dt: float
) -> ReplayMetrics:
    """Metrics from a per-frame trajectory.

    Columns: ``x``, ``y``, ``z`` (trunk position, world), ``yaw0`` (heading at the first frame),
    ``vx_b``, ``vy_b`` (trunk velocity in its own frame), ``upright`` and ``done``. Forward
    displacement is measured along the first frame's heading, so a robot spawned facing any way
    is judged the same; the velocity error is the norm of the body-frame xy error, against
    ``command_xy`` or, when it is None (a schedule), each frame's ``cmd_vx`` and ``cmd_vy``.
    """
    if trajectory.empty:
        raise ReplayError("replay produced no frames")
    if command_xy is None:
        command_xy = (trajectory["cmd_vx"], trajectory["cmd_vy"])
    heading = float(trajectory["yaw0"].iloc[0])
    dx = float(trajectory["x"].iloc[-1] - trajectory["x"].iloc[0])
    dy = float(trajectory["y"].iloc[-1] - trajectory["y"].iloc[0])
    forward = dx * math.cos(heading) + dy * math.sin(heading)
    err = np.hypot(trajectory["vx_b"] - command_xy[0], trajectory["vy_b"] - command_xy[1])
    fell = (trajectory["z"] < FELL_TRUNK_Z_M) | (trajectory["upright"] < FELL_UPRIGHT)
    frames = len(trajectory)
    return ReplayMetrics(
        frames=frames,
        duration_s=round(frames * dt, 6),
        done_count=int(trajectory["done"].sum()),
        min_trunk_z_m=float(trajectory["z"].min()),
        min_upright_proxy=float(trajectory["upright"].min()),
        fell_like_frames=int(fell.sum()),
        fell_like_fraction=float(fell.mean()),
        forward_displacement_m=forward,
        mean_forward_velocity_mps=float(trajectory["vx_b"].mean()),
        mean_abs_velocity_error_mps=float(err.mean()),
    )


def path_in_start_frame(trajectory: pd.DataFrame) -> pd.DataFrame:
    """The trunk's planar path relative to where it started: ``forward_m`` along the first
    heading (the commanded direction), ``left_m`` to its left."""
    heading = float(trajectory["yaw0"].iloc[0])
    dx = trajectory["x"] - trajectory["x"].iloc[0]
    dy = trajectory["y"] - trajectory["y"].iloc[0]
    return pd.DataFrame({
        "forward_m": dx * math.cos(heading) + dy * math.sin(heading),
        "left_m": -dx * math.sin(heading) + dy * math.cos(heading),
    })  # fmt: skip


def drift_metrics(trajectory: pd.DataFrame) -> dict[str, float]:
    """Where a replay's forward progress went: turning, detours and sideways sway.

    ``forward_displacement_m`` counts only progress along the first heading, so a robot that
    walks but turns scores less than its path. These say by how much: the heading change over
    the replay (unwrapped, radians), the planar path length, the straight-line distance from
    start to end, and the standard deviation of the sideways body velocity (sway).
    """
    if trajectory.empty:
        raise ReplayError("replay produced no frames")
    steps = np.hypot(np.diff(trajectory["x"]), np.diff(trajectory["y"]))
    heading = np.unwrap(trajectory["yaw"].to_numpy())
    first, last = trajectory.iloc[0], trajectory.iloc[-1]
    return {
        "heading_change_rad": float(heading[-1] - heading[0]),
        "path_length_m": float(steps.sum()),
        "straight_line_m": float(math.hypot(last["x"] - first["x"], last["y"] - first["y"])),
        "sideways_sway_mps": float(trajectory["vy_b"].std(ddof=0)),
    }


def segment_metrics(trajectory: pd.DataFrame) -> dict[str, float]:
    """Per schedule segment, what was commanded and what the trunk did (body-frame means).

    Keys ``segment_<i>_<what>``: ``start_s``, ``cmd_vx``, ``cmd_wz``, ``mean_vx_b_mps`` and
    ``mean_wz_b_radps``, so a reader sees whether the turn followed the command to turn.
    """
    out: dict[str, float] = {}
    for index, rows in trajectory.groupby("segment", sort=True):
        first = rows.iloc[0]
        prefix = f"segment_{int(index)}"
        out[f"{prefix}_start_s"] = float(first["t_s"])
        out[f"{prefix}_cmd_vx"] = float(first["cmd_vx"])
        out[f"{prefix}_cmd_wz"] = float(first["cmd_wz"])
        out[f"{prefix}_mean_vx_b_mps"] = float(rows["vx_b"].mean())
        out[f"{prefix}_mean_wz_b_radps"] = float(rows["wz_b"].mean())
    return out


def load_checkpoint(path: Path) -> dict:
    """Read a full or slim rsl_rl checkpoint, or raise ReplayError with one line."""
    import torch

    if not path.is_file():
        raise ReplayError(f"checkpoint {path}: no such file")
    try:
        data = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 - any unreadable file is the same user error
        raise ReplayError(
            f"checkpoint {path}: not a readable torch file ({type(err).__name__})"
        ) from None
    if not isinstance(data, dict) or "actor_state_dict" not in data:
        raise ReplayError(f"checkpoint {path}: no policy weights (actor_state_dict) inside")
    return data


def shadows_enabled(request: ReplayRequest) -> bool:
    """Whether this replay renders shadows (``request.shadows``, else off under OSMesa)."""
    if request.shadows is not None:
        return request.shadows
    return os.environ.get("MUJOCO_GL", "").lower() != "osmesa"


def check_schedule(schedule) -> tuple[Segment, ...]:
    """A schedule as float segments, or a one-line ReplayError saying what is wrong with it.

    It needs at least one ``(start_s, lin_vel_x, lin_vel_y, ang_vel_z)`` segment, the first at
    0 s (no command is left to chance), finite numbers and strictly increasing start times.
    """
    try:
        segments = tuple(schedule)
    except TypeError:
        raise ReplayError(f"schedule {schedule!r}: expected a sequence of segments") from None
    if not segments:
        raise ReplayError("schedule is empty: give at least one (start_s, vx, vy, wz) segment")
    out: list[Segment] = []
    for i, segment in enumerate(segments):
        try:
            values = tuple(float(v) for v in segment)
        except (TypeError, ValueError):
            values = ()
        if len(values) != 4 or not all(math.isfinite(v) for v in values):
            raise ReplayError(
                f"schedule segment {i}: {segment!r} is not four finite numbers "
                "(start_s, lin_vel_x, lin_vel_y, ang_vel_z)"
            )
        if values[0] < 0:
            raise ReplayError(f"schedule segment {i} starts at {values[0]:g} s: negative time")
        if out and values[0] <= out[-1][0]:
            raise ReplayError(
                f"schedule start times must increase: segment {i} starts at {values[0]:g} s, "
                f"segment {i - 1} at {out[-1][0]:g} s"
            )
        out.append(values)  # type: ignore[arg-type]
    if out[0][0] != 0.0:
        raise ReplayError(f"schedule starts at {out[0][0]:g} s: the first segment must start at 0")
    return tuple(out)


def validate(request: ReplayRequest) -> None:
    """Reject bad input that can be seen without building the environment (one line each).

    A checkpoint that does not fit the task is found only when the policy is built, inside
    :func:`simulate`; that, too, happens before anything is written.
    """
    if request.frames < 1:
        raise ReplayError(f"frames must be at least 1 (got {request.frames})")
    if request.video and (request.width < 16 or request.height < 16):
        raise ReplayError(f"video size {request.width}x{request.height}: at least 16x16")
    if request.camera not in CAMERAS:
        raise ReplayError(f"camera {request.camera!r}: expected one of {', '.join(CAMERAS)}")
    if request.schedule is not None:
        check_schedule(request.schedule)
    try:
        backend.check_device(request.device)
    except backend.DeviceError as err:
        raise ReplayError(str(err)) from None


def _replay_cfg(request: ReplayRequest):
    from mjlab.viewer import ViewerConfig

    from mjlab_microduck.tasks import velocity
    from mjlab_microduck.tasks.registry import list_tasks, load_env_cfg

    if request.task not in list_tasks():
        raise ReplayError(f"unknown task {request.task!r}; known: {', '.join(list_tasks())}")
    cfg = load_env_cfg(request.task, play=True)
    cfg.scene.num_envs = 1
    cfg.seed = request.seed
    segments = check_schedule(request.segments())
    twist = cfg.commands["twist"]
    # mjlab resamples once at reset, before the replay can write the buffer: pinned ranges make
    # that draw the first segment, so the policy's first observation already holds it.
    _, vx, vy, wz = segments[0]
    twist.ranges.lin_vel_x = (vx, vx)
    twist.ranges.lin_vel_y = (vy, vy)
    twist.ranges.ang_vel_z = (wz, wz)
    twist.rel_standing_envs = 0.0
    twist.rel_forward_envs = 0.0
    velocity.hold_yaw_rate(twist)
    twist.resampling_time_range = (1.0e9, 1.0e9)
    cfg.viewer.width = request.width
    cfg.viewer.height = request.height
    cfg.viewer.enable_shadows = shadows_enabled(request)
    if request.camera == "follow":
        cfg.viewer.origin_type = ViewerConfig.OriginType.ASSET_ROOT
        cfg.viewer.entity_name = "robot"
    else:
        # The look-at point is the trunk's position after the reset, set in _aim_fixed_camera.
        cfg.viewer.origin_type = ViewerConfig.OriginType.WORLD
    return cfg


def _offscreen_camera(env):
    """The MuJoCo camera mjlab's offscreen renderer draws with (mjlab keeps it private)."""
    return env._offline_renderer._cam


def _aim_fixed_camera(env) -> None:
    """Point a ``fixed`` camera at the trunk's position after the reset."""
    camera = _offscreen_camera(env)
    camera.lookat[:] = env.scene["robot"].data.root_link_pos_w[0].cpu().numpy()


def _policy_command_slice(env) -> slice | None:
    """Where the twist command sits in the policy's (concatenated) observation, if it does."""
    manager = env.observation_manager
    if "actor" not in manager.active_terms or not manager.group_obs_concatenate["actor"]:
        return None
    offset = 0
    for name, dims in zip(
        manager.active_terms["actor"], manager.group_obs_term_dim["actor"], strict=True
    ):
        size = int(np.prod(dims))
        term_cfg = manager.get_term_cfg("actor", name)
        if term_cfg.params.get("command_name") == "twist" and size == 3:
            return slice(offset, offset + size)
        offset += size
    return None


class ScheduledCommand:
    """Holds the twist command term to a schedule.

    mjlab's ``compute`` of the term (resampling, standing and heading envs) runs first; the
    schedule's value for the next frame is written into ``vel_command_b`` right after it, before
    the observation is computed, so the policy acts on the schedule at the frame it says.
    :meth:`check` then proves after every step that nothing else changed the buffer or the
    command the policy was given.
    """

    def __init__(self, term, segments: tuple[Segment, ...], dt: float, obs_slice=None):
        import torch

        buffer = term.vel_command_b
        self.term = term
        self.segments = segments
        self.obs_slice = obs_slice
        # First frame of each segment: the first control step that starts at or after it.
        self.first_frames = [math.ceil(start / dt - 1e-6) for start, *_ in segments]
        self.values = torch.tensor(
            [segment[1:] for segment in segments], dtype=buffer.dtype, device=buffer.device
        )
        self.frame = 0
        mjlab_compute = term.compute

        def compute(dt: float) -> None:
            mjlab_compute(dt)
            self.write(self.frame + 1)

        # An instance attribute: the command manager calls term.compute(dt) every step.
        term.compute = compute

    def segment(self, frame: int) -> int:
        return bisect.bisect_right(self.first_frames, frame) - 1

    def expected(self, frame: int):
        return self.values[self.segment(frame)]

    def write(self, frame: int) -> None:
        self.term.vel_command_b[:] = self.expected(frame)

    def check(self, frame: int, obs) -> tuple[float, float, float]:
        """The command in force for ``frame`` (as the schedule writes it, not float32);
        ReplayError if the buffer or the observation disagree with the schedule."""
        want = self.expected(frame)
        found = self.term.vel_command_b
        if not bool((found == want).all()):
            raise ReplayError(
                f"frame {frame}: the twist command buffer holds {_fmt(found[0])}, the schedule "
                f"says {_fmt(want)}; something else wrote it"
            )
        if self.obs_slice is not None:
            seen = obs["actor"][0, self.obs_slice]
            if not bool((seen == want).all()):
                raise ReplayError(
                    f"frame {frame}: the policy observed command {_fmt(seen)}, the schedule "
                    f"says {_fmt(want)}"
                )
        self.frame = frame
        _, vx, vy, wz = self.segments[self.segment(frame)]
        return vx, vy, wz


def _fmt(vector) -> str:
    return "(" + ", ".join(f"{float(v):g}" for v in vector) + ")"


def _policy(env, task: str, checkpoint: dict, checkpoint_path: Path, device: str):
    from mjlab.rl import MjlabOnPolicyRunner

    from mjlab_microduck.tasks.registry import load_rl_cfg, load_runner_cls

    runner_cls = load_runner_cls(task) or MjlabOnPolicyRunner
    runner = runner_cls(env, asdict(load_rl_cfg(task)), device=device)
    try:
        runner.alg.actor.load_state_dict(checkpoint["actor_state_dict"], strict=True)
    except RuntimeError as err:
        first = str(err).strip().splitlines()
        detail = next((line.strip() for line in first if "size mismatch" in line), first[-1])
        raise ReplayError(
            f"checkpoint {checkpoint_path} does not fit task {task}: {detail}"
        ) from None
    return runner.get_inference_policy(device=device)


@contextmanager
def replay_env(request: ReplayRequest) -> Iterator[tuple]:
    """The play environment of a replay, built and closed: ``(env, wrapped, policy, command)``.

    ``command`` is the :class:`ScheduledCommand` that holds the twist term to
    ``request.segments()``; a ``fixed`` camera is aimed at the trunk's starting point. Bad input
    raises :class:`ReplayError` before the environment is built (or once the policy is found
    not to fit it).
    """
    import torch
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.rl import RslRlVecEnvWrapper

    validate(request)
    checkpoint = load_checkpoint(Path(request.checkpoint))
    cfg = _replay_cfg(request)
    torch.manual_seed(request.seed)
    from mjlab_microduck.compat import faults

    fault = faults.frozen_broadphase() if request.frozen_broadphase else nullcontext()
    with fault:
        # What mjlab and Warp write to stderr while the env is built is passed on after a good
        # set-up and dropped when the checkpoint does not fit, so bad input reads as one line;
        # mjlab's manager tables and rsl_rl's network dump (stdout) are never shown, nor is
        # Warp's note that this machine has no CUDA driver.
        init_warp_quietly()
        with held_output((1,)), held_output((2,), echo=True) as setup_output:
            env = ManagerBasedRlEnv(
                cfg=cfg, device=request.device, render_mode="rgb_array" if request.video else None
            )
            try:
                wrapped = RslRlVecEnvWrapper(env)
                policy = _policy(
                    wrapped, request.task, checkpoint, Path(request.checkpoint), request.device
                )
                command = ScheduledCommand(
                    env.command_manager.get_term("twist"),
                    check_schedule(request.segments()),
                    float(env.step_dt),
                    _policy_command_slice(env),
                )
                if request.video and request.camera == "fixed":
                    _aim_fixed_camera(env)
            except ReplayError:
                setup_output.discard()
                env.close()
                raise
            except BaseException:
                env.close()
                raise
        try:
            yield env, wrapped, policy, command
        finally:
            env.close()


def simulate(request: ReplayRequest, progress: bool = True, memo: bool = False):
    """Run the replay; returns (trajectory frame, rgb frames, control dt).

    With ``memo``, a replay without video whose identical request already ran with ``memo``
    in this build is read back from the replay memo instead, and one that runs is kept there
    (:mod:`mjlab_microduck.jobs.replay_memo`; only when ``MICRODUCK_REPLAY_MEMO`` names its
    folder, as ``make`` does). The chapters' replays and the tests that check their results
    ask for it; a test that patches the simulation never does."""
    from mjlab_microduck.jobs import replay_memo

    kept = replay_memo.load(request) if memo else None
    if kept is not None:
        return kept[0], [], kept[1]
    trajectory, images, dt = _simulate(request, progress)
    if memo:
        replay_memo.store(request, trajectory, dt)
    return trajectory, images, dt


def _simulate(request: ReplayRequest, progress: bool):
    import torch

    from mjlab_microduck.runtime.progress import progress_bar

    with (
        replay_env(request) as (env, wrapped, policy, command),
        progress_bar(request.frames, "replay frames", enabled=progress) as bar,
    ):
        rows, images = [], []
        obs = wrapped.get_observations()
        robot = env.scene["robot"]
        dt = float(env.step_dt)
        yaw0 = None
        for frame in range(request.frames):
            bar.update()
            cmd = command.check(frame, obs)
            with torch.inference_mode():
                actions = policy(obs)
            obs, _, dones, _ = wrapped.step(actions)
            data = robot.data
            yaw = float(data.heading_w[0].item())
            yaw0 = yaw if yaw0 is None else yaw0
            pos = data.root_link_pos_w[0].cpu().numpy()
            vel_b = data.root_link_lin_vel_b[0].cpu().numpy()
            # World z of the trunk's z axis (1 upright, 0 on its side) is minus the z of
            # gravity seen from the trunk.
            upright = -float(data.projected_gravity_b[0, 2].item())
            rows.append(
                {
                    "x": pos[0], "y": pos[1], "z": pos[2], "yaw": yaw, "yaw0": yaw0,
                    "vx_b": vel_b[0], "vy_b": vel_b[1], "upright": upright,
                    "done": bool(dones[0].item()),
                    "t_s": round(frame * dt, 6), "segment": command.segment(frame),
                    "cmd_vx": cmd[0], "cmd_vy": cmd[1], "cmd_wz": cmd[2],
                    "wz_b": float(data.root_link_ang_vel_b[0, 2].item()),
                }
            )  # fmt: skip
            if request.video:
                images.append(env.render())
                lookat = _offscreen_camera(env).lookat.tolist()
                rows[-1].update(zip(CAMERA_COLUMNS, lookat, strict=True))
        # The last step's write holds the command for the frame after the last one.
        command.check(request.frames, obs)
    return pd.DataFrame(rows), images, dt


MEMO_NOTE = ("trajectory read from the replay memo: the identical replay ran earlier in this "
             "build (mjlab_microduck.jobs.replay_memo)")  # fmt: skip


def write_mp4(path: Path, images: list[np.ndarray], fps: int) -> Path:
    """H.264 (yuv420p, plays in every browser) through imageio-ffmpeg, written atomically."""
    import imageio_ffmpeg

    if not images:
        raise ReplayError("no frames to encode")
    height, width = images[0].shape[:2]
    tmp = path.with_name(f".{path.name}.tmp.mp4")
    writer = imageio_ffmpeg.write_frames(
        str(tmp), (width, height), fps=fps, codec="libx264", pix_fmt_out="yuv420p",
        macro_block_size=8, output_params=["-movflags", "+faststart"],
    )  # fmt: skip
    writer.send(None)
    for frame in images:
        writer.send(np.ascontiguousarray(frame[..., :3]))
    writer.close()
    tmp.replace(path)
    return path


def write_gif(path: Path, images: list[np.ndarray], fps: int) -> Path:
    from PIL import Image

    tmp = path.with_name(f".{path.name}.tmp.gif")
    frames = [Image.fromarray(img[..., :3]) for img in images[::2]]
    frames[0].save(tmp, save_all=True, append_images=frames[1:], duration=int(2000 / fps), loop=0)
    tmp.replace(path)
    return path


def run(
    request: ReplayRequest, out_root: Path, name: str, progress: bool = True, memo: bool = False
):
    """Replay, then write trajectory CSV, MP4 (and GIF) and record into a new run directory.

    Returns ``(run_dir, record)``. Bad input raises :class:`ReplayError` before the directory
    is created. ``memo``: as for :func:`simulate`; a trajectory read from the memo is said so in
    the record's notes (its wall time is then that of reading it).
    """
    from mjlab_microduck.jobs import replay_memo
    from mjlab_microduck.runs import records

    try:  # records.new_run_dir's rule, checked before the replay runs instead of after it
        names.check_run_name(name)
    except ValueError as err:
        raise ReplayError(str(err)) from None
    started_iso, started = records.utc_now_iso(), time.monotonic()
    from_memo = memo and replay_memo.load(request) is not None
    if memo:
        trajectory, images, dt = simulate(request, progress=progress, memo=True)
    else:  # the call a test may stand in for with its own simulate(request, progress)
        trajectory, images, dt = simulate(request, progress=progress)
    notes = MEMO_NOTE if from_memo else None
    if request.schedule is None:
        metrics = compute_metrics(trajectory, (request.lin_vel_x, request.lin_vel_y), dt)
        summary = asdict(metrics)
    else:
        metrics = compute_metrics(trajectory, None, dt)
        summary = {
            **asdict(metrics),
            **drift_metrics(trajectory),
            **segment_metrics(trajectory),
        }
    run_dir = records.new_run_dir(out_root, name)
    try:
        return run_dir, _write_run(
            run_dir, request, trajectory, images, dt, summary, started_iso, started, notes
        )
    except BaseException:
        # Never leave a run directory with a trajectory but no video or record behind.
        shutil.rmtree(run_dir, ignore_errors=True)
        raise


def _write_run(
    run_dir: Path,
    request: ReplayRequest,
    trajectory: pd.DataFrame,
    images: list[np.ndarray],
    dt: float,
    summary: dict,
    started_iso: str,
    started: float,
    notes: str | None = None,
):
    from mjlab_microduck.runs import records

    records.atomic_write_text(run_dir / TRAJECTORY_FILENAME, trajectory.to_csv(index_label="frame"))
    artifacts = [records.artifact(run_dir / TRAJECTORY_FILENAME, run_dir, "trajectory")]
    fps = round(1.0 / dt)
    if request.video:
        write_mp4(run_dir / VIDEO_FILENAME, images, fps)
        artifacts.append(records.artifact(run_dir / VIDEO_FILENAME, run_dir, "video"))
        if request.gif:
            write_gif(run_dir / GIF_FILENAME, images, fps)
            artifacts.append(records.artifact(run_dir / GIF_FILENAME, run_dir, "video"))
    config = recording.checkpoint_config(request)
    config["shadows"] = shadows_enabled(request)
    if request.schedule is not None:
        # Lists, as the record reads back from JSON; the fixed command was not used.
        config["schedule"] = [list(segment) for segment in check_schedule(request.schedule)]
        config.update(lin_vel_x=None, lin_vel_y=None, ang_vel_z=None)
    return recording.write_finished_record(
        run_dir, "replay", config, request.device, started_iso, started, summary, artifacts, notes
    )


def walker_video(
    checkpoint: Path,
    task: str = "Mjlab-Velocity-Flat-MicroDuck",
    device: str = "cpu",
    out_root: Path = Path("logs/replays"),
    name: str = "walk_then_turn",
    width: int = 480,
    height: int = 360,
    frames: int = WALK_THEN_TURN_FRAMES,
    progress: bool = True,
):
    """The front page's video: :data:`WALK_THEN_TURN` for 10 s with the follow camera.

    A replay like :func:`run` (H.264 MP4, trajectory with the command columns, record);
    returns ``(run_dir, record)``. Fewer ``frames`` give the schedule's first part, a preview.
    """
    request = ReplayRequest(
        checkpoint=Path(checkpoint), task=task, frames=frames, device=device,
        width=width, height=height, schedule=WALK_THEN_TURN, camera="follow",
    )  # fmt: skip
    return run(request, out_root, name, progress=progress)


# --------------------------------------------------------------------------- CLI


@dataclass(frozen=True)
class ReplayCli:
    """Replay a checkpoint: metrics, MP4 and a run record."""

    checkpoint: tyro.conf.Positional[Annotated[Path, tyro.conf.arg(metavar="CHECKPOINT")]]
    """Full or slim rsl_rl checkpoint (``actor_state_dict`` inside)."""
    task: str = ReplayRequest.task
    """a registered mjlab task (``list-envs`` lists them)"""
    frames: Annotated[
        tyro.conf.DisallowNone[int | None],
        tyro.conf.arg(help_behavior_hint="(default: 200, or the schedule's own)"),
    ] = None
    """control steps at 50 Hz"""
    seed: int = ReplayRequest.seed
    """env and torch seed"""
    # None marks "not given", so a fixed command next to --schedule can be refused.
    lin_vel_x: Annotated[
        tyro.conf.DisallowNone[float | None], tyro.conf.arg(help_behavior_hint="(default: 0.15)")
    ] = None
    """commanded forward velocity, m/s"""
    lin_vel_y: Annotated[
        tyro.conf.DisallowNone[float | None], tyro.conf.arg(help_behavior_hint="(default: 0)")
    ] = None
    """commanded sideways velocity, m/s"""
    ang_vel_z: Annotated[
        tyro.conf.DisallowNone[float | None], tyro.conf.arg(help_behavior_hint="(default: 0)")
    ] = None
    """commanded yaw rate, rad/s"""
    schedule: Annotated[
        tyro.conf.DisallowNone[ScheduleName | None],
        tyro.conf.arg(help_behavior_hint="(default: one fixed command)"),
    ] = None
    """a named command schedule instead of one fixed command"""
    camera: Camera = ReplayRequest.camera
    """follow the trunk or look at its starting point"""
    device: str = ReplayRequest.device
    """cpu, cuda or cuda:N (ROCm torch also says cuda)"""
    video: bool = ReplayRequest.video
    """render the H.264 MP4 (--no-video: trajectory and record only)"""
    gif: bool = ReplayRequest.gif
    """also write a GIF"""
    width: int = ReplayRequest.width
    """video width in pixels"""
    height: int = ReplayRequest.height
    """video height in pixels"""
    shadows: Annotated[
        tyro.conf.DisallowNone[bool | None],
        tyro.conf.arg(help_behavior_hint="(default: on with EGL, off with OSMesa)"),
    ] = None
    """render shadows"""
    frozen_broadphase: bool = ReplayRequest.frozen_broadphase
    """fault injection: reuse the first step's broadphase list (chapter 7)"""
    out: Path = Path("logs/replays")
    """where the run folder is made"""
    name: Annotated[
        tyro.conf.DisallowNone[str | None],
        tyro.conf.arg(help_behavior_hint="(default: replay_<checkpoint stem>)"),
    ] = None
    """run name"""


def request_from_cli(args: ReplayCli) -> tuple[ReplayRequest, str]:
    """The replay and run name ``microduck replay`` asks for; a one-line :class:`ReplayError`
    for what is wrong without building the environment (a fixed command next to a schedule,
    frames, video size, device, run name). Nothing is created."""
    fixed = (args.lin_vel_x, args.lin_vel_y, args.ang_vel_z)
    schedule, frames = None, ReplayRequest.frames
    if args.schedule is not None:
        if any(v is not None for v in fixed):
            raise ReplayError(
                "--schedule sets the command; leave out --lin-vel-x, --lin-vel-y and --ang-vel-z"
            )
        schedule, frames = SCHEDULES[args.schedule]
    defaults = (ReplayRequest.lin_vel_x, ReplayRequest.lin_vel_y, ReplayRequest.ang_vel_z)
    vx, vy, wz = (d if v is None else v for v, d in zip(fixed, defaults, strict=True))
    request = ReplayRequest(
        checkpoint=args.checkpoint, task=args.task,
        frames=frames if args.frames is None else args.frames, seed=args.seed,
        lin_vel_x=vx, lin_vel_y=vy, ang_vel_z=wz,
        device=args.device, video=args.video, gif=args.gif,
        width=args.width, height=args.height, frozen_broadphase=args.frozen_broadphase,
        shadows=args.shadows, schedule=schedule, camera=args.camera,
    )  # fmt: skip
    # The default name comes from the file name, which may hold any character.
    name = args.name or re.sub(r"[^A-Za-z0-9._-]", "_", f"replay_{args.checkpoint.stem}")
    try:
        names.check_run_name(name)
    except ValueError as err:
        raise ReplayError(str(err)) from None
    validate(request)
    return request, name


def summary_line(run_dir: Path, record) -> str:
    """The line ``microduck replay`` prints when the replay is written."""
    summary = record.summary
    return (
        f"done_count={summary['done_count']} min_trunk_z_m={summary['min_trunk_z_m']:.4f} "
        f"mean_forward_velocity_mps={summary['mean_forward_velocity_mps']:.4f} -> {run_dir}"
    )
