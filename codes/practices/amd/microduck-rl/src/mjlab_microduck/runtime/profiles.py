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

import os
from dataclasses import dataclass

from mjlab_microduck.runtime import backend

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
    return backend.torch_backend()[0] != "cpu"


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
