"""Command schedules and the follow camera of the replay: the front page's walk-then-turn video.

What this proves:

* a schedule is written into the twist command's buffer at the frame it names (the trajectory's
  command columns switch at 5 s in ``WALK_THEN_TURN``), and the per-step check stops the replay
  when something else changes the buffer or the command the policy observes;
* bad schedules (empty, negative or unsorted start times, a first segment after 0 s, not four
  finite numbers) are one-line ``ReplayError``s raised before anything is created;
* the ``follow`` camera's look-at point goes where the trunk goes, also when the robot is
  moved a metre, and the ``fixed`` one stays at the start;
* a short real CPU replay of the published walker with the walk-then-turn schedule writes a
  playable H.264 MP4 with one frame per control step and a record that names the schedule.
"""

from __future__ import annotations

import math
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from mjlab_microduck.analysis import acceptance
from mjlab_microduck.book import results
from mjlab_microduck.cli import replay as replay_cli
from mjlab_microduck.compat import faults
from mjlab_microduck.jobs import replay
from mjlab_microduck.jobs.replay import ReplayError, ReplayRequest
from mjlab_microduck.runs import records

REPO = Path(__file__).resolve().parents[2]
MODEL_1498 = REPO / "book/results" / results.RECIPE_RUN_1500 / "model_1498.pt"
TASK = "Mjlab-Velocity-Flat-MicroDuck"
DT = 0.02


@pytest.fixture(autouse=True)
def fault_off():
    faults.disable()
    yield
    faults.disable()


# ----------------------------------------------------------------------------- no environment


def test_walk_then_turn_is_5_s_straight_then_5_s_turning():
    assert replay.WALK_THEN_TURN == ((0.0, 0.2, 0.0, 0.0), (5.0, 0.15, 0.0, 0.5))
    assert replay.WALK_THEN_TURN_FRAMES * DT == pytest.approx(10.0)
    assert replay.SCHEDULES["walk_then_turn"] == (replay.WALK_THEN_TURN, 500)
    assert replay.check_schedule(replay.WALK_THEN_TURN) == replay.WALK_THEN_TURN


def test_the_tour_commands_each_kind_of_gait_case_inside_the_walker_ranges():
    from mjlab_microduck.tasks import tuning

    assert replay.SCHEDULES["tour"] == (replay.TOUR, replay.TOUR_FRAMES)
    assert replay.check_schedule(replay.TOUR) == replay.TOUR
    assert replay.TOUR_FRAMES * DT == pytest.approx(12.0)
    kinds = {(vx != 0, vy != 0, wz != 0) for _, vx, vy, wz in replay.TOUR}
    # forward, sideways, turning in place, standing
    assert kinds == {(True, False, False), (False, True, False), (False, False, True),
                     (False, False, False)}  # fmt: skip
    ranges = tuning.WALKER_HEADING.commands
    for _, vx, vy, wz in replay.TOUR:
        assert ranges.lin_vel_x_m_s[0] <= vx <= ranges.lin_vel_x_m_s[1]
        assert ranges.lin_vel_y_m_s[0] <= vy <= ranges.lin_vel_y_m_s[1]
        assert ranges.ang_vel_z_rad_s[0] <= wz <= ranges.ang_vel_z_rad_s[1]


def test_without_a_schedule_the_fixed_command_is_a_one_segment_schedule():
    request = ReplayRequest(checkpoint=MODEL_1498, lin_vel_x=0.3, ang_vel_z=-0.2)
    assert request.segments() == ((0.0, 0.3, 0.0, -0.2),)
    assert request.camera == "follow"
    scheduled = ReplayRequest(checkpoint=MODEL_1498, schedule=replay.WALK_THEN_TURN)
    assert scheduled.segments() == replay.WALK_THEN_TURN


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ((), r"schedule is empty"),
        (((0.0, 0.2, 0.0, 0.0), (-1.0, 0.1, 0.0, 0.0)), r"segment 1 starts at -1 s: negative"),
        (((0.0, 0.2, 0.0, 0.0), (5.0, 0.1, 0.0, 0.0), (3.0, 0.1, 0.0, 0.5)),
         r"start times must increase: segment 2 starts at 3 s, segment 1 at 5 s"),
        (((0.0, 0.2, 0.0, 0.0), (0.0, 0.1, 0.0, 0.0)), r"start times must increase"),
        (((1.0, 0.2, 0.0, 0.0),), r"schedule starts at 1 s: the first segment must start at 0"),
        (((0.0, 0.2, 0.0),), r"segment 0: .* not four finite numbers"),
        (((0.0, float("nan"), 0.0, 0.0),), r"segment 0: .* not four finite numbers"),
        (((0.0, "fast", 0.0, 0.0),), r"segment 0: .* not four finite numbers"),
        (5.0, r"schedule 5.0: expected a sequence of segments"),
    ],
    ids=["empty", "negative", "unsorted", "repeated", "late-start", "three-values", "nan", "text",
         "number"],
)  # fmt: skip
def test_bad_schedule_is_one_line_before_anything_is_created(schedule, message, tmp_path):
    request = ReplayRequest(checkpoint=MODEL_1498, frames=5, schedule=schedule)
    out = tmp_path / "out"
    with pytest.raises(ReplayError, match=message) as caught:
        replay.run(request, out, "bad", progress=False)
    assert len(str(caught.value).splitlines()) == 1
    assert not out.exists()


