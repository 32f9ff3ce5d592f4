"""Run-size profiles: one place that says how big every run in the book is.

Problem it solves: the same notebooks must run in two very different places. On a GPU the
book reproduces the full recipe (64 and 256 env smoke runs, 256 envs x 500 iterations, a
resume to 1500 PPO updates); on a 2-core CPU CI machine the same code paths must run in
minutes. Every notebook and script asks :func:`current` for its sizes instead of hard-coding
numbers, so "what was run" is always one of two named, documented profiles.

Selection: ``MICRODUCK_PROFILE=ci|full`` wins; without it the profile is ``full`` when torch
sees a GPU (``torch.cuda.is_available()`` is also true on ROCm builds of torch) and ``ci``
otherwise. Any other value is an error, never a silent fallback.

No-op cases: nothing here touches a device or starts work; it only describes sizes.
"""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

PROFILE_ENV_VAR = "MICRODUCK_PROFILE"

# Iterations of the published full run that chapter 6 replays: the end of stage one (499), the
# save points of the resumed stage and its last update (1498). rsl_rl names a checkpoint after
# the iteration index, and a resume counts *additional* iterations, so 500 + 1000 updates end
# at model_1498.pt.
PUBLISHED_REPLAY_CHECKPOINTS: tuple[int, ...] = (499, 750, 1000, 1250, 1498)


@dataclass(frozen=True)
class Profile:
    """Sizes and device of one profile.

    Attributes:
        name: ``"ci"`` or ``"full"``.
        device: torch/mjlab device string, ``"cpu"`` or ``"cuda:0"`` (ROCm torch also says cuda).
        gpu_ids: value for mjlab's ``--gpu-ids``; ``None`` means run on the CPU.
        smoke_sizes: ``(num_envs, iterations)`` of each smoke run, in order.
        main_envs: parallel environments of the main (from scratch) run.
        main_iterations: PPO updates of the main run.
        main_save_interval: checkpoint every this many iterations in the main run.
        resume_iterations: *additional* PPO updates when resuming from the main run's last
            checkpoint (rsl_rl counts a resume this way).
        resume_save_interval: checkpoint interval of the resumed run.
        replay_frames: frames per checkpoint replay (200 frames = 4 s at 50 Hz control).
        replay_checkpoints: iterations of the published run whose checkpoints are replayed.
            Replaying a slim published checkpoint is cheap even on a CPU, so both profiles use
            the same list; :attr:`main_last_iteration` and :attr:`resume_last_iteration` name
            the checkpoints of a run made with this profile.
        seed: environment and agent seed of every run.
    """

    name: str
    device: str
    gpu_ids: tuple[int, ...] | None
    smoke_sizes: tuple[tuple[int, int], ...]
    main_envs: int
    main_iterations: int
    main_save_interval: int
    resume_iterations: int
    resume_save_interval: int
    replay_frames: int
    replay_checkpoints: tuple[int, ...]
    seed: int = 42

    @property
    def smoke_envs(self) -> int:
        """Environments of the first (reference) smoke run."""
        return self.smoke_sizes[0][0]

    @property
    def smoke_iterations(self) -> int:
        """Iterations of the first (reference) smoke run."""
        return self.smoke_sizes[0][1]

    @property
    def main_last_iteration(self) -> int:
        """Index of the main run's last checkpoint (``model_<n>.pt``)."""
        return self.main_iterations - 1

    @property
    def resume_last_iteration(self) -> int:
        """Index of the resumed run's last checkpoint.

        rsl_rl restarts the numbering *at* the loaded iteration: resuming model_499 for 1000
        iterations runs 499..1498, so the last file is model_1498.pt.
        """
        return self.main_last_iteration + self.resume_iterations - 1

    @property
    def gpu_ids_arg(self) -> list[str]:
        """mjlab CLI arguments selecting this profile's device (``--gpu-ids None`` = CPU)."""
        if self.gpu_ids is None:
            return ["--gpu-ids", "None"]
        return ["--gpu-ids", *(str(i) for i in self.gpu_ids)]


