"""Training driver: run mjlab's trainer for a MicroDuck task and leave a run record behind.

mjlab's ``train`` command does the learning; this module adds what a book needs around it:
a fresh timestamped run directory under a git-ignored logs root (nothing is ever overwritten),
the trainer's own iteration log streamed live and kept in ``train.log``, the TensorBoard scalars
exported to ``scalars.csv`` with TensorBoard's event reader, a summary in the reference
chapter's format, and a validated ``record.json`` with provenance. A run that fails still leaves
a record, with status ``failed`` and the error, never a half-written success.

Resuming copies the chosen checkpoint into the new run's log tree and lets mjlab's own resume
logic load it (rsl_rl counts *additional* iterations: from model_499 with 1000 more, the last
file is model_1498.pt). ``publish`` copies a run's record, CSV and slim checkpoints (policy
weights and observation normaliser, no optimiser state) into ``book/results/``.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pandas as pd

from mjlab_microduck.analysis.training import summarize
from mjlab_microduck.runs import names, records
from mjlab_microduck.runs.names import checkpoint_iteration, is_checkpoint_name
from mjlab_microduck.runtime import backend

RESUME_SOURCE_DIR = "resume_source"
TRAIN_LOG = "train.log"
FAULT_ENV = "MICRODUCK_FAULT_FROZEN_BROADPHASE"


@dataclass
class TrainRequest:
    """One training run, in the terms the book uses."""

    name: str
    """run name (letters, digits, '.', '_', '-'); the run folder is <UTC stamp>_<name>"""
    task: str = names.TASK_ID
    """a registered mjlab task (``list-envs`` lists them)"""
    num_envs: int = 64
    """parallel environments (per GPU when several GPUs train)"""
    iterations: int = 5
    """PPO iterations (a resume counts additional ones)"""
    seed: int = 42
    """env and agent seed (rank r of several GPUs gets seed + r)"""
    save_interval: int = 100
    """save a checkpoint every this many iterations (and the last one)"""
    device: str = "cpu"
    """cpu, cuda or cuda:N (a ROCm build of torch also says cuda)"""
    logs_root: Path = Path("logs")
    """where the run folder is made (git-ignored)"""
    resume_from: Path | None = None
    """an rsl_rl checkpoint (model_<iteration>.pt) to continue from"""
    frozen_broadphase: bool = False
    """fault injection: reuse the first step's broadphase list (chapter 7)"""
    profile: str | None = None
    """the run-size profile recorded with the run (ci or full)"""
    extra_args: list[str] = field(default_factory=list)
    """further arguments for mjlab's train, in its own syntax"""
    gpu_ids: tuple[int, ...] | None = None
    """Several GPUs of one host: mjlab launches one process per GPU (torchrunx) and seeds
    rank r with ``seed + r``. None means the single device in ``device``."""

    def check(self) -> TrainRequest:
        """Refuse what can be seen without torch or mjlab (``ValueError``, one line)."""
        names.check_run_name(self.name)
        backend.parse_device(self.device)
        for flag, value in (
            ("--num-envs", self.num_envs),
            ("--iterations", self.iterations),
            ("--save-interval", self.save_interval),
        ):
            if value < 1:
                raise ValueError(f"{flag} must be at least 1")
        if self.gpu_ids is not None and any(g < 0 for g in self.gpu_ids):
            raise ValueError(f"--gpu-ids {list(self.gpu_ids)}: GPU indices are 0 or more")
        return self

    def gpu_list(self) -> list[int] | None:
        """The GPUs mjlab gets (``--gpu-ids``); None trains on the CPU."""
        if self.gpu_ids:
            return list(self.gpu_ids)
        return None if self.device == "cpu" else [backend.cuda_index(self.device)]

    def ranks(self) -> list[dict]:
        """One entry per training process, as mjlab will start them (rank = local rank)."""
        gpus = self.gpu_list()
        if gpus is None:
            return [{"rank": 0, "device": "cpu", "seed": self.seed}]
        return [
            {"rank": rank, "device": f"cuda:{gpu}", "seed": self.seed + rank}
            for rank, gpu in enumerate(gpus)
        ]

    def mjlab_args(self) -> list[str]:
        """The arguments mjlab's ``train`` receives (tyro syntax, mjlab's flag names)."""
        gpus = self.gpu_list()
        gpu_ids = "None" if gpus is None else "[" + ",".join(str(g) for g in gpus) + "]"
        args = [
            self.task,
            "--env.scene.num-envs", str(self.num_envs),
            "--env.seed", str(self.seed),
            "--agent.seed", str(self.seed),
            "--agent.max-iterations", str(self.iterations),
            "--agent.save-interval", str(self.save_interval),
            "--agent.logger", "tensorboard",
            "--agent.run-name", self.name,
            "--agent.upload-model", "False",
            "--gpu-ids", gpu_ids,
        ]  # fmt: skip
        if self.resume_from is not None:
            args += [
                "--agent.resume", "True",
                "--agent.load-run", f"^{RESUME_SOURCE_DIR}$",
                "--agent.load-checkpoint", f"^{re.escape(self.resume_from.name)}$",
            ]  # fmt: skip
        return args + list(self.extra_args)


