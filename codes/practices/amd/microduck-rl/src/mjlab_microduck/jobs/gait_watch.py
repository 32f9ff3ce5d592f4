"""Gait-test the checkpoints of running trainings as they are saved.

Problem it solves: a recipe is judged by the first checkpoint that passes the gait test, and
testing them after a long GPU training doubles the time the GPU is needed. This job builds the
gait test's environment once (:class:`~mjlab_microduck.jobs.gait_test.GaitEvaluator`) and,
while the training runs it watches are still running, tests every checkpoint whose iteration is
a multiple of ``every`` (and each run's last), writing one ``gait_test`` record each under
``out``. The order keeps up with every training: the run tested least so far goes next, with
its newest ready checkpoint, and the older ones once the watcher catches up. (Three trainings
side by side can save checkpoints faster than one evaluator tests them; newest first over all
runs would leave a run a few iterations behind the others untested until they finish.) It
stops when every watched run has finished (a ``running`` record whose process is gone counts
as finished: :func:`~mjlab_microduck.runs.liveness.stale_reason`) and
nothing is left to test, or after ``max_seconds``.

A checkpoint is read once it has not changed for ``settle_s`` (rsl_rl writes it in place). The
training runs must all be of one task (the evaluator holds one task's network). With
``start_test`` it runs the start test (``gait_test.START_TEST``) instead of the gait test: a
second watcher beside the first measures how often each checkpoint's starts fold. With
``stop_on_pass`` a training whose checkpoint passes is asked to stop
(:mod:`~mjlab_microduck.runs.stop_request`); the watcher goes on testing its due checkpoints,
older ones included, so the first passing one is still found. With ``after_training`` it
tests nothing until every watched run has ended: a training timed for its walker then has the
GPU to itself (where the GPU does not run two processes' kernels at once, a test beside a
training slows it; :mod:`~mjlab_microduck.analysis.watcher_cost` measures by how much).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from mjlab_microduck.jobs import gait_test, train
from mjlab_microduck.runs import liveness, records, stop_request
from mjlab_microduck.runs.names import checkpoint_iteration


@dataclass(frozen=True)
class GaitWatchRequest:
    """Watch training runs and gait-test their checkpoints as they appear."""

    runs: tuple[Path, ...]
    """Training run folders (each with its ``record.json``), of one task."""
    out: Path = Path("logs/gait_tests")
    """Where each gait test's run folder is made."""
    every: int = 50
    """Test checkpoints whose iteration is a multiple of this (and each run's last one)."""
    min_iteration: int = 0
    """Skip checkpoints before this iteration."""
    profile: Literal["ci", "full"] = "full"
    """The gait test's size (seeds, robots per case) and device."""
    start_test: bool = False
    """Run the start test (``gait_test.START_TEST``) on each checkpoint instead, on the
    profile's device; its runs are named ``start_<run>_<checkpoint stem>``."""
    device: str | None = None
    """Over the profile's device (e.g. cuda:1)."""
    stop_on_pass: bool = False
    """Ask a training to stop once one of its checkpoints passes (it ends ``ok``, its record
    naming the checkpoint): a time-to-walk run needs nothing after its first pass, and the GPU
    it frees speeds up the runs still training beside it."""
    after_training: bool = False
    """Test nothing until every watched run has ended, so the trainings' clocks count no test
    (``max_seconds`` counts the wait)."""
    poll_s: float = 10.0
    settle_s: float = 5.0
    max_seconds: float = 3600.0
    """Stop after this long even if a run is still going."""

    def check(self) -> GaitWatchRequest:
        if not self.runs:
            raise ValueError("give at least one training run folder")
        for run in self.runs:
            if not (Path(run) / records.RECORD_FILENAME).is_file():
                raise ValueError(f"{run}: no run record (record.json) there")
        if self.every < 1:
            raise ValueError(f"--every must be at least 1 (got {self.every})")
        if self.stop_on_pass and self.start_test:
            raise ValueError("--stop-on-pass goes with the gait test, not --start-test (a start "
                             "test does not say whether a checkpoint walks)")  # fmt: skip
        if self.stop_on_pass and self.after_training:
            raise ValueError("--stop-on-pass stops a running training; with --after-training "
                             "every run has ended before the first test")  # fmt: skip
        return self


def _run_state(run: Path) -> tuple[str, str | None]:
    """The run's status and its task, as its record says now (``stale`` for a dead run that
    still says ``running``: waiting for it to finish would wait for ever)."""
    record = records.load_record(Path(run) / records.RECORD_FILENAME)
    status = "stale" if liveness.stale_reason(record) else record.status
    return status, record.config.get("task")


