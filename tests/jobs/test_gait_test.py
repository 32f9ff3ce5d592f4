"""The gait-test job: bad input, held commands, the push, the record, and one real rollout.

What this proves:

* bad input (missing, corrupt or ill-fitting checkpoint, unknown task, case or profile, a bad
  device, no seeds, robots_per_case < 1, duration <= 0, a push case shorter than its push, a bad
  run name) gives one line on stderr, exit status 2 and no run directory;
* the held command raises when a running robot's command differs and ignores stopped robots;
  the shove is sideways in each trunk's heading frame, left for even robots, right for odd;
* a finished test writes robots.csv, paths.csv, verdict.json and a valid, world-readable
  gait_test record; a failure while writing leaves no directory; the CLI exits 0 on a pass and
  1 on a fail;
* (slow) the published model_1498 on CPU, 1 seed x 2 robots x 2 s: the command was checked at
  reset and after every step, nothing terminated, the stander stays within 5 cm, and the
  forward robots fall short of 0.8 x the command while turning off their heading.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from mjlab_microduck.analysis import gait
from mjlab_microduck.cli.gait_test import main as gait_cli
from mjlab_microduck.jobs import gait_test
from mjlab_microduck.jobs.gait_test import GaitTestError, GaitTestRequest
from mjlab_microduck.runs import records

REPO = Path(__file__).resolve().parents[2]
MODEL_1498 = REPO / "book/results/h200_forward_tracking_resume_1500/model_1498.pt"


# ----------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def bad_checkpoints(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    (folder / "corrupt.pt").write_bytes(os.urandom(256))
    data = torch.load(MODEL_1498, map_location="cpu", weights_only=False)
    weight = data["actor_state_dict"]["mlp.0.weight"]
    # One more observation than the task provides: the first layer no longer fits.
    data["actor_state_dict"]["mlp.0.weight"] = torch.zeros(weight.shape[0], weight.shape[1] + 1)
    torch.save(data, folder / "wrong_shape.pt")
    return folder


SHORT = ["--duration-s", "0.1", "--seeds", "0", "--robots-per-case", "1", "--cases", "stand"]


@pytest.mark.parametrize(
    ("checkpoint", "extra", "message"),
    [
        ("missing", [], r"checkpoint .*missing\.pt: no such file"),
        ("corrupt", [], r"checkpoint .*corrupt\.pt: not a readable torch file"),
        ("wrong_shape", [], r"does not fit task Mjlab-Velocity-Flat-MicroDuck: size mismatch"),
        ("model", ["--task", "Mjlab-No-Such-Task"], r"unknown task 'Mjlab-No-Such-Task'"),
        ("model", ["--device", "cuda:7"], r"device 'cuda:7'"),
        ("model", ["--device", "gpu"], r"device 'gpu': expected cpu, cuda or cuda:N"),
        ("model", ["--seeds"], r"seeds: give at least one seed"),
        ("model", ["--seeds", "1", "1"], r"seeds: each seed once"),
        ("model", ["--robots-per-case", "0"], r"robots_per_case must be at least 1 \(got 0\)"),
        ("model", ["--duration-s", "0"], r"duration_s must be a positive number \(got 0.0\)"),
        ("model", ["--duration-s", "-1"], r"duration_s must be a positive number"),
        ("model", ["--cases", "forward_9"], r"unknown case 'forward_9'; known: forward_0.1, "),
        ("model", ["--cases", "push"], r"case push shoves at 4 s: duration_s must exceed it"),
        ("model", ["--name", "bad name"], r"run name 'bad name'"),
    ],
    ids=["missing", "corrupt", "wrong-shape", "unknown-task", "absent-gpu", "bad-device",
         "no-seeds", "repeated-seed", "no-robots", "zero-duration", "negative-duration",
         "unknown-case", "short-push", "bad-name"],
)  # fmt: skip
def test_bad_input_one_line_exit_2_nothing_written(
    checkpoint, extra, message, bad_checkpoints, tmp_path, capfd
):
    path = MODEL_1498 if checkpoint == "model" else bad_checkpoints / f"{checkpoint}.pt"
    out = tmp_path / "out"
    capfd.readouterr()
    status = gait_cli(["--checkpoint", str(path), "--out", str(out), *SHORT, *extra])
    err = [line for line in capfd.readouterr().err.splitlines() if line.strip()]
    assert status == 2
    assert len(err) == 1, err
    assert err[0].startswith("microduck gait-test: ")
    assert re.search(message, err[0]), err[0]
    assert not out.exists(), "no run directory may be created for bad input"


def test_profiles_size_the_test():
    ci = gait_test.request_for_profile("ci", MODEL_1498)
    assert (ci.seeds, ci.robots_per_case, ci.device) == ((0, 1), 4, "cpu")
    full = gait_test.request_for_profile("full", MODEL_1498, task="T")
    assert (full.seeds, full.robots_per_case, full.device, full.task) == (
        (0, 1, 2, 3, 4), 16, "cuda:0", "T")  # fmt: skip
    with pytest.raises(GaitTestError, match="not a profile"):
        gait_test.request_for_profile("huge", MODEL_1498)


def test_the_start_test_asks_for_its_cases_and_sizes_over_the_flags_and_the_profile(
    tmp_path, monkeypatch
):
    asked = []
    monkeypatch.setattr(gait_test, "run_one", lambda request, progress=True: (
        asked.append(request) or synthetic_result(True)))  # fmt: skip
    out = tmp_path / "out"
    argv = ["--checkpoint", str(MODEL_1498), "--out", str(out), "--robots-per-case", "2",
            "--cases", "stand", "--profile", "ci", "--start-test"]  # fmt: skip
    assert gait_cli(argv) == 0
    (request,) = asked
    assert (request.cases, request.seeds, request.robots_per_case, request.duration_s,
            request.modes) == (("forward_0.3", "forward_0.4"), (0, 1, 2, 3), 256, 2.0,
                               ("heading",))  # fmt: skip
    assert request.device == "cpu" and request.checkpoint == MODEL_1498
    (run_dir,) = out.iterdir()
    assert run_dir.name.endswith("_start_model_1498")
    assert gait_test.as_start_test(request) == request  # idempotent


def test_selected_cases_follow_the_table_order():
    request = GaitTestRequest(checkpoint=MODEL_1498, cases=("stand", "forward_0.4", "push"))
    assert [c.name for c in gait_test.selected_cases(request)] == ["forward_0.4", "stand", "push"]
    assert gait_test.selected_cases(replace(request, cases=None)) == gait.CASES


# ----------------------------------------------------------------------------- held command


class FakeTerm:
    def __init__(self, envs: int):
        self.vel_command_b = torch.zeros(envs, 3)
        self.is_heading_env = torch.ones(envs, dtype=torch.bool)
        self.is_standing_env = torch.ones(envs, dtype=torch.bool)
        self.is_world_env = torch.ones(envs, dtype=torch.bool)
        self.is_forward_env = torch.ones(envs, dtype=torch.bool)

    @property
    def command(self):
        return self.vel_command_b


def test_held_command_resamples_to_the_target_and_checks_running_robots():
    term = FakeTerm(3)
    target = torch.tensor([[0.15, 0.0, 0.0], [0.0, 0.0, 0.5], [0.0, -0.15, 0.0]])
    held = gait_test._HeldCommand(term, target)
    term._resample_command(torch.tensor([0, 2]))  # what the env calls at a reset
    assert term.vel_command_b[[0, 2]].tolist() == target[[0, 2]].tolist()
    assert not term.is_standing_env[[0, 2]].any() and term.is_standing_env[1]
    held.write()
    held.check(torch.ones(3, dtype=torch.bool))
    term.vel_command_b[1, 2] = 0.0  # e.g. a standing env zeroed it
    with pytest.raises(
        gait_test.CommandNotHeldError,
        match=r"env 1 \(yaw-rate commanded\): command \[0.0, 0.0, 0.0\]",
    ):
        held.check(torch.ones(3, dtype=torch.bool))
    held.check(torch.tensor([True, False, True]))  # a stopped robot is not judged
    assert held.checks == 3


def test_heading_envs_aim_at_their_start_heading_and_only_their_yaw_rate_is_free():
    term = FakeTerm(3)
    term.heading_target = torch.zeros(3)
    term.robot = FakeRobot([0.3, -1.2, 2.0])
    target = torch.tensor([[0.15, 0.0, 0.0], [0.0, 0.0, 0.5], [0.0, -0.15, 0.0]])
    steered = torch.tensor([True, False, True])  # env 1 turns in place: yaw rate commanded
    held = gait_test._HeldCommand(term, target, steered)
    term._resample_command(torch.arange(3))
    assert not term.is_heading_env.any()  # until the reset pose is in
    held.steer_to_current_heading()
    assert term.is_heading_env.tolist() == [True, False, True]
    assert term.heading_target.tolist() == pytest.approx([0.3, 0.0, 2.0])
    running = torch.ones(3, dtype=torch.bool)
    term.vel_command_b[:, 2] = torch.tensor([0.1, 0.0, -0.2])  # the heading law's yaw rates
    held.write()
    assert term.vel_command_b[:, 2].tolist() == pytest.approx([0.1, 0.5, -0.2])
    held.check(running)
    term.vel_command_b[2, 1] = 0.0  # a linear command that moved is caught in a heading env too
    with pytest.raises(gait_test.CommandNotHeldError, match=r"env 2 \(a heading env\)"):
        held.check(running)
    held.write()
    term.is_heading_env[0] = False  # a heading env that stopped being one
    with pytest.raises(gait_test.CommandNotHeldError, match=r"env 0 \(a heading env\)"):
        held.check(running)


def test_blocks_run_every_case_steered_and_the_zero_yaw_cases_open_loop():
    request = GaitTestRequest(MODEL_1498, seeds=(3, 4), cases=("forward_0.2", "turn_left_0.5"))
    blocks = gait_test.blocks_of(request, gait_test.selected_cases(request))
    assert [(b.seed, b.mode, b.case.name) for b in blocks] == [
        (3, "heading", "forward_0.2"), (3, "heading", "turn_left_0.5"),
        (3, "open_loop", "forward_0.2"),
        (4, "heading", "forward_0.2"), (4, "heading", "turn_left_0.5"),
        (4, "open_loop", "forward_0.2"),
    ]  # fmt: skip
    one_mode = replace(request, modes=("open_loop",))
    assert len(gait_test.blocks_of(one_mode, gait_test.selected_cases(one_mode))) == 2


def test_the_task_comes_from_the_training_record_beside_the_checkpoint(tmp_path):
    assert (
        gait_test.task_of_checkpoint(MODEL_1498)
        == records.load_record(MODEL_1498.parent).config["task"]
    )
    assert gait_test.resolved(GaitTestRequest(MODEL_1498)).task == gait_test.task_of_checkpoint(
        MODEL_1498
    )
    assert gait_test.resolved(GaitTestRequest(MODEL_1498, task="T")).task == "T"
    # mjlab's log tree: the run's record four folders above the checkpoint.
    deep = tmp_path / "run" / "logs" / "rsl_rl" / "exp" / "stamp_run" / "model_5.pt"
    deep.parent.mkdir(parents=True)
    deep.write_bytes(b"")
    assert gait_test.task_of_checkpoint(deep) is None
    assert gait_test.resolved(GaitTestRequest(deep)).task == gait_test.TASK_ID
    record = records.load_record(MODEL_1498.parent).model_copy(
        update={"config": {"task": "Mjlab-Velocity-Flat-MicroDuck-WalkerTuning"}}
    )
    records.write_record(record, tmp_path / "run")
    assert gait_test.task_of_checkpoint(deep) == "Mjlab-Velocity-Flat-MicroDuck-WalkerTuning"


class FakeRobot:
    def __init__(self, heading):
        self.data = type("Data", (), {})()
        self.data.heading_w = torch.tensor(heading)
        self.data.root_link_vel_w = torch.zeros(len(heading), 6)
        self.data.root_link_vel_w[:, 0] = 0.1
        self.written = None

    def write_root_link_velocity_to_sim(self, velocity, env_ids):
        self.written = (velocity.clone(), env_ids.clone())


def test_push_is_sideways_in_the_heading_frame_and_alternates():
    evaluator = object.__new__(gait_test.GaitEvaluator)
    evaluator.robot = FakeRobot([0.0, 0.0, math.pi / 2, math.pi / 2, 1.0])
    # Env 0-3: the push case (robots 0..3); env 4 another case.
    evaluator.shove = torch.tensor([0.3 * gait.push_sign(r) for r in range(4)] + [0.0])
    evaluator._push(torch.tensor([True, True, True, False, True]))  # robot 3 has stopped
    velocity, ids = evaluator.robot.written
    assert ids.tolist() == [0, 1, 2]
    # Heading 0: left is +y; heading pi/2: left is -x. Existing velocity is kept.
    expected = [[0.1, 0.3], [0.1, -0.3], [-0.2, 0.0]]
    np.testing.assert_allclose(velocity[:, :2].numpy(), expected, atol=1e-6)


# ----------------------------------------------------------------------------- record


def synthetic_result(passed: bool) -> gait_test.GaitResult:
    """Two seeds of forward_0.15 and stand, walked perfectly or at half speed, in heading mode;
    open loop the same robots turn by 0.2 rad (forward) and 0.5 rad (stand) in 2 s."""
    frames = []
    for seed in (0, 1):
        for mode in gait.MODES:
            for case in (gait.CASE_BY_NAME["forward_0.15"], gait.CASE_BY_NAME["stand"]):
                t = np.arange(101)[:, None] * 0.02 * np.ones(2)
                speed = case.lin_vel_x * (1.0 if passed else 0.5)
                turn = 0.0 if mode == "heading" else (0.1 if case.speed else 0.25)
                traj = gait.Trajectory(
                    dt=0.02, x=speed * t, y=np.zeros_like(t), z=np.full_like(t, 0.11),
                    heading=turn * t, v_forward=np.full_like(t, speed),
                    v_left=np.zeros_like(t), yaw_rate=np.zeros_like(t), upright=np.ones_like(t),
                    contact_left=np.ones_like(t), contact_right=np.ones_like(t),
                    done=np.zeros(t.shape, bool), term_mask=np.zeros_like(t),
                )  # fmt: skip
                frames.append(gait.robot_metrics(traj, case).assign(seed=seed, mode=mode))
    robots = pd.concat(frames, ignore_index=True)
    paths = pd.DataFrame({"seed": 0, "case": "stand", "robot": 0, "step": [0, 5],
                          "t_s": [0.0, 0.1], "forward_m": 0.0, "left_m": 0.0})  # fmt: skip
    return gait_test.GaitResult(
        checkpoint=MODEL_1498, robots=robots, paths=paths, verdict=gait.verdict(robots),
        command_checks=202, steps=100, step_dt=0.02, num_envs=4, rollout_seconds=1.5,
    )  # fmt: skip


@pytest.mark.parametrize("passed", [True, False])
def test_cli_writes_a_complete_record_and_exits_by_the_verdict(
    passed, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(
        gait_test, "run_one", lambda request, progress=True: synthetic_result(passed)
    )
    out = tmp_path / "out"
    status = gait_cli(["--checkpoint", str(MODEL_1498), "--out", str(out), "--name", "t"])
    assert status == (0 if passed else 1)
    (run_dir,) = out.iterdir()
    record = records.load_record(run_dir)
    assert record.kind == "gait_test" and record.status == "ok"
    assert {a.path for a in record.artifacts} == {"robots.csv", "paths.csv", "verdict.json"}
    records.verify_artifacts(record, run_dir)
    assert record.config["checkpoint_sha256"] == records.sha256_file(MODEL_1498)
    assert record.config["cases"] == ["forward_0.15", "stand"]
    summary = record.summary
    assert summary["passed"] is passed
    assert (summary["cases"], summary["seeds"], summary["robots_per_case"]) == (2, 2, 2)
    assert summary["duration_s"] == 2.0 and summary["terminations"] == 0
    assert summary["command_checks"] == 202
    assert summary["worst_progress_ratio"] == pytest.approx(1.0 if passed else 0.5)
    assert summary["worst_yaw_ratio"] is None  # no turning case: null, never NaN
    # The open-loop turns (0.2 and 0.5 rad) are measured, not judged.
    assert summary["max_abs_heading_change_rad"] == 0.0
    assert summary["modes"] == "heading,open_loop"
    assert summary["open_loop_max_heading_change_rad"] == pytest.approx(0.5)
    assert summary["open_loop_max_median_heading_change_rad"] == pytest.approx(0.5)
    assert summary["open_loop_within_limits"] is False  # stand's median 0.5 > 0.3
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["passed"] is passed
    assert verdict["mode"] == "heading" and verdict["heading_control_stiffness"] == 0.5
    assert verdict["thresholds"]["min_progress_ratio_mean"] == 0.8
    assert len(verdict["failures"]) == summary["failed_conditions"] == (0 if passed else 4)
    drift = {row["case"]: row for row in verdict["open_loop_drift"]["table"]}
    assert drift["forward_0.15"]["max_abs_heading_change_rad"] == pytest.approx(0.2)
    assert drift["forward_0.15"]["median_within"] and drift["forward_0.15"]["worst_within"]
    assert not drift["stand"]["median_within"] and drift["stand"]["worst_within"]
    assert verdict["open_loop_drift"]["limits"]["max_abs_heading_change_rad"] == 0.6
    robots = pd.read_csv(run_dir / "robots.csv")
    assert len(robots) == 16 and set(robots["seed"]) == {0, 1}
    assert robots.groupby("mode").size().to_dict() == {"heading": 8, "open_loop": 8}
    for file in run_dir.iterdir():
        assert file.stat().st_mode & stat.S_IROTH, f"{file.name} is not world-readable"
    printed = capsys.readouterr().out
    assert ("PASSED" if passed else "FAILED") in printed and str(run_dir) in printed
    if not passed:
        assert "seed 1, forward 0.15 m/s: mean progress 0.50 × command < 0.80" in printed


def test_a_failure_while_writing_removes_the_run_directory(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(records, "write_record", broken)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="disk full"):
        gait_test.write_run(synthetic_result(True), GaitTestRequest(MODEL_1498), out, "x")
    assert list(out.iterdir()) == []


# ----------------------------------------------------------------------------- real rollout


@pytest.mark.slow
def test_published_checkpoint_on_cpu_circles_off_a_forward_command(tmp_path, capsys):
    out = tmp_path / "out"
    status = gait_cli([
        "--checkpoint", str(MODEL_1498), "--out", str(out), "--seeds", "0",
        "--robots-per-case", "2", "--duration-s", "2", "--cases", "forward_0.15", "stand",
    ])  # fmt: skip
    assert status == 1  # this checkpoint does not walk by the test
    (run_dir,) = out.iterdir()
    record = records.load_record(run_dir)
    records.verify_artifacts(record, run_dir)
    # No --task: the task of the training record beside the checkpoint.
    assert record.config["task"] == records.load_record(MODEL_1498.parent).config["task"]
    summary = record.summary
    # 2 cases x 2 robots in each mode, side by side.
    assert (summary["steps"], summary["num_envs"]) == (100, 8)
    assert summary["command_checks"] == 101  # after reset and after each of the 100 steps
    assert summary["terminations"] == 0
    robots = pd.read_csv(run_dir / "robots.csv")
    assert robots[["mode", "case", "robot"]].values.tolist() == [
        ["heading", "forward_0.15", 0], ["heading", "forward_0.15", 1],
        ["heading", "stand", 0], ["heading", "stand", 1],
        ["open_loop", "forward_0.15", 0], ["open_loop", "forward_0.15", 1],
        ["open_loop", "stand", 0], ["open_loop", "stand", 1],
    ]  # fmt: skip
    numbers = robots.drop(
        columns=[
            "mode",
            "case",
            "termination_term",
            "progress_m",
            "progress_ratio",
            "heading_speed_mps",
            "yaw_ratio",
            "termination_time_s",
        ]
    )
    assert np.isfinite(numbers.to_numpy(dtype=float)).all()
    heading, open_loop = (robots[robots["mode"] == m].reset_index(drop=True) for m in gait.MODES)
    forward = heading[heading["case"] == "forward_0.15"]
    stand = heading[heading["case"] == "stand"]
    assert np.isfinite(forward["progress_ratio"]).all()
    # Measured on this CPU: progress 0.45 and 0.41 of the command, heading -0.62 and -0.32 rad
    # in 2 s with the heading command steering it back; open loop -0.81 and -0.58 rad.
    # Standers moved 2-3 mm and turned under 0.07 rad.
    assert forward["progress_ratio"].mean() < gait.MIN_PROGRESS_RATIO_MEAN
    assert (stand["displacement_m"] < gait.MAX_STAND_DISPLACEMENT_M).all()
    assert forward["heading_change_rad"].abs().min() > 2 * stand["heading_change_rad"].abs().max()
    steered = forward["heading_change_rad"].abs().to_numpy()
    unsteered = open_loop.loc[forward.index, "heading_change_rad"].abs().to_numpy()
    assert (unsteered > 0.4).all() and (steered < unsteered).all()
    paths = pd.read_csv(run_dir / "paths.csv")
    assert len(paths) == 8 * 21  # steps 0, 5, ..., 100 per robot
    assert "seed 0, forward 0.15 m/s: mean progress" in capsys.readouterr().out


@pytest.mark.slow
def test_evaluate_many_reuses_one_environment_and_fits_every_checkpoint_first(
    bad_checkpoints, monkeypatch
):
    from mjlab.envs import ManagerBasedRlEnv

    built, rollouts = [], []
    original_init, original_rollout = ManagerBasedRlEnv.__init__, gait_test.GaitEvaluator._rollout

    def counting_init(self, *args, **kwargs):
        built.append(1)
        original_init(self, *args, **kwargs)

    def counting_rollout(self, bar):
        rollouts.append(self.env.num_envs)
        return original_rollout(self, bar)

    monkeypatch.setattr(ManagerBasedRlEnv, "__init__", counting_init)
    monkeypatch.setattr(gait_test.GaitEvaluator, "_rollout", counting_rollout)
    request = GaitTestRequest(MODEL_1498, seeds=(0, 1), robots_per_case=1, duration_s=0.1,
                              cases=("stand",))  # fmt: skip
    model_750 = MODEL_1498.with_name("model_750.pt")
    results = gait_test.evaluate_many([MODEL_1498, model_750], request, progress=False)
    # One rollout per checkpoint: both seeds and both modes side by side in 4 envs.
    assert len(built) == 1 and rollouts == [4, 4]
    assert [r.checkpoint.name for r in results] == ["model_1498.pt", "model_750.pt"]
    for result in results:
        assert (result.steps, result.num_envs, result.command_checks) == (5, 4, 6)
        assert result.robots[["seed", "mode", "case"]].values.tolist() == [
            [0, "heading", "stand"], [0, "open_loop", "stand"],
            [1, "heading", "stand"], [1, "open_loop", "stand"],
        ]  # fmt: skip
    # A checkpoint that does not fit, last in the list, fails before anything is rolled out.
    rollouts.clear()
    with pytest.raises(GaitTestError, match="wrong_shape.pt does not fit task"):
        gait_test.evaluate_many([MODEL_1498, bad_checkpoints / "wrong_shape.pt"], request)
    assert rollouts == []