FULL = Profile(
    name="full",
    device="cuda:0",
    gpu_ids=(0,),
    smoke_sizes=((64, 5), (256, 5)),
    main_envs=256,
    main_iterations=500,
    main_save_interval=100,
    resume_iterations=1000,
    resume_save_interval=250,
    replay_frames=200,
    replay_checkpoints=PUBLISHED_REPLAY_CHECKPOINTS,
)

# Small enough that the whole CI book build (every chapter executed on 2 CPU cores) stays far
# inside its time budget, large enough that every code path (save, resume, replay) runs.
CI = Profile(
    name="ci",
    device="cpu",
    gpu_ids=None,
    smoke_sizes=((16, 3),),
    main_envs=16,
    main_iterations=3,
    main_save_interval=1,
    resume_iterations=2,
    resume_save_interval=1,
    replay_frames=200,
    replay_checkpoints=PUBLISHED_REPLAY_CHECKPOINTS,
)

PROFILES: dict[str, Profile] = {p.name: p for p in (CI, FULL)}


def _torch_sees_gpu() -> bool:
    try:
        import torch
    except ImportError:  # a bare tooling environment: no torch, so certainly no GPU run
        return False
    return bool(torch.cuda.is_available())


def get(name: str) -> Profile:
    """Return the profile called ``name``; raise ``ValueError`` with one clear line otherwise."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ValueError(
            f"{PROFILE_ENV_VAR}={name!r} is not a profile; "
            f"use one of: {', '.join(sorted(PROFILES))}"
        ) from None


def current() -> Profile:
    """The profile in force: ``MICRODUCK_PROFILE`` if set, else ``full`` on a GPU, else ``ci``."""
    value = os.environ.get(PROFILE_ENV_VAR)
    if value is not None and value.strip() != "":
        return get(value.strip().lower())
    return FULL if _torch_sees_gpu() else CI


def git_commit(short: bool = False, cwd: str | os.PathLike[str] | None = None) -> str:
    """Commit hash of the repository holding ``cwd`` (default: this file), or ``"unknown"``.

    Never raises: a missing git, a tarball without ``.git`` or a repository without commits
    all give ``"unknown"``, because provenance must not make a finished run fail.
    """
    where = Path(cwd) if cwd is not None else Path(__file__).resolve().parent
    cmd = ["git", "-C", str(where), "rev-parse", *(["--short"] if short else []), "HEAD"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and commit else "unknown"


def backend() -> tuple[str, str | None]:
    """``("hip", ver)``, ``("cuda", ver)`` or ``("cpu", None)`` for the torch in use.

    The backend is the *build* of torch that can drive the visible device: a CUDA build on a
    machine without a GPU is reported as ``cpu`` because that is where the work runs.
    """
    try:
        import torch
    except ImportError:
        return "cpu", None
    if not torch.cuda.is_available():
        return "cpu", None
    hip = getattr(torch.version, "hip", None)
    if hip:
        return "hip", str(hip)
    return "cuda", str(torch.version.cuda)


def device_name() -> str:
    """Name of GPU 0 when torch sees one, else the CPU model."""
    kind, _ = backend()
    if kind != "cpu":
        import torch

        return str(torch.cuda.get_device_name(0))
    return _cpu_model()


def _cpu_model() -> str:
    from mjlab_microduck.runtime.provenance import cpu_model

    return cpu_model()


def banner(now: _dt.datetime | None = None) -> str:
    """One line saying what this notebook runs with: profile, backend, device, date, commit."""
    profile = current()
    kind, version = backend()
    backend_text = kind if version is None else f"{kind} {version}"
    when = (now or _dt.datetime.now(_dt.timezone.utc)).strftime("%Y-%m-%d %H:%M %Z").strip()
    return (
        f"profile={profile.name} | backend={backend_text} | device={device_name()} | "
        f"date={when} | commit={git_commit(short=True)}"
    )
