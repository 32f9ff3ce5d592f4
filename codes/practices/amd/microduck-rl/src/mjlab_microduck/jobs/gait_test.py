"""The gait test: roll a checkpoint out under every fixed command, judge it, record it.

Problem it solves: a policy is called walking only if it passes this test (the rule is in
``analysis/gait.py``). One environment, built once from the task's play config, holds every
robot of the test: ``robots_per_case`` robots for every seed, mode and case (heading mode runs
every case, open-loop mode the cases without a yaw command). One reset and
``round(duration_s / step_dt)`` control steps evaluate them all at once; a seed is a block of
robots with its own start poses and its own physical randomisation (friction, masses,
armature), drawn once when the environment is built, so every checkpoint meets the same
robots. :func:`evaluate_many` loads each checkpoint's weights into the same policy network, so
a GPU evaluates every saved checkpoint of a training run in one process.

Commands are held, never resampled: the twist term's resampling time is infinite, its
standing, world and forward envs are off, and its resampling writes each env's intended command
(the env resamples at reset *before* it computes the observation the policy sees). In heading
mode, the robots of a case without a yaw command are mjlab's heading envs: after reset their
heading target is their start heading, and the command term sets their yaw-rate command every
step (``analysis.gait.HEADING_MODE``). The linear command (and every other robot's yaw rate) is
written again before every policy step, and after reset and after every step the buffer the
observation was built from is compared with the intended command of every robot still running;
a difference, or a heading env that stopped being one, raises :class:`CommandNotHeldError`.

Recorded per step, on the device and copied to the CPU once per seed: trunk position, heading
(``heading_w``), trunk velocity in the heading frame (``root_link_lin_vel_w`` rotated by minus
the heading: yaw only, not the pitched body frame), world yaw rate, upright
(``-projected_gravity_b.z``), foot contacts, ``done`` and the termination terms that fired.

Bad input fails with one :class:`GaitTestError` line before any run directory exists; a failure
after the directory was created removes it again.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
import tyro

from mjlab_microduck.analysis import gait
from mjlab_microduck.analysis.gait import GaitCase, GaitVerdict, Trajectory
from mjlab_microduck.jobs import recording, replay
from mjlab_microduck.runs import names
from mjlab_microduck.runtime import backend
from mjlab_microduck.runtime.capture import held_output, init_warp_quietly

if TYPE_CHECKING:
    from mjlab_microduck.runs.records import RunRecord

TASK_ID = "Mjlab-Velocity-Flat-MicroDuck"
ROBOTS_FILENAME = "robots.csv"
PATHS_FILENAME = "paths.csv"
VERDICT_FILENAME = "verdict.json"
PATH_EVERY = 5
"""paths.csv keeps every 5th step (10 Hz): enough for a top-view plot, 10x smaller."""
# (seeds, robots per case) of each profile in profiles.py; the device comes from the profile.
PROFILE_SIZES: dict[str, tuple[tuple[int, ...], int]] = {
    "ci": ((0, 1), 4),
    "full": ((0, 1, 2, 3, 4), 16),
}
START_TEST: dict[str, Any] = {
    "cases": ("forward_0.3", "forward_0.4"), "seeds": (0, 1, 2, 3), "robots_per_case": 256,
    "duration_s": 2.0, "modes": ("heading",),
}  # fmt: skip
"""The start test: the gait test's two fastest forward cases alone, with many robots and a short
run. Robots that fold their legs starting from the reset pose into a fast walk do so within the
first second; one gait test (80 robots per case) passes a policy that folds one start in fifty
about one time in five, 1024 robots measure how often it happens (``book.start_folds``)."""
_FIELDS = (
    "x", "y", "z", "heading", "v_forward", "v_left", "yaw_rate", "upright",
    "contact_left", "contact_right", "done", "term_mask",
)  # fmt: skip


class GaitTestError(replay.ReplayError):
    """Bad gait-test input; the message is the one line the CLI prints.

    A :class:`~mjlab_microduck.jobs.replay.ReplayError` so that replay's set-up helper treats it as
    bad input (and drops the warnings building the environment printed).
    """


class CommandNotHeldError(RuntimeError):
    """The velocity command a running robot saw differs from the one the test gave it."""


@dataclass(frozen=True)
class GaitTestRequest:
    checkpoint: Path
    """Full or slim rsl_rl checkpoint (``actor_state_dict`` inside)."""
    task: str | None = None
    """The task to evaluate in; None: the task of the training run record beside the
    checkpoint, else the default task."""
    device: str = "cpu"
    """cpu, cuda or cuda:N (ROCm torch also says cuda)."""
    seeds: tuple[int, ...] = (0, 1)
    """One rollout of every robot per seed; the rule must hold for every seed."""
    robots_per_case: int = 4
    duration_s: float = 10.0
    cases: tuple[str, ...] | None = None
    """Case names (analysis.gait.CASES); None: all of them."""
    modes: tuple[Literal["heading", "open_loop"], ...] = gait.MODES
    """heading: the verdict's mode; open_loop: yaw-rate command held at 0, measured beside it."""
    heading_stiffness: float = gait.HEADING_CONTROL_STIFFNESS
    """The heading law's gain in heading mode, rad/s per rad (mjlab's velocity tasks: 0.5)."""