def test_unknown_camera_is_refused_before_anything_is_created(tmp_path):
    request = ReplayRequest(checkpoint=MODEL_1498, frames=5, camera="orbit")  # type: ignore[arg-type]
    with pytest.raises(ReplayError, match=r"camera 'orbit': expected one of follow, fixed"):
        replay.run(request, tmp_path / "out", "bad", progress=False)
    assert not (tmp_path / "out").exists()


def test_cli_refuses_a_fixed_command_next_to_a_schedule(tmp_path, capfd):
    out = tmp_path / "out"
    capfd.readouterr()
    status = replay_cli.main(
        [str(MODEL_1498), "--schedule", "walk_then_turn", "--lin-vel-x", "0.3", "--out", str(out)]
    )
    lines = [line for line in capfd.readouterr().err.splitlines() if line.strip()]
    assert status == 2
    assert lines == [
        "microduck replay: --schedule sets the command; leave out --lin-vel-x, --lin-vel-y "
        "and --ang-vel-z"
    ]
    assert not out.exists()


def test_cli_schedule_and_camera_reach_the_request(monkeypatch, tmp_path):
    seen = {}

    def fake_run(request, out_root, name, progress=True):
        seen["request"] = request
        raise ReplayError("stop here")

    monkeypatch.setattr(replay, "run", fake_run)
    status = replay_cli.main(
        [str(MODEL_1498), "--schedule", "walk_then_turn", "--camera", "fixed",
         "--out", str(tmp_path)]
    )  # fmt: skip
    request = seen["request"]
    assert status == 2
    assert (request.schedule, request.frames, request.camera) == (
        replay.WALK_THEN_TURN,
        500,
        "fixed",
    )
    replay_cli.main(
        [str(MODEL_1498), "--frames", "7", "--lin-vel-x", "0.3", "--out", str(tmp_path)]
    )
    request = seen["request"]
    assert (request.schedule, request.frames, request.lin_vel_x, request.camera) == (
        None, 7, 0.3, "follow"
    )  # fmt: skip
    replay_cli.main([str(MODEL_1498), "--out", str(tmp_path)])
    assert (seen["request"].frames, seen["request"].lin_vel_x) == (200, 0.15)


def fake_twist():
    """A stand-in for mjlab's twist term: a buffer and a compute that counts its calls."""
    term = types.SimpleNamespace(vel_command_b=torch.zeros(1, 3), calls=[])
    term.compute = lambda dt: term.calls.append(dt)
    return term


def test_scheduled_command_switches_at_the_frame_of_its_start():
    term = fake_twist()
    command = replay.ScheduledCommand(term, replay.WALK_THEN_TURN, DT)
    assert command.first_frames == [0, 250]
    assert [command.segment(f) for f in (0, 249, 250, 499)] == [0, 0, 1, 1]
    # The manager calls compute during step k; the buffer then holds frame k+1's command.
    command.frame = 249
    term.compute(DT)
    assert term.calls == [DT]  # mjlab's own compute still runs, first
    assert term.vel_command_b.tolist() == [pytest.approx([0.15, 0.0, 0.5])]
    assert command.check(250, None) == (0.15, 0.0, 0.5)  # the schedule's own floats
    with pytest.raises(
        ReplayError, match=r"frame 249: .* holds \(0.15, 0, 0.5\), .* \(0.2, 0, 0\)"
    ):
        command.check(249, None)


def test_a_start_between_two_frames_applies_from_the_next_frame():
    command = replay.ScheduledCommand(fake_twist(), ((0.0, 0.1, 0, 0), (0.03, 0.2, 0, 0)), DT)
    assert command.first_frames == [0, 2]  # frame 1 starts at 0.02 s, frame 2 at 0.04 s