def due_checkpoints(run: Path, every: int, min_iteration: int, finished: bool) -> list[Path]:
    """The run's checkpoints to test: multiples of ``every`` from ``min_iteration`` on, and the
    last one once the run has finished."""
    try:
        found = train.list_checkpoints(train.find_mjlab_log_dir(Path(run)))
    except RuntimeError:  # mjlab has not made its log folder yet
        return []
    due = [
        p
        for p in found
        if checkpoint_iteration(p) >= min_iteration and checkpoint_iteration(p) % every == 0
    ]
    if finished and found and found[-1] not in due:
        due.append(found[-1])
    return due


def next_checkpoint(ready: list[tuple[Path, Path]], tested: dict[Path, int]) -> tuple[Path, Path]:
    """Of ``(run, checkpoint)`` pairs ready to test, the one to test next: the run with the
    fewest tests so far (``tested``), its newest checkpoint; among runs tested equally often,
    the newest checkpoint, then the run given first."""
    return min(
        enumerate(ready),
        key=lambda item: (tested.get(item[1][0], 0), -checkpoint_iteration(item[1][1]), item[0]),
    )[1]


def _settled(path: Path, settle_s: float) -> bool:
    return time.time() - path.stat().st_mtime >= settle_s


def watch(request: GaitWatchRequest, log=print) -> list[gait_test.GaitRun]:
    """Test checkpoints of ``request.runs`` until they are done; the written gait tests."""
    request.check()
    started = time.monotonic()
    tasks = {_run_state(run)[1] for run in request.runs}
    if len(tasks) != 1 or None in tasks:
        raise ValueError(f"the watched runs must share one task (found {sorted(map(str, tasks))})")
    task = tasks.pop()
    done: set[Path] = set()
    tested: dict[Path, int] = {}
    written: list[gait_test.GaitRun] = []
    stopped: set[Path] = set()
    evaluator = None
    try:
        while time.monotonic() - started < request.max_seconds:
            states = {run: _run_state(run)[0] for run in request.runs}
            if request.after_training and any(s == "running" for s in states.values()):
                time.sleep(request.poll_s)
                continue
            untested = [
                (run, p)
                for run in request.runs
                for p in due_checkpoints(
                    run, request.every, request.min_iteration, states[run] != "running"
                )
                if p not in done
            ]
            ready = [(run, p) for run, p in untested if _settled(p, request.settle_s)]
            if not ready:
                if not untested and all(s != "running" for s in states.values()):
                    break
                time.sleep(request.poll_s)
                continue
            run, path = next_checkpoint(ready, tested)
            if evaluator is None:
                sized = gait_test.request_for_profile(request.profile, path, task)
                if request.device:
                    sized = replace(sized, device=request.device)
                if request.start_test:
                    sized = gait_test.as_start_test(sized)
                # building the env (and compiling its kernels) takes the first test tens of
                # seconds; a log read while it builds says why nothing has been tested yet
                log(f"building the {request.profile}-size test on {sized.device} for "
                    f"{Path(path).stem} (once, for every checkpoint)")
                evaluator = gait_test.GaitEvaluator(sized)
            started_iso, t0 = records.utc_now_iso(), time.monotonic()
            result = evaluator.evaluate(path, progress=False)
            run_name = Path(path).parents[4].name if len(Path(path).parents) > 4 else "run"
            name = gait_test.default_name(Path(f"{run_name}_{Path(path).stem}"),
                                          "start" if request.start_test else "gait")
            sized_request = replace(evaluator.request, checkpoint=Path(path))
            gait_run = gait_test.write_run(
                result, sized_request, request.out, name, started_iso, t0
            )
            written.append(gait_run)
            done.add(path)
            tested[run] = tested.get(run, 0) + 1
            summary = gait_run.record.summary
            log(
                f"{name}: {'PASSED' if result.verdict.passed else 'failed'} "
                f"({summary['failed_conditions']} failed conditions, "
                f"{result.rollout_seconds:.0f} s) -> {gait_run.run_dir}"
            )
            if request.stop_on_pass and result.verdict.passed and run not in stopped:
                stopped.add(run)
                reason = f"{Path(path).stem} passed the gait test ({gait_run.record.run_id})"
                log(stop_request.request_stop(run, reason, by="microduck gait-watch"))
    finally:
        if evaluator is not None:
            evaluator.close()
    return written