@dataclass
class GaitResult:
    """One checkpoint's gait test: per-robot metrics, paths (start frame) and the verdict."""

    checkpoint: Path
    robots: pd.DataFrame
    paths: pd.DataFrame
    verdict: GaitVerdict
    command_checks: int
    """How many times the held-command check ran (reset and every step, every seed)."""
    steps: int
    step_dt: float
    num_envs: int
    rollout_seconds: float


@dataclass
class GaitRun:
    """A written gait test: its directory, its record and what it measured."""

    run_dir: Path
    record: RunRecord
    result: GaitResult


def request_for_profile(
    profile: str, checkpoint: Path | str, task: str | None = None
) -> GaitTestRequest:
    """The gait test of ``profile`` (``ci`` or ``full``): its seeds, robots and device."""
    from mjlab_microduck.runtime import profiles

    try:
        chosen = profiles.get(profile)
    except ValueError as err:
        raise GaitTestError(str(err)) from None
    seeds, robots = PROFILE_SIZES[chosen.name]
    return GaitTestRequest(
        checkpoint=Path(checkpoint), task=task, device=chosen.device, seeds=seeds,
        robots_per_case=robots,
    )  # fmt: skip


def selected_cases(request: GaitTestRequest) -> tuple[GaitCase, ...]:
    """The request's cases in table order; an unknown or repeated name is a GaitTestError."""
    if request.cases is None:
        return gait.CASES
    names = list(request.cases)
    if not names:
        raise GaitTestError("cases: give at least one case name (or none for all)")
    unknown = [n for n in names if n not in gait.CASE_BY_NAME]
    if unknown:
        raise GaitTestError(f"unknown case {unknown[0]!r}; known: {', '.join(gait.CASE_BY_NAME)}")
    if len(set(names)) != len(names):
        raise GaitTestError(f"cases: each case once ({', '.join(names)})")
    return tuple(c for c in gait.CASES if c.name in names)


def task_of_checkpoint(checkpoint: Path) -> str | None:
    """The task of the training run whose record sits beside ``checkpoint`` or in a folder above
    it (a published run keeps both in one folder; mjlab's log tree is four folders below the
    run's record); None where no training record is found."""
    from mjlab_microduck.runs import records

    for folder in list(Path(checkpoint).resolve().parents)[:6]:
        path = folder / records.RECORD_FILENAME
        if not path.is_file():
            continue
        try:
            record = records.load_record(path)
        except ValueError:
            return None
        task = record.config.get("task") if record.kind == "train" else None
        return task if isinstance(task, str) else None
    return None


def resolved(request: GaitTestRequest) -> GaitTestRequest:
    """``request`` with its task filled in (see :attr:`GaitTestRequest.task`)."""
    if request.task is not None:
        return request
    return replace(request, task=task_of_checkpoint(request.checkpoint) or TASK_ID)


