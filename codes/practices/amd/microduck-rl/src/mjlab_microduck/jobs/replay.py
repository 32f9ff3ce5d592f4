"""Replay a checkpoint in the task's own play environment: metrics, MP4 and a run record.

A reward curve says how well a policy scored on the training distribution; the question the
book asks is whether it *walks*. The replay puts the policy back in the real environment (its
actuators, delays, observations and terminations), one env, a fixed seed and a fixed command,
for N frames (default 200 = 4 s at 50 Hz), and measures what happened: terminations, the lowest
trunk height, the lowest "upright" value (world z of the trunk's z axis), the fraction of frames
that look fallen, forward displacement and velocity, and the velocity-tracking error.
Frames are rendered offscreen (EGL on a GPU, OSMesa on a CPU) into an H.264 MP4.

Checkpoints may be full rsl_rl files or the slim published form (policy weights, observation
normaliser, iteration). Bad input (a missing, unreadable or ill-fitting checkpoint, frames < 1,
an unknown task or device, a bad run name) fails with one :class:`ReplayError` line before the
run directory exists; a failure after it was created removes it again, so a run directory
always holds a complete replay (trajectory, video, record) or does not exist.

Shadows: MuJoCo renders shadows with an extra depth pass per light. Under OSMesa (software
rendering on a CPU) that triples the time per frame, so ``shadows=None`` (the default) turns
them off there and keeps them on with EGL.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import sys
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mjlab_microduck.analysis.acceptance import FELL_TRUNK_Z_M, FELL_UPRIGHT
from mjlab_microduck.runs import names
from mjlab_microduck.runtime import backend
from mjlab_microduck.runtime.capture import held_output

TRAJECTORY_FILENAME = "trajectory.csv"
VIDEO_FILENAME = "replay.mp4"
GIF_FILENAME = "replay.gif"


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
    trajectory: pd.DataFrame, command_xy: tuple[float, float], dt: float
) -> ReplayMetrics:
    """Metrics from a per-frame trajectory.

    Columns: ``x``, ``y``, ``z`` (trunk position, world), ``yaw0`` (heading at the first frame),
    ``vx_b``, ``vy_b`` (trunk velocity in its own frame), ``upright`` and ``done``. Forward
    displacement is measured along the first frame's heading, so a robot spawned facing any way
    is judged the same; the velocity error is the norm of the body-frame xy error.
    """
    if trajectory.empty:
        raise ReplayError("replay produced no frames")
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


def validate(request: ReplayRequest) -> None:
    """Reject bad input that can be seen without building the environment (one line each).

    A checkpoint that does not fit the task is found only when the policy is built, inside
    :func:`simulate`; that, too, happens before anything is written.
    """
    if request.frames < 1:
        raise ReplayError(f"frames must be at least 1 (got {request.frames})")
    if request.video and (request.width < 16 or request.height < 16):
        raise ReplayError(f"video size {request.width}x{request.height}: at least 16x16")
    try:
        backend.check_device(request.device)
    except backend.DeviceError as err:
        raise ReplayError(str(err)) from None


def _fixed_command_cfg(request: ReplayRequest):
    from mjlab.tasks.registry import list_tasks, load_env_cfg

    if request.task not in list_tasks():
        raise ReplayError(f"unknown task {request.task!r}; known: {', '.join(list_tasks())}")
    cfg = load_env_cfg(request.task, play=True)
    cfg.scene.num_envs = 1
    cfg.seed = request.seed
    twist = cfg.commands["twist"]
    twist.ranges.lin_vel_x = (request.lin_vel_x, request.lin_vel_x)
    twist.ranges.lin_vel_y = (request.lin_vel_y, request.lin_vel_y)
    twist.ranges.ang_vel_z = (request.ang_vel_z, request.ang_vel_z)
    twist.rel_standing_envs = 0.0
    twist.rel_forward_envs = 0.0
    twist.rel_heading_envs = 0.0
    twist.heading_command = False
    twist.resampling_time_range = (1.0e9, 1.0e9)
    cfg.viewer.width = request.width
    cfg.viewer.height = request.height
    cfg.viewer.enable_shadows = shadows_enabled(request)
    return cfg


def _policy(env, task: str, checkpoint: dict, checkpoint_path: Path, device: str):
    from mjlab.rl import MjlabOnPolicyRunner
    from mjlab.tasks.registry import load_rl_cfg, load_runner_cls

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


def simulate(request: ReplayRequest, progress: bool = True):
    """Run the replay; returns (trajectory frame, rgb frames, control dt)."""
    import torch
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.rl import RslRlVecEnvWrapper
    from tqdm.auto import tqdm

    validate(request)
    checkpoint = load_checkpoint(Path(request.checkpoint))
    cfg = _fixed_command_cfg(request)
    torch.manual_seed(request.seed)
    from mjlab_microduck.compat import faults

    fault = faults.frozen_broadphase() if request.frozen_broadphase else nullcontext()
    with fault:
        # What mjlab and Warp print while the env is built is passed on after a good set-up and
        # dropped when the checkpoint does not fit, so bad input reads as one line.
        with held_output((2,), echo=True) as setup_output:
            env = ManagerBasedRlEnv(
                cfg=cfg, device=request.device, render_mode="rgb_array" if request.video else None
            )
            try:
                wrapped = RslRlVecEnvWrapper(env)
                policy = _policy(
                    wrapped, request.task, checkpoint, Path(request.checkpoint), request.device
                )
            except ReplayError:
                setup_output.discard()
                env.close()
                raise
            except BaseException:
                env.close()
                raise
        try:
            rows, images = [], []
            obs = wrapped.get_observations()
            robot = env.scene["robot"]
            yaw0 = None
            for _ in tqdm(range(request.frames), desc="replay frames", disable=not progress):
                with torch.inference_mode():
                    actions = policy(obs)
                obs, _, dones, _ = wrapped.step(actions)
                data = robot.data
                quat = data.root_link_quat_w[0].cpu().numpy()  # w, x, y, z
                yaw = math.atan2(
                    2 * (quat[0] * quat[3] + quat[1] * quat[2]),
                    1 - 2 * (quat[2] ** 2 + quat[3] ** 2),
                )
                yaw0 = yaw if yaw0 is None else yaw0
                pos = data.root_link_pos_w[0].cpu().numpy()
                vel_b = data.root_link_lin_vel_b[0].cpu().numpy()
                # World z of the trunk's z axis: 1 upright, 0 on its side.
                upright = 1.0 - 2.0 * (quat[1] ** 2 + quat[2] ** 2)
                rows.append(
                    {
                        "x": pos[0], "y": pos[1], "z": pos[2], "yaw": yaw, "yaw0": yaw0,
                        "vx_b": vel_b[0], "vy_b": vel_b[1], "upright": upright,
                        "done": bool(dones[0].item()),
                    }
                )  # fmt: skip
                if request.video:
                    images.append(env.render())
            dt = float(env.step_dt)
        finally:
            env.close()
    return pd.DataFrame(rows), images, dt


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


def run(request: ReplayRequest, out_root: Path, name: str, progress: bool = True):
    """Replay, then write trajectory CSV, MP4 (and GIF) and record into a new run directory.

    Returns ``(run_dir, record)``. Bad input raises :class:`ReplayError` before the directory
    is created.
    """
    from mjlab_microduck.runs import records

    try:  # records.new_run_dir's rule, checked before the replay runs instead of after it
        names.check_run_name(name)
    except ValueError as err:
        raise ReplayError(str(err)) from None
    started_iso, started = records.utc_now_iso(), time.monotonic()
    trajectory, images, dt = simulate(request, progress=progress)
    metrics = compute_metrics(trajectory, (request.lin_vel_x, request.lin_vel_y), dt)
    run_dir = records.new_run_dir(out_root, name)
    try:
        return run_dir, _write_run(
            run_dir, request, trajectory, images, dt, metrics, started_iso, started
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
    metrics: ReplayMetrics,
    started_iso: str,
    started: float,
):
    from mjlab_microduck.runs import records
    from mjlab_microduck.runtime import provenance

    records.atomic_write_text(run_dir / TRAJECTORY_FILENAME, trajectory.to_csv(index_label="frame"))
    artifacts = [records.artifact(run_dir / TRAJECTORY_FILENAME, run_dir, "trajectory")]
    fps = round(1.0 / dt)
    if request.video:
        write_mp4(run_dir / VIDEO_FILENAME, images, fps)
        artifacts.append(records.artifact(run_dir / VIDEO_FILENAME, run_dir, "video"))
        if request.gif:
            write_gif(run_dir / GIF_FILENAME, images, fps)
            artifacts.append(records.artifact(run_dir / GIF_FILENAME, run_dir, "video"))
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(request).items()}
    # Which weights were replayed, whatever the file is called or wherever it was copied.
    config["checkpoint_sha256"] = records.sha256_file(request.checkpoint)
    config["shadows"] = shadows_enabled(request)
    command = [Path(sys.argv[0]).name, *sys.argv[1:]]
    record = records.RunRecord(
        run_id=run_dir.name,
        kind="replay",
        status="ok",
        command=command,
        config=config,
        provenance=provenance.collect(command=command, device=request.device),
        started_at=started_iso,
        finished_at=records.utc_now_iso(),
        wall_seconds=round(time.monotonic() - started, 3),
        summary=asdict(metrics),
        artifacts=artifacts,
    )
    records.write_record(record, run_dir)
    return record


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="microduck-replay", description="Replay a checkpoint: metrics, MP4 and a run record."
    )
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--task", default=ReplayRequest.task)
    parser.add_argument("--frames", type=int, default=200)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--lin-vel-x", type=float, default=0.15)
    parser.add_argument("--lin-vel-y", type=float, default=0.0)
    parser.add_argument("--ang-vel-z", type=float, default=0.0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-video", action="store_true")
    parser.add_argument("--gif", action="store_true", help="also write a GIF")
    parser.add_argument("--width", type=int, default=ReplayRequest.width)
    parser.add_argument("--height", type=int, default=ReplayRequest.height)
    parser.add_argument(
        "--shadows", action=argparse.BooleanOptionalAction, default=None,
        help="render shadows (default: on with EGL, off with OSMesa)",
    )  # fmt: skip
    parser.add_argument("--frozen-broadphase", action="store_true", help="chapter 7 fault")
    parser.add_argument("--out", type=Path, default=Path("logs/replays"))
    parser.add_argument("--name", default=None, help="run name (default: checkpoint stem)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)

    request = ReplayRequest(
        checkpoint=args.checkpoint, task=args.task, frames=args.frames, seed=args.seed,
        lin_vel_x=args.lin_vel_x, lin_vel_y=args.lin_vel_y, ang_vel_z=args.ang_vel_z,
        device=args.device, video=not args.no_video, gif=args.gif,
        width=args.width, height=args.height, frozen_broadphase=args.frozen_broadphase,
        shadows=args.shadows,
    )  # fmt: skip
    # The default name comes from the file name, which may hold any character.
    name = args.name or re.sub(r"[^A-Za-z0-9._-]", "_", f"replay_{args.checkpoint.stem}")
    try:
        run_dir, record = run(request, args.out, name)
    except ReplayError as err:
        print(f"microduck-replay: {err}", file=sys.stderr)
        return 2
    summary = record.summary
    print(
        f"done_count={summary['done_count']} min_trunk_z_m={summary['min_trunk_z_m']:.4f} "
        f"mean_forward_velocity_mps={summary['mean_forward_velocity_mps']:.4f} -> {run_dir}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
