"""Training driver: run mjlab's trainer for a MicroDuck task and leave a run record behind.

mjlab's ``train`` command does the learning; this module adds what a book needs around it:
a fresh timestamped run directory under a git-ignored logs root (nothing is ever overwritten),
the trainer's own iteration log streamed live and kept in ``train.log``, the TensorBoard scalars
exported to ``scalars.csv`` with TensorBoard's event reader, a summary in the reference
chapter's format, and a validated ``record.json`` with provenance. A run that fails still leaves
a record, with status ``failed`` and the error, never a half-written success; a run stopped by
SIGINT, SIGTERM or SIGHUP stops the trainer and leaves an ``interrupted`` record with what it
got to (last iteration and checkpoint, scalars so far), or an ``ok`` one that says why when the
signal came with a stop request in the run folder (``microduck gait-watch --stop-on-pass`` asks
a training to end at its first passing checkpoint: :mod:`~mjlab_microduck.runs.stop_request`);
a running record's heartbeat is refreshed every minute, so a run whose driver was killed
outright is found ``stale`` by ``microduck records verify``.

Resuming copies the chosen checkpoint (given as a file, or a run folder whose last checkpoint
is taken) into the new run's log tree and lets mjlab's own resume logic load it (rsl_rl counts
*additional* iterations: from model_499 with 1000 more, the last file is model_1498.pt); the
new record's config names the run it continues. ``publish`` copies a run's record, CSV and
slim checkpoints (policy weights and observation normaliser, no optimiser state) into
``book/results/``.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import pandas as pd

from mjlab_microduck.analysis.training import summarize
from mjlab_microduck.compat import buffer_syncs, manager_graphs, quat_syncs
from mjlab_microduck.jobs import stopping
from mjlab_microduck.runs import liveness, names, records, stop_request, warp_log
from mjlab_microduck.runs.names import EXPERIMENT_NAME, checkpoint_iteration, is_checkpoint_name
from mjlab_microduck.runtime import backend

RESUME_SOURCE_DIR = "resume_source"
TRAIN_LOG = "train.log"
TAIL_LINES = 5  # the trainer's last lines a failed record quotes
# rsl_rl's header of each iteration's block in the log (after the iteration's update).
_ITERATION_RE = re.compile(r"Learning iteration (\d+)/(\d+)")
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
    """a run folder (its last checkpoint) or an rsl_rl checkpoint (model_<iteration>.pt) to
    continue from"""
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
        manager_graphs.mode()  # the trainer inherits the variables: refuse a value it ignores
        manager_graphs.scope()
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

    def microduck_command(self) -> str:
        """The shell line that makes this run with ``microduck train``, in a fresh folder under
        its logs root: ``MICRODUCK_PROFILE`` names the request's profile, which gives the
        device; the sizes and name are flags, and every other field (task, seed, device, logs
        root, resume, broadphase fault, extra arguments, GPUs) is a flag only where it differs
        from what ``microduck train`` takes without it. ``ValueError`` for extra arguments that
        start with ``-``: the command line would read them as its own options."""
        import shlex

        from mjlab_microduck.runtime import profiles

        default = TrainRequest(name=self.name)
        words = [f"{profiles.PROFILE_ENV_VAR}={self.profile}"] if self.profile else []
        words += ["microduck", "train", "--name", self.name,
                  "--num-envs", str(self.num_envs), "--iterations", str(self.iterations),
                  "--save-interval", str(self.save_interval)]  # fmt: skip
        if self.task != default.task:
            words += ["--task", self.task]
        if self.seed != default.seed:
            words += ["--seed", str(self.seed)]
        profile = profiles.PROFILES.get(self.profile or "")
        if profile is None or self.device != profile.device:
            words += ["--device", self.device]
        if Path(self.logs_root) != default.logs_root:
            words += ["--logs-root", str(self.logs_root)]
        if self.resume_from is not None:
            words += ["--resume-from", str(self.resume_from)]
        if self.frozen_broadphase:
            words += ["--frozen-broadphase"]
        if self.extra_args:
            dashed = [arg for arg in self.extra_args if arg.startswith("-")]
            if dashed:
                raise ValueError(f"extra arguments {dashed} start with '-': `microduck train "
                                 "--extra-args` would read them as its own options")  # fmt: skip
            words += ["--extra-args", *self.extra_args]
        if self.gpu_ids is not None:
            words += ["--gpu-ids", *map(str, self.gpu_ids)]
        return shlex.join(words)


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
    root = run_dir / "logs" / "rsl_rl" / EXPERIMENT_NAME
    candidates = [p for p in root.glob("*") if p.is_dir() and p.name != RESUME_SOURCE_DIR]
    if len(candidates) != 1:
        raise RuntimeError(f"{root}: expected one mjlab log directory, found {len(candidates)}")
    return candidates[0]


def _stage_resume(run_dir: Path, checkpoint: Path, device: str = "cpu") -> None:
    if not checkpoint.is_file():
        raise FileNotFoundError(f"{checkpoint}: resume checkpoint does not exist")
    checkpoint_iteration(checkpoint)
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
    mjlab does not know and a checkpoint (or a run folder's last one) that is missing, misnamed
    or unreadable; ``ValueError`` with one line. The request returned resumes from the
    checkpoint file itself.

    Nothing is created: the command line calls this before :func:`run` makes the run folder.
    """
    request.check()
    backend.check_device(request.device)
    from mjlab_microduck.tasks.registry import list_tasks

    if request.task not in list_tasks():
        raise ValueError(f"--task {request.task!r} is not a registered task")
    if request.resume_from is not None:
        request = replace(request, resume_from=resume_checkpoint(request.resume_from))
    return request


