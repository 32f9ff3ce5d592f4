"""Run folders as the jobs leave them, without running a job: a record, and for a training the
mjlab log tree with real (tiny) checkpoints, TensorBoard-free, and a ``train.log``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from mjlab_microduck.runs import records
from mjlab_microduck.runs.names import EXPERIMENT_NAME


def provenance(**overrides) -> records.Provenance:
    fields = dict(backend="cpu", device_name="Test CPU", hostname="testhost",
                  date="2026-01-02T03:04:05+00:00", profile="ci")  # fmt: skip
    fields.update(overrides)
    return records.Provenance(**fields)


def record(**overrides) -> records.RunRecord:
    fields = dict(
        run_id="20260102T030405Z_drv", kind="train", status="ok",
        config={"task": "Mjlab-Velocity-Flat-MicroDuck", "num_envs": 8, "iterations": 40,
                "steps_per_env": 24},
        provenance=provenance(), started_at="2026-01-02T03:04:05+00:00",
        finished_at="2026-01-02T03:05:05+00:00", wall_seconds=60.0,
    )  # fmt: skip
    fields.update(overrides)
    if fields["status"] == "running":
        fields.setdefault("finished_at", None)
        fields["finished_at"] = None
        fields["wall_seconds"] = None
    return records.RunRecord(**fields)


def dead_pid() -> int:
    """The id of a process that has exited and been reaped (nothing else has it, in practice)."""
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(proc.stdout)


def checkpoint(path: Path, iteration: int) -> Path:
    """A file torch loads as an rsl_rl 5 checkpoint (the keys a resume reads)."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"actor_state_dict": {"w": torch.zeros(2)}, "critic_state_dict": {},
                "optimizer_state_dict": {}, "iter": iteration,
                "infos": {"env_state": {"common_step_counter": 0}}}, path)  # fmt: skip
    return path


def train_run(
    root: Path,
    name: str = "20260102T030405Z_drv",
    iterations=(0, 5),
    torn: int | None = None,
    log_iterations: int = 7,
    **record_fields,
) -> Path:
    """A training run folder: record, checkpoints ``model_<i>.pt`` for ``iterations`` (plus a
    torn ``model_<torn>.pt``, cut mid-write), and a train.log reporting ``log_iterations``."""
    run_dir = root / name
    log_dir = run_dir / "logs" / "rsl_rl" / EXPERIMENT_NAME / "2026-01-02_03-04-05_drv"
    log_dir.mkdir(parents=True)
    for it in iterations:
        checkpoint(log_dir / f"model_{it}.pt", it)
    if torn is not None:
        whole = checkpoint(log_dir / f"model_{torn}.pt", torn).read_bytes()
        (log_dir / f"model_{torn}.pt").write_bytes(whole[: len(whole) // 2])
    block = "  Learning iteration {}/40  \n  Iteration time: 1.0s\n"
    lines = [block.format(i) for i in range(log_iterations)]
    (run_dir / "train.log").write_text("".join(lines))
    records.write_record(record(run_id=name, **record_fields), run_dir)
    return run_dir
