"""Collect the small part of a multi-seed GPU run, again and again while it runs.

Problem it solves: several seeds trained side by side (``scripts/train_side_by_side.sh``) leave
full checkpoints (policy, critic and optimiser) every 50 iterations, TensorBoard event files
and, per gait test, megabytes of per-step paths. The book publishes a small part of that, and a
borrowed GPU machine can go away before the run ends. :func:`collect` copies that part into
``dest``:

- each training run folder, without checkpoints and event files, plus slim copies
  (:func:`~mjlab_microduck.jobs.train.slim_checkpoint`) of its checkpoints from iteration
  ``slim_from`` on, and with ``slim_passed`` of every checkpoint a finished gait test passed, at
  their own paths, so that ``microduck records publish`` reads the copy as the run;
- each finished gait test under its published name, ``<prefix>_gait_s<seed>_model_<iteration>``,
  with its per-step paths retired (:func:`~mjlab_microduck.runs.folds.retire_artifacts`), and
  each finished start test (``start/``, a second watcher's) as ``<prefix>_start_s<seed>_...``.

What is already in ``dest`` is kept. A gait test that has not finished, and a checkpoint that
cannot be read yet (rsl_rl is still writing it), are left for the next call. A call that finds
nothing new is a no-op.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from tyro.conf import Positional

from mjlab_microduck.jobs import gait_test, train
from mjlab_microduck.runs import folds, names, records

GAIT_DIR = "gait"
START_DIR = "start"
RUNS_DIR = "runs"
TEST_DIRS = (GAIT_DIR, START_DIR)
"""The folders of a multi-seed run's tests; each one's name is the word its published names
carry (``<prefix>_gait_...``, ``<prefix>_start_...``)."""
RETIRE_WHY = "per-step paths of every robot; the pages plot the paths of the live test"


@dataclass(frozen=True)
class CollectRequest:
    """Copy the publishable part of a multi-seed run (its ``runs/`` and ``gait/``) to ``dest``."""

    out_dir: Annotated[Path, Positional]
    """the run's folder: ``runs/`` holds the trainings and ``gait/`` the gait tests"""
    dest: Annotated[Path, Positional]
    """where the copies go (``dest/runs/<run>``, ``dest/gait/<published name>``)"""
    prefix: str
    """the published names' start, e.g. ``h200_walker_turning`` (``<prefix>_gait_s42_model_500``)"""
    slim_from: int = 0
    """slim copies of the checkpoints from this iteration on"""
    slim_passed: bool = False
    """also slim copies of the checkpoints that a finished gait test passed, whatever their
    iteration (a walker to publish)"""

    def check(self) -> CollectRequest:
        if not (Path(self.out_dir) / RUNS_DIR).is_dir():
            raise ValueError(f"{self.out_dir}: no {RUNS_DIR}/ folder (not a multi-seed run)")
        names.check_run_name(self.prefix)
        if self.slim_from < 0:
            raise ValueError(f"--slim-from must be 0 or more (got {self.slim_from})")
        return self


def _copy_run(run: Path, dest: Path, slim_from: int, passed: frozenset[Path]) -> list[str]:
    """The run folder without checkpoints and event files (refreshed: it grows while the run
    goes), and slim copies of the checkpoints not copied yet: from ``slim_from`` on, and those
    in ``passed``."""
    done = []
    shutil.copytree(
        run, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.pt", "events.out.*")
    )
    for checkpoint in sorted(run.glob("logs/rsl_rl/*/*/model_*.pt")):
        target = dest / checkpoint.relative_to(run)
        wanted = (names.checkpoint_iteration(checkpoint) >= slim_from
                  or checkpoint.resolve() in passed)  # fmt: skip
        if target.exists() or not wanted:
            continue
        try:
            train.slim_checkpoint(checkpoint, target)
        except (EOFError, RuntimeError, ValueError):  # still being written: the next call
            continue
        done.append(f"{run.name}: slim {checkpoint.name}")
    return done


def published_gait_name(
    prefix: str, record: records.RunRecord, runs: dict[Path, int], test: str = "gait"
) -> str:
    """``<prefix>_<test>_s<seed>_model_<iteration>`` of a gait (or start) test of one of
    ``runs`` (run folder -> seed), found from the checkpoint it tested."""
    checkpoint = Path(record.config["checkpoint"])
    # <run>/logs/rsl_rl/<experiment>/<mjlab folder>/model_<iteration>.pt
    seed = runs.get(checkpoint.parents[4].resolve())
    if seed is None:
        raise ValueError(f"{checkpoint}: not a checkpoint of this run's trainings")
    return f"{prefix}_{test}_s{seed}_model_{names.checkpoint_iteration(checkpoint)}"


def collect(request: CollectRequest) -> list[str]:
    """Bring ``dest`` up to date with the run (see the module's docstring); one line per thing
    added."""
    out, dest = Path(request.out_dir), Path(request.dest)
    done: list[str] = []
    tests = [(folder, test, record) for folder in TEST_DIRS
             for test, record in records.find_records(out / folder)]  # fmt: skip
    passed = frozenset(
        Path(record.config["checkpoint"]).resolve() for folder, _, record in tests
        if request.slim_passed and folder == GAIT_DIR and record.status == "ok"
        and record.summary.get("passed")
    )  # fmt: skip
    runs = {}
    for run, record in records.find_records(out / RUNS_DIR):
        runs[run.resolve()] = int(record.config["seed"]["env"])  # as train.record_config
        done += _copy_run(run, dest / RUNS_DIR / run.name, request.slim_from, passed)
    for folder, test, record in tests:
        if record.status != "ok":
            continue
        target = dest / folder / published_gait_name(request.prefix, record, runs, folder)
        if target.exists():
            continue
        staging = target.with_name(target.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(test, staging)
        if (staging / gait_test.PATHS_FILENAME).exists():
            folds.retire_artifacts(staging, (gait_test.PATHS_FILENAME,), RETIRE_WHY)
        staging.rename(target)
        summary = record.summary
        verdict = "passed" if summary.get("passed") else (
            f"failed ({summary.get('failed_conditions')} conditions)")
        done.append(f"{target.name}: {verdict}")
    return done
