"""Collecting a multi-seed run (mjlab_microduck.jobs.collect): slim checkpoints at their own
paths, no full checkpoint or event file, finished gait tests under their published names with
their per-step paths retired, and nothing done twice."""

from __future__ import annotations

from pathlib import Path

import pytest
import run_fakes
import torch

from mjlab_microduck.cli import records as records_cli
from mjlab_microduck.jobs import collect, gait_test, train
from mjlab_microduck.runs import records

LOG_DIR = "logs/rsl_rl/microduck_velocity/2026-01-02_03-04-05_drv"


def _gait(out: Path, name: str, checkpoint: Path, status: str = "ok",
          folder: str = collect.GAIT_DIR, passed: bool = False) -> Path:  # fmt: skip
    where = out / folder / name
    where.mkdir(parents=True)
    (where / gait_test.PATHS_FILENAME).write_text("t,x\n0,0\n")
    (where / gait_test.VERDICT_FILENAME).write_text("{}\n")
    record = run_fakes.record(
        run_id=name, kind="gait_test", status=status,
        config={"checkpoint": str(checkpoint)},
        summary={"passed": passed, "failed_conditions": 0 if passed else 3},
        artifacts=[records.artifact(where / gait_test.PATHS_FILENAME, where, "paths"),
                   records.artifact(where / gait_test.VERDICT_FILENAME, where, "verdict")],
    )  # fmt: skip
    if status == "running":
        record = record.model_copy(update={"finished_at": None, "wall_seconds": None})
    records.write_record(record, where)
    return where


@pytest.fixture
def out(tmp_path):
    out = tmp_path / "side_by_side"
    for seed in (42, 43):
        run = run_fakes.train_run(out / collect.RUNS_DIR, f"20260102T030405Z_walker_s{seed}",
                                  iterations=(250, 300, 350),
                                  config={"seed": {"env": seed, "agent": seed}},
                                  scalars_csv=records.SCALARS_FILENAME)  # fmt: skip
        (run / records.SCALARS_FILENAME).write_text("iteration,wall_time\n0,0.0\n")
        (run / LOG_DIR / "events.out.tfevents.1").write_bytes(b"\0" * 64)
    return out


def test_collect_copies_what_is_published_and_nothing_twice(out, tmp_path):
    run43 = out / collect.RUNS_DIR / "20260102T030405Z_walker_s43"
    _gait(out, "20260102T040000Z_gait_walker_s43_model_300", run43 / LOG_DIR / "model_300.pt")
    _gait(out, "20260102T040100Z_gait_walker_s43_model_350", run43 / LOG_DIR / "model_350.pt",
          status="running")  # not finished: left for the next call
    dest = tmp_path / "collected"
    request = collect.CollectRequest(out, dest, prefix="h200_walker", slim_from=300).check()
    added = collect.collect(request)

    assert added == [
        "20260102T030405Z_walker_s42: slim model_300.pt",
        "20260102T030405Z_walker_s42: slim model_350.pt",
        "20260102T030405Z_walker_s43: slim model_300.pt",
        "20260102T030405Z_walker_s43: slim model_350.pt",
        "h200_walker_gait_s43_model_300: failed (3 conditions)",
    ]
    copied = dest / collect.RUNS_DIR / run43.name
    assert (copied / "record.json").is_file() and (copied / "train.log").is_file()
    assert sorted(p.name for p in (copied / LOG_DIR).glob("model_*.pt")) == [
        "model_300.pt", "model_350.pt"]  # below slim_from: none
    slim = torch.load(copied / LOG_DIR / "model_300.pt", weights_only=False)
    assert slim["slim"] is True and "optimizer_state_dict" not in slim
    assert not list(dest.rglob("events.out.*"))
    gait = dest / collect.GAIT_DIR / "h200_walker_gait_s43_model_300"
    assert not (gait / gait_test.PATHS_FILENAME).exists()
    record = records.load_record(gait)
    assert [a.path for a in record.artifacts] == [gait_test.VERDICT_FILENAME]
    assert "paths.csv" in record.notes
    records.verify_artifacts(record, gait)
    # A second call adds only what is new: here nothing.
    assert collect.collect(request) == []
    # The copy publishes as the run would, with the slim checkpoint it holds.
    published = train.publish(copied, tmp_path / "published", (300,))
    assert "model_300.pt" in [a.path for a in published.artifacts]


