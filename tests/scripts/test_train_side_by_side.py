"""Tests for codes/practices/amd/microduck-rl/scripts/train_side_by_side.sh, with no GPU.

The ``microduck`` command is replaced (``MICRODUCK=``) by a stub that logs its argv and, for
``train``, makes the run folder a real training would make; the tests assert on what was
started with which arguments, and that bad input starts and creates nothing.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "codes/practices/amd/microduck-rl/scripts/train_side_by_side.sh"
TASK = "Mjlab-Velocity-Flat-MicroDuck-WalkerHeadingTuning"
STUB = """#!/usr/bin/env bash
echo "$*" >> "$STUB_LOG"
if [ "$1" = train ]; then
  while [ $# -gt 0 ]; do
    case $1 in --name) name=$2;; --logs-root) root=$2;; esac; shift
  done
  [ "$name" = warmup ] && [ -n "$STUB_WARMUP_FAILS" ] && exit 1
  mkdir -p "$root/stamp_$name"
fi
"""


def run(tmp_path: Path, *args: str, mps_control: bool = False,
        **settings: str) -> subprocess.CompletedProcess:
    """The script with the ``microduck`` stub; ``mps_control``: an ``nvidia-cuda-mps-control``
    on PATH that logs its argv to ``mps.log`` and starts nothing."""
    stub = tmp_path / "microduck"
    stub.write_text(STUB)
    stub.chmod(0o755)
    path = "/usr/bin:/bin"
    if mps_control:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        control = bin_dir / "nvidia-cuda-mps-control"
        control.write_text(f'#!/usr/bin/env bash\necho "$*" >> {tmp_path / "mps.log"}\n')
        control.chmod(0o755)
        path = f"{bin_dir}:{path}"
    env = dict(os.environ, MICRODUCK=str(stub), STUB_LOG=str(tmp_path / "calls.log"),
               PATH=path, **settings)  # fmt: skip
    return subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip


def calls(tmp_path: Path, expected: int) -> list[str]:
    log = tmp_path / "calls.log"
    for _ in range(100):  # the processes are detached: wait for them to log
        lines = log.read_text().splitlines() if log.exists() else []
        if len(lines) >= expected:
            return lines
        time.sleep(0.05)
    return lines


def test_three_seeds_train_side_by_side_and_one_watcher_tests_them(tmp_path):
    out = tmp_path / "walker"
    proc = run(tmp_path, TASK, "1000", str(out))
    assert proc.returncode == 0, proc.stderr
    lines = calls(tmp_path, 4)
    trains = sorted(line for line in lines if line.startswith("train"))
    assert len(trains) == 3
    for seed, line in zip((42, 43, 44), trains, strict=True):
        words = line.split()
        assert words[words.index("--name") + 1] == f"walker_heading_s{seed}"
        assert words[words.index("--seed") + 1] == str(seed)
        assert words[words.index("--task") + 1] == TASK
        assert words[words.index("--iterations") + 1] == "1000"
        assert words[words.index("--num-envs") + 1] == "4096"
    (watch,) = [line for line in lines if line.startswith("gait-watch")]
    assert watch.count(str(out / "runs")) == 3
    assert "--every 50" in watch and "--min-iteration 250" in watch and "--profile full" in watch
    assert "started 3 trainings" in proc.stdout


@pytest.mark.parametrize(("mps", "started"), [("1", True), ("0", False)])
def test_cuda_mps_is_started_unless_mps_is_0(tmp_path, mps, started):
    proc = run(tmp_path, TASK, "100", str(tmp_path / "walker"), "43", mps_control=True, MPS=mps)
    assert proc.returncode == 0, proc.stderr
    assert len([line for line in calls(tmp_path, 2) if line.startswith("train")]) == 1
    mps_log = tmp_path / "mps.log"
    assert (mps_log.read_text().split() if mps_log.exists() else []) == (["-d"] if started else [])
    assert ("CUDA MPS started" in proc.stdout) is started


def test_a_start_watcher_start_tests_the_same_checkpoints_beside_the_gait_watcher(tmp_path):
    out = tmp_path / "walker"
    proc = run(tmp_path, TASK, "600", str(out), START_WATCH="1", WATCH_FROM="200")
    assert proc.returncode == 0, proc.stderr
    watches = sorted(line for line in calls(tmp_path, 5) if line.startswith("gait-watch"))
    assert len(watches) == 2
    gait, start = sorted(watches, key=lambda line: "--start-test" in line)
    assert "--start-test" not in gait and f"--out {out / 'gait'}" in gait
    assert f"--out {out / 'start'}" in start and "--min-iteration 200" in start
    assert start.replace(" --start-test", "").replace(str(out / "start"), str(out / "gait")) == gait
    assert "start watcher started" in proc.stdout


def test_stop_on_pass_goes_to_the_gait_watcher_only(tmp_path):
    out = tmp_path / "walker"
    proc = run(tmp_path, TASK, "700", str(out), "43", STOP_ON_PASS="1", START_WATCH="1")
    assert proc.returncode == 0, proc.stderr
    lines = calls(tmp_path, 3)
    assert len([line for line in lines if line.startswith("train")]) == 1
    watches = [line for line in lines if line.startswith("gait-watch")]
    (gait,) = [line for line in watches if "--start-test" not in line]
    (start,) = [line for line in watches if "--start-test" in line]
    assert "--stop-on-pass" in gait and "--stop-on-pass" not in start
    assert "a training stops at its first pass" in proc.stdout


def test_watch_after_starts_the_gait_watcher_to_test_once_the_trainings_end(tmp_path):
    out = tmp_path / "walker"
    proc = run(tmp_path, TASK, "615", str(out), "43", WATCH_AFTER="1", WATCH_EVERY="25")
    assert proc.returncode == 0, proc.stderr
    (watch,) = [line for line in calls(tmp_path, 2) if line.startswith("gait-watch")]
    assert "--after-training" in watch and "--every 25" in watch
    assert "--stop-on-pass" not in watch
    assert "once the trainings have ended" in proc.stdout


def test_a_warm_up_training_fills_the_kernel_cache_before_the_trainings_start(tmp_path):
    out = tmp_path / "walker"
    proc = run(tmp_path, TASK, "600", str(out), WARM_KERNELS="1", NUM_ENVS="2048")
    assert proc.returncode == 0, proc.stderr
    lines = calls(tmp_path, 5)
    warmup = lines[0].split()  # it ends before any training starts
    assert warmup[0] == "train" and warmup[warmup.index("--name") + 1] == "warmup"
    assert warmup[warmup.index("--iterations") + 1] == "1"
    assert warmup[warmup.index("--num-envs") + 1] == "2048"
    assert warmup[warmup.index("--task") + 1] == TASK
    assert warmup[warmup.index("--logs-root") + 1] == str(out / "warmup")
    assert len([line for line in lines[1:] if line.startswith("train")]) == 3
    # The watcher watches the trainings only, not the warm-up.
    (watch,) = [line for line in lines if line.startswith("gait-watch")]
    assert "warmup" not in watch and watch.count(str(out / "runs")) == 3


def test_a_failed_warm_up_starts_no_training(tmp_path):
    out = tmp_path / "walker"
    proc = run(tmp_path, TASK, "600", str(out), WARM_KERNELS="1", STUB_WARMUP_FAILS="1")
    assert proc.returncode == 1 and "the warm-up training failed" in proc.stderr
    time.sleep(0.3)
    assert [line.split()[0] for line in calls(tmp_path, 1)] == ["train"]


def test_each_seed_resumes_from_its_own_last_checkpoint_or_run_folder(tmp_path):
    earlier = tmp_path / "carried"
    for seed, iterations in ((42, (375, 399)), (43, (50, 100))):
        folder = earlier / f"walker_heading_s{seed}"
        folder.mkdir(parents=True)
        for iteration in iterations:  # numeric order: model_100 comes after model_50
            (folder / f"model_{iteration}.pt").write_bytes(b"")
    (earlier / "20261205_walker_heading_s44").mkdir()  # an earlier call's training run folder
    out = tmp_path / "walker"
    proc = run(tmp_path, TASK, "300", str(out), RESUME_FROM=str(earlier))
    assert proc.returncode == 0, proc.stderr
    trains = sorted(line for line in calls(tmp_path, 4) if line.startswith("train"))
    resumed = {}
    for line in trains:
        words = line.split()
        resumed[words[words.index("--name") + 1]] = words[words.index("--resume-from") + 1]
    assert resumed == {
        "walker_heading_resume_s42": str(earlier / "walker_heading_s42/model_399.pt"),
        "walker_heading_resume_s43": str(earlier / "walker_heading_s43/model_100.pt"),
        "walker_heading_resume_s44": str(earlier / "20261205_walker_heading_s44"),
    }


@pytest.mark.parametrize("layout", ["missing", "no seed 44", "two for seed 44"])
def test_a_resume_without_one_folder_per_seed_starts_and_creates_nothing(tmp_path, layout):
    earlier = tmp_path / "carried"
    if layout != "missing":
        for seed in (42, 43):
            (earlier / f"walker_heading_s{seed}").mkdir(parents=True)
    if layout == "two for seed 44":
        (earlier / "a_walker_heading_s44").mkdir()
        (earlier / "b_walker_heading_s44").mkdir()
    out = tmp_path / "walker"
    proc = run(tmp_path, TASK, "300", str(out), RESUME_FROM=str(earlier))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("train_side_by_side.sh: RESUME_FROM")
    assert ("no such folder" if layout == "missing" else "for seed 44") in lines[0]
    assert not out.exists() and not (tmp_path / "calls.log").exists()


@pytest.mark.parametrize(
    ("settings", "message"),
    [({"START_WATCH": "yes"}, "START_WATCH must be 0 or 1"),
     ({"WARM_KERNELS": "2"}, "WARM_KERNELS must be 0 or 1"),
     ({"START_WATCH": "1", "WATCH_EVERY": "0"}, "START_WATCH=1 needs WATCH_EVERY > 0"),
     ({"STOP_ON_PASS": "on"}, "STOP_ON_PASS must be 0 or 1"),
     ({"STOP_ON_PASS": "1", "WATCH_EVERY": "0"}, "STOP_ON_PASS=1 needs WATCH_EVERY > 0"),
     ({"WATCH_AFTER": "yes"}, "WATCH_AFTER must be 0 or 1"),
     ({"WATCH_AFTER": "1", "WATCH_EVERY": "0"}, "WATCH_AFTER=1 needs WATCH_EVERY > 0"),
     ({"WATCH_AFTER": "1", "STOP_ON_PASS": "1"}, "with WATCH_AFTER=1 none runs while testing"),
     ({"MPS": "off"}, "MPS must be 0 or 1")],
)
def test_a_bad_watch_setting_starts_and_creates_nothing(tmp_path, settings, message):
    out = tmp_path / "walker"
    proc = run(tmp_path, TASK, "100", str(out), **settings)
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists() and not (tmp_path / "calls.log").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((TASK, "0"), "ITERATIONS must be a positive integer"),
        ((TASK, "100", "x"), "seeds must be integers"),
    ],
)
def test_bad_input_starts_and_creates_nothing(tmp_path, args, message):
    out = tmp_path / "walker"
    task, iterations, *seeds = args
    proc = run(tmp_path, task, iterations, str(out), *seeds)
    assert proc.returncode == 2 and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not out.exists() and not (tmp_path / "calls.log").exists()


def test_an_earlier_run_is_never_overwritten(tmp_path):
    out = tmp_path / "walker"
    out.mkdir()
    proc = run(tmp_path, TASK, "100", str(out))
    assert proc.returncode == 2 and "exists" in proc.stderr
    assert list(out.iterdir()) == []
