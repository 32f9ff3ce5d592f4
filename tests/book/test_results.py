"""results.py, the chapters' helpers, checked against the committed records in book/results.

The strongest check: every published training record's summary equals ``summarize`` applied
to its own committed ``scalars.csv``, so no number the chapters show can drift from the data.
"""

from __future__ import annotations

import io
import json
import shutil

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mjlab_microduck.analysis.training import summarize  # noqa: E402
from mjlab_microduck.book import results  # noqa: E402
from mjlab_microduck.runs import records
from mjlab_microduck.tasks.rl_cfg import STEPS_PER_ENV  # noqa: E402
from mjlab_microduck.tasks.velocity import TASK_ID  # noqa: E402

FORWARD_TRACKING_TASK = "Mjlab-Velocity-Flat-MicroDuck-ForwardTrackingTuning"

TRAIN_RECORDS = sorted(
    d.name for d, r in records.find_records(results.results_root()) if r.kind == "train"
)


def test_the_published_training_records_are_found():
    assert {"h200_smoke_64x5", "h200_smoke_256x5", "h200_train_500"} <= set(TRAIN_RECORDS)
    assert results.repo_root() is not None
    assert results.results_root() == results.repo_root() / "book" / "results"


@pytest.mark.parametrize("name", TRAIN_RECORDS)
def test_record_summary_equals_summarize_of_its_csv(name):
    record, scalars = results.load_published(name)
    assert scalars.index.name == "iteration"
    # the rollout the run was trained with (a preset may shorten it), else the upstream one
    steps_per_env = int(record.config.get("steps_per_env") or STEPS_PER_ENV)
    recomputed = summarize(scalars, int(record.config["num_envs"]), steps_per_env)
    numeric = {k: v for k, v in recomputed.items() if v is not None}
    for key, value in numeric.items():
        assert record.summary[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key
    assert record.summary["transitions"] == (
        len(scalars) * record.config["num_envs"] * steps_per_env
    )


def test_train_500_against_its_csv():
    record, scalars = results.load_published("h200_train_500")
    s = record.summary
    assert s["reward_last"] == pytest.approx(scalars["Train/mean_reward"].iloc[-1])
    assert s["reward_best"] == pytest.approx(scalars["Train/mean_reward"].max())
    assert s["episode_length_first"] == pytest.approx(scalars["Train/mean_episode_length"].iloc[0])
    assert s["throughput_best"] == pytest.approx(scalars["Perf/total_fps"].max())
    below = scalars["Episode_Termination/below_ground"]
    assert s["below_ground_nonzero_iterations"] == int((below > 0).sum())
    assert s["nan_state_nonzero_iterations"] == 0
    assert scalars["Episode_Termination/nan_state"].eq(0).all()
    # The published checkpoints follow rsl_rl's naming rule.
    assert s["checkpoints"].split(",") == results.expected_checkpoints(0, 500, 100)
    assert record.provenance.device_name == "NVIDIA H200"


def test_the_recipe_run_is_the_default_presets_recorded_run():
    from mjlab_microduck.analysis.acceptance import RECIPE_TASK
    from mjlab_microduck.tasks.tuning import DEFAULT_TUNING

    assert results.RECIPE_RUN_500 == f"h200_{DEFAULT_TUNING.name}_train_500"
    assert results.RECIPE_RUN_1500 == f"h200_{DEFAULT_TUNING.name}_resume_1500"
    for run in (results.RECIPE_RUN_500, results.RECIPE_RUN_1500):
        record, _ = results.load_published(run)
        assert record.config["task"] == RECIPE_TASK
        assert record.config["tuning"]["name"] == DEFAULT_TUNING.name


def test_training_table_columns_name_their_source():
    record, scalars = results.load_published("h200_train_500")
    table = results.training_table({"recorded": record}, reference=True)
    col = table["recorded"]
    assert col["run"] == record.run_id
    assert col["machine"] == "NVIDIA H200 (cuda)" and col["profile"] == "full"
    s = record.summary
    assert col["transitions"] == f"{s['transitions']:,}"
    reward = scalars["Train/mean_reward"]
    assert col["mean reward (first → last)"] == (
        f"{reward.iloc[0]:.4f} → {reward.iloc[-1]:.4f}, best {reward.max():.4f}"
    )
    below = scalars["Episode_Termination/below_ground"]
    assert (below == 0).all()  # legs_collapsed ends collapses before the trunk gets there
    assert col["below_ground"] == f"0 in all {len(scalars)} iterations"
    assert col["nan_state"] == f"0 in all {len(scalars)} iterations"
    ref = table[results.REFERENCE_LABEL]
    assert ref["machine"] == results.REFERENCE_MACHINE
    assert ref["mean reward (first → last)"] == "0.0474 → 5.3664, best 5.5925"
    assert ref["transitions"] == "3,072,000"
    assert "R9700" in results.REFERENCE_LABEL and "original chapter" in results.REFERENCE_LABEL


def test_smoke_tables():
    small, _ = results.load_published("h200_smoke_64x5")
    table = results.smoke_table({"rec": small})
    row = table.loc["rec"]
    assert row["transitions"] == 64 * 5 * STEPS_PER_ENV
    assert row["final throughput (steps/s)"] == small.summary["throughput_last"]
    assert row["fell_over (last)"] == small.summary["fell_over_last"]
    assert row["machine"] == "NVIDIA H200 (cuda)"
    ref = results.reference_smoke_table()
    assert list(ref.columns) == list(table.columns)
    assert all(results.REFERENCE_LABEL in label for label in ref.index)
    assert ref["transitions"].tolist() == [7_680, 30_720]
    assert ref["fell_over (last)"].tolist() == [1.9583, 7.3333]
    assert ref["below_ground (max)"].isna().all(), "not reported must not read as 0"


def test_term_text():
    s = {"iterations": 10, "x_nonzero_iterations": 0, "y_nonzero_iterations": 3,
         "y_max": 1.234, "y_last": 0.5}  # fmt: skip
    assert results.term_text(s, "x") == "0 in all 10 iterations"
    assert results.term_text(s, "y") == "non-zero in 3 of 10 iterations (max 1.23, last 0.50)"
    assert results.term_text(s, "z") == "not in this task"


def _record(run_id, first, last, length_first, length_last, below_nonzero=0, envs=256):
    iterations = last - first + 1
    return records.RunRecord(
        run_id=run_id, kind="train", status="ok", config={"num_envs": envs},
        provenance=records.Provenance(backend="hip", device_name="GPU", hostname="h",
                                      date=records.utc_now_iso(), profile="full"),
        started_at=records.utc_now_iso(), finished_at=records.utc_now_iso(),
        summary={
            "iterations": iterations, "first_iteration": first, "last_iteration": last,
            "transitions": iterations * envs * STEPS_PER_ENV,
            "reward_first": 0.5, "reward_last": 9.0, "reward_best": 10.0,
            "episode_length_first": length_first, "episode_length_last": length_last,
            "episode_length_best": length_last, "throughput_last": 5000.0,
            "throughput_best": 6000.0, "wall_time_first_to_last_s": 100.0 * iterations,
            "nan_state_nonzero_iterations": 0, "nan_state_max": 0.0, "nan_state_last": 0.0,
            "below_ground_nonzero_iterations": below_nonzero, "below_ground_max": 0.5,
            "below_ground_last": 0.0, "last_checkpoint": f"model_{last}.pt",
        },
    )  # fmt: skip


def test_cumulative_table_and_acceptance_checks():
    one = _record("one", 0, 499, 20.0, 90.0)
    two = _record("two", 499, 1498, 14.0, 400.0)
    col = results.cumulative_table({"pair": (one, two)})["pair"]
    assert col["PPO updates (stage 1 + stage 2)"] == "1500 (500 + 1000)"
    assert col["iteration numbering"] == "0–499, then 499–1498"
    assert col["cumulative transitions"] == "9,216,000 (3,072,000 + 6,144,000)"
    assert col["wall time, stage 2 / both (TensorBoard first-to-last)"] == (
        "100000.0 s / 150000.0 s"
    )
    assert col["last checkpoint"] == "model_1498.pt"
    assert col["episode length at the end / at iteration 0"] == "20.0×"
    checks = results.acceptance_checks(one, two)
    assert checks["met"].tolist() == [True, True, True]
    bad = results.acceptance_checks(one, _record("two", 499, 1498, 14.0, 150.0, below_nonzero=4))
    assert bad["met"].tolist() == [True, False, False]
    ref = results.cumulative_table({}, reference=True)[results.REFERENCE_LABEL]
    assert ref["cumulative transitions"] == "9,216,000 (3,072,000 + 6,144,000)"
    assert ref["wall time, stage 2 / both (TensorBoard first-to-last)"] == "1412.2 s / 2215.2 s"


@pytest.mark.parametrize(
    ("first", "iterations", "interval", "expected"),
    [
        (0, 500, 100, [0, 100, 200, 300, 400, 499]),
        (499, 1000, 250, [500, 750, 1000, 1250, 1498]),
        (0, 3, 1, [0, 1, 2]),
        (2, 2, 1, [2, 3]),
        (0, 5, 5, [0, 4]),
    ],
)
def test_expected_checkpoints(first, iterations, interval, expected):
    assert results.expected_checkpoints(first, iterations, interval) == [
        f"model_{i}.pt" for i in expected
    ]


@pytest.mark.parametrize(
    "task, runs, weights",
    [
        (TASK_ID, ("h200_train_500", "h200_resume_1500"), (-0.1, -0.15, -0.2, -0.2)),
        (FORWARD_TRACKING_TASK, (results.RECIPE_RUN_500, results.RECIPE_RUN_1500),
         (-0.1, -0.15, -0.2, -0.2)),
    ],
)  # fmt: skip
def test_curriculum_schedule_matches_the_recorded_curricula(task, runs, weights):
    schedule = results.curriculum_schedule(1502, task)
    standing = schedule["Curriculum/standing_envs/rel_standing_envs"]
    weight = schedule["Curriculum/action_rate/weight"]
    assert (standing[0], standing[499], standing[500], standing[1499]) == (0.02, 0.02, 0.05, 0.15)
    assert (weight[0], weight[500], weight[1250], weight[1499]) == weights
    for run in runs:
        record, scalars = results.load_published(run)
        assert record.config["task"] == task
        # A resumed stage restores the step counter of the end of stage one, so its iteration i
        # runs where a fresh run's iteration i + 1 would; the curricula must follow (not
        # restart at 0). A logged value is the mean over the iteration's resets, so next to a
        # stage boundary it may lie between the two stages' values.
        offset = 1 if record.config.get("resume_from") else 0
        for column in schedule.columns:
            logged = scalars[column]
            near = np.stack(
                [schedule[column].reindex(logged.index + offset + k).to_numpy() for k in (-1, 0, 1)]
            )
            values = logged.to_numpy()
            inside = (values >= np.nanmin(near, axis=0) - 1e-6) & (
                values <= np.nanmax(near, axis=0) + 1e-6
            )
            assert inside.all(), (run, column, logged[inside == 0].head())


def test_iteration_log_keeps_headlines_only():
    out = io.StringIO()
    log = results.IterationLog(out)
    log.write("\x1b[1m            Learning iteration 3/10           \x1b[0m \n")
    log.write("                     Mean value loss: 0.1\n                 Mean rew")
    log.write("ard: -1.25\n")  # a line split across writes
    log.write("   Episode_Termination/fell_over: 2.0000\nModule foo load\ntail without newline")
    log.close()
    assert out.getvalue().splitlines() == ["iteration 3/10: reward -1.25; fell_over 2.0000"]
    assert (log.lines_seen, log.lines_shown) == (6, 1)


def test_iteration_log_prints_one_line_per_iteration_and_errors_as_they_come():
    out = io.StringIO()
    log = results.IterationLog(out)
    for it in (0, 1):
        log.write(f"  Learning iteration {it}/2  \n     Total steps: 384\n")
        log.write("  Steps per second: 109\n   Mean reward: 1.25\nMean episode length: 19.67\n")
        log.write("Episode_Termination/time_out: 0.3750\nEpisode_Termination/nan_state: 0.0000\n")
        log.write("  Iteration time: 3.51s\n")
    log.write("Traceback (most recent call last):\n")
    log.close()
    line = "reward 1.25, episode length 19.67, 109 steps/s, 3.51s; time_out 0.3750"
    assert out.getvalue().splitlines() == [
        f"iteration 0/2: {line}".replace(
            "reward 1.25, episode length 19.67, 109 steps/s",
            "109 steps/s, reward 1.25, episode length 19.67",
        ),
        f"iteration 1/2: {line}".replace(
            "reward 1.25, episode length 19.67, 109 steps/s",
            "109 steps/s, reward 1.25, episode length 19.67",
        ),
        "Traceback (most recent call last):",
    ]


def test_iteration_log_with_milestones_shows_a_handful_of_iterations_and_every_error():
    out = io.StringIO()
    log = results.IterationLog(out, milestones=True)
    for it in range(8):
        log.write(f"  Learning iteration {it}/8  \n   Mean reward: {it}.00\n")
        if it == 4:
            log.write("Traceback (most recent call last):\n")
    log.close()
    assert out.getvalue().splitlines() == [
        "iteration 1/8: reward 1.00", "iteration 3/8: reward 3.00",
        "Traceback (most recent call last):",
        "iteration 5/8: reward 5.00", "iteration 7/8: reward 7.00",
    ]  # fmt: skip
    assert log.lines_shown == 5
    short = io.StringIO()
    log = results.IterationLog(short, milestones=True)
    log.write("Learning iteration 0/1\nMean reward: 2.00\nLearning iteration odd\n")
    log.close()
    assert short.getvalue().splitlines() == ["iteration 0/1: reward 2.00", "iteration odd"]


def test_plot_training_draws_stages_on_one_axis():
    _, scalars = results.load_published("h200_smoke_64x5")
    later = scalars.set_index(scalars.index + 4)
    fig = results.plot_training({"one": scalars, "two": later})
    axes = fig.axes
    assert len(axes) == len(results.TRAINING_PANELS)
    reward_lines = [ln for ln in axes[0].get_lines() if ln.get_label() in ("one", "two")]
    assert [list(ln.get_xdata()) for ln in reward_lines] == [[0, 1, 2, 3, 4], [4, 5, 6, 7, 8]]
    terms = [c for c in scalars.columns if c.startswith(results.TERMINATION_PREFIX)]
    solid = [ln for ln in axes[-1].get_lines() if ln.get_linestyle() in ("-", "--")]
    assert len(solid) == 2 * len(terms)
    assert any(ln.get_linestyle() == ":" for ln in axes[0].get_lines()), "no resume marker"
    plt.close(fig)
    with pytest.raises(ValueError):
        results.plot_training({})


def test_env_vars_point_at_other_folders(tmp_path, monkeypatch):
    published = tmp_path / "published"
    shutil.copytree(results.results_root() / "h200_smoke_64x5", published / "copy")
    recipe_dir = tmp_path / "recipe_out"
    shutil.copytree(results.results_root() / "h200_train_500", recipe_dir / "train_500")
    monkeypatch.setenv(results.RESULTS_ENV_VAR, str(published))
    monkeypatch.setenv(results.RECIPE_RESULTS_ENV_VAR, str(recipe_dir))
    record, scalars = results.load_published("copy")
    assert record.run_id.endswith("smoke_64x5") and len(scalars) == 5
    with pytest.raises(records.RecordError, match="no such record file"):
        results.load_published("h200_train_500")  # published in the default folder only
    run = results.recipe_run("train_500")
    assert run is not None and run.log_dir is None and run.checkpoints[-1] == "model_499.pt"
    assert results.recipe_run("resume_1500") is None
    with pytest.raises(FileNotFoundError):
        _ = run.last_checkpoint_path


def test_book_logs_root_is_git_ignored_logs():
    root = results.book_logs_root("03_smoke_training")
    assert root == results.repo_root() / "logs" / "book" / "03_smoke_training"
    assert "logs/" in (results.repo_root() / ".gitignore").read_text().splitlines()


def test_the_published_resume_is_complete():
    """Chapter 5 reads the published resume without a fallback, so it must be there, ok, and
    resumed from model_499 with the iteration numbering continued."""
    record, scalars = results.load_published("h200_resume_1500")
    assert record.status == "ok" and record.config["resume_from_iteration"] == 499
    assert isinstance(scalars, pd.DataFrame) and scalars.index.min() == 499


def test_recipe_run_takes_the_newest_folder_that_has_the_stage(tmp_path, monkeypatch):
    published = results.results_root() / "h200_train_500"
    monkeypatch.delenv(results.RECIPE_RESULTS_ENV_VAR, raising=False)
    monkeypatch.setattr(results, "repo_root", lambda: tmp_path)
    base = tmp_path / "logs" / "results"
    assert results.recipe_run("train_500") is None  # no results folder at all
    shutil.copytree(published, base / "20260101T000000Z_a" / "train_500")
    (base / "20260202T000000Z_b" / "smoke_64x5").mkdir(parents=True)  # newer, smoke only
    assert [p.name for p in results.recipe_results_folders()] == [
        "20260202T000000Z_b",
        "20260101T000000Z_a",
    ]
    run = results.recipe_run("train_500")
    assert run is not None and run.where.parent.name == "20260101T000000Z_a"


def test_the_recipe_task_spelled_out_to_avoid_loading_mjlab_is_the_default_presets():
    from mjlab_microduck.analysis import acceptance
    from mjlab_microduck.tasks.velocity import DEFAULT_PRESET_TASK_ID

    assert acceptance.RECIPE_TASK == DEFAULT_PRESET_TASK_ID


def test_a_finished_run_of_the_same_request_is_reused_not_repeated(tmp_path, capsys):
    from dataclasses import replace

    from mjlab_microduck.jobs import train
    from mjlab_microduck.runtime import provenance

    request = train.TrainRequest(name="x", num_envs=8, iterations=3, profile="ci",
                                 logs_root=tmp_path / "05")  # fmt: skip
    template = records.load_record(records.record_path(results.results_root() / "h200_smoke_64x5"))

    def finished(name, config, status="ok", commit=None):
        where = tmp_path / "04" / name
        where.mkdir(parents=True)
        shutil.copy(results.results_root() / "h200_smoke_64x5" / "scalars.csv", where)
        prov = template.provenance.model_copy(
            update={"profile": "ci", "git_commit": commit or provenance.git_commit()}
        )
        record = template.model_copy(update={
            "run_id": name, "config": config, "status": status, "provenance": prov,
            "artifacts": [], "error": None if status == "ok" else "it broke",
        })  # fmt: skip
        records.write_record(record, where)

    same = json.loads(json.dumps(train.record_config(request)))
    finished("20260101T000000Z_a", same)
    finished("20260101T000001Z_failed", same, status="failed")
    finished("20260101T000002Z_longer", {**same, "iterations": 4})
    finished("20260101T000003Z_other_commit", same, commit="0" * 40)
    found = results.finished_run_like(request, tmp_path / "04")
    assert found is not None and found.record.run_id == "20260101T000000Z_a"
    assert results.finished_run_like(replace(request, seed=7), tmp_path / "04") is None
    assert results.finished_run_like(replace(request, profile="full"), tmp_path / "04") is None
    assert results.finished_run_like(request, tmp_path / "nowhere") is None
    out = io.StringIO()
    reused = results.run_live(request, out=out, reuse_from=tmp_path / "04")
    assert reused.record.run_id == "20260101T000000Z_a"
    assert "reusing it" in out.getvalue() and not (tmp_path / "05").exists()