def validate(request: GaitTestRequest) -> tuple[GaitCase, ...]:
    """Reject input that is bad without building the environment; returns the cases."""
    if not request.seeds:
        raise GaitTestError("seeds: give at least one seed")
    if any(not isinstance(s, int) or s < 0 for s in request.seeds):
        raise GaitTestError(f"seeds must be integers >= 0 (got {list(request.seeds)})")
    if len(set(request.seeds)) != len(request.seeds):
        raise GaitTestError(f"seeds: each seed once (got {list(request.seeds)})")
    if request.robots_per_case < 1:
        raise GaitTestError(f"robots_per_case must be at least 1 (got {request.robots_per_case})")
    if not (math.isfinite(request.duration_s) and request.duration_s > 0):
        raise GaitTestError(f"duration_s must be a positive number (got {request.duration_s})")
    if not (math.isfinite(request.heading_stiffness) and request.heading_stiffness > 0):
        raise GaitTestError(
            f"heading_stiffness must be a positive number (got {request.heading_stiffness})"
        )
    if not request.modes or len(set(request.modes)) != len(request.modes):
        raise GaitTestError(f"modes: give each of {', '.join(gait.MODES)} at most once")
    unknown_modes = [m for m in request.modes if m not in gait.MODES]
    if unknown_modes:
        raise GaitTestError(f"unknown mode {unknown_modes[0]!r}; known: {', '.join(gait.MODES)}")
    cases = selected_cases(request)
    if any(c.push_mps for c in cases) and request.duration_s <= gait.PUSH_TIME_S:
        raise GaitTestError(
            f"case push shoves at {gait.PUSH_TIME_S:g} s: duration_s must exceed it "
            f"(got {request.duration_s:g})"
        )
    try:
        backend.check_device(request.device)
    except backend.DeviceError as err:
        raise GaitTestError(str(err)) from None
    from mjlab_microduck.tasks.registry import list_tasks

    task = resolved(request).task
    if task not in list_tasks():
        raise GaitTestError(f"unknown task {task!r}; known: {', '.join(list_tasks())}")
    return cases


def _load_checkpoint(path: Path) -> dict:
    try:
        return replay.load_checkpoint(Path(path))
    except GaitTestError:
        raise
    except replay.ReplayError as err:
        raise GaitTestError(str(err)) from None


# --------------------------------------------------------------------------- the environment


@dataclass(frozen=True)
class Block:
    """``robots_per_case`` consecutive envs: one seed's robots of one case in one mode."""

    seed: int
    mode: str
    case: GaitCase


def blocks_of(request: GaitTestRequest, cases: Sequence[GaitCase]) -> tuple[Block, ...]:
    """The env layout, seed by seed, mode by mode, cases in table order."""
    return tuple(
        Block(seed, mode, case)
        for seed in request.seeds
        for mode in request.modes
        for case in gait.cases_of_mode(tuple(cases), mode)
    )


def _env_cfg(request: GaitTestRequest, blocks: Sequence[Block]):
    from mjlab.tasks.velocity.mdp import UniformVelocityCommandCfg

    from mjlab_microduck.tasks.registry import load_env_cfg

    cfg = load_env_cfg(request.task, play=True)
    twist = cfg.commands.get("twist")
    if not isinstance(twist, UniformVelocityCommandCfg):
        raise GaitTestError(f"task {request.task} has no 'twist' velocity command")
    cfg.scene.num_envs = len(blocks) * request.robots_per_case
    cfg.seed = request.seeds[0]
    twist.resampling_time_range = (1.0e9, 1.0e9)
    # The heading law is on for every env; only the envs flagged as heading envs use it.
    twist.heading_command = True
    twist.heading_control_stiffness = request.heading_stiffness
    twist.ranges.heading = (-math.pi, math.pi)
    twist.rel_standing_envs = twist.rel_heading_envs = twist.rel_forward_envs = 0.0
    twist.rel_world_envs = twist.init_velocity_prob = 0.0
    return cfg