def last_checkpoint(run_dir: str | Path) -> Path | None:
    """The last checkpoint a training run saved (in its mjlab log folder), or None."""
    try:
        found = list_checkpoints(find_mjlab_log_dir(Path(run_dir)))
    except RuntimeError:  # mjlab had not made its log folder yet
        return None
    return found[-1] if found else None


def resume_checkpoint(path: str | Path) -> Path:
    """The checkpoint ``--resume-from`` loads: ``path`` itself, or a run folder's last one.

    It must load (a run killed while saving can leave a torn last file); ``ValueError`` with
    one line otherwise, naming the checkpoint before it when there is one.
    """
    given = Path(path)
    if given.is_dir():
        checkpoint = last_checkpoint(given)
        if checkpoint is None:
            raise ValueError(
                f"--resume-from {given}: no checkpoint in a training run folder "
                f"(logs/rsl_rl/{EXPERIMENT_NAME}/<run>/model_<iteration>.pt)"
            )
    elif given.is_file():
        checkpoint = given
        try:
            checkpoint_iteration(checkpoint)
        except ValueError as err:
            raise ValueError(f"--resume-from {err}") from None
    else:
        raise ValueError(f"--resume-from {given}: no such checkpoint or run folder")
    problem = _unreadable(checkpoint)
    if problem:
        at = checkpoint_iteration(checkpoint)
        before = [p for p in list_checkpoints(checkpoint.parent) if checkpoint_iteration(p) < at]
        hint = f"; resume from the one before: --resume-from {before[-1]}" if before else ""
        raise ValueError(f"--resume-from {checkpoint}: unreadable checkpoint ({problem}){hint}")
    return checkpoint


