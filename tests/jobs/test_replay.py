"""Checkpoint replay and acceptance: metrics, bad input, MP4 and record, the published checkpoint.

What this proves, with the real mjlab on CPU:

* ``compute_metrics`` turns scripted trajectories into exactly the expected numbers
  (displacement along the first heading, body-frame velocity and its error, fell-like frames);
* bad input (missing, corrupt or ill-fitting checkpoint, frames < 1, unknown task, a bad run
  name) gives one line on stderr, exit status 2, and no run directory, MP4 or record; a failure
  after the run directory was created removes it again;
* a short replay writes an H.264 MP4 with one frame per control step and a record whose
  artifacts match their SHA-256;
* the published model_499 replayed with the book's protocol on CPU has no termination and
  never looks fallen, and the same checkpoint sinks through the floor with the fault on;
* the acceptance rules of chapter 6 (stable, walks, ranking) reproduce the original chapter's
  conclusion from its reported figures, and discovery from ``book/results`` finds the published
  checkpoints and their recorded replays.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import suite_memo
import torch

from mjlab_microduck.analysis import acceptance
from mjlab_microduck.book import replay_pages, results
from mjlab_microduck.cli import replay as replay_cli
from mjlab_microduck.compat import faults
from mjlab_microduck.jobs import replay
from mjlab_microduck.jobs.replay import ReplayError, ReplayRequest, compute_metrics
from mjlab_microduck.runs import records

REPO = Path(__file__).resolve().parents[2]
PKG = REPO / "codes/practices/amd/microduck-rl"
SCRIPT = PKG / "scripts/render_mjlab_checkpoint.py"
RESULTS = REPO / "book/results"
MODEL_499 = RESULTS / results.RECIPE_RUN_500 / "model_499.pt"
MODEL_1498 = RESULTS / results.RECIPE_RUN_1500 / "model_1498.pt"
DT = 0.02
# A GPU case is skipped with its reason on a CPU; the CPU case covers the same logic.
CPU_AND_GPU = [
    "cpu",
    pytest.param(
        "cuda:0",
        marks=[
            pytest.mark.gpu,
            pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU"),
        ],
    ),
]


@pytest.fixture(autouse=True)
def fault_off():
    faults.disable()
    yield
    faults.disable()


# ----------------------------------------------------------------------------- metrics


def scripted(n: int, heading: float, speed: float, lateral: float = 0.0, **columns) -> pd.DataFrame:
    """A robot moving at ``speed`` along ``heading`` (and ``lateral`` to its left) for n frames."""
    t = np.arange(n) * DT
    fwd = np.array([math.cos(heading), math.sin(heading)])
    left = np.array([-math.sin(heading), math.cos(heading)])
    xy = np.outer(t * speed, fwd) + np.outer(t * lateral, left) + np.array([1.0, -2.0])
    frame = pd.DataFrame({
        "x": xy[:, 0], "y": xy[:, 1], "z": np.full(n, 0.11), "yaw": heading, "yaw0": heading,
        "vx_b": speed, "vy_b": lateral, "upright": np.ones(n), "done": np.zeros(n, dtype=bool),
    })  # fmt: skip
    for name, values in columns.items():
        frame[name] = values
    return frame


def test_metrics_of_a_straight_walk():
    m = compute_metrics(scripted(201, heading=0.0, speed=0.1), (0.15, 0.0), DT)
    assert m.frames == 201 and m.duration_s == pytest.approx(4.02)
    assert m.forward_displacement_m == pytest.approx(0.1 * 200 * DT)  # 200 intervals
    assert m.mean_forward_velocity_mps == pytest.approx(0.1)
    assert m.mean_abs_velocity_error_mps == pytest.approx(0.05)
    assert (m.done_count, m.fell_like_frames, m.fell_like_fraction) == (0, 0, 0.0)
    assert m.min_trunk_z_m == pytest.approx(0.11) and m.min_upright_proxy == 1.0


def test_drift_of_a_quarter_circle_with_sway():
    # A quarter circle of radius 0.5 m walked in 101 frames, heading crossing +pi (unwrapped).
    angle = np.linspace(0.0, math.pi / 2, 101)
    frame = scripted(101, heading=0.0, speed=0.1)
    frame["x"], frame["y"] = 0.5 * np.sin(angle), 0.5 * (1 - np.cos(angle))
    frame["yaw"] = np.angle(np.exp(1j * (angle + 3.0)))  # wraps from +pi to -pi on the way
    frame["vy_b"] = np.where(np.arange(101) % 2 == 0, 0.2, -0.2)
    drift = replay.drift_metrics(frame)
    assert drift["heading_change_rad"] == pytest.approx(math.pi / 2)
    assert drift["path_length_m"] == pytest.approx(0.5 * math.pi / 2, rel=1e-4)
    assert drift["straight_line_m"] == pytest.approx(0.5 * math.sqrt(2))
    assert drift["sideways_sway_mps"] == pytest.approx(0.2, rel=1e-3)
    with pytest.raises(ReplayError):
        replay.drift_metrics(frame.iloc[0:0])


def test_path_in_start_frame_turns_the_first_heading_forward():
    path = replay.path_in_start_frame(scripted(11, heading=math.pi / 2, speed=0.1, lateral=0.05))
    assert path["forward_m"].iloc[-1] == pytest.approx(0.1 * 10 * DT)
    assert path["left_m"].iloc[-1] == pytest.approx(0.05 * 10 * DT)
    assert (path["forward_m"].iloc[0], path["left_m"].iloc[0]) == (0.0, 0.0)


@pytest.mark.parametrize("heading", [math.pi / 2, -2.5, math.pi])
def test_displacement_is_measured_along_the_first_heading(heading):
    forward = compute_metrics(scripted(101, heading=heading, speed=0.2), (0.15, 0.0), DT)
    assert forward.forward_displacement_m == pytest.approx(0.2 * 100 * DT)
    # Sideways motion at the same speed moves the robot, but not forward.
    sideways = compute_metrics(
        scripted(101, heading=heading, speed=0.0, lateral=0.2), (0.15, 0.0), DT
    )
    assert sideways.forward_displacement_m == pytest.approx(0.0, abs=1e-12)
    assert sideways.mean_forward_velocity_mps == 0.0
    # Error is the norm of the planar error: (0.15, 0.2) -> 0.25.
    assert sideways.mean_abs_velocity_error_mps == pytest.approx(0.25)


def test_backwards_walk_has_negative_displacement_and_velocity():
    m = compute_metrics(scripted(51, heading=0.7, speed=-0.05), (0.15, 0.0), DT)
    assert m.forward_displacement_m == pytest.approx(-0.05 * 50 * DT)
    assert m.mean_forward_velocity_mps == pytest.approx(-0.05)
    assert m.mean_abs_velocity_error_mps == pytest.approx(0.2)


def test_fell_like_frames_and_terminations_are_counted():
    n = 10
    z = np.full(n, 0.11)
    upright = np.ones(n)
    done = np.zeros(n, dtype=bool)
    z[2] = 0.05  # low trunk
    upright[5] = 0.2  # on its side
    z[7], upright[7] = 0.0, 0.1  # both: still one frame
    z[8] = replay.FELL_TRUNK_Z_M  # exactly at the limit is not fallen
    done[[3, 7]] = True
    m = compute_metrics(
        scripted(n, heading=0.0, speed=0.0, z=z, upright=upright, done=done), (0.15, 0.0), DT
    )
    assert m.fell_like_frames == 3
    assert m.fell_like_fraction == pytest.approx(0.3)
    assert m.done_count == 2
    assert m.min_trunk_z_m == 0.0 and m.min_upright_proxy == pytest.approx(0.1)


def test_empty_trajectory_is_an_error():
    with pytest.raises(ReplayError, match="no frames"):
        compute_metrics(scripted(0, 0.0, 0.0), (0.15, 0.0), DT)


# ----------------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def bad_checkpoints(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bad")
    (folder / "corrupt.pt").write_bytes(os.urandom(256))
    torch.save({"something": 1}, folder / "no_policy.pt")
    data = torch.load(MODEL_499, map_location="cpu", weights_only=False)
    weight = data["actor_state_dict"]["mlp.0.weight"]
    # One more observation than the task provides: the first layer's in_features no longer fit.
    data["actor_state_dict"]["mlp.0.weight"] = torch.zeros(weight.shape[0], weight.shape[1] + 1)
    torch.save(data, folder / "wrong_shape.pt")
    return folder


def _stderr_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("case", "extra", "message"),
    [
        ("missing", [], r"checkpoint .*missing\.pt: no such file"),
        ("corrupt", [], r"checkpoint .*corrupt\.pt: not a readable torch file"),
        ("no_policy", [], r"no policy weights \(actor_state_dict\)"),
        ("wrong_shape", [], r"does not fit task Mjlab-Velocity-Flat-MicroDuck: size mismatch"),
        ("model_499", ["--frames", "0"], r"frames must be at least 1 \(got 0\)"),
        ("model_499", ["--task", "Mjlab-No-Such-Task"], r"unknown task 'Mjlab-No-Such-Task'"),
        ("model_499", ["--name", "bad name"], r"run name 'bad name'"),
        ("model_499", ["--device", "cuda:7"], r"device 'cuda:7'"),
    ],
    ids=["missing", "corrupt", "no-policy", "wrong-shape", "frames-0", "unknown-task",
         "bad-name", "bad-device"],
)  # fmt: skip
def test_bad_input_one_line_exit_2_nothing_written(
    case, extra, message, bad_checkpoints, tmp_path, capfd
):
    checkpoint = MODEL_499 if case == "model_499" else bad_checkpoints / f"{case}.pt"
    out = tmp_path / "out"
    capfd.readouterr()
    status = replay_cli.main([str(checkpoint), "--out", str(out), "--frames", "5", *extra])
    captured = capfd.readouterr()
    lines = _stderr_lines(captured.err)
    assert status == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith("microduck replay: ")
    assert re.search(message, lines[0]), lines[0]
    assert not out.exists(), "no run directory may be created for bad input"


def test_run_validates_before_creating_the_run_directory(tmp_path):
    request = ReplayRequest(checkpoint=MODEL_499, frames=0, video=False)
    with pytest.raises(ReplayError):
        replay.run(request, tmp_path / "out", "x", progress=False)
    assert not (tmp_path / "out").exists()


def test_a_failure_after_the_run_directory_exists_removes_it(tmp_path, monkeypatch):
    images = [np.zeros((16, 16, 3), dtype=np.uint8)] * 3
    monkeypatch.setattr(
        replay, "simulate", lambda request, progress=True: (scripted(3, 0.0, 0.1), images, DT)
    )

    def broken_encoder(path, images, fps):
        (path.parent / ".half-written").write_bytes(b"x")
        raise OSError("disk full")

    monkeypatch.setattr(replay, "write_mp4", broken_encoder)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="disk full"):
        replay.run(ReplayRequest(checkpoint=MODEL_499, frames=3), out, "x", progress=False)
    assert list(out.iterdir()) == []


@pytest.mark.slow
def test_cli_script_gives_one_line_for_a_checkpoint_that_does_not_fit(bad_checkpoints):
    """The thin script, in a fresh process: building the environment prints mjlab's warnings
    and Warp's driver notice on stderr, which must not bury the one line of a bad input."""
    env = dict(os.environ, PYTHONPATH=str(PKG / "src"))
    env.pop("PYTHONWARNINGS", None)
    # Made once per build (tests/suite_memo.py), in a folder of its own: the checkpoint is
    # copied there, and the run must leave no "o" beside it.
    proc = suite_memo.run(
        "replay_script_bad_checkpoint",
        [sys.executable, str(SCRIPT), "wrong_shape.pt", "--out", "o", "--frames", "5"],
        env=env, timeout=300, files={"wrong_shape.pt": bad_checkpoints / "wrong_shape.pt"},
    )  # fmt: skip
    assert proc.returncode == 2
    lines = _stderr_lines(proc.stderr)
    assert len(lines) == 1, lines
    assert lines[0].startswith("microduck replay: checkpoint ")
    assert "does not fit task Mjlab-Velocity-Flat-MicroDuck: size mismatch" in lines[0]
    assert not (proc.cwd / "o").exists()


