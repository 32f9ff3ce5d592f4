"""The gait watcher: which checkpoints are due, in which order, and when it stops.

What this proves (no simulator: the evaluator is a fake that records what it was asked):

* due checkpoints are the multiples of ``every`` from ``min_iteration`` on, plus the last one
  once its run has finished; a run whose log folder does not exist yet has none;
* the watcher tests the newest ready checkpoint first, skips files still being written, writes
  one gait_test record per checkpoint and stops once every run has finished and nothing is due;
* the run tested least so far goes next, so a training a few iterations behind the others is
  not left untested while they keep saving newer checkpoints;
* a run whose record still says ``running`` but whose process is gone counts as finished
  (``stale``), so a watch with nothing left to test ends at once; a live one keeps it waiting;
* with ``stop_on_pass``, a training whose checkpoint passes gets a stop request and SIGTERM
  (a real process here), and the watcher still tests its older checkpoints; a run that never
  passes gets none; the start test refuses the option;
* with ``after_training``, nothing is tested while a watched run is still running, and every
  due checkpoint is tested once it has ended; ``stop_on_pass`` refuses the option;
* bad input (no run, a folder without a record, ``every`` < 1, runs of two tasks) is one line
  and exit status 2 from ``microduck gait-watch``, with nothing written.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import run_fakes
from test_gait_test import MODEL_1498, synthetic_result

from mjlab_microduck.cli import gait_watch as gait_watch_cli
from mjlab_microduck.jobs import gait_test, gait_watch
from mjlab_microduck.runs import records, stop_request

TASK = "Mjlab-Velocity-Flat-MicroDuck-WalkerHeadingTuning"


def make_run(root: Path, name: str, iterations, status="running", task=TASK, age_s=60.0):
    """A training run folder as ``microduck train`` leaves it, with empty checkpoint files."""
    run = root / name
    run.mkdir(parents=True)
    # A running record names its process (this one, so it is alive) and a fresh heartbeat.
    process = records.RunProcess(host=os.uname().nodename, pid=os.getpid(),
                                 heartbeat_at=records.utc_now_iso())  # fmt: skip
    record = records.load_record(MODEL_1498.parent).model_copy(
        update={"run_id": name, "status": status, "config": {"task": task},
                "process": process if status == "running" else None}
    )  # fmt: skip
    records.write_record(record, run)
    log_dir = run / "logs" / "rsl_rl" / "microduck_velocity" / f"stamp_{name}"
    log_dir.mkdir(parents=True)
    for it in iterations:
        path = log_dir / f"model_{it}.pt"
        path.write_bytes(MODEL_1498.read_bytes())
        stamp = time.time() - age_s
        os.utime(path, (stamp, stamp))
    return run


def test_due_checkpoints_are_the_multiples_and_the_last_of_a_finished_run(tmp_path):
    run = make_run(tmp_path, "a", [0, 50, 100, 150, 175])
    due = gait_watch.due_checkpoints(run, every=50, min_iteration=100, finished=False)
    assert [p.name for p in due] == ["model_100.pt", "model_150.pt"]
    due = gait_watch.due_checkpoints(run, every=50, min_iteration=100, finished=True)
    assert [p.name for p in due] == ["model_100.pt", "model_150.pt", "model_175.pt"]
    empty = tmp_path / "b"
    empty.mkdir()
    records.write_record(records.load_record(MODEL_1498.parent), empty)
    assert gait_watch.due_checkpoints(empty, 50, 0, finished=False) == []


class FakeEvaluator:
    built: list = []

    def __init__(self, request):
        self.request = request
        self.evaluated: list[str] = []
        FakeEvaluator.built.append(self)

    def evaluate(self, path, progress=True, checkpoint=None):
        self.evaluated.append(Path(path).name)
        result = synthetic_result(True)
        result.checkpoint = Path(path)
        return result

    def close(self):
        self.closed = True


def test_newest_first_one_record_each_and_stops_when_the_runs_are_done(tmp_path, monkeypatch):
    FakeEvaluator.built.clear()
    monkeypatch.setattr(gait_test, "GaitEvaluator", FakeEvaluator)
    a = make_run(tmp_path, "a", [0, 100, 200, 250], status="ok")
    b = make_run(tmp_path, "b", [100, 200], status="ok")
    # A checkpoint written a moment ago is left until it has settled.
    fresh = make_run(tmp_path, "c", [300], status="ok", age_s=-1.0)  # settles 3 s from now
    out = tmp_path / "gait"
    lines: list[str] = []
    request = gait_watch.GaitWatchRequest(
        runs=(a, b, fresh), out=out, every=100, min_iteration=100, profile="ci",
        poll_s=0.05, settle_s=2.0, max_seconds=30,
    )  # fmt: skip
    written = gait_watch.watch(request, log=lines.append)
    (evaluator,) = FakeEvaluator.built
    assert evaluator.request.task == TASK and evaluator.closed
    assert evaluator.request.seeds == gait_test.PROFILE_SIZES["ci"][0]
    # Newest first; the unsettled model_300 came last, once it had settled.
    assert evaluator.evaluated == [
        "model_250.pt", "model_200.pt", "model_200.pt", "model_100.pt", "model_100.pt",
        "model_300.pt",
    ]  # fmt: skip
    assert len(written) == 6 and len(list(out.iterdir())) == 6 and len(lines) == 1 + 6
    assert lines[0] == "building the ci-size test on cpu for model_250 (once, for every checkpoint)"
    for run in written:
        record = records.load_record(run.run_dir)
        assert record.kind == "gait_test" and record.status == "ok"
    assert any(line.startswith("gait_a_model_250: PASSED") for line in lines)


def test_a_start_watch_runs_the_start_test_on_the_profile_s_device(tmp_path, monkeypatch):
    FakeEvaluator.built.clear()
    monkeypatch.setattr(gait_test, "GaitEvaluator", FakeEvaluator)
    a = make_run(tmp_path, "a", [100, 200], status="ok")
    lines: list[str] = []
    request = gait_watch.GaitWatchRequest(
        runs=(a,), out=tmp_path / "start", every=100, profile="ci", device="cuda:1",
        start_test=True, poll_s=0.05, settle_s=0.0, max_seconds=30,
    )  # fmt: skip
    written = gait_watch.watch(request, log=lines.append)
    (evaluator,) = FakeEvaluator.built
    sized = evaluator.request
    assert (sized.cases, sized.seeds, sized.robots_per_case, sized.duration_s, sized.modes) == (
        ("forward_0.3", "forward_0.4"), (0, 1, 2, 3), 256, 2.0, ("heading",))
    assert (sized.device, sized.task) == ("cuda:1", TASK)
    assert [run.run_dir.name.split("_", 1)[1] for run in written] == [
        "start_a_model_200", "start_a_model_100"]
    assert lines[0].startswith("building the ci-size test on cuda:1 for model_200 ")
    assert lines[1].startswith("start_a_model_200: ")


def test_a_run_behind_the_others_is_not_starved(tmp_path, monkeypatch):
    # Run a saves a newer checkpoint during every test, as a training does when one gait test
    # takes longer than a save interval; run b is a little behind with one checkpoint.
    a = make_run(tmp_path, "a", [100], status="ok")
    b = make_run(tmp_path, "b", [50], status="ok")
    a_log = next((a / "logs" / "rsl_rl" / "microduck_velocity").iterdir())

    class SavingEvaluator(FakeEvaluator):
        def evaluate(self, path, progress=True, checkpoint=None):
            it = int(Path(path).stem.split("_")[1])
            if Path(path).parent == a_log and it < 300:
                newer = a_log / f"model_{it + 50}.pt"
                newer.write_bytes(Path(path).read_bytes())
                os.utime(newer, (time.time() - 60, time.time() - 60))
            return super().evaluate(path, progress, checkpoint)

    SavingEvaluator.built.clear()
    monkeypatch.setattr(gait_test, "GaitEvaluator", SavingEvaluator)
    request = gait_watch.GaitWatchRequest(
        runs=(a, b), out=tmp_path / "gait", every=50, poll_s=0.05, settle_s=1.0, max_seconds=30
    )
    gait_watch.watch(request, log=lambda line: None)
    (evaluator,) = SavingEvaluator.built
    assert evaluator.evaluated == [
        "model_100.pt", "model_50.pt", "model_150.pt", "model_200.pt", "model_250.pt",
        "model_300.pt",
    ]  # fmt: skip


def test_next_checkpoint_serves_the_least_tested_run_its_newest():
    a, b = Path("a"), Path("b")
    ready = [(a, Path("a/model_300.pt")), (a, Path("a/model_250.pt")), (b, Path("b/model_250.pt"))]
    assert gait_watch.next_checkpoint(ready, {}) == (a, Path("a/model_300.pt"))
    assert gait_watch.next_checkpoint(ready, {a: 1}) == (b, Path("b/model_250.pt"))
    assert gait_watch.next_checkpoint(ready, {a: 2, b: 2}) == (a, Path("a/model_300.pt"))


def test_a_running_run_is_waited_for_until_max_seconds(tmp_path, monkeypatch):
    FakeEvaluator.built.clear()
    monkeypatch.setattr(gait_test, "GaitEvaluator", FakeEvaluator)
    run = make_run(tmp_path, "a", [100], status="running")
    request = gait_watch.GaitWatchRequest(
        runs=(run,), out=tmp_path / "gait", every=100, poll_s=0.05, max_seconds=0.5
    )
    started = time.monotonic()
    written = gait_watch.watch(request, log=lambda line: None)
    assert len(written) == 1 and 0.5 <= time.monotonic() - started < 5


class PassingFrom(FakeEvaluator):
    """Fails every checkpoint before ``PASS_FROM``, passes the others."""

    PASS_FROM = 200

    def evaluate(self, path, progress=True, checkpoint=None):
        self.evaluated.append(Path(path).name)
        result = synthetic_result(int(Path(path).stem.split("_")[1]) >= self.PASS_FROM)
        result.checkpoint = Path(path)
        return result


def test_stop_on_pass_asks_the_passing_training_to_stop_and_tests_its_older_checkpoints(
    tmp_path, monkeypatch
):
    PassingFrom.built.clear()
    monkeypatch.setattr(gait_test, "GaitEvaluator", PassingFrom)
    # The training: a real process the watcher must stop; the other run keeps failing.
    trainer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    # Reaped as soon as it ends (a zombie would still count as alive, and be waited for).
    reaper = threading.Thread(target=trainer.wait, daemon=True)
    reaper.start()
    try:
        a = make_run(tmp_path, "a", [100, 150, 200])
        record = records.load_record(a)
        records.write_record(record.model_copy(update={"process": _process(trainer.pid)}), a)
        b = make_run(tmp_path, "b", [100, 150], status="ok")
        lines: list[str] = []
        request = gait_watch.GaitWatchRequest(
            runs=(a, b), out=tmp_path / "gait", every=50, stop_on_pass=True, poll_s=0.05,
            settle_s=0.0, max_seconds=30,
        )  # fmt: skip
        started = time.monotonic()
        gait_watch.watch(request, log=lines.append)
        assert time.monotonic() - started < 10  # ends once the stopped training has gone
        assert trainer.wait(timeout=10) == -signal.SIGTERM
    finally:
        trainer.kill()
    (evaluator,) = PassingFrom.built
    # Newest first: a's model_200 passes and stops it; its older checkpoints are still tested.
    assert evaluator.evaluated[0] == "model_200.pt"
    assert sorted(evaluator.evaluated) == sorted(["model_200.pt", "model_150.pt", "model_100.pt",
                                                  "model_150.pt", "model_100.pt"])  # fmt: skip
    asked = stop_request.read(a)
    assert asked is not None and asked.by == "microduck gait-watch"
    assert asked.reason.startswith("model_200 passed the gait test (")
    assert f"(SIGTERM to process {trainer.pid})" in lines[2]
    assert stop_request.read(b) is None  # b never passed, and it had ended anyway


def test_stop_on_pass_is_refused_with_the_start_test(tmp_path):
    a = make_run(tmp_path, "a", [100])
    request = gait_watch.GaitWatchRequest(runs=(a,), start_test=True, stop_on_pass=True)
    with pytest.raises(ValueError, match="--stop-on-pass goes with the gait test"):
        request.check()


def test_after_training_tests_nothing_until_every_run_has_ended(tmp_path, monkeypatch):
    FakeEvaluator.built.clear()
    monkeypatch.setattr(gait_test, "GaitEvaluator", FakeEvaluator)
    tested_at: list[float] = []
    evaluate = FakeEvaluator.evaluate
    monkeypatch.setattr(FakeEvaluator, "evaluate",
                        lambda self, path, **kw: (tested_at.append(time.monotonic()),
                                                  evaluate(self, path, **kw))[1])  # fmt: skip
    running = make_run(tmp_path, "a", [100, 200, 300])
    done = make_run(tmp_path, "b", [100, 200], status="ok")
    ended_at: list[float] = []

    def end_training():  # the training of run a ends half a second into the watch
        time.sleep(0.5)
        record = records.load_record(running)
        # Stamped before the write: the watcher may read the ended record the moment it lands.
        ended_at.append(time.monotonic())
        records.write_record(record.model_copy(update={
            "status": "ok", "process": None, "finished_at": records.utc_now_iso()}), running)

    ender = threading.Thread(target=end_training)
    ender.start()
    request = gait_watch.GaitWatchRequest(
        runs=(running, done), out=tmp_path / "gait", every=100, after_training=True,
        poll_s=0.05, settle_s=0.0, max_seconds=30,
    )  # fmt: skip
    written = gait_watch.watch(request, log=lambda line: None)
    ender.join()
    assert len(written) == 5  # both runs' due checkpoints, the finished b's included
    assert min(tested_at) >= ended_at[0]  # none while run a was still training


def test_stop_on_pass_is_refused_after_training(tmp_path):
    a = make_run(tmp_path, "a", [100])
    request = gait_watch.GaitWatchRequest(runs=(a,), after_training=True, stop_on_pass=True)
    with pytest.raises(ValueError, match="with --after-training every run has ended"):
        request.check()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "missing required argument"),
        (["--runs", "{missing}"], "no run record (record.json) there"),
        (["--runs", "{a}", "--every", "0"], "--every must be at least 1"),
        (["--runs", "{a}", "{other}"], "must share one task"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path, capsys):
    a = make_run(tmp_path, "a", [100])
    other = make_run(tmp_path, "other", [100], task="Mjlab-Velocity-Flat-MicroDuck")
    names = {"a": a, "other": other, "missing": tmp_path / "missing"}
    out = tmp_path / "gait"
    argv = [arg.format(**names) for arg in args] + ["--out", str(out)]
    assert gait_watch_cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert not out.exists()


def _watch(run) -> float:
    request = gait_watch.GaitWatchRequest(runs=(run,), poll_s=0.05, max_seconds=1.0)
    started = time.monotonic()
    assert gait_watch.watch(request, log=lambda line: None) == []
    return time.monotonic() - started


def _process(pid: int) -> records.RunProcess:
    return records.RunProcess(host=os.uname().nodename, pid=pid,
                              heartbeat_at=records.utc_now_iso())  # fmt: skip


def test_a_stale_run_is_finished_for_the_watch_and_a_live_one_is_not(tmp_path):
    now = records.utc_now_iso()
    stale = run_fakes.train_run(
        tmp_path, "stale", iterations=(), status="running", process=_process(run_fakes.dead_pid())
    )
    live = run_fakes.train_run(
        tmp_path, "live", iterations=(), status="running", started_at=now,
        process=_process(os.getpid()),
    )  # fmt: skip
    assert gait_watch._run_state(stale)[0] == "stale"
    assert gait_watch._run_state(live)[0] == "running"
    assert _watch(stale) < 0.5
    assert _watch(live) >= 1.0
