"""How a training ends when it is stopped, dies or is killed, and resuming it from its folder.

Fast (a stand-in trainer: a real child process that prints rsl_rl's iteration lines and saves
checkpoint files, no mjlab in it): a SIGTERM or SIGINT sent to this process while
``train.run`` streams the trainer stops the trainer and leaves an ``interrupted`` record with
the last iteration and checkpoint, the signal and ``train.log`` (checksummed), and the command's
exit status is 143 or 130; the same signal sent with a stop request (as ``gait-watch
--stop-on-pass`` sends it) leaves an ``ok`` record that says why, and exit status 0; a
trainer that crashes or is killed leaves a ``failed`` record with its last lines.
``--resume-from RUN_FOLDER`` takes the folder's last checkpoint, refuses an unreadable one in
one line (naming the one before) and creates nothing then, and the new record names the run it
continues.

Slow (the issue's tiny training, ``microduck train --num-envs 8 --iterations 40``, on the CPU,
in real processes): stopped with SIGINT, with SIGTERM and with SIGKILL; the last is ``stale``
for ``records verify`` until ``--fix`` marks it interrupted; then the SIGTERM run is resumed
from its folder. The trainings, the verify calls and the resume are made once per build
(tests/suite_memo.py): a second run of the suite with nothing changed asserts on what the
first one left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import run_fakes
import suite_memo

from mjlab_microduck.cli import _common
from mjlab_microduck.cli import main as microduck
from mjlab_microduck.cli.train import main as train_cli
from mjlab_microduck.jobs import train
from mjlab_microduck.jobs.train import TrainRequest
from mjlab_microduck.runs import records, stop_request
from mjlab_microduck.runs.names import EXPERIMENT_NAME

SRC = Path(__file__).resolve().parents[2] / "codes" / "practices" / "amd" / "microduck-rl" / "src"

# The stand-in trainer: rsl_rl's iteration header every 50 ms, a checkpoint every 2 iterations
# in mjlab's log tree, its pid in trainer.pid; MODE=crash exits 3, MODE=kill SIGKILLs itself.
TRAINER = textwrap.dedent(f"""
    import os, pathlib, signal, sys, time
    mode = os.environ.get("FAKE_TRAINER_MODE", "loop")
    pathlib.Path("trainer.pid").write_text(str(os.getpid()))
    log_dir = pathlib.Path("logs/rsl_rl/{EXPERIMENT_NAME}/2026-01-02_03-04-05_fake")
    log_dir.mkdir(parents=True)
    for it in range(10_000):
        print(f"   Learning iteration {{it}}/40   ", flush=True)
        if it % 2 == 0:
            (log_dir / f"model_{{it}}.pt").write_bytes(b"weights")
        if mode == "crash" and it == 3:
            print("RuntimeError: boom", flush=True)
            sys.exit(3)
        if mode == "kill" and it == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.05)