def test_a_start_test_is_published_beside_the_gait_tests_under_its_own_word(out, tmp_path):
    run42 = out / collect.RUNS_DIR / "20260102T030405Z_walker_s42"
    checkpoint = run42 / LOG_DIR / "model_250.pt"
    _gait(out, "20260102T040000Z_gait_walker_s42_model_250", checkpoint)
    _gait(out, "20260102T040005Z_start_walker_s42_model_250", checkpoint,
          folder=collect.START_DIR)  # fmt: skip
    dest = tmp_path / "collected"
    added = collect.collect(collect.CollectRequest(out, dest, prefix="h200_walker",
                                                   slim_from=1000))  # fmt: skip
    assert added[-2:] == ["h200_walker_gait_s42_model_250: failed (3 conditions)",
                          "h200_walker_start_s42_model_250: failed (3 conditions)"]
    start = dest / collect.START_DIR / "h200_walker_start_s42_model_250"
    assert not (start / gait_test.PATHS_FILENAME).exists()
    records.verify_artifacts(records.load_record(start), start)


def test_a_checkpoint_that_passed_is_collected_slim_whatever_its_iteration(out, tmp_path):
    run42 = out / collect.RUNS_DIR / "20260102T030405Z_walker_s42"
    _gait(out, "20260102T040000Z_gait_walker_s42_model_250", run42 / LOG_DIR / "model_250.pt",
          passed=True)  # fmt: skip
    _gait(out, "20260102T040001Z_gait_walker_s42_model_300", run42 / LOG_DIR / "model_300.pt")
    # a start test that passed is not a walker: its checkpoint stays behind
    _gait(out, "20260102T040002Z_start_walker_s42_model_350", run42 / LOG_DIR / "model_350.pt",
          folder=collect.START_DIR, passed=True)  # fmt: skip
    dest = tmp_path / "collected"
    added = collect.collect(collect.CollectRequest(out, dest, prefix="h200_walker",
                                                   slim_from=1000, slim_passed=True))
    assert added[0] == "20260102T030405Z_walker_s42: slim model_250.pt"
    assert "h200_walker_gait_s42_model_250: passed" in added
    copied = dest / collect.RUNS_DIR / run42.name / LOG_DIR
    assert sorted(p.name for p in copied.glob("model_*.pt")) == ["model_250.pt"]
    # without slim_passed the same call copies no checkpoint below slim_from
    again = tmp_path / "again"
    collect.collect(collect.CollectRequest(out, again, prefix="h200_walker", slim_from=1000))
    assert not list(again.rglob("model_*.pt"))


def test_a_torn_checkpoint_waits_for_the_next_call(tmp_path):
    out = tmp_path / "run"
    run_fakes.train_run(out / collect.RUNS_DIR, "20260102T030405Z_walker_s44", iterations=(300,),
                        torn=350, config={"seed": {"env": 44, "agent": 44}})  # fmt: skip
    dest = tmp_path / "collected"
    added = collect.collect(collect.CollectRequest(out, dest, prefix="h200_walker"))
    assert added == ["20260102T030405Z_walker_s44: slim model_300.pt"]


def test_a_gait_test_of_another_run_is_refused(out, tmp_path):
    _gait(out, "20260102T040000Z_gait_other", tmp_path / "x/logs/rsl_rl/e/d/model_300.pt")
    with pytest.raises(ValueError, match="not a checkpoint of this run's trainings"):
        collect.collect(collect.CollectRequest(out, tmp_path / "d", prefix="h200_walker"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere", "d", "--prefix", "h200_walker"], "no runs/ folder"),
        (["OUT", "d", "--prefix", "h200 walker"], "h200 walker"),
        (["OUT", "d", "--prefix", "h200_walker", "--slim-from", "-1"], "--slim-from"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_before_anything_is_made(
    args, message, out, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    args = [str(out) if a == "OUT" else a for a in args]
    assert records_cli.main(["collect", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err
    assert not (tmp_path / "d").exists()