def test_check_catches_a_changed_buffer_and_a_changed_observation():
    term = fake_twist()
    command = replay.ScheduledCommand(term, ((0.0, 0.2, 0.0, 0.0),), DT, obs_slice=slice(1, 4))
    command.write(0)
    obs = {"actor": torch.tensor([[9.0, 0.2, 0.0, 0.0, 9.0]])}
    assert command.check(0, obs) == (0.2, 0.0, 0.0)
    obs["actor"][0, 3] = 0.5
    with pytest.raises(ReplayError, match=r"frame 0: the policy observed command \(0.2, 0, 0.5\)"):
        command.check(0, obs)
    term.vel_command_b[0, 0] = 0.0
    with pytest.raises(ReplayError, match="something else wrote it"):
        command.check(0, obs)


def test_metrics_of_a_schedule_use_each_frames_command():
    n = 10
    frame = pd.DataFrame({
        "x": np.arange(n) * 0.002, "y": 0.0, "z": 0.11, "yaw": 0.0, "yaw0": 0.0,
        "vx_b": 0.1, "vy_b": 0.0, "upright": 1.0, "done": False, "t_s": np.arange(n) * DT,
        "segment": [0] * 5 + [1] * 5, "cmd_vx": [0.2] * 5 + [0.1] * 5, "cmd_vy": 0.0,
        "cmd_wz": [0.0] * 5 + [0.5] * 5, "wz_b": [0.0] * 5 + [0.4] * 5,
    })  # fmt: skip
    metrics = replay.compute_metrics(frame, None, DT)
    assert metrics.mean_abs_velocity_error_mps == pytest.approx(0.05)  # 0.1 then 0
    seg = replay.segment_metrics(frame)
    assert seg == {
        "segment_0_start_s": 0.0, "segment_0_cmd_vx": 0.2, "segment_0_cmd_wz": 0.0,
        "segment_0_mean_vx_b_mps": 0.1, "segment_0_mean_wz_b_radps": 0.0,
        "segment_1_start_s": pytest.approx(0.1), "segment_1_cmd_vx": 0.1,
        "segment_1_cmd_wz": 0.5, "segment_1_mean_vx_b_mps": 0.1,
        "segment_1_mean_wz_b_radps": pytest.approx(0.4),
    }  # fmt: skip


def test_a_scheduled_replay_is_not_a_protocol_replay():
    record = results.load_published("h200_forward_tracking_replay_model_499")[0]
    assert acceptance.is_protocol_replay(record, task=record.config["task"])
    scheduled = record.model_copy(
        update={"config": {**record.config, "schedule": [[0.0, 0.15, 0.0, 0.0]],
                           "lin_vel_x": None, "lin_vel_y": None, "ang_vel_z": None}}
    )  # fmt: skip
    assert not acceptance.is_protocol_replay(scheduled, task=record.config["task"])


# ----------------------------------------------------------------------------- real replays


@pytest.mark.slow
def test_walk_then_turn_switches_the_command_at_5_s():
    """260 frames of the real schedule, no video: the command the policy acted on is the
    schedule's at every frame (the per-step check would stop the replay otherwise)."""
    request = ReplayRequest(
        checkpoint=MODEL_1498, task=TASK, frames=260, video=False, schedule=replay.WALK_THEN_TURN
    )
    # Made once per build (the replay memo): a second run of the suite reads it back.
    trajectory, images, dt = replay.simulate(request, progress=False, memo=True)
    assert images == [] and dt == pytest.approx(DT)
    commands = trajectory[list(replay.COMMAND_COLUMNS)].to_numpy()
    assert trajectory["t_s"].iloc[250] == pytest.approx(5.0)
    assert commands[:250].tolist() == [[0.2, 0.0, 0.0]] * 250
    assert commands[250:].tolist() == [[0.15, 0.0, 0.5]] * 10
    assert trajectory["segment"].tolist() == [0] * 250 + [1] * 10
    assert trajectory["done"].sum() == 0


@pytest.mark.parametrize("where", ["buffer", "observation"])
def test_a_command_changed_behind_the_schedules_back_stops_the_replay(where, monkeypatch, tmp_path):
    from mjlab.rl import RslRlVecEnvWrapper

    real_step = RslRlVecEnvWrapper.step
    steps = []

    def tampering_step(self, actions):
        obs, reward, dones, extras = real_step(self, actions)
        steps.append(1)
        if len(steps) == 4:  # during frame 3: the buffer then holds frame 4's command
            if where == "buffer":
                self.unwrapped.command_manager.get_term("twist").vel_command_b[0, 2] += 0.25
            else:
                obs["actor"][0, -1] += 0.25  # the command is the actor's last term
        return obs, reward, dones, extras

    monkeypatch.setattr(RslRlVecEnvWrapper, "step", tampering_step)
    request = ReplayRequest(checkpoint=MODEL_1498, task=TASK, frames=8, video=False)
    expected = "something else wrote it" if where == "buffer" else "the policy observed command"
    out = tmp_path / "out"
    with pytest.raises(ReplayError, match=rf"^frame 4: .*{expected}") as caught:
        replay.run(request, out, "tampered", progress=False)
    assert "(0.15, 0, 0.25)" in str(caught.value) and "says (0.15, 0, 0)" in str(caught.value)
    assert len(steps) == 4  # it stopped at the first frame that disagreed
    assert not out.exists()


