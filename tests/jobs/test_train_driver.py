"""The training driver with the real mjlab trainer on CPU, at tiny sizes.

One 2-iteration run from scratch and one 2-iteration resume of it are made once per module and
checked from every side: checkpoints, TensorBoard events, the exported CSV, the record, the
resume's file names (rsl_rl numbers a resume from the loaded iteration), slim checkpoints and
publishing. Failing runs must leave a ``failed`` record, never an ``ok`` one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pandas as pd
import pytest
import suite_memo
import torch

from mjlab_microduck.book.results import expected_checkpoints
from mjlab_microduck.cli.train import main
from mjlab_microduck.jobs import train
from mjlab_microduck.jobs.train import (
    RESUME_SOURCE_DIR,
    TRAIN_LOG,
    TrainRequest,
    find_mjlab_log_dir,
    list_checkpoints,
    publish,
    rollout_steps,
    run,
    slim_checkpoint,
)
from mjlab_microduck.runs import records, warp_log
from mjlab_microduck.tasks.rl_cfg import EXPERIMENT_NAME, STEPS_PER_ENV
from mjlab_microduck.tasks.velocity import TASK_ID

ENVS = 8
ITERATIONS = 2
REQUIRED_COLUMNS = (
    "Train/mean_reward",
    "Train/mean_episode_length",
    "Perf/total_fps",
    "Episode_Termination/nan_state",
    "Episode_Termination/below_ground",
    "Episode_Termination/fell_over",
    "Episode_Termination/time_out",
    "Curriculum/standing_envs/rel_standing_envs",
    "Curriculum/action_rate/weight",
    "Loss/value",
    "Loss/surrogate",
    "wall_time",
)


class Quiet:
    """A stream for the trainer's log that keeps it out of the test output."""

    def __init__(self):
        self.lines: list[str] = []

    def write(self, text):
        self.lines.append(text)

    def flush(self):
        pass


def _request(logs_root: Path, **kwargs) -> TrainRequest:
    fields = dict(name="drv", num_envs=ENVS, iterations=ITERATIONS, save_interval=1,
                  device="cpu", logs_root=logs_root, profile="ci")  # fmt: skip
    fields.update(kwargs)
    return TrainRequest(**fields)


@pytest.fixture(scope="module")
def logs_root(tmp_path_factory):
    return tmp_path_factory.mktemp("logs")


def _kept_run(name: str, request_fields: dict, before_run=None) -> tuple[Path, dict]:
    """One driver run into ``<kept folder>/logs``, made once per build (tests/suite_memo.py):
    the returned record (as JSON), the trainer's stream and what ``before_run`` noted."""

    def make(folder: Path) -> None:
        noted = before_run() if before_run else {}
        stream = Quiet()
        run_dir, record = run(_request(folder / "logs", **request_fields), stream=stream)
        (folder / "run.json").write_text(json.dumps({
            "run_dir": str(run_dir), "record": record.model_dump_json(),
            "stream": "".join(stream.lines), **noted}))  # fmt: skip

    inputs = {k: str(v) for k, v in asdict(_request(Path("."), **request_fields)).items()
              if k != "logs_root"}  # fmt: skip
    folder = suite_memo.kept_folder(name, inputs, make)
    made = json.loads((folder / "run.json").read_text())
    return folder / "logs", made


def _stream(text: str) -> Quiet:
    stream = Quiet()
    stream.lines.append(text)
    return stream


@pytest.fixture(scope="module")
def first_made():
    return _kept_run("train_driver_first", {})


@pytest.fixture(scope="module")
def runs_root(first_made):
    return first_made[0]


@pytest.fixture(scope="module")
def first(first_made):
    _, made = first_made
    record = records.RunRecord.model_validate_json(made["record"])
    assert record.status == "ok", record.error
    return Path(made["run_dir"]), record, _stream(made["stream"])