def _rank_provenance(request: TrainRequest) -> list[dict]:
    """Per-rank seed and device facts. Only the run's first device gets the full provenance
    block; with several GPUs each rank's device name, architecture and runtime are added."""
    from mjlab_microduck.runtime import provenance

    ranks = request.ranks()
    if len(ranks) == 1:
        return ranks
    out = []
    for rank in ranks:
        prov = provenance.collect(device=rank["device"])
        out.append(
            {
                **rank,
                "device_name": prov.device_name,
                "arch": prov.arch,
                "runtime_version": prov.runtime_version,
            }
        )
    return out


def list_checkpoints(log_dir: str | Path) -> list[Path]:
    """Checkpoints of one mjlab log directory, in iteration order."""
    found = [p for p in Path(log_dir).glob("model_*.pt") if is_checkpoint_name(p)]
    return sorted(found, key=checkpoint_iteration)


def find_mjlab_log_dir(run_dir: Path) -> Path:
    """The single log directory mjlab created inside ``run_dir`` (not the resume source)."""
    from mjlab_microduck.tasks.rl_cfg import EXPERIMENT_NAME

    root = run_dir / "logs" / "rsl_rl" / EXPERIMENT_NAME
    candidates = [p for p in root.glob("*") if p.is_dir() and p.name != RESUME_SOURCE_DIR]
    if len(candidates) != 1:
        raise RuntimeError(f"{root}: expected one mjlab log directory, found {len(candidates)}")
    return candidates[0]


def _stage_resume(run_dir: Path, checkpoint: Path, device: str = "cpu") -> None:
    if not checkpoint.is_file():
        raise FileNotFoundError(f"{checkpoint}: resume checkpoint does not exist")
    checkpoint_iteration(checkpoint)
    from mjlab_microduck.tasks.rl_cfg import EXPERIMENT_NAME

    source = run_dir / "logs" / "rsl_rl" / EXPERIMENT_NAME / RESUME_SOURCE_DIR
    source.mkdir(parents=True)
    staged = source / checkpoint.name
    if device == "cpu":
        # rsl_rl loads without a map_location, so a checkpoint saved on a GPU cannot resume on
        # a machine without one; a copy mapped to the CPU can, wherever it was made.
        import torch

        save_torch_atomic(torch.load(checkpoint, map_location="cpu", weights_only=False), staged)
        return
    # A hard link costs nothing and keeps the earlier run's file untouched.
    try:
        os.link(checkpoint, staged)
    except OSError:
        shutil.copy2(checkpoint, staged)


def save_torch_atomic(data: object, dst: str | Path) -> Path:
    """``torch.save`` into ``dst`` through a temp file and a rename: all or nothing."""
    import torch

    buffer = io.BytesIO()
    torch.save(data, buffer)
    return records.atomic_write_bytes(dst, buffer.getvalue())