class _HeldCommand:
    """Gives every env its case's command and checks that it stays there.

    ``steered`` marks the heading envs: their yaw-rate command is mjlab's heading law, so only
    their linear command is written and checked (and that they are still heading envs).
    """

    def __init__(self, term, target, steered=None):
        self.term, self.target, self.checks = term, target, 0
        self.steered = steered if steered is not None else target.new_zeros(len(target)).bool()
        # The env resamples a command at reset, then computes the observation the policy sees;
        # replacing the term's resampling makes that first observation carry the test command.
        term._resample_command = self._resample

    def _resample(self, env_ids) -> None:
        term = self.term
        term.vel_command_b[env_ids] = self.target[env_ids]
        # Heading envs are switched on by steer_to_current_heading(), once the reset pose is in.
        for flag in (term.is_heading_env, term.is_standing_env, term.is_world_env,
                     term.is_forward_env):  # fmt: skip
            flag[env_ids] = False

    def steer_to_current_heading(self) -> None:
        """Make the steered envs heading envs, each aiming at the heading it has now."""
        term = self.term
        term.heading_target[self.steered] = term.robot.data.heading_w[self.steered]
        term.is_heading_env[:] = self.steered

    def write(self) -> None:
        command = self.term.vel_command_b
        command[:, :2] = self.target[:, :2]
        free = ~self.steered
        command[free, 2] = self.target[free, 2]

    def check(self, running) -> None:
        self.checks += 1
        command = self.term.command
        wrong = (command[:, :2] != self.target[:, :2]).any(dim=1)
        wrong |= ~self.steered & (command[:, 2] != self.target[:, 2])
        wrong |= self.steered & ~self.term.is_heading_env
        wrong &= running
        if bool(wrong.any()):
            env = int(wrong.nonzero()[0, 0])
            what = "a heading env" if bool(self.steered[env]) else "yaw-rate commanded"
            raise CommandNotHeldError(
                f"env {env} ({what}): command {command[env].tolist()} is not the test's "
                f"{self.target[env].tolist()}"
            )


def _foot_columns(sensor) -> list[int]:
    """Columns of (left, right) in the contact sensor's ``found``; the task lists left first."""
    names = [s.primary_name for s in getattr(sensor, "_slots", ()) if s.field_name == "found"]
    if len(names) != 2:
        return [0, 1]
    return [next(i for i, n in enumerate(names) if side in n) for side in ("left", "right")]