def _trunk_xy(env) -> np.ndarray:
    return env.scene["robot"].data.root_link_pos_w[0, :2].cpu().numpy().copy()


def _teleport(env, dx: float, dy: float) -> None:
    robot = env.scene["robot"]
    state = torch.cat(
        [robot.data.root_link_pos_w, robot.data.root_link_quat_w,
         torch.zeros_like(robot.data.root_link_lin_vel_w),
         torch.zeros_like(robot.data.root_link_ang_vel_b)], dim=-1,
    )  # fmt: skip
    state[0, 0] += dx
    state[0, 1] += dy
    robot.write_root_state_to_sim(state)
    env.sim.forward()


@pytest.mark.slow
@pytest.mark.parametrize("camera", ["follow", "fixed"])
def test_camera_lookat_follows_a_displaced_robot_or_stays(camera):
    """Two frames 2 s apart at 96x72; between them the robot is moved 1 m and walks 2 s."""
    request = ReplayRequest(
        checkpoint=MODEL_1498, task=TASK, frames=100, width=96, height=72, camera=camera
    )
    with replay.replay_env(request) as (env, wrapped, policy, command):
        camera_of = replay._offscreen_camera(env)
        obs = wrapped.get_observations()
        first_image = env.render()
        first_lookat, first_trunk = camera_of.lookat.copy(), _trunk_xy(env)
        _teleport(env, 1.0, -0.5)
        for frame in range(request.frames):
            command.check(frame, obs)
            with torch.inference_mode():
                obs, *_ = wrapped.step(policy(obs))
        last_image = env.render()
        last_lookat, last_trunk = camera_of.lookat.copy(), _trunk_xy(env)
    assert first_image.shape == last_image.shape == (72, 96, 3)
    moved = last_trunk - first_trunk
    assert math.hypot(*moved) > 0.9
    # The look-at point starts on the robot either way (its centre of mass or its trunk).
    assert np.linalg.norm(first_lookat[:2] - first_trunk) < 0.03
    if camera == "follow":
        np.testing.assert_allclose(last_lookat[:2] - first_lookat[:2], moved, atol=0.03)
        assert np.linalg.norm(last_lookat[:2] - last_trunk) < 0.03
    else:
        np.testing.assert_array_equal(last_lookat, first_lookat)
        assert np.linalg.norm(last_lookat[:2] - last_trunk) > 0.9


@pytest.mark.slow
def test_walker_video_writes_a_playable_mp4_and_a_record(tmp_path):
    import imageio_ffmpeg

    frames = 50
    run_dir, record = replay.walker_video(
        MODEL_1498, task=TASK, out_root=tmp_path, name="walker", width=96, height=72,
        frames=frames, progress=False,
    )  # fmt: skip
    video = run_dir / replay.VIDEO_FILENAME
    assert video.stat().st_size > 0
    assert imageio_ffmpeg.count_frames_and_secs(str(video)) == (frames, pytest.approx(1.0))
    loaded = records.load_record(run_dir)
    assert loaded == record
    assert sorted(p.name for p in records.verify_artifacts(loaded, run_dir)) == [
        "replay.mp4", "trajectory.csv"
    ]  # fmt: skip
    assert loaded.config["schedule"] == [list(s) for s in replay.WALK_THEN_TURN]
    assert loaded.config["camera"] == "follow"
    assert loaded.config["lin_vel_x"] is None
    assert not acceptance.is_protocol_replay(loaded, task=TASK)
    assert loaded.summary["segment_0_cmd_vx"] == 0.2
    assert "segment_1_cmd_vx" not in loaded.summary  # 1 s reaches only the first segment
    assert loaded.summary["done_count"] == 0
    trajectory = acceptance.load_trajectory(run_dir)
    assert len(trajectory) == frames
    assert (trajectory["cmd_vx"] == 0.2).all()
    # Every frame, the camera looked at the robot (its centre of mass, within 3 cm of the trunk).
    offset = np.hypot(trajectory["cam_x"] - trajectory["x"], trajectory["cam_y"] - trajectory["y"])
    assert offset.max() < 0.03
    assert (
        math.hypot(
            trajectory["cam_x"].iloc[-1] - trajectory["cam_x"].iloc[0],
            trajectory["cam_y"].iloc[-1] - trajectory["cam_y"].iloc[0],
        )
        > 0.05
    )  # and it moved with the robot