def validate(request: TrainRequest) -> TrainRequest:
    """Everything :meth:`TrainRequest.check` refuses, plus a device this machine lacks, a task
    mjlab does not know and a missing or misnamed checkpoint; ``ValueError`` with one line.

    Nothing is created: the command line calls this before :func:`run` makes the run folder.
    """
    request.check()
    backend.check_device(request.device)
    from mjlab.tasks.registry import list_tasks  # importing mjlab loads the MicroDuck tasks

    if request.task not in list_tasks():
        raise ValueError(f"--task {request.task!r} is not a registered task")
    if request.resume_from is not None:
        if not Path(request.resume_from).is_file():
            raise ValueError(f"--resume-from {request.resume_from}: no such checkpoint")
        try:
            checkpoint_iteration(request.resume_from)
        except ValueError as err:
            raise ValueError(f"--resume-from {err}") from None
    return request


def record_config(request: TrainRequest) -> dict:
    """What a run's record keeps as its config: the request, the preset's figures and the
    ranks. Two requests that train the same thing on the same machine give equal configs."""
    from mjlab_microduck.tasks.rl_cfg import STEPS_PER_ENV
    from mjlab_microduck.tasks.velocity import TUNING_OF_TASK

    tuning = TUNING_OF_TASK.get(request.task)
    return {
        "task": request.task,
        # Through JSON so the record in memory equals the one read back (tuples become lists).
        "tuning": json.loads(json.dumps(asdict(tuning))) if tuning else None,
        "num_envs": request.num_envs,
        "iterations": request.iterations,
        "seed": {"env": request.seed, "agent": request.seed},
        "save_interval": request.save_interval,
        "steps_per_env": STEPS_PER_ENV,
        "device": request.device,
        "resume_from": str(request.resume_from) if request.resume_from else None,
        "resume_from_iteration": (
            checkpoint_iteration(request.resume_from) if request.resume_from else None
        ),
        "frozen_broadphase": request.frozen_broadphase,
        "gpu_ids": request.gpu_list(),
        "ranks": _rank_provenance(request),
    }


def run(request: TrainRequest, stream=None) -> tuple[Path, records.RunRecord]:
    """Train, export and record. Returns the run directory and its record (ok or failed).

    A malformed request (:meth:`TrainRequest.check`) raises before the run folder exists.
    """
    from mjlab_microduck.runtime import provenance

    request.check()
    stream = stream or sys.stdout
    run_dir = records.new_run_dir(request.logs_root, request.name)
    command = [
        sys.executable,
        "-u",
        "-m",
        "mjlab_microduck.jobs.train",
        "--mjlab",
        *request.mjlab_args(),
    ]
    from mjlab_microduck.tasks.rl_cfg import STEPS_PER_ENV

    config = record_config(request)
    record = records.RunRecord(
        run_id=run_dir.name,
        kind="train",
        status="running",
        command=command,
        config=config,
        provenance=provenance.collect(
            profile=request.profile, command=command, device=request.device
        ),
        started_at=records.utc_now_iso(),
    )
    records.write_record(record, run_dir)
    started = time.monotonic()
    try:
        if request.resume_from is not None:
            _stage_resume(run_dir, Path(request.resume_from).resolve(), request.device)
        env = dict(os.environ, WANDB_MODE="offline", GIT_PYTHON_REFRESH="quiet")
        if request.frozen_broadphase:
            env[FAULT_ENV] = "1"
        else:
            env.pop(FAULT_ENV, None)
        returncode, tail = _run_streaming(command, run_dir, env, stream)
        if returncode != 0:
            raise RuntimeError(f"mjlab train exited with status {returncode}: {tail}")
        log_dir = find_mjlab_log_dir(run_dir)
        scalars = _export(log_dir, run_dir)
        checkpoints = list_checkpoints(log_dir)
        if not checkpoints:
            raise RuntimeError(f"{log_dir}: training wrote no checkpoint")
        summary = summarize(scalars, request.num_envs, STEPS_PER_ENV)
        summary["checkpoints"] = ",".join(p.name for p in checkpoints)
        summary["last_checkpoint"] = checkpoints[-1].name
        record = record.model_copy(
            update={
                "status": "ok",
                "summary": summary,
                "scalars_csv": records.SCALARS_FILENAME,
                "artifacts": [
                    records.artifact(run_dir / records.SCALARS_FILENAME, run_dir, "scalars"),
                    records.artifact(run_dir / TRAIN_LOG, run_dir, "log"),
                ],
            }
        )
    except BaseException as err:  # noqa: BLE001 - any failure, even Ctrl-C, must be recorded
        record = records.mark_failed(record, err)
        if not isinstance(err, Exception):
            raise
    finally:
        record = records.finalize(record, run_dir, started)
    return run_dir, record