""")


class SignalAt:
    """The trainer's output stream; sends ``signum`` to this process when it shows iteration
    ``at`` (as Ctrl-C or ``kill`` would, while the driver is reading the trainer)."""

    def __init__(self, signum: int | None, at: int = 5):
        self.signum, self.at, self.lines, self.sent = signum, at, [], False

    def write(self, text):
        self.lines.append(text)
        if self.signum and not self.sent and f"iteration {self.at}/" in text:
            self.sent = True
            os.kill(os.getpid(), self.signum)

    def flush(self):
        pass


@pytest.fixture
def fake_trainer(monkeypatch):
    real = train._run_streaming

    def run_fake(command, run_dir, env, stream):
        return real([sys.executable, "-u", "-c", TRAINER], run_dir, env, stream)

    monkeypatch.setattr(train, "_run_streaming", run_fake)
    return monkeypatch


def _request(logs_root: Path, **fields) -> TrainRequest:
    fields = {"name": "stop", "num_envs": 8, "iterations": 40, "save_interval": 2,
              "device": "cpu", "logs_root": logs_root, "profile": "ci", **fields}  # fmt: skip
    return TrainRequest(**fields)


def _pid_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


# ----------------------------------------------------------------------------- fast


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_the_trainer_and_records_the_run_interrupted(
    fake_trainer, tmp_path, capsys, signum, status
):
    name = signal.Signals(signum).name
    run_dir, record = train.run(_request(tmp_path / "logs"), stream=SignalAt(signum))
    assert _pid_gone(int((run_dir / "trainer.pid").read_text())), "the trainer outlived the run"
    on_disk = records.load_record(run_dir)
    assert on_disk == record
    assert (on_disk.status, on_disk.signal) == ("interrupted", name)
    last = train.last_checkpoint(run_dir)
    summary = on_disk.summary
    assert summary["last_iteration"] >= 5 and summary["last_checkpoint"] == last.name
    assert summary["last_checkpoint_iteration"] == int(last.stem.split("_")[1]) >= 4
    assert on_disk.error == (
        f"interrupted by {name} at iteration {summary['last_iteration']}, "
        f"last checkpoint {last.name}"
    )
    assert on_disk.finished_at and on_disk.wall_seconds > 0
    assert on_disk.process.pid == os.getpid()
    # No TensorBoard events from the stand-in, so no scalars; the log is listed and intact.
    assert on_disk.scalars_csv is None
    assert [a.path for a in on_disk.artifacts] == [train.TRAIN_LOG]
    records.verify_artifacts(on_disk, run_dir)
    log = (run_dir / train.TRAIN_LOG).read_text()
    assert f"Learning iteration {summary['last_iteration']}/40" in log
    if signum == signal.SIGINT:  # the trainer's own last words are kept
        assert "KeyboardInterrupt" in log
    assert _common.finish_run("microduck train", run_dir, on_disk) == status
    assert capsys.readouterr().err == f"microduck train: {on_disk.error}\n"
    assert microduck(["records", "verify", str(run_dir)]) == 0
    assert capsys.readouterr().out.endswith("ok (train, interrupted)\n")


class AskStopAt(SignalAt):
    """At iteration ``at``, asks the run under ``logs`` to stop as ``gait-watch --stop-on-pass``
    does: the stop request in its folder, then SIGTERM to the process its record names (this
    one, the driver)."""

    def __init__(self, logs: Path, at: int = 5):
        super().__init__(None, at)
        self.logs, self.asked = logs, False

    def write(self, text):
        super().write(text)
        if not self.asked and f"iteration {self.at}/" in text:
            self.asked = True  # the signal to this process raises inside request_stop
            (run_dir,) = self.logs.iterdir()
            stop_request.request_stop(run_dir, "model_4 passed the gait test (g1)", by="a test")


def test_a_stop_request_ends_the_run_ok_and_says_why(fake_trainer, tmp_path, capsys):
    stream = AskStopAt(tmp_path / "logs")
    run_dir, record = train.run(_request(tmp_path / "logs"), stream=stream)
    assert stream.asked
    assert _pid_gone(int((run_dir / "trainer.pid").read_text())), "the trainer outlived the run"
    on_disk = records.load_record(run_dir)
    assert on_disk == record
    assert (on_disk.status, on_disk.signal, on_disk.error) == ("ok", None, None)
    summary = on_disk.summary
    said = summary[stop_request.SUMMARY_KEY]
    assert said == "model_4 passed the gait test (g1) (asked by a test)"
    assert summary["last_iteration"] >= 5
    assert summary["last_checkpoint"] == train.last_checkpoint(run_dir).name
    records.verify_artifacts(on_disk, run_dir)
    assert _common.finish_run("microduck train", run_dir, on_disk) == 0
    out = capsys.readouterr().out
    assert out.endswith(f"stopped early: {said}\n")
    # Asked again once it has ended: nothing is written or sent.
    (run_dir / stop_request.FILENAME).unlink()
    assert stop_request.request_stop(run_dir, "again", by="a test").endswith("already ended (ok)")
    assert not (run_dir / stop_request.FILENAME).exists()


@pytest.mark.parametrize(("mode", "said"), [("crash", "exited with status 3"),
                                            ("kill", "was killed by SIGKILL")])  # fmt: skip
def test_a_trainer_that_dies_leaves_a_failed_record_with_its_last_lines(
    fake_trainer, tmp_path, mode, said
):
    fake_trainer.setenv("FAKE_TRAINER_MODE", mode)
    run_dir, record = train.run(_request(tmp_path / "logs"), stream=SignalAt(None))
    assert record.status == "failed" and record.signal is None
    assert record.error.startswith(f"RuntimeError: mjlab train {said}: ")
    assert "Learning iteration 3/40" in record.error
    if mode == "crash":
        assert record.error.endswith("RuntimeError: boom")
    assert records.load_record(run_dir) == record


def test_resume_from_a_run_folder_takes_its_last_checkpoint_by_iteration(tmp_path):
    run_dir = run_fakes.train_run(tmp_path, iterations=(0, 5, 10))
    assert train.resume_checkpoint(run_dir).name == "model_10.pt"  # 10 after 5, not "1" < "5"
    assert train.resume_checkpoint(train.last_checkpoint(run_dir)) == train.last_checkpoint(run_dir)
    assert train.run_of_checkpoint(train.last_checkpoint(run_dir)) == run_dir.resolve()


def test_an_unreadable_last_checkpoint_names_the_one_before(tmp_path):
    run_dir = run_fakes.train_run(tmp_path, iterations=(0, 5), torn=10)
    with pytest.raises(ValueError) as info:
        train.resume_checkpoint(run_dir)
    log_dir = train.find_mjlab_log_dir(run_dir)
    message = str(info.value)
    assert message.startswith(f"--resume-from {log_dir / 'model_10.pt'}: unreadable checkpoint (")
    assert message.endswith(f"; resume from the one before: --resume-from {log_dir / 'model_5.pt'}")
    assert "\n" not in message


@pytest.mark.parametrize(("make", "fragment"), [
    (lambda root: run_fakes.train_run(root, torn=10), "model_10.pt: unreadable checkpoint"),
    (lambda root: run_fakes.train_run(root, iterations=()), "no checkpoint in a training run"),
    (lambda root: (root.mkdir(parents=True), root)[1], "no checkpoint in a training run folder"),
    (lambda root: root / "nowhere", "no such checkpoint or run folder"),
])  # fmt: skip
def test_cli_resume_from_a_folder_it_cannot_use_is_one_line_exit_2_nothing_created(
    tmp_path, capsys, make, fragment
):
    source = make(tmp_path / "runs")
    before = sorted(p for p in tmp_path.rglob("*"))
    logs = tmp_path / "logs"
    assert train_cli(["--resume-from", str(source), "--logs-root", str(logs)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("microduck train: --resume-from ")
    assert fragment in err
    assert not logs.exists() and sorted(p for p in tmp_path.rglob("*")) == before


def test_the_resumed_record_points_to_the_run_it_continues(fake_trainer, tmp_path):
    source = run_fakes.train_run(tmp_path / "runs", iterations=(0, 5))
    fake_trainer.setenv("FAKE_TRAINER_MODE", "crash")  # the config is what this is about
    run_dir, record = train.run(_request(tmp_path / "logs", resume_from=source),
                                stream=SignalAt(None))  # fmt: skip
    checkpoint = train.find_mjlab_log_dir(source) / "model_5.pt"
    assert record.config["resume_from"] == str(checkpoint)
    assert record.config["resume_from_iteration"] == 5
    assert record.config["continues_run"] == "20260102T030405Z_drv"
    assert record.config["continues_run_dir"] == str(source.resolve())


# ----------------------------------------------------------------------------- slow, real


def _microduck_env() -> dict:
    path = os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])
    return dict(os.environ, MICRODUCK_PROFILE="ci", MICRODUCK_HEARTBEAT_S="2", PYTHONPATH=path)


# `microduck` in a fresh process, from this checkout's source.
MICRODUCK = (sys.executable, "-c", "from mjlab_microduck.cli import console_main; console_main()")


class Training:
    """``microduck train --num-envs 8 --iterations 40`` in its own process, output to a file."""

    ARGS = ("--num-envs", "8", "--iterations", "40", "--save-interval", "5", "--device", "cpu")

    def __init__(self, logs: Path, name: str, *extra: str):
        self.logs, self.name = logs, name
        logs.mkdir(parents=True, exist_ok=True)
        self.out = logs / f"{name}.out"
        self.proc = subprocess.Popen(
            [*MICRODUCK, "train", *self.ARGS, "--name", name,
             "--logs-root", str(logs), *extra],
            stdout=self.out.open("w"), stderr=subprocess.STDOUT, env=_microduck_env(),
            # A shell's background job starts with SIGINT ignored, and an ignored signal stays
            # ignored (stopping.py); the SIGINT test needs it to arrive.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip

    @property
    def run_dir(self) -> Path | None:
        found = sorted(self.logs.glob(f"*_{self.name}"))
        return found[0] if found else None

    def wait_for(self, ready, timeout: float = 900.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.out.read_text()[-3000:]
            if self.run_dir is not None and ready(self.run_dir):
                return
            time.sleep(0.5)
        raise AssertionError(f"{self.name}: not ready after {timeout} s")

    def stop(self, signum: int) -> int:
        self.proc.send_signal(signum)
        return self.proc.wait(timeout=180)


def _has_checkpoint(iteration: int):
    def ready(run_dir: Path) -> bool:
        last = train.last_checkpoint(run_dir)
        return last is not None and int(last.stem.split("_")[1]) >= iteration

    return ready


def _heartbeat_saw_a_checkpoint(run_dir: Path) -> bool:
    try:
        return "last_checkpoint" in records.load_record(run_dir).summary
    except records.RecordError:
        return False


def _processes_in(run_dir: Path) -> list[int]:
    """Processes whose working directory is ``run_dir`` (the trainer runs there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if Path(os.readlink(entry / "cwd")) == run_dir.resolve():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@dataclass(frozen=True)
class Stopped:
    """One stopped training as the fixture left it: its run folder, the driver's exit status
    and pid, its output file and its record as it was the moment the driver ended."""

    run_dir: Path
    returncode: int
    pid: int
    out: Path
    record_at_stop: dict


STOPS = {"int": "sigint", "term": "sigterm", "kill": "sigkill"}


def _stop_three(folder: Path) -> None:
    """Three tiny trainings at once (two cores: their ~10 s imports overlap), each stopped as
    soon as it has what its test needs: SIGINT after the first checkpoint, SIGKILL once a
    heartbeat has reported a checkpoint, SIGTERM after the second. ``stopped.json`` says how
    each ended."""
    logs = folder / "logs"
    runs = {key: Training(logs, name) for key, name in STOPS.items()}
    try:
        runs["int"].wait_for(_has_checkpoint(0))
        runs["int"].stop(signal.SIGINT)
        runs["kill"].wait_for(_heartbeat_saw_a_checkpoint)
        runs["kill"].stop(signal.SIGKILL)
        runs["term"].wait_for(_has_checkpoint(5))
        runs["term"].stop(signal.SIGTERM)
    finally:
        for run in runs.values():
            if run.proc.poll() is None:
                run.proc.kill()
                run.proc.wait()
    ended = {key: {"run_dir": str(run.run_dir.relative_to(folder)), "pid": run.proc.pid,
                   "returncode": run.proc.returncode, "out": str(run.out.relative_to(folder)),
                   "record_at_stop": json.loads(records.record_path(run.run_dir).read_text())}
             for key, run in runs.items()}  # fmt: skip
    (folder / "stopped.json").write_text(json.dumps(ended))


@pytest.fixture(scope="module")
def stopped() -> dict[str, Stopped]:
    """The three stopped trainings, made once per build (tests/suite_memo.py): a second run of
    the suite with nothing changed checks the same folders and exit statuses."""
    inputs = {"training": Training.ARGS, "stops": STOPS}
    folder = suite_memo.kept_folder("train_stopping", inputs, _stop_three, env=_microduck_env())
    ended = json.loads((folder / "stopped.json").read_text())
    return {key: Stopped(folder / e["run_dir"], e["returncode"], e["pid"], folder / e["out"],
                         e["record_at_stop"]) for key, e in ended.items()}  # fmt: skip


def _kept_microduck(name: str, *args: str) -> subprocess.CompletedProcess:
    """``microduck *args`` made once per build, as the trainings it reads (suite_memo.run);
    ``name`` tells apart two identical command lines run at different moments."""
    return suite_memo.run(name, [*MICRODUCK, *args], env=_microduck_env())


def _check_interrupted(run: Stopped, status: int, signal_name: str) -> records.RunRecord:
    assert run.returncode == status, run.out.read_text()[-3000:]
    record = records.load_record(run.run_dir)
    last = train.last_checkpoint(run.run_dir)
    assert (record.status, record.signal) == ("interrupted", signal_name)
    assert record.summary["last_checkpoint"] == last.name
    assert record.summary["last_checkpoint_iteration"] == int(last.stem.split("_")[1])
    assert record.error.startswith(f"interrupted by {signal_name} at iteration ")
    assert record.error.endswith(f"last checkpoint {last.name}")
    assert record.finished_at is not None and record.wall_seconds > 0
    records.verify_artifacts(record, run.run_dir)
    assert {a.path for a in record.artifacts} >= {train.TRAIN_LOG}
    assert _processes_in(run.run_dir) == [], "the trainer outlived its driver"
    # stdout (a file, flushed at exit) and stderr share the file: the line is there, not last.
    assert f"microduck train: {record.error}" in run.out.read_text().splitlines()
    return record


@pytest.mark.slow
def test_sigint_records_the_run_interrupted_and_exits_130(stopped):
    run = stopped["int"]
    _check_interrupted(run, 130, "SIGINT")


@pytest.mark.slow
def test_sigterm_records_the_run_interrupted_with_its_scalars_and_exits_143(stopped):
    run = stopped["term"]
    record = _check_interrupted(run, 143, "SIGTERM")
    assert record.summary["last_checkpoint_iteration"] >= 5
    assert record.summary["checkpoints"].startswith("model_0.pt,model_5.pt")
    # TensorBoard's events flushed so far became scalars.csv, listed with its checksum.
    assert record.scalars_csv == records.SCALARS_FILENAME
    assert record.summary["iterations"] >= 1 and record.summary["transitions"] > 0
    assert _kept_microduck("verify_sigterm", "records", "verify", str(run.run_dir)).returncode == 0


@pytest.mark.slow
def test_a_sigkilled_run_is_stale_until_verify_fix_marks_it_interrupted(stopped):
    run = stopped["kill"]
    assert run.returncode == -signal.SIGKILL
    record = records.parse_record(run.record_at_stop, "the record when the driver died")
    assert record.status == "running" and record.process.pid == run.pid
    assert record.summary["last_checkpoint"].startswith("model_")  # from a heartbeat
    # Orphaned, the trainer dies at its next line of output (a broken pipe).
    deadline = time.monotonic() + 120
    while _processes_in(run.run_dir) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _processes_in(run.run_dir) == []

    where = run.run_dir / records.RECORD_FILENAME
    # verify, verify --fix, verify again: kept with the trainings, each under its own name.
    found = _kept_microduck("verify_stale", "records", "verify", str(run.run_dir))
    assert found.returncode == 1
    assert found.stderr.splitlines() == [
        f"{where}: stale (train, running): process {run.pid} on {record.process.host} is "
        "gone; `microduck records verify --fix` marks it interrupted"
    ]
    fixed = _kept_microduck("verify_fix", "records", "verify", "--fix", str(run.run_dir))
    assert fixed.returncode == 0, fixed.stderr
    record = records.load_record(run.run_dir)
    last = train.last_checkpoint(run.run_dir)
    assert fixed.stdout == f"{where}: fixed (train, stale -> interrupted): {record.error}\n"
    assert (record.status, record.signal) == ("interrupted", None)
    assert record.error.startswith(f"stale: process {run.pid} on ")
    assert f"last checkpoint {last.name}" in record.error
    assert record.summary["last_checkpoint"] == last.name
    assert record.finished_at >= record.process.heartbeat_at
    records.verify_artifacts(record, run.run_dir)
    again = _kept_microduck("verify_fixed", "records", "verify", str(run.run_dir))
    assert again.returncode == 0 and again.stdout.endswith("ok (train, interrupted)\n")


@pytest.mark.slow
def test_resume_from_the_stopped_runs_folder_continues_it(stopped):
    run = stopped["term"]
    stopped_record = records.load_record(run.run_dir)
    last = train.last_checkpoint(run.run_dir)
    # Into logs/ of its own kept folder (the command's working directory).
    done = _kept_microduck(
        "resume_sigterm", "train", "--resume-from", str(run.run_dir), "--num-envs", "8",
        "--iterations", "2", "--save-interval", "1", "--device", "cpu", "--name", "resumed",
        "--logs-root", "logs",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (new_dir,) = (done.cwd / "logs").iterdir()
    record = records.load_record(new_dir)
    assert record.status == "ok"
    assert record.config["continues_run"] == stopped_record.run_id
    assert record.config["continues_run_dir"] == str(run.run_dir.resolve())
    assert record.config["resume_from"] == str(last)
    start = stopped_record.summary["last_checkpoint_iteration"]
    assert record.config["resume_from_iteration"] == start
    assert (record.summary["first_iteration"], record.summary["last_iteration"]) == (
        start, start + 1)  # fmt: skip
    assert json.loads((new_dir / records.RECORD_FILENAME).read_text())["status"] == "ok"