def _unreadable(checkpoint: Path) -> str | None:
    """Why torch cannot load ``checkpoint`` as an rsl_rl checkpoint (one line), or None."""
    import torch

    try:
        data = torch.load(checkpoint, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 - a torn zip, a pickle error, a bad header: all "no"
        return records.error_line(err, limit=300)
    if not isinstance(data, dict) or "actor_state_dict" not in data:
        return "no actor_state_dict: not an rsl_rl 5 checkpoint"
    return None


def run_of_checkpoint(checkpoint: str | Path) -> Path | None:
    """The run folder a checkpoint belongs to: the nearest folder above it with a record (a
    training run keeps it four levels up, a published run beside it), or None."""
    for parent in list(Path(checkpoint).resolve().parents)[:5]:
        if (parent / records.RECORD_FILENAME).is_file():
            return parent
    return None


def _run_id(run_dir: Path) -> str:
    try:
        return records.load_record(run_dir).run_id
    except records.RecordError:  # a damaged record still names its run by its folder
        return run_dir.name


def _last_logged_iteration(log: Path) -> int | None:
    """The last iteration rsl_rl reported in ``train.log`` (read from its end), or None."""
    try:
        with log.open("rb") as fh:
            fh.seek(max(0, log.stat().st_size - (256 << 10)))
            text = fh.read().decode("utf-8", errors="replace")
    except OSError:
        return None
    found = _ITERATION_RE.findall(text)
    return int(found[-1][0]) if found else None


def _progress(run_dir: Path) -> dict:
    """How far a running training got, for its heartbeat: the last checkpoint and iteration."""
    progress: dict = {}
    checkpoint = last_checkpoint(run_dir)
    if checkpoint is not None:
        progress["last_checkpoint"] = checkpoint.name
        progress["last_checkpoint_iteration"] = checkpoint_iteration(checkpoint)
    iteration = _last_logged_iteration(run_dir / TRAIN_LOG)
    if iteration is not None:
        progress["last_iteration"] = iteration
    return progress


def stopped_on_disk(record: records.RunRecord, run_dir: Path) -> dict:
    """What a training that stopped early left behind, as record fields: the summary of the
    scalars TensorBoard had written (exported to ``scalars.csv``), its checkpoints, the last
    iteration it reported, and ``train.log``, listed with their checksums."""
    summary: dict = {}
    artifacts: list[records.Artifact] = []
    scalars_csv = None
    try:
        log_dir = find_mjlab_log_dir(run_dir)
    except RuntimeError:
        log_dir = None
    if log_dir is not None:
        try:
            scalars = _export(log_dir, run_dir)
        except Exception:  # noqa: BLE001 - no event file yet, or a torn last one
            scalars = None
        if scalars is not None and len(scalars):
            # From the record, not the task module: fixing a stale record needs no mjlab.
            num_envs = int(record.config.get("num_envs") or 0)
            steps = int(record.config.get("steps_per_env") or 0)
            summary.update(summarize(scalars, num_envs, steps))
            scalars_csv = records.SCALARS_FILENAME
            artifacts.append(records.artifact(run_dir / scalars_csv, run_dir, "scalars"))
        checkpoints = list_checkpoints(log_dir)
        if checkpoints:
            summary["checkpoints"] = ",".join(p.name for p in checkpoints)
    summary.update(_progress(run_dir))  # the log goes further than the last flushed event
    if (run_dir / TRAIN_LOG).is_file():
        summary.update(warp_log.count_log(run_dir / TRAIN_LOG).summary())
        artifacts.append(records.artifact(run_dir / TRAIN_LOG, run_dir, "log"))
    return {"summary": summary, "scalars_csv": scalars_csv, "artifacts": artifacts}


def progress_line(summary: dict) -> str:
    """``at iteration 23, last checkpoint model_20.pt`` (or what of it is known)."""
    parts = []
    if summary.get("last_iteration") is not None:
        parts.append(f"at iteration {summary['last_iteration']}")
    checkpoint = summary.get("last_checkpoint")
    parts.append(f"last checkpoint {checkpoint}" if checkpoint else "before its first checkpoint")
    return ", ".join(parts)


def _stopped(record: records.RunRecord, run_dir: Path, signal_name: str) -> records.RunRecord:
    """The record of a run a signal stopped: ``interrupted``, or ``ok`` when the signal came
    with a stop request (:mod:`~mjlab_microduck.runs.stop_request`) in its folder."""
    found = stopped_on_disk(record, run_dir)
    asked = stop_request.read(run_dir)
    if asked is not None:
        # Stopped because it reached what it was run for (a gait-watch saw a checkpoint pass):
        # an ok run with fewer iterations than asked, which says why.
        found["summary"][stop_request.SUMMARY_KEY] = f"{asked.reason} (asked by {asked.by})"
        log = run_dir / TRAIN_LOG
        if log.is_file():
            lines = log.read_text(errors="replace").splitlines()
            found["summary"].update(manager_graphs.read_report(lines))
        return record.model_copy(update={"status": "ok", **found})
    reason = f"interrupted by {signal_name} {progress_line(found['summary'])}"
    return records.mark_interrupted(record, reason, signal=signal_name, **found)


def run(request: TrainRequest, stream=None) -> tuple[Path, records.RunRecord]:
    """Train, export and record. Returns the run directory and its record (ok, failed or
    interrupted).

    A malformed request (:meth:`TrainRequest.check`, a run folder to resume with no readable
    checkpoint) raises before the run folder exists. SIGINT, SIGTERM or SIGHUP stop the trainer
    and leave an ``interrupted`` record with the last checkpoint (:mod:`.stopping`), or an ``ok``
    one after a stop request (:func:`_stopped`); while it runs, the record's heartbeat is
    refreshed every minute (:mod:`~mjlab_microduck.runs.liveness`).
    """
    from mjlab_microduck.runtime import provenance

    request.check()
    if request.resume_from is not None and Path(request.resume_from).is_dir():
        request = replace(request, resume_from=resume_checkpoint(request.resume_from))
    stream = stream or sys.stdout
    with stopping.signals_raise() as signals:
        command = [
            sys.executable,
            "-u",
            "-m",
            "mjlab_microduck.jobs.train",
            "--mjlab",
            *request.mjlab_args(),
        ]
        # Everything slow (provenance runs tools) before the folder exists: a signal until the
        # record is written leaves nothing behind.
        config = record_config(request)
        prov = provenance.collect(profile=request.profile, command=command, device=request.device)
        run_dir = records.new_run_dir(request.logs_root, request.name)
        record = records.RunRecord(
            run_id=run_dir.name,
            kind="train",
            status="running",
            command=command,
            config=config,
            provenance=prov,
            started_at=records.utc_now_iso(),
            process=liveness.this_process(),
        )
        records.write_record(record, run_dir)
        started = time.monotonic()
        try:
            with liveness.Heartbeat(record, run_dir, progress=lambda: _progress(run_dir)):
                record = _train(request, run_dir, command, record, stream)
        except BaseException as err:  # noqa: BLE001 - any end, even a signal, must be recorded
            stop = stopping.as_interrupted(err)
            if stop is not None:
                record = _stopped(record, run_dir, stop.signal_name)
            else:
                record = records.mark_failed(record, err)
            if not isinstance(err, (Exception, stopping.Interrupted)):
                raise
        finally:
            signals.hold()  # a signal now would only lose the record being written
            record = records.finalize(record, run_dir, started)
    return run_dir, record


# mjlab writes tuples as ``!!python/tuple``, which yaml.safe_load refuses: read the one key.
_ROLLOUT_RE = re.compile(r"^num_steps_per_env:\s*(\d+)\s*$", re.MULTILINE)


def rollout_steps(log_dir: Path) -> int | None:
    """The rollout length per env the runner trained with, from the ``params/agent.yaml`` mjlab
    writes into its log folder; None when that file (or the key) is not there."""
    agent_yaml = Path(log_dir) / "params" / "agent.yaml"
    found = _ROLLOUT_RE.search(agent_yaml.read_text()) if agent_yaml.is_file() else None
    return int(found.group(1)) if found else None


def record_config(request: TrainRequest) -> dict:
    """What a run's record keeps as its config: the request, the preset's figures and the
    ranks. Two requests that train the same thing on the same machine give equal configs."""
    from mjlab_microduck.tasks.rl_cfg import STEPS_PER_ENV
    from mjlab_microduck.tasks.velocity import TUNING_OF_TASK

    tuning = TUNING_OF_TASK.get(request.task)
    steps_per_env = tuning.steps_per_env if tuning else STEPS_PER_ENV
    resume = Path(request.resume_from) if request.resume_from else None
    continues = run_of_checkpoint(resume) if resume else None
    return {
        "task": request.task,
        # Through JSON so the record in memory equals the one read back (tuples become lists).
        "tuning": json.loads(json.dumps(asdict(tuning))) if tuning else None,
        "num_envs": request.num_envs,
        "iterations": request.iterations,
        "seed": {"env": request.seed, "agent": request.seed},
        "save_interval": request.save_interval,
        "steps_per_env": steps_per_env,
        "device": request.device,
        "resume_from": str(resume) if resume else None,
        "resume_from_iteration": checkpoint_iteration(resume) if resume else None,
        # The run this one continues (chapter 5's resume to 1500 points to its 500-iteration
        # run): the folder holding the checkpoint's record, and that record's id.
        "continues_run": _run_id(continues) if continues else None,
        "continues_run_dir": str(continues) if continues else None,
        "frozen_broadphase": request.frozen_broadphase,
        # The trainer inherits this process's environment: whether its delay buffers sync.
        "sync_free_buffers": os.environ.get(buffer_syncs.ENV_VAR, "1") != "0",
        "sync_free_quats": os.environ.get(quat_syncs.ENV_VAR, "1") != "0",
        "manager_graphs": os.environ.get(manager_graphs.ENV_VAR, manager_graphs.DEFAULT_MODE),
        "gpu_ids": request.gpu_list(),
        "ranks": _rank_provenance(request),
    }


def _train(
    request: TrainRequest, run_dir: Path, command: list[str], record: records.RunRecord, stream
) -> records.RunRecord:
    """The run itself, from staging the resume to the ok record (not yet written)."""
    if request.resume_from is not None:
        _stage_resume(run_dir, Path(request.resume_from).resolve(), request.device)
    # Warp speaks in the trainer even where the caller quiets it (MJLAB_WARP_QUIET): train.log
    # keeps its module-load lines, from which the record counts what the start-up compiled;
    # the stream shows neither them nor Warp's banner (ShownLines).
    env = dict(os.environ, WANDB_MODE="offline", GIT_PYTHON_REFRESH="quiet", MJLAB_WARP_QUIET="0")
    if request.frozen_broadphase:
        env[FAULT_ENV] = "1"
    else:
        env.pop(FAULT_ENV, None)
    returncode, tail = _run_streaming(command, run_dir, env, stream)
    if returncode < 0:
        raise RuntimeError(f"mjlab train was killed by {stopping.signal_name(-returncode)}: {tail}")
    if returncode != 0:
        raise RuntimeError(f"mjlab train exited with status {returncode}: {tail}")
    log_dir = find_mjlab_log_dir(run_dir)
    scalars = _export(log_dir, run_dir)
    checkpoints = list_checkpoints(log_dir)
    if not checkpoints:
        raise RuntimeError(f"{log_dir}: training wrote no checkpoint")
    # The rollout the runner used (an extra argument may override the task's), as mjlab saved it.
    steps_per_env = rollout_steps(log_dir) or int(record.config["steps_per_env"])
    summary = summarize(scalars, request.num_envs, steps_per_env)
    summary["checkpoints"] = ",".join(p.name for p in checkpoints)
    summary["last_checkpoint"] = checkpoints[-1].name
    summary.update(warp_log.count_log(run_dir / TRAIN_LOG).summary())
    log_lines = (run_dir / TRAIN_LOG).read_text(errors="replace").splitlines()
    summary.update(manager_graphs.read_report(log_lines))
    return record.model_copy(
        update={
            "status": "ok",
            "config": {**record.config, "steps_per_env": steps_per_env},
            "summary": summary,
            "scalars_csv": records.SCALARS_FILENAME,
            "artifacts": [
                records.artifact(run_dir / records.SCALARS_FILENAME, run_dir, "scalars"),
                records.artifact(run_dir / TRAIN_LOG, run_dir, "log"),
            ],
        }
    )


def _run_streaming(command: list[str], run_dir: Path, env: dict, stream) -> tuple[int, str]:
    """Run the trainer, echoing its output live and keeping it in ``train.log``.

    The trainer leads its own process group, so a signal to this process reaches it only
    through here: whatever ends the loop early (:class:`.stopping.Interrupted`, or an error)
    passes the signal on to the whole group (mjlab's per-GPU workers included), keeps reading
    until the trainer's output ends, and re-raises. A trainer orphaned by a SIGKILL of this
    process dies at its next line of output, on the broken pipe.
    """
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    with open(run_dir / TRAIN_LOG, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            command, cwd=run_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, bufsize=1, start_new_session=True,
        )  # fmt: skip
        assert proc.stdout is not None

        def keep(line: str) -> None:
            log.write(line)
            if line.strip():
                tail.append(line.strip())

        shown = ShownLines()
        try:
            for line in proc.stdout:
                keep(line)
                if shown(line):
                    stream.write(line)
                    stream.flush()
            returncode = proc.wait()
        except BaseException as err:
            stop = stopping.as_interrupted(err)
            timer = stopping.stop_group(proc, stop.signum if stop else signal.SIGTERM)
            try:
                for line in proc.stdout:  # the trainer's last words belong in train.log
                    keep(line)
                proc.wait()
            finally:
                if timer is not None:
                    timer.cancel()
            raise
    return returncode, " | ".join(tail)


class ShownLines:
    """Which of the trainer's lines reach the stream. Warp's banner (``Warp 1.13.0
    initialized:`` and its indented lines), its per-module load lines and clang's CPU-feature
    chatter would drown the iteration log; ``train.log`` keeps them all."""

    _NOISY = ("Module ", "warning: invalid feature", "warning generated", "warnings generated")

    def __init__(self) -> None:
        self._in_banner = False

    def __call__(self, line: str) -> bool:
        if line.startswith("Warp ") and line.rstrip().endswith(" initialized:"):
            self._in_banner = True
            return False
        if self._in_banner and line.startswith("   "):
            return False
        self._in_banner = False
        return not line.startswith(self._NOISY)


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
    try:
        # A stop (the parent passes on SIGTERM when a gait watcher sees a checkpoint pass)
        # raises here instead of ending the process on the spot, so the report below still
        # reaches train.log and the record of a stopped training says what the graphs did.
        with stopping.signals_raise():
            mjlab_train_main()
    finally:
        line = manager_graphs.report_line()
        if line is not None:  # whether the graphs ran, or why not, for the record
            print(line, flush=True)


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
    try:
        _mjlab_entry(argv[1:])
    except stopping.Interrupted as stop:
        return stop.exit_status  # 143 for SIGTERM, as a shell reports it
    return 0


if __name__ == "__main__":
    sys.exit(main())