@pytest.fixture(scope="module")
def hooks_off():
    """The first run again with mjlab's own delay buffers and quaternion conversion (the
    sync-free hooks off, as ``MICRODUCK_SYNC_FREE_*=0`` in the environment turns them off)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MICRODUCK_SYNC_FREE_BUFFERS", "0")
        patch.setenv("MICRODUCK_SYNC_FREE_QUATS", "0")
        _, made = _kept_run("train_driver_hooks_off", {"name": "drv_hooks_off"})
    return records.RunRecord.model_validate_json(made["record"]), Path(made["run_dir"])


@pytest.fixture(scope="module")
def resumed(first):
    run_dir, record, _ = first
    checkpoint = find_mjlab_log_dir(run_dir) / str(record.summary["last_checkpoint"])
    _, made = _kept_run("train_driver_resumed",
                        {"name": "drv_resume", "resume_from": checkpoint},
                        lambda: {"before": records.sha256_file(checkpoint)})  # fmt: skip
    new_record = records.RunRecord.model_validate_json(made["record"])
    assert new_record.status == "ok", new_record.error
    return Path(made["run_dir"]), new_record, checkpoint, made["before"], _stream(made["stream"])


# ----------------------------------------------------------------------------- from scratch


@pytest.mark.slow
def test_run_writes_checkpoints_events_and_an_ok_record(first, runs_root):
    run_dir, record, stream = first
    assert run_dir.parent == runs_root and run_dir.name.endswith("_drv")
    log_dir = find_mjlab_log_dir(run_dir)
    assert [p.name for p in list_checkpoints(log_dir)] == ["model_0.pt", "model_1.pt"]
    assert list(log_dir.glob("events.out.tfevents.*")), "no TensorBoard event file"
    on_disk = records.load_record(run_dir)
    assert on_disk == record and on_disk.status == "ok" and on_disk.error is None
    assert on_disk.kind == "train" and on_disk.finished_at and on_disk.wall_seconds > 0
    assert on_disk.provenance.backend == "cpu" and on_disk.provenance.profile == "ci"
    assert on_disk.config["num_envs"] == ENVS and on_disk.config["iterations"] == ITERATIONS
    assert on_disk.config["sync_free_buffers"] is True  # the default; =0 in the env turns it off
    assert on_disk.config["sync_free_quats"] is True
    assert on_disk.config["manager_graphs"] == "auto"  # the default: on a CPU off, no report
    assert not any(key.startswith("manager_graphs.") for key in on_disk.summary)
    assert "--agent.logger" in on_disk.command and "tensorboard" in on_disk.command
    assert {a.path for a in on_disk.artifacts} == {records.SCALARS_FILENAME, TRAIN_LOG}
    records.verify_artifacts(on_disk, run_dir)
    # The trainer's iteration log reached the stream and train.log.
    shown = "".join(stream.lines)
    assert "Learning iteration 0/2" in shown and "Learning iteration 1/2" in shown
    assert "Learning iteration 1/2" in (run_dir / TRAIN_LOG).read_text()
    # Warp's module loads, counted from train.log: a start-up says whether it compiled them.
    # They are counted even under MJLAB_WARP_QUIET=1 (the build sets it), and not shown.
    loads = warp_log.count_log(run_dir / TRAIN_LOG)
    assert loads.loaded > 0 and 0 <= loads.compiled <= loads.loaded
    assert {key: on_disk.summary[key] for key in warp_log.SUMMARY_KEYS} == loads.summary()
    assert "initialized:" in (run_dir / TRAIN_LOG).read_text()
    assert "Module " not in shown and "initialized:" not in shown


@pytest.mark.slow
def test_the_sync_free_hooks_change_no_learned_value(first, hooks_off):
    """The hooks only take host reads out (compat/buffer_syncs.py, compat/quat_syncs.py): a
    training with them learns exactly what one without them learns, iteration by iteration."""
    run_dir, record, _ = first
    off_record, off_dir = hooks_off
    assert (record.config["sync_free_buffers"], record.config["sync_free_quats"]) == (True, True)
    assert (off_record.config["sync_free_buffers"], off_record.config["sync_free_quats"]) == (
        False, False)  # fmt: skip
    on = pd.read_csv(run_dir / records.SCALARS_FILENAME)
    off = pd.read_csv(off_dir / records.SCALARS_FILENAME)
    learned = [c for c in on.columns if not c.startswith("Perf/") and c != "wall_time"]
    assert len(on) == ITERATIONS and len(learned) > 30 and "Train/mean_reward" in learned
    pd.testing.assert_frame_equal(on[learned], off[learned], check_exact=True)


def test_the_stream_drops_warps_banner_and_module_lines_and_keeps_the_trainers():
    lines = [
        "Warp 1.13.0 initialized:\n",
        "   CUDA Toolkit 12.9, Driver 13.0\n",
        '     "cuda:0"   : "NVIDIA H200" (140 GiB, sm_90, mempool enabled)\n',
        "Module mujoco_warp._src.smooth 4052998 load on device 'cuda:0' took 8.14 ms  (cached)\n",
        "[INFO] Training with: device=cuda:0, seed=42, rank=0\n",
        "                          Learning iteration 0/2\n",
        "                       Mean reward: 1.00\n",
        "warning: invalid feature combination\n",
    ]
    shown = train.ShownLines()
    assert [line for line in lines if shown(line)] == lines[4:7]


@pytest.mark.slow
def test_the_record_counts_the_rollout_the_runner_used(first, tmp_path):
    run_dir, record, _ = first
    # the default task's rollout, as mjlab saved the runner's configuration
    assert rollout_steps(find_mjlab_log_dir(run_dir)) == STEPS_PER_ENV
    assert record.config["steps_per_env"] == STEPS_PER_ENV
    # a preset with a shorter rollout records it before the run, from its task
    short = TrainRequest(name="s", task=f"{TASK_ID}-WalkerTurningShortTuning")
    assert train.record_config(short)["steps_per_env"] == 12
    # an agent.yaml without the key, or none at all, says nothing
    (tmp_path / "params").mkdir()
    (tmp_path / "params" / "agent.yaml").write_text("seed: 1\nnum_steps_per_env_x: 3\n")
    assert rollout_steps(tmp_path) is None and rollout_steps(tmp_path / "nowhere") is None


@pytest.mark.slow
def test_csv_has_every_series_the_chapters_need(first):
    run_dir, record, _ = first
    scalars = pd.read_csv(run_dir / records.SCALARS_FILENAME, index_col="iteration")
    missing = [c for c in REQUIRED_COLUMNS if c not in scalars.columns]
    assert not missing, f"missing columns: {missing}"
    assert list(scalars.index) == [0, 1]
    assert scalars["Episode_Termination/nan_state"].eq(0).all()
    assert scalars["Curriculum/standing_envs/rel_standing_envs"].iloc[0] == pytest.approx(0.02)


@pytest.mark.slow
def test_summary_is_computed_from_the_csv(first):
    run_dir, record, _ = first
    scalars = pd.read_csv(run_dir / records.SCALARS_FILENAME, index_col="iteration")
    s = record.summary
    assert s["transitions"] == ITERATIONS * ENVS * STEPS_PER_ENV
    assert s["reward_last"] == pytest.approx(scalars["Train/mean_reward"].iloc[-1])
    assert s["reward_best"] == pytest.approx(scalars["Train/mean_reward"].max())
    assert s["throughput_last"] == pytest.approx(scalars["Perf/total_fps"].iloc[-1])
    assert s["wall_time_first_to_last_s"] == pytest.approx(
        scalars["wall_time"].iloc[-1] - scalars["wall_time"].iloc[0]
    )
    assert s["nan_state_nonzero_iterations"] == 0
    assert s["checkpoints"] == "model_0.pt,model_1.pt" and s["last_checkpoint"] == "model_1.pt"


# ----------------------------------------------------------------------------- resume


@pytest.mark.slow
def test_resume_numbers_from_the_loaded_iteration(resumed):
    run_dir, record, checkpoint, _, stream = resumed
    log_dir = find_mjlab_log_dir(run_dir)
    # Loaded model_1.pt, asked for 2 more: iterations 1 and 2, files model_1.pt, model_2.pt.
    names = [p.name for p in list_checkpoints(log_dir)]
    assert names == ["model_1.pt", "model_2.pt"]
    assert names == expected_checkpoints(1, ITERATIONS, 1)
    assert record.config["resume_from_iteration"] == 1
    assert record.config["resume_from"] == str(checkpoint)
    assert (record.summary["first_iteration"], record.summary["last_iteration"]) == (1, 2)
    assert record.summary["last_checkpoint"] == "model_2.pt"
    scalars = pd.read_csv(run_dir / records.SCALARS_FILENAME, index_col="iteration")
    assert list(scalars.index) == [1, 2]
    assert "Loading model checkpoint" in "".join(stream.lines)


@pytest.mark.slow
def test_resume_carries_the_curriculum_counter_and_leaves_the_source_alone(resumed):
    run_dir, _, checkpoint, before, _ = resumed
    staged = run_dir / "logs" / "rsl_rl" / "microduck_velocity" / RESUME_SOURCE_DIR
    assert [p.name for p in staged.iterdir()] == [checkpoint.name]
    assert records.sha256_file(checkpoint) == before, "the earlier run's checkpoint changed"
    loaded = torch.load(checkpoint, map_location="cpu", weights_only=False)
    last = torch.load(find_mjlab_log_dir(run_dir) / "model_2.pt", map_location="cpu",
                      weights_only=False)  # fmt: skip
    assert (loaded["iter"], last["iter"]) == (1, 2)
    # The env step counter drives the curricula: 24 steps per iteration, carried across.
    counter = lambda d: d["infos"]["env_state"]["common_step_counter"]  # noqa: E731
    assert counter(loaded) == ITERATIONS * STEPS_PER_ENV
    assert counter(last) == 2 * ITERATIONS * STEPS_PER_ENV


# ----------------------------------------------------------------------------- failures


@pytest.mark.slow
def test_unknown_task_leaves_a_failed_record():
    _, made = _kept_run("train_driver_bad_task", {"name": "bad_task", "task": "No-Such-Task"})
    run_dir = Path(made["run_dir"])
    record = records.RunRecord.model_validate_json(made["record"])
    on_disk = records.load_record(run_dir)
    assert record.status == on_disk.status == "failed"
    assert "exited with status" in on_disk.error
    assert on_disk.scalars_csv is None and on_disk.summary == {}
    assert on_disk.finished_at is not None


def test_missing_checkpoint_leaves_a_failed_record(logs_root, tmp_path):
    missing = tmp_path / "model_7.pt"
    run_dir, record = run(_request(logs_root, name="bad_resume", resume_from=missing),
                          stream=Quiet())  # fmt: skip
    on_disk = records.load_record(run_dir)
    assert on_disk.status == "failed"
    assert "FileNotFoundError" in on_disk.error and "model_7.pt" in on_disk.error
    assert on_disk.config["resume_from_iteration"] == 7


def test_two_runs_with_the_same_name_never_share_a_directory(tmp_path):
    missing = tmp_path / "model_3.pt"  # fails before training: fast
    dirs = [run(_request(tmp_path / "logs", name="twin", resume_from=missing),
                stream=Quiet())[0] for _ in range(3)]  # fmt: skip
    assert len(set(dirs)) == 3
    for d in dirs:
        assert records.load_record(d).status == "failed"


# ----------------------------------------------------------------------------- slim + publish


@pytest.mark.slow
def test_slim_checkpoint_is_small_and_loads_into_the_task_actor(first, tmp_path):
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.rl import RslRlVecEnvWrapper
    from mjlab.tasks.registry import load_env_cfg, load_rl_cfg, load_runner_cls

    run_dir, record, _ = first
    full = find_mjlab_log_dir(run_dir) / "model_1.pt"
    slim = slim_checkpoint(full, tmp_path / "model_1.pt")
    assert slim.stat().st_size < 2 * 1024 * 1024
    assert slim.stat().st_size < full.stat().st_size / 2
    data = torch.load(slim, map_location="cpu", weights_only=False)
    source = torch.load(full, map_location="cpu", weights_only=False)
    assert "optimizer_state_dict" not in data and "critic_state_dict" not in data
    assert data["slim"] is True and data["iter"] == 1
    assert data["infos"]["env_state"] == source["infos"]["env_state"]
    for key, value in source["actor_state_dict"].items():
        assert torch.equal(data["actor_state_dict"][key], value), key
    assert any("normalizer" in k for k in data["actor_state_dict"]), "normaliser dropped"

    cfg = load_env_cfg(TASK_ID)
    cfg.scene.num_envs = 2
    env = ManagerBasedRlEnv(cfg=cfg, device="cpu")
    try:
        wrapped = RslRlVecEnvWrapper(env)
        runner = load_runner_cls(TASK_ID)(wrapped, asdict(load_rl_cfg(TASK_ID)), device="cpu")
        runner.alg.actor.load_state_dict(data["actor_state_dict"], strict=True)
        policy = runner.get_inference_policy(device="cpu")
        with torch.inference_mode():
            actions = policy(wrapped.get_observations())
        assert actions.shape == (2, env.action_manager.total_action_dim)
        assert torch.isfinite(actions).all()
    finally:
        env.close()


@pytest.mark.slow
def test_publish_copies_record_csv_and_slim_checkpoints_only(first, tmp_path):
    run_dir, record, _ = first
    dest = tmp_path / "book_results" / "published"
    published = publish(run_dir, dest, checkpoint_iterations=[1])
    assert sorted(p.name for p in dest.iterdir()) == [
        "model_1.pt",
        records.RECORD_FILENAME,
        records.SCALARS_FILENAME,
    ]
    assert not list(dest.rglob("events.out.tfevents.*"))
    assert not dest.with_name("published.partial").exists()
    assert {a.path: a.kind for a in published.artifacts} == {
        records.SCALARS_FILENAME: "scalars",
        "model_1.pt": "checkpoint",
    }
    records.verify_artifacts(records.load_record(dest), dest)
    assert published.summary == record.summary and published.run_id == record.run_id
    slim = torch.load(dest / "model_1.pt", map_location="cpu", weights_only=False)
    assert "optimizer_state_dict" not in slim
    with pytest.raises(FileExistsError):
        publish(run_dir, dest, checkpoint_iterations=[1])


def test_publish_refuses_a_failed_run(logs_root, tmp_path):
    run_dir, _ = run(_request(logs_root, name="bad_pub", resume_from=tmp_path / "model_0.pt"),
                     stream=Quiet())  # fmt: skip
    with pytest.raises(ValueError, match="only ok runs are published"):
        publish(run_dir, tmp_path / "dest")
    assert not (tmp_path / "dest").exists()




# ----------------------------------------------------------------------------- command line


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--num-envs", "0"], "--num-envs must be at least 1"),
        (["--iterations", "0"], "--iterations must be at least 1"),
        (["--resume-from", "/no/such/dir/model_3.pt"], "no such checkpoint"),
        (["--resume-from", "{file}"], "not an rsl_rl checkpoint name (model_<iteration>.pt)"),
        (["--device", "gpu0"], "device 'gpu0': expected cpu, cuda or cuda:N"),
        (["--task", "Nope"], "--task 'Nope' is not a registered task"),
        (["--name", "../escape"], "run name '../escape'"),
        (["--num-envs", "many"], "--num-envs"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(argv, fragment, capsys, tmp_path):
    badly_named = tmp_path.parent / f"{tmp_path.name}_weights.pt"
    badly_named.write_bytes(b"")
    argv = [a.replace("{file}", str(badly_named)) for a in argv]
    assert main([*argv, "--logs-root", str(tmp_path / "logs")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("microduck train: ") and fragment in err
    assert not (tmp_path / "logs").exists(), "bad input must not create anything under logs/"


def test_console_script_bad_input(tmp_path):
    """The installed ``microduck`` command (or, in a checkout not installed, its entry point)."""
    script = Path(sys.executable).with_name("microduck")
    cmd = [str(script)] if script.exists() else [
        sys.executable, "-c", "from mjlab_microduck.cli import console_main; console_main()"]
    proc = subprocess.run([*cmd, "train", "--device", "gpu0", "--logs-root", str(tmp_path / "l")],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "microduck train: device 'gpu0': expected cpu, cuda or cuda:N (ROCm torch also says cuda)"
    ]
    assert not (tmp_path / "l").exists()


@pytest.mark.slow
def test_the_issue_smoke_command_runs_on_cpu():
    """#3's acceptance, verbatim: the ``train`` console script at 64 envs x 5 iterations on this
    CPU reports 7,680 transitions, nan_state 0 and falls, and writes a checkpoint (about 30 s;
    made once per build, tests/suite_memo.py)."""
    import re

    script = Path(sys.executable).with_name("train")
    proc = suite_memo.run("train_smoke_command", [
        str(script), TASK_ID, "--env.scene.num-envs", "64", "--env.seed", "42",
        "--agent.seed", "42", "--agent.max-iterations", "5", "--agent.logger", "tensorboard",
        "--gpu-ids", "None"])  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    assert re.findall(r"Total steps: (\d+)", out)[-1] == str(64 * 5 * STEPS_PER_ENV) == "7680"
    nan_state = [float(v) for v in re.findall(r"Episode_Termination/nan_state: ([\d.]+)", out)]
    fell_over = [float(v) for v in re.findall(r"Episode_Termination/fell_over: ([\d.]+)", out)]
    assert len(nan_state) == len(fell_over) == 5
    assert max(nan_state) == 0.0 and max(fell_over) > 0.0
    assert sorted(p.name for p in proc.cwd.glob("logs/rsl_rl/*/*/model_*.pt")) == [
        "model_0.pt", "model_4.pt"
    ]


def _staged(run_dir, name):
    return run_dir / "logs/rsl_rl" / EXPERIMENT_NAME / train.RESUME_SOURCE_DIR / name


def _saved_as_if_on_a_gpu(path, data, monkeypatch):
    """torch.save with every storage tagged cuda:0, as a checkpoint written on a GPU is."""
    import torch.serialization as serialization

    with monkeypatch.context() as patch:
        patch.setattr(serialization, "location_tag", lambda storage: "cuda:0")
        torch.save(data, path)


def test_a_gpu_checkpoint_is_staged_for_a_cpu_resume_mapped_to_the_cpu(tmp_path, monkeypatch):
    weights = {"actor_state_dict": {"w": torch.arange(6.0).reshape(2, 3)}, "iter": 750}
    checkpoint = tmp_path / "model_750.pt"
    _saved_as_if_on_a_gpu(checkpoint, weights, monkeypatch)
    if not torch.cuda.is_available():  # what rsl_rl's own load runs into on a CPU
        with pytest.raises(RuntimeError, match="CUDA"):
            torch.load(checkpoint, weights_only=False)
    run_dir = tmp_path / "run"
    train._stage_resume(run_dir, checkpoint, device="cpu")
    staged = _staged(run_dir, checkpoint.name)
    loaded = torch.load(staged, weights_only=False)  # no map_location, as rsl_rl
    assert loaded["iter"] == 750
    assert torch.equal(loaded["actor_state_dict"]["w"], weights["actor_state_dict"]["w"])
    assert checkpoint.read_bytes() != staged.read_bytes()  # the source file is left as it was


def test_a_gpu_resume_links_the_checkpoint_unchanged(tmp_path):
    checkpoint = tmp_path / "model_499.pt"
    torch.save({"iter": 499}, checkpoint)
    run_dir = tmp_path / "run"
    train._stage_resume(run_dir, checkpoint, device="cuda:0")
    staged = _staged(run_dir, checkpoint.name)
    assert staged.read_bytes() == checkpoint.read_bytes()