def _run_streaming(command: list[str], run_dir: Path, env: dict, stream) -> tuple[int, str]:
    """Run the trainer, echoing its output live and keeping it in ``train.log``."""
    tail: list[str] = []
    with open(run_dir / TRAIN_LOG, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            command, cwd=run_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, bufsize=1,
        )  # fmt: skip
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            if _worth_showing(line):
                stream.write(line)
                stream.flush()
            tail = (tail + [line.strip()])[-5:]
        returncode = proc.wait()
    return returncode, " | ".join(t for t in tail if t)


def _worth_showing(line: str) -> bool:
    # Warp's per-module compile lines and clang's CPU-feature chatter drown the iteration log.
    noisy = ("Module ", "warning: invalid feature", "warning generated", "warnings generated")
    return not line.startswith(noisy)


def _export(log_dir: Path, run_dir: Path) -> pd.DataFrame:
    from mjlab_microduck.runs.tb_export import export_csv

    return export_csv(log_dir, run_dir / records.SCALARS_FILENAME)


# ---------------------------------------------------------------- publishing


def slim_checkpoint(src: str | Path, dst: str | Path) -> Path:
    """Keep what a replay needs: policy weights with their observation normaliser, the iteration
    and the env state (curriculum counter). Critic and optimiser state stay in the logs."""
    import torch

    full = torch.load(src, map_location="cpu", weights_only=False)
    if "actor_state_dict" not in full:
        raise ValueError(f"{src}: no actor_state_dict (not an rsl_rl 5 checkpoint)")
    slim = {
        "actor_state_dict": full["actor_state_dict"],
        "iter": full.get("iter"),
        "infos": {"env_state": (full.get("infos") or {}).get("env_state", {})},
        "slim": True,
    }
    return save_torch_atomic(slim, dst)


def publish(run_dir: str | Path, dest: str | Path, checkpoint_iterations=()) -> records.RunRecord:
    """Copy a finished run into the book: record, scalars and chosen slim checkpoints.

    Refuses to overwrite an existing publication; the event files and full checkpoints stay
    behind in the logs.
    """
    run_dir = Path(run_dir)

    def copy_files(record: records.RunRecord, staging: Path) -> list[records.Artifact]:
        records.atomic_copy(run_dir / records.SCALARS_FILENAME, staging / records.SCALARS_FILENAME)
        artifacts = [records.artifact(staging / records.SCALARS_FILENAME, staging, "scalars")]
        if checkpoint_iterations:
            log_dir = find_mjlab_log_dir(run_dir)
            for it in checkpoint_iterations:
                src = log_dir / f"model_{it}.pt"
                slim_checkpoint(src, staging / src.name)
                artifacts.append(records.artifact(staging / src.name, staging, "checkpoint"))
        return artifacts

    return records.publish_run(run_dir, dest, copy_files)


# ---------------------------------------------------------------- command line


def _mjlab_entry(argv: list[str]) -> None:
    """Run mjlab's own ``train`` CLI with this package's hooks and tasks loaded."""
    from mjlab.scripts.train import main as mjlab_train_main

    import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)

    sys.argv = ["train", *argv]
    mjlab_train_main()


def main(argv: list[str] | None = None) -> int:
    """The training child process: ``python -m mjlab_microduck.jobs.train --mjlab ARGS``.

    The user-facing command is ``microduck train`` (:mod:`mjlab_microduck.cli.train`).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] != ["--mjlab"]:
        print(
            "usage: microduck train ... (this module is the trainer's child process)",
            file=sys.stderr,
        )
        return 2
    _mjlab_entry(argv[1:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