# ----------------------------------------------------------------------------- real replays


def _video_codec_and_size(path: Path) -> tuple[str, str]:
    import imageio_ffmpeg

    probe = subprocess.run(
        [imageio_ffmpeg.get_ffmpeg_exe(), "-hide_banner", "-i", str(path)],
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    stream = next(line for line in probe.stderr.splitlines() if "Video:" in line)
    codec = stream.split("Video:", 1)[1].split()[0]
    size = re.search(r"(\d{2,5}x\d{2,5})", stream).group(1)
    pix_fmt = "yuv420p" if "yuv420p" in stream else "other"
    return codec, f"{size} {pix_fmt}"


@pytest.mark.slow
def test_short_replay_writes_h264_mp4_and_a_verified_record(tmp_path):
    import imageio_ffmpeg

    frames = 12
    request = ReplayRequest(checkpoint=MODEL_499, frames=frames, width=160, height=120)
    run_dir, record = replay.run(request, tmp_path, "short", progress=False)

    video = run_dir / replay.VIDEO_FILENAME
    assert imageio_ffmpeg.count_frames_and_secs(str(video)) == (frames, pytest.approx(0.24))
    assert _video_codec_and_size(video) == ("h264", "160x120 yuv420p")

    loaded = records.load_record(run_dir)
    assert loaded == record
    assert (loaded.kind, loaded.status) == ("replay", "ok")
    checked = records.verify_artifacts(loaded, run_dir)
    assert sorted(p.name for p in checked) == ["replay.mp4", "trajectory.csv"]
    assert {a.kind for a in loaded.artifacts} == {"video", "trajectory"}
    assert loaded.config["checkpoint_sha256"] == records.sha256_file(MODEL_499)
    assert loaded.config["shadows"] is False  # OSMesa on this CPU machine
    assert loaded.summary["frames"] == frames
    assert loaded.summary["duration_s"] == pytest.approx(frames * DT)
    trajectory = acceptance.load_trajectory(run_dir)
    assert len(trajectory) == frames
    assert sorted(p.name for p in run_dir.iterdir()) == [
        "record.json", "replay.mp4", "trajectory.csv"
    ]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("device", CPU_AND_GPU)
def test_published_model_499_stands_for_4_seconds(device):
    """The book's protocol: 200 frames, seed 42, lin_vel_x 0.15 m/s, no video."""
    request = ReplayRequest(checkpoint=MODEL_499, device=device, video=False)
    assert (request.frames, request.seed, request.lin_vel_x) == (200, 42, 0.15)
    trajectory, images, dt = replay.simulate(request, progress=False, memo=True)
    m = compute_metrics(trajectory, (request.lin_vel_x, request.lin_vel_y), dt)
    assert images == [] and dt == pytest.approx(DT)
    assert m.frames == 200 and m.duration_s == pytest.approx(4.0)
    assert m.done_count == 0
    assert m.min_trunk_z_m > 0.08
    assert m.fell_like_fraction == 0.0
    assert m.min_upright_proxy > 0.9
    assert acceptance.verdict(m.__dict__).stable


@pytest.mark.slow
@pytest.mark.parametrize("device", CPU_AND_GPU)
def test_the_published_recipe_checkpoint_walks_by_the_protocol(device):
    """#6's test and acceptance: the last checkpoint of the recipe run, replayed by the protocol
    (200 frames, seed 42, 0.15 m/s), walks at half the command or more without falling.

    Recorded on the H200 it went 0.088 m/s; on this project's CPU 0.087 m/s. Its earlier
    checkpoints stand (under 0.01 m in 4 s), and so would a policy that only stands.
    """
    request = ReplayRequest(checkpoint=MODEL_1498, device=device, video=False,
                            task=acceptance.RECIPE_TASK)
    # The replay chapter 6 makes of the same checkpoint: read from the replay memo in a build.
    trajectory, _, dt = replay.simulate(request, progress=False, memo=True)
    m = compute_metrics(trajectory, (request.lin_vel_x, request.lin_vel_y), dt)
    assert m.done_count == 0 and m.fell_like_fraction == 0.0
    assert m.mean_forward_velocity_mps >= acceptance.MIN_FORWARD_VELOCITY_MPS
    assert m.forward_displacement_m > 0.1
    assert acceptance.verdict(m.__dict__).walks


@pytest.mark.slow
def test_the_same_checkpoint_sinks_with_the_fault_on():
    request = ReplayRequest(
        checkpoint=MODEL_499, frames=50, video=False, frozen_broadphase=True,
        task="Mjlab-Velocity-Flat-MicroDuck-Unguarded",
    )  # fmt: skip
    trajectory, _, dt = replay.simulate(request, progress=False)
    m = compute_metrics(trajectory, (0.15, 0.0), dt)
    assert m.min_trunk_z_m < -1.0  # one second of free fall
    assert m.done_count == 0  # nothing in the unguarded task notices
    assert not faults.is_enabled()  # the replay switched its fault off again


# ----------------------------------------------------------------------------- acceptance rules


def summary(velocity=0.1, done=0, fell=0.0, error=0.1, z=0.11, upright=0.99) -> dict:
    return {
        "mean_forward_velocity_mps": velocity, "done_count": done, "fell_like_fraction": fell,
        "mean_abs_velocity_error_mps": error, "min_trunk_z_m": z, "min_upright_proxy": upright,
        "forward_displacement_m": velocity * 4,
    }  # fmt: skip


def test_verdict_stable_and_walking():
    # Walking means at least half the protocol's 0.15 m/s command: 0.08 walks, 0.07 does not.
    walks = acceptance.verdict(summary(velocity=0.08))
    assert (walks.stable, walks.walks) == (True, True)
    stands = acceptance.verdict(summary(velocity=0.07))
    assert (stands.stable, stands.walks) == (True, False)
    assert "does not walk" in stands.reason
    fell = acceptance.verdict(summary(velocity=0.3, fell=0.01))
    assert (fell.stable, fell.walks) == (False, False)
    ended = acceptance.verdict(summary(velocity=0.3, done=1))
    assert (ended.stable, ended.walks) == (False, False) and "1 termination" in ended.reason
    missing = acceptance.verdict({"mean_forward_velocity_mps": 0.3})
    assert not missing.stable


def test_ranking_prefers_stable_then_faster_then_more_accurate():
    rows = {
        "model_100.pt": summary(velocity=0.5, done=2),  # fast but falls
        "model_200.pt": summary(velocity=0.09, error=0.08),
        "model_300.pt": summary(velocity=0.09, error=0.07),  # same speed, better tracking
        "model_400.pt": summary(velocity=0.02),
    }
    assert acceptance.rank_checkpoints(rows) == [
        "model_300.pt", "model_200.pt", "model_400.pt", "model_100.pt"
    ]  # fmt: skip
    tie = {"model_1.pt": summary(), "model_2.pt": summary()}
    assert acceptance.rank_checkpoints(tie)[0] == "model_2.pt"  # later iteration


def test_rules_reproduce_the_reported_conclusion():
    rows = replay_pages.reference_rows()
    assert list(rows) == [
        "model_499.pt", "model_750.pt", "model_1000.pt", "model_1250.pt", "model_1498.pt"
    ]  # fmt: skip
    # The reported minima imply that no frame looked fallen.
    assert all(r["fell_like_fraction"] == 0.0 for r in rows.values())
    assert acceptance.rank_checkpoints(rows)[0] == "model_750.pt"
    assert not acceptance.verdict(rows["model_499.pt"]).walks  # stands but does not walk
    assert acceptance.verdict(rows["model_750.pt"]).walks
    assert not acceptance.verdict(rows["model_1498.pt"]).walks  # stable, not the best tracker
    table = replay_pages.reference_table()
    assert list(table.columns) == list(acceptance.TABLE_COLUMNS)
    assert set(table["fell-like fraction"]) == {"0 (implied by the minima)"}


def test_implied_fell_like_fraction_needs_both_minima_above_the_limits():
    assert acceptance.implied_fell_like_fraction(summary(z=0.09, upright=0.5)) == 0.0
    assert acceptance.implied_fell_like_fraction(summary(z=0.07, upright=0.99)) is None
    assert acceptance.implied_fell_like_fraction(summary(z=0.11, upright=0.3)) is None
    assert acceptance.implied_fell_like_fraction({}) is None


def test_device_comparison_shows_both_values_and_the_difference():
    live = {"model_1.pt": summary(velocity=0.1, z=0.11)}
    recorded = {"model_1.pt": summary(velocity=0.12, z=0.105), "model_2.pt": summary()}
    table = acceptance.device_comparison(live, recorded, "cpu", "gpu")
    assert list(table.index) == [("model_1.pt", "cpu"), ("model_1.pt", "gpu"),
                                 ("model_1.pt", "difference")]  # fmt: skip
    velocity = table["mean forward velocity (m/s)"]
    assert velocity.tolist() == pytest.approx([0.1, 0.12, 0.02])
    assert table["min trunk z (m)"].iloc[2] == pytest.approx(-0.005)
    agreement = replay_pages.agreement_table(live, recorded)
    assert list(agreement.index) == ["model_1.pt"] and bool(agreement.loc["model_1.pt", "agree"])
    assert agreement.loc["model_1.pt", "|Δ mean forward velocity| (m/s)"] == pytest.approx(0.02)
    differ = replay_pages.agreement_table(live, {"model_1.pt": summary(done=1)})
    assert not differ.loc["model_1.pt", "agree"]
    assert differ.loc["model_1.pt", "outcome, recorded"].startswith("1 terminations, not stable")
    assert replay_pages.format_table(table.iloc[[2]])["4 s displacement (m)"].iloc[0] == "0.0800"
    tiny = pd.DataFrame({"min upright": [-1e-7]})
    assert replay_pages.format_table(tiny)["min upright"].iloc[0] == "0.0000"  # never "-0.0000"


# ----------------------------------------------------------------------------- discovery


def test_published_checkpoints_come_from_recipe_training_records():
    published = acceptance.published_checkpoints(RESULTS)
    by_name = {c.name: c for c in published}
    assert "model_499.pt" in by_name
    assert by_name["model_499.pt"].run == results.RECIPE_RUN_500
    assert by_name["model_499.pt"].sha256 == records.sha256_file(MODEL_499)
    # The fault-injected runs of chapter 7 publish checkpoints too; they are not candidates.
    assert "model_79.pt" not in by_name and "model_14.pt" not in by_name
    assert [c.iteration for c in published] == sorted(c.iteration for c in published)


def test_recorded_replays_are_matched_to_their_checkpoint():
    published = {c.name: c for c in acceptance.published_checkpoints(RESULTS)}
    replays = acceptance.recorded_replays(RESULTS)
    found = acceptance.recorded_protocol_replay(published["model_499.pt"], replays)
    assert found is not None and found.where.name == "h200_forward_tracking_replay_model_499"
    # folded into the default preset's summary record, with its video
    assert found.folder == f"{results.RECIPE_REPLAYS}/h200_forward_tracking_replay_model_499"
    assert found.video is not None and found.video.is_file()
    assert found.record.summary["mean_forward_velocity_mps"] == pytest.approx(0.00066, abs=1e-5)
    by_name = {r.where.name: r for r in replays}
    # The faulted replay is not a protocol replay; the stock one replayed another checkpoint.
    assert not acceptance.is_protocol_replay(by_name["h200_replay_discarded_frozen"].record)
    assert not acceptance.replays_checkpoint(
        by_name["h200_replay_discarded_stock"].record, published["model_499.pt"]
    )
    table = acceptance.inventory(list(published.values()), replays, ["model_1750.pt"])
    assert table.loc["model_1750.pt", "published in"] == "not published yet"
    assert table.loc["model_750.pt", "published in"] == f"book/results/{results.RECIPE_RUN_1500}"
    recorded = table.loc["model_499.pt", "recorded protocol replay"]
    assert recorded == ("h200_forward_tracking_replay_model_499, a row of "
                        f"book/results/{results.RECIPE_REPLAYS} (NVIDIA H200, cuda)")


def test_checkpoint_hash_in_a_record_wins_over_the_file_name(tmp_path):
    published = {c.name: c for c in acceptance.published_checkpoints(RESULTS)}
    record = results.load_published("h200_forward_tracking_replay_model_499")[0]
    ckpt = published["model_499.pt"]
    other = record.model_copy(update={"config": {**record.config, "checkpoint_sha256": "0" * 64}})
    assert acceptance.replays_checkpoint(record, ckpt)  # by its hash
    legacy = record.model_copy(
        update={"config": {k: v for k, v in record.config.items() if k != "checkpoint_sha256"}}
    )
    assert acceptance.replays_checkpoint(legacy, ckpt)  # by name and run folder
    elsewhere = {**legacy.config, "checkpoint": "/x/y/model_499.pt"}
    moved = legacy.model_copy(update={"config": elsewhere})
    assert not acceptance.replays_checkpoint(moved, ckpt)  # same name, another run's folder
    assert not acceptance.replays_checkpoint(other, ckpt)  # the hash says another file
    same = record.model_copy(
        update={"config": {**record.config, "checkpoint": "/elsewhere/x.pt",
                           "checkpoint_sha256": ckpt.sha256}}
    )  # fmt: skip
    assert acceptance.replays_checkpoint(same, ckpt)


def test_a_changed_published_checkpoint_stops_discovery(tmp_path):
    root = tmp_path / "results"
    shutil.copytree(RESULTS / results.RECIPE_RUN_500, root / "run")
    (root / "run" / "model_499.pt").write_bytes(b"tampered")
    with pytest.raises(records.RecordError, match="model_499.pt"):
        acceptance.published_checkpoints(root)


def test_preset_outcomes_reduce_every_recorded_preset_by_the_rules():
    outcomes = acceptance.preset_outcomes(RESULTS)
    assert set(outcomes.index) == {"book", "upstream", "stepping", "gait_slow",
                                   "forward_tracking", "forward_tracking_low_air"}
    assert outcomes.loc["forward_tracking", "task"] == acceptance.RECIPE_TASK
    assert (outcomes["checkpoints replayed"] == 5).all()
    assert outcomes["stable"].to_dict() == {
        "book": 5, "upstream": 4, "gait_slow": 5, "stepping": 5, "forward_tracking": 5,
        "forward_tracking_low_air": 5}
    walker = outcomes.loc["forward_tracking"]
    assert walker["best checkpoint"] == "model_1498.pt" and walker["walks"] == "yes"
    assert walker["best mean forward velocity (m/s)"] == pytest.approx(0.0883, abs=1e-4)
    stepping = outcomes.loc["stepping"]
    assert stepping["best checkpoint"] == "model_750.pt" and stepping["walks"] == "no"
    assert stepping["best mean forward velocity (m/s)"] == pytest.approx(0.0701, abs=1e-4)
    assert stepping["largest 4 s displacement (m)"] > 0.2
    standing = outcomes.drop(index=["stepping", "forward_tracking"])
    assert (standing["largest 4 s displacement (m)"].abs() < 0.05).all()
    assert (standing["walks"] == "no").all()


def test_best_recorded_checkpoint_of_a_preset_follows_its_recorded_replays():
    from mjlab_microduck.tasks.tuning import BOOK, STEPPING
    from mjlab_microduck.tasks.velocity import preset_task_id

    best = acceptance.best_recorded_checkpoint(RESULTS, preset_task_id(STEPPING))
    assert (best.name, best.run) == ("model_750.pt", "h200_stepping_resume_1500")
    # folded with its run into the presets' summary record, this one checkpoint kept
    assert best.path == RESULTS / results.PRESET_HISTORY / best.run / best.name
    assert records.sha256_file(best.path) == best.sha256
    with pytest.raises(LookupError, match="BookTuning"):  # its run was made as the default task
        acceptance.best_recorded_checkpoint(RESULTS, preset_task_id(BOOK))


def test_publish_video_copies_under_book_extra(tmp_path):
    src = tmp_path / "clip.mp4"
    src.write_bytes(b"\x00\x00\x00\x18ftypmp42")
    url = replay_pages.publish_video(src, tmp_path, "ch06_test.mp4")
    assert url == "../media/ch06_test.mp4"
    assert (tmp_path / "book/_extra/media/ch06_test.mp4").read_bytes() == src.read_bytes()
    with pytest.raises(ValueError):
        replay_pages.publish_video(src, tmp_path, "../escape.mp4")
    html = replay_pages.video_html(url, caption="c")
    assert '<source src="../media/ch06_test.mp4" type="video/mp4">' in html