class GaitEvaluator:
    """The test's environment and policy network, built once and reused for many checkpoints.

    Use as a context manager (the environment is closed on exit). ``evaluate(path)`` loads that
    checkpoint's weights and runs every seed of the request.
    """

    def __init__(self, request: GaitTestRequest, first_checkpoint: dict | None = None):
        import torch
        from mjlab.envs import ManagerBasedRlEnv
        from mjlab.rl import MjlabOnPolicyRunner, RslRlVecEnvWrapper

        from mjlab_microduck.tasks.registry import load_rl_cfg, load_runner_cls

        request = resolved(request)
        self.request = request
        self.cases = validate(request)
        self.blocks = blocks_of(request, self.cases)
        n = request.robots_per_case
        cfg = _env_cfg(request, self.blocks)
        # Set-up warnings (stderr) are passed on after a good set-up, dropped when the input was
        # bad; mjlab's manager tables and rsl_rl's network dump (stdout) are never shown, nor is
        # Warp's note that this machine has no CUDA driver.
        init_warp_quietly()
        with held_output((1,)), held_output((2,), echo=True) as setup_output:
            self.env = ManagerBasedRlEnv(cfg=cfg, device=request.device)
            try:
                self.wrapped = RslRlVecEnvWrapper(self.env)
                runner_cls = load_runner_cls(request.task) or MjlabOnPolicyRunner
                runner = runner_cls(
                    self.wrapped, asdict(load_rl_cfg(request.task)), device=request.device
                )
                self.policy = runner.get_inference_policy(device=request.device)
                if first_checkpoint is not None:
                    self.load(first_checkpoint, request.checkpoint)
                self._bind(torch, n)
            except replay.ReplayError:
                setup_output.discard()
                self.env.close()
                raise
            except BaseException:
                self.env.close()
                raise
        self.steps = max(1, round(request.duration_s / self.env.step_dt))
        self.push_step = round(gait.PUSH_TIME_S / self.env.step_dt)

    def _bind(self, torch, n: int) -> None:
        """Tensors and handles the rollout reads every step, on the env's device."""
        device = self.env.device
        cases = [b.case for b in self.blocks for _ in range(n)]
        commands = [(c.lin_vel_x, c.lin_vel_y, c.ang_vel_z) for c in cases]
        target = torch.tensor(commands, dtype=torch.float32, device=device)
        steered = [gait.steers_heading(b.case, b.mode) for b in self.blocks for _ in range(n)]
        steered = torch.tensor(steered, dtype=torch.bool, device=device)
        self.held = _HeldCommand(self.env.command_manager.get_term("twist"), target, steered)
        self.robot = self.env.scene["robot"]
        self.contacts = self.env.scene["feet_ground_contact"]
        self.feet = _foot_columns(self.contacts)
        self.term_names = tuple(self.env.termination_manager.active_terms)
        self.term_bits = torch.tensor([2.0**i for i in range(len(self.term_names))], device=device)
        shove = [b.case.push_mps * gait.push_sign(r) for b in self.blocks for r in range(n)]
        self.shove = torch.tensor(shove, dtype=torch.float32, device=device)

    def __enter__(self) -> GaitEvaluator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.env.close()

    def load(self, checkpoint: dict, path: Path) -> None:
        """Put a checkpoint's policy weights into the network, or raise GaitTestError."""
        try:
            self.policy.load_state_dict(checkpoint["actor_state_dict"], strict=True)
        except RuntimeError as err:
            lines = str(err).strip().splitlines()
            detail = next((ln.strip() for ln in lines if "size mismatch" in ln), lines[-1])
            raise GaitTestError(
                f"checkpoint {path} does not fit task {self.request.task}: {detail}"
            ) from None

    def evaluate(self, path: Path, progress: bool = True, checkpoint: dict | None = None):
        """Every seed and mode of the request with ``path``'s weights, in one rollout; returns a
        :class:`GaitResult`."""
        from mjlab_microduck.runtime.progress import progress_bar

        self.load(checkpoint if checkpoint is not None else _load_checkpoint(path), path)
        started = time.monotonic()
        checks = self.held.checks
        with progress_bar(self.steps, f"gait test {Path(path).name}", enabled=progress) as bar:
            samples = self._rollout(bar)
        robots, paths = self._measure(samples)
        return GaitResult(
            checkpoint=Path(path), robots=robots, paths=paths, verdict=gait.verdict(robots),
            command_checks=self.held.checks - checks, steps=self.steps,
            step_dt=float(self.env.step_dt), num_envs=self.env.num_envs,
            rollout_seconds=round(time.monotonic() - started, 3),
        )  # fmt: skip

    def _rollout(self, bar) -> np.ndarray:
        """Reset every robot, then ``steps`` policy steps; samples ``(steps + 1, envs, fields)``.

        The random state is reseeded with the first seed first, so a checkpoint's test does not
        depend on what ran before it in this process.
        """
        import torch
        from mjlab.utils import random as random_utils

        random_utils.seed_rng(self.request.seeds[0])  # torch, numpy, Warp and Python's RNGs
        obs, _ = self.wrapped.reset()
        self.held.steer_to_current_heading()
        device, envs = self.env.device, self.env.num_envs
        samples = torch.zeros(self.steps + 1, envs, len(_FIELDS), device=device)
        stopped = torch.zeros(envs, dtype=torch.bool, device=device)
        self.held.check(~stopped)
        self._sample(samples, 0, stopped)
        for step in range(1, self.steps + 1):
            if step - 1 == self.push_step:
                self._push(~stopped)
            self.held.write()
            with torch.inference_mode():
                actions = self.policy(obs)
            obs, _, dones, _ = self.wrapped.step(actions)
            done = dones.bool()
            self._sample(samples, step, done)
            stopped |= done
            self.held.check(~stopped)
            bar.update()
        return samples.cpu().numpy()

    def _sample(self, samples, row: int, done) -> None:
        import torch

        data = self.robot.data
        pos, heading, vel = data.root_link_pos_w, data.heading_w, data.root_link_lin_vel_w
        cos, sin = torch.cos(heading), torch.sin(heading)
        found = self.contacts.data.found
        manager = self.env.termination_manager
        fired = torch.stack([manager.get_term(n) for n in self.term_names], dim=-1).float()
        samples[row] = torch.stack([
            pos[:, 0], pos[:, 1], pos[:, 2], heading,
            cos * vel[:, 0] + sin * vel[:, 1], -sin * vel[:, 0] + cos * vel[:, 1],
            data.root_link_ang_vel_w[:, 2], -data.projected_gravity_b[:, 2],
            (found[:, self.feet[0]] > 0).float(), (found[:, self.feet[1]] > 0).float(),
            done.float(), (fired @ self.term_bits) * done.float(),
        ], dim=-1)  # fmt: skip

    def _push(self, running) -> None:
        """The push case's shove: a sideways velocity change in each trunk's heading frame."""
        import torch

        ids = torch.nonzero((self.shove != 0) & running).flatten()
        if len(ids) == 0:
            return
        vel = self.robot.data.root_link_vel_w[ids].clone()
        heading = self.robot.data.heading_w[ids]
        vel[:, 0] -= torch.sin(heading) * self.shove[ids]
        vel[:, 1] += torch.cos(heading) * self.shove[ids]
        self.robot.write_root_link_velocity_to_sim(vel, env_ids=ids)

    def _measure(self, samples: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Per-robot metrics and paths of every block; each row says its seed and mode."""
        n = self.request.robots_per_case
        robots, paths = [], []
        for i, block in enumerate(self.blocks):
            rows = samples[:, i * n : (i + 1) * n].astype(np.float64)
            fields = {name: rows[..., k] for k, name in enumerate(_FIELDS)}
            fields["done"] = fields["done"] > 0.5
            traj = Trajectory(dt=float(self.env.step_dt), term_names=self.term_names, **fields)
            metrics = gait.robot_metrics(traj, block.case)
            path = gait.path_in_start_frame(traj, every=PATH_EVERY)
            path.insert(0, "case", block.case.name)
            for frame in (metrics, path):
                frame.insert(0, "mode", block.mode)
                frame.insert(0, "seed", block.seed)
            robots.append(metrics)
            paths.append(path)
        return pd.concat(robots, ignore_index=True), pd.concat(paths, ignore_index=True)


def evaluate_many(
    checkpoints: Sequence[Path], request: GaitTestRequest, progress: bool = True
) -> list[GaitResult]:
    """The gait test of every checkpoint, in one environment (``request.checkpoint`` unused).

    Every file is read and fitted to the network before the first rollout, so a bad checkpoint
    at the end of the list fails in seconds, not after the others ran.
    """
    if not checkpoints:
        raise GaitTestError("no checkpoints to evaluate")
    request = resolved(replace(request, checkpoint=Path(checkpoints[0])))
    validate(request)
    loaded = [_load_checkpoint(Path(p)) for p in checkpoints]
    with GaitEvaluator(request, loaded[0]) as ev:
        for data, path in zip(loaded[1:], checkpoints[1:], strict=True):
            ev.load(data, Path(path))
        return [
            ev.evaluate(Path(path), progress=progress, checkpoint=data)
            for data, path in zip(loaded, checkpoints, strict=True)
        ]


def run_one(request: GaitTestRequest, progress: bool = True) -> GaitResult:
    """The gait test of ``request.checkpoint``."""
    return evaluate_many([Path(request.checkpoint)], request, progress=progress)[0]


# --------------------------------------------------------------------------- the record


def as_start_test(request: GaitTestRequest) -> GaitTestRequest:
    """``request`` as a start test (:data:`START_TEST`'s cases, seeds, robots, duration and
    mode); its checkpoint, task, device and heading gain kept."""
    return replace(request, **START_TEST)


def default_name(checkpoint: Path, test: Literal["gait", "start"] = "gait") -> str:
    """``gait_<checkpoint stem>`` (``start_...`` for a start test), any character a run name
    may not hold replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{test}_{Path(checkpoint).stem}")


def run(
    request: GaitTestRequest,
    out_root: Path = Path("logs/gait_tests"),
    name: str | None = None,
    progress: bool = True,
) -> GaitRun:
    """Gait-test ``request.checkpoint`` and write a new run directory under ``out_root``."""
    from mjlab_microduck.runs import records

    name = default_name(request.checkpoint) if name is None else name
    try:
        names.check_run_name(name)
    except ValueError as err:
        raise GaitTestError(str(err)) from None
    started_iso, started = records.utc_now_iso(), time.monotonic()
    result = run_one(request, progress=progress)
    return write_run(result, request, out_root, name, started_iso, started)


def write_run(
    result: GaitResult,
    request: GaitTestRequest,
    out_root: Path,
    name: str,
    started_iso: str | None = None,
    started: float | None = None,
) -> GaitRun:
    """``robots.csv``, ``paths.csv``, ``verdict.json`` and ``record.json`` in a new directory.

    ``request`` describes the rollout (its checkpoint is taken from ``result``); a failure while
    writing removes the directory again.
    """
    from mjlab_microduck.runs import records

    started_iso = started_iso or records.utc_now_iso()
    started = time.monotonic() - result.rollout_seconds if started is None else started
    run_dir = records.new_run_dir(out_root, name)
    try:
        record = _write_files(run_dir, result, replace(request, checkpoint=result.checkpoint),
                              started_iso, started)  # fmt: skip
    except BaseException:
        # A run directory holds a complete gait test or does not exist.
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return GaitRun(run_dir=run_dir, record=record, result=result)


def load_verdict(run_dir: str | Path) -> dict:
    """A written gait test's ``verdict.json``: pass, failure lines, per-case table, drift."""
    return json.loads((Path(run_dir) / VERDICT_FILENAME).read_text(encoding="utf-8"))


def _number(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def summary_of(result: GaitResult) -> dict:
    """The record's summary: the verdict, the sizes and a few headline numbers."""
    table = result.verdict.table
    robots = gait.verdict_rows(result.robots)
    drift = gait.open_loop_drift(result.robots)
    cases = {name: gait.case_of_rows(g) for name, g in robots.groupby("case", sort=False)}
    kind = robots["case"].map(lambda c: cases[c].kind)
    per_seed = gait.case_summary(robots)
    linear = per_seed[per_seed["kind"] == "linear"]
    zero_yaw = robots[robots["ang_vel_z"] == 0.0]
    turning = per_seed[per_seed["kind"].isin(["turn", "walk_turn"])]
    return {
        "passed": result.verdict.passed,
        "failed_conditions": len(result.verdict.failures),
        "failed_cases": int((~table["passed"]).sum()),
        "cases": len(cases),
        "seeds": int(robots["seed"].nunique()),
        "robots_per_case": int(robots.groupby(["case", "seed"]).size().max()),
        "duration_s": round(result.steps * result.step_dt, 6),
        "steps": result.steps,
        "num_envs": result.num_envs,
        "command_checks": result.command_checks,
        "worst_progress_ratio": _number(linear["mean_progress_ratio"].min()),
        "worst_robot_progress_ratio": _number(robots.loc[kind == "linear", "progress_ratio"].min()),
        "max_abs_heading_change_rad": _number(zero_yaw["heading_change_rad"].abs().max()),
        "worst_yaw_ratio": _number(turning["mean_yaw_ratio"].min()),
        "max_stand_displacement_m": _number(robots.loc[kind == "stand", "displacement_m"].max()),
        "terminations": int(robots["terminated"].sum()),
        "modes": ",".join(dict.fromkeys(result.robots.get("mode", pd.Series(["open_loop"])))),
        "open_loop_max_median_heading_change_rad": _number(
            drift["median_abs_heading_change_rad"].max() if len(drift) else math.nan
        ),
        "open_loop_max_heading_change_rad": _number(
            drift["max_abs_heading_change_rad"].max() if len(drift) else math.nan
        ),
        "open_loop_within_limits": bool(
            len(drift) and drift["median_within"].all() and drift["worst_within"].all()
        ),
        "rollout_seconds": result.rollout_seconds,
    }


def _write_files(
    run_dir: Path, result: GaitResult, request: GaitTestRequest, started_iso: str, started: float
):
    from mjlab_microduck.runs import records

    records.atomic_write_text(run_dir / ROBOTS_FILENAME, result.robots.to_csv(index=False))
    records.atomic_write_text(run_dir / PATHS_FILENAME, result.paths.to_csv(index=False))
    verdict = {
        "passed": result.verdict.passed,
        "failures": result.verdict.failures,
        "thresholds": gait.THRESHOLDS,
        "push_time_s": gait.PUSH_TIME_S,
        "mode": gait.HEADING_MODE,
        "heading_control_stiffness": request.heading_stiffness,
        # to_json writes NaN as null: the file stays strict JSON.
        "table": json.loads(result.verdict.table.to_json(orient="records")),
        "open_loop_drift": {
            "limits": {
                "median_abs_heading_change_rad": gait.OPEN_LOOP_MAX_MEDIAN_HEADING_CHANGE_RAD,
                "max_abs_heading_change_rad": gait.OPEN_LOOP_MAX_WORST_HEADING_CHANGE_RAD,
            },
            "table": json.loads(gait.open_loop_drift(result.robots).to_json(orient="records")),
        },
    }
    text = json.dumps(verdict, indent=2, ensure_ascii=False) + "\n"
    records.atomic_write_text(run_dir / VERDICT_FILENAME, text)
    kinds = {ROBOTS_FILENAME: "robots", PATHS_FILENAME: "paths", VERDICT_FILENAME: "verdict"}
    config = recording.checkpoint_config(request)
    config["seeds"] = list(request.seeds)
    config["cases"] = sorted(set(result.robots["case"]), key=list(gait.CASE_BY_NAME).index)
    config["step_dt"] = result.step_dt
    config["thresholds"] = gait.THRESHOLDS
    config["modes"] = list(request.modes)
    return recording.write_finished_record(
        run_dir, "gait_test", config, request.device, started_iso, started, summary_of(result),
        [records.artifact(run_dir / f, run_dir, k) for f, k in kinds.items()],
        notes=None if result.verdict.passed else "\n".join(result.verdict.failures),
    )  # fmt: skip


# --------------------------------------------------------------------------- CLI


@dataclass(frozen=True)
class GaitTestCli:
    """Gait-test a checkpoint: exit 0 if it walks, 1 if it fails the test, 2 on bad input."""

    request: tyro.conf.OmitArgPrefixes[GaitTestRequest]
    out: Path = Path("logs/gait_tests")
    name: str | None = None
    """Run name (default: gait_<checkpoint stem>)."""
    profile: Literal["ci", "full"] | None = None
    """Take seeds, robots per case and device from this profile (over those flags)."""
    start_test: bool = False
    """Run the start test instead: the two fastest forward cases, 4 seeds x 256 robots, 2 s,
    heading mode (over the size flags and the profile's sizes; default name start_<stem>)."""


def run_command(args: GaitTestCli) -> GaitRun:
    """What ``microduck gait-test`` does with its arguments: the profile's sizes over the flags,
    the start test's over both, then :func:`run` (which refuses bad input with
    :class:`GaitTestError` before writing)."""
    request = resolved(args.request)
    if args.profile is not None:
        sized = request_for_profile(args.profile, request.checkpoint, request.task)
        request = replace(request, seeds=sized.seeds, robots_per_case=sized.robots_per_case,
                          device=sized.device)  # fmt: skip
    name = args.name
    if args.start_test:
        request = as_start_test(request)
        name = name or default_name(request.checkpoint, "start")
    return run(request, args.out, name)


def print_verdict(result: GaitResult, run_dir: Path | None = None) -> None:
    """The per-case verdict as a rich table, then the failure lines."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"gait test of {result.checkpoint.name}",
        caption="progress (mean/min), speed and yaw: fractions of the command, worst seed",
        box=box.SIMPLE_HEAD,
    )
    table.add_column("case", no_wrap=True)
    for column in ("result", "progress", "speed", "yaw", "|Δhead|", "moved m", "ended"):
        table.add_column(column, justify="right", no_wrap=True)

    def fmt(value, spec=".2f"):
        return "" if value is None or not math.isfinite(value) else format(value, spec)

    for row in result.verdict.table.itertuples():
        table.add_row(
            row.case, "[green]pass[/]" if row.passed else "[red]FAIL[/]",
            f"{fmt(row.mean_progress_ratio)}/{fmt(row.min_progress_ratio)}".strip("/"),
            fmt(row.heading_speed_ratio), fmt(row.mean_yaw_ratio),
            fmt(row.max_abs_heading_change_rad), fmt(row.max_displacement_m, ".3f"),
            str(row.terminations),
        )  # fmt: skip
    # Narrower than this, rich cuts the numbers short; a wider line beats a truncated value.
    console = Console()
    Console(width=max(console.width, 96)).print(table)
    for line in result.verdict.failures:
        print(f"  {line}")
    where = f" -> {run_dir}" if run_dir else ""
    verdict = "PASSED" if result.verdict.passed else "FAILED"
    print(f"{verdict}: {len(result.verdict.failures)} failed condition(s){where}")
