"""Summary records (mjlab_microduck.runs.folds): folding runs into one record and reading them
back by their old names, exactly; retiring single files from a published run; and the
summary records published in book/results."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import run_fakes

from mjlab_microduck.analysis import acceptance
from mjlab_microduck.book import results
from mjlab_microduck.book import walker_recipes as recipes
from mjlab_microduck.book import walker_results as wr
from mjlab_microduck.runs import folds, records

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "book" / "results"
GAIT = RESULTS / recipes.CANDIDATE_GAIT_TEST
NOW = dt.datetime(2026, 12, 2, 1, 0, tzinfo=dt.timezone.utc)


def _replay(root: Path, name: str, *, video: bytes = b"mp4", wall: float = 7.0) -> Path:
    where = root / name
    where.mkdir(parents=True)
    (where / "replay.mp4").write_bytes(video)
    (where / "trajectory.csv").write_text("frame,x\n0,0.0\n")
    record = run_fakes.record(
        run_id=f"20261130T000000Z_{name}", kind="replay", wall_seconds=wall,
        config={"checkpoint": f"/tmp/run/{name}.pt", "frames": 200},
        summary={"mean_forward_velocity_mps": 0.05, "done_count": 0},
        artifacts=[records.artifact(where / "replay.mp4", where, "video"),
                   records.artifact(where / "trajectory.csv", where, "trajectory")],
    )  # fmt: skip
    records.write_record(record, where)
    return where


def test_a_folded_gait_test_reads_back_exactly(tmp_path):
    source = shutil.copytree(GAIT, tmp_path / GAIT.name)
    fold = folds.fold([source], tmp_path / "gait_history", kind="gait_test", now=NOW,
                      command=["microduck", "records", "fold-gait"], fold_commit="abc123")
    assert (fold.kind, fold.status) == ("summary", "ok")
    assert fold.run_id == "20261202T010000Z_gait_history"
    assert fold.config == {"folded": ["gait_test"], "sources": [GAIT.name]}
    assert fold.summary == {"runs": 1, "gait_test_runs": 1, "gait_tests_passed": 0,
                            "training_seeds": "42"}  # fmt: skip
    original = records.load_record(GAIT)
    assert fold.wall_seconds == original.wall_seconds
    assert fold.provenance.device_name == "NVIDIA H200"
    assert "commit abc123" in fold.provenance.notes[0]
    where = tmp_path / "gait_history"
    records.verify_artifacts(records.load_record(where), where)
    (run,) = folds.load_fold(where)
    assert run.name == GAIT.name and run.where == where / GAIT.name
    assert run.record == original.model_copy(update={"artifacts": []})  # notes restored too
    assert {a.path for a in run.retired} == {"verdict.json", "robots.csv"}
    assert {a.sha256 for a in run.retired} == {a.sha256 for a in original.artifacts}
    verdict = json.loads((GAIT / "verdict.json").read_text())
    rebuilt = folds.gait_verdict(run)
    assert {k: v for k, v in rebuilt.items() if k != "table"} == {
        k: v for k, v in verdict.items() if k != "table"}
    columns = list(verdict["table"][0])
    assert [{k: row[k] for k in columns} for row in rebuilt["table"]] == verdict["table"]
    # robots.csv lives on as two counts per case: the share of robots holding their heading
    robots = pd.read_csv(GAIT / "robots.csv")
    limit = verdict["thresholds"]["max_heading_change_rad"]
    forward = robots[robots["case"] == "forward_0.2"]
    row = next(r for r in rebuilt["table"] if r["case"] == "forward_0.2")
    assert row["robots"] == len(forward) == 80
    assert row["robots_heading_within"] == int((forward["heading_change_rad"].abs() <= limit).sum())
    # the browsable rows: one per case, each naming its run and that run's stack
    rows = folds.rows(where, "gait_test")
    assert len(rows) == 16 and set(rows["run"]) == {GAIT.name}
    assert (rows["training_seed"] == 42).all() and (rows["iteration"] == 550).all()
    assert (rows["verdict_failed_conditions"] == len(verdict["failures"])).all()
    first = rows.iloc[0]
    assert (first["backend"], first["device"], first["driver"]) == ("cuda", "NVIDIA H200",
                                                                     "580.159.04")  # fmt: skip
    assert first["versions"].startswith("torch 2.11.0; warp 1.13.0")
    assert first["git_commit"] == original.provenance.git_commit
    assert first["command"] == " ".join(original.command)
    assert first["started_at"] == original.started_at
    assert source.is_dir()  # the caller retires the folders


def test_a_two_mode_gait_test_folds_the_robot_counts_of_its_verdicts_mode(tmp_path):
    # The walker's test ran every straight case twice, steered (the verdict) and open-loop.
    name = wr.published_walker()["gait_record"]
    source = shutil.copytree(RESULTS / name, tmp_path / name)
    robots = pd.read_csv(source / "robots.csv")
    assert set(robots["mode"]) == {"heading", "open_loop"}
    folds.fold([source], tmp_path / "gait_history", kind="gait_test", now=NOW)
    (run,) = folds.load_fold(tmp_path / "gait_history")
    verdict = folds.gait_verdict(run)
    limit = verdict["thresholds"]["max_heading_change_rad"]
    steered = robots[(robots["mode"] == "heading") & (robots["case"] == "left_0.15")]
    row = next(r for r in verdict["table"] if r["case"] == "left_0.15")
    assert row["robots"] == len(steered) == 80  # 5 seeds x 16 robots, not both modes' 160
    assert row["robots_heading_within"] == int((steered["heading_change_rad"].abs() <= limit).sum())
    open_loop = robots[(robots["mode"] == "open_loop") & (robots["case"] == "left_0.15")]
    assert (open_loop["heading_change_rad"].abs() > limit).sum() > (
        steered["heading_change_rad"].abs() > limit).sum()  # mixing them would move the share


def test_the_heading_share_reads_the_verdicts_mode_and_refuses_counts_of_both(tmp_path):
    whole = wr.seed_run(42, recipe=recipes.WALKER_HEADING)
    robots = pd.read_csv(RESULTS / wr.walker_heading_summary()["gait_record"] / "robots.csv")
    sideways = robots[robots["case"].str.startswith(("left", "right"))]
    steered = sideways[sideways["mode"] == "heading"]
    share = whole.heading_share(999, ("left", "right"))
    assert share == pytest.approx((steered["heading_change_rad"].abs() <= 0.3).mean())
    assert share == 1.0  # the walker passes: every steered robot within 0.3 rad
    assert (sideways["heading_change_rad"].abs() > 0.3).any()  # the open-loop runs are not
    # a gait history folded when the counts covered both modes: 160 robot runs of 80 per mode
    wide_kl = wr.seed_run(42, recipe=recipes.WALKER_TURNING_AXES_WIDE_KL)
    folded_rows = [r for r in wide_kl.verdict(525)["table"] if r["case"] == "left_0.15"]
    assert (folded_rows[0]["robots"], folded_rows[0]["seeds"]) == (160, 5)
    assert wide_kl.heading_share(525, ("left", "right")) is None


def test_folded_replays_keep_their_videos_and_are_found_by_their_old_names(tmp_path):
    a = _replay(tmp_path, "rep_a", video=b"a" * 10, wall=7.0)
    b = _replay(tmp_path, "rep_b", video=b"b" * 20, wall=8.5)
    folds.fold([a, b], tmp_path / "replays", keep=folds.keep_kinds("video"), now=NOW)
    record = records.load_record(tmp_path / "replays")
    assert record.wall_seconds == pytest.approx(15.5)
    assert {art.path for art in record.artifacts} == {
        "sources.json", "replay.csv", "rep_a/replay.mp4", "rep_b/replay.mp4"}
    assert len(folds.rows(tmp_path / "replays", "replay")) == 2
    assert folds.rows(tmp_path / "replays", "train").empty
    found = folds.find_folded(tmp_path, "rep_b")
    assert found is not None and found.where == tmp_path / "replays" / "rep_b"
    assert [art.path for art in found.record.artifacts] == ["replay.mp4"]
    assert [art.kind for art in found.retired] == ["trajectory"]
    assert [r.name for r in folds.folded_runs(tmp_path, "rep_*")] == ["rep_a", "rep_b"]
    assert folds.find_folded(tmp_path, "rep_c") is None
    # once the folders are retired, the analysis layer reads the folded replay like a folder
    shutil.rmtree(a)
    shutil.rmtree(b)
    (rep_b,) = [r for r in acceptance.recorded_replays(tmp_path) if r.where.name == "rep_b"]
    assert rep_b.video.read_bytes() == b"b" * 20 and rep_b.folder == "replays/rep_b"


def test_a_fold_rewritten_on_disk_is_read_again(tmp_path):
    a = _replay(tmp_path, "rep_a", wall=7.0)
    folds.fold([a], tmp_path / "replays", now=NOW)
    (run,) = folds.load_fold(tmp_path / "replays")
    assert run.record.wall_seconds == pytest.approx(7.0)
    # read twice from the same text: the same record, not a second parse
    assert folds.load_fold(tmp_path / "replays")[0].record is run.record
    sources = tmp_path / "replays" / folds.SOURCES_FILENAME
    sources.write_text(sources.read_text().replace('"wall_seconds": 7.0', '"wall_seconds": 9.0'))
    (again,) = folds.load_fold(tmp_path / "replays")
    assert again.record.wall_seconds == pytest.approx(9.0)


def test_keep_files_keeps_one_named_artifact(tmp_path):
    a = _replay(tmp_path, "rep_a")
    by_id = {records.load_record(a).run_id: "rep_a"}
    folds.fold([a], tmp_path / "f", keep=folds.keep_files(by_id, ["rep_a/trajectory.csv"]))
    assert (tmp_path / "f" / "rep_a" / "trajectory.csv").is_file()
    assert not (tmp_path / "f" / "rep_a" / "replay.mp4").exists()
    with pytest.raises(folds.FoldError, match="other/x.pt: not a file of a run being folded"):
        folds.keep_files(by_id, ["other/x.pt"])


def test_a_fold_refuses_before_writing_anything(tmp_path):
    a = _replay(tmp_path, "rep_a")
    folds.fold([a], tmp_path / "done")
    cases = [
        (([], tmp_path / "new"), "give at least one run folder"),
        (([a], tmp_path / "done"), "already exists"),
        (([a], tmp_path / "no" / "new"), "no such folder"),
        (([a, a], tmp_path / "new"), "rep_a: given twice"),
        (([tmp_path / "done"], tmp_path / "new"), "already a summary record"),
    ]
    for (sources, dest), message in cases:
        with pytest.raises(folds.FoldError, match=message):
            folds.fold(sources, dest)
    with pytest.raises(folds.FoldError, match="a replay record, not a gait_test run"):
        folds.fold([a], tmp_path / "new", kind="gait_test")
    (a / "replay.mp4").write_bytes(b"changed")
    with pytest.raises(folds.FoldError, match="replay.mp4"):
        folds.fold([a], tmp_path / "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["done", "rep_a"]


def test_joined_folds_keep_every_run_as_its_fold_has_it(tmp_path):
    # one recipe's two trainings, each folded on its own machine: s42's test, then s43's
    sources = []
    for seed in (42, 43):
        where = shutil.copytree(GAIT, tmp_path / "in" / f"h200_x_gait_s{seed}_model_550")
        folds.fold([where], tmp_path / f"fold_s{seed}", kind="gait_test", now=NOW,
                   fold_commit=f"c{seed}")  # fmt: skip
        sources.append(tmp_path / f"fold_s{seed}")
    later = NOW + dt.timedelta(hours=1)
    joined = folds.join(sources, tmp_path / "h200_x_gait_history", now=later,
                        command=["microduck", "records", "join-folds"], fold_commit="abc123")
    where = tmp_path / "h200_x_gait_history"
    records.verify_artifacts(records.load_record(where), where)
    assert joined.run_id == "20261202T020000Z_h200_x_gait_history"
    assert joined.config == {"folded": ["gait_test"],
                             "sources": ["h200_x_gait_s42_model_550", "h200_x_gait_s43_model_550"]}
    assert joined.summary == {"runs": 2, "gait_test_runs": 2, "gait_tests_passed": 0,
                              "training_seeds": "42, 43"}  # fmt: skip
    assert joined.wall_seconds == pytest.approx(2 * records.load_record(GAIT).wall_seconds)
    assert "joined from 2 summary records" in joined.provenance.notes[0]
    assert "commit abc123" in joined.provenance.notes[0]
    # every run reads back as it did from its own fold, and its rows are the same text
    before = [run for fold in sources for run in folds.load_fold(fold)]
    after = folds.load_fold(where)
    assert [(r.name, r.record, r.retired, r.extra) for r in after] == [
        (r.name, r.record, r.retired, r.extra) for r in before]
    texts = [(fold / "gait_test.csv").read_text().splitlines() for fold in sources]
    assert (where / "gait_test.csv").read_text().splitlines() == texts[0] + texts[1][1:]
    assert [folds.gait_verdict(r) for r in after] == [folds.gait_verdict(r) for r in before]


def test_joined_folds_keep_the_files_their_folds_kept(tmp_path):
    for name, video in (("rep_a", b"a" * 10), ("rep_b", b"b" * 20)):
        folds.fold([_replay(tmp_path / "in", name, video=video)], tmp_path / f"f_{name}",
                   keep=folds.keep_kinds("video"), now=NOW)  # fmt: skip
    folds.join([tmp_path / "f_rep_a", tmp_path / "f_rep_b"], tmp_path / "replays", now=NOW)
    record = records.load_record(tmp_path / "replays")
    assert sorted(a.path for a in record.artifacts) == [
        "rep_a/replay.mp4", "rep_b/replay.mp4", "replay.csv", "sources.json"]
    records.verify_artifacts(record, tmp_path / "replays")
    shutil.rmtree(tmp_path / "in")
    shutil.rmtree(tmp_path / "f_rep_a")
    shutil.rmtree(tmp_path / "f_rep_b")
    found = folds.find_folded(tmp_path, "rep_b")
    assert found is not None and (found.where / "replay.mp4").read_bytes() == b"b" * 20


def test_a_join_refuses_before_writing_anything(tmp_path):
    a, b = _replay(tmp_path, "rep_a"), _replay(tmp_path, "rep_b")
    folds.fold([a], tmp_path / "f_a")
    folds.fold([b], tmp_path / "f_b")
    folds.fold([a], tmp_path / "f_a_again")
    cases = [
        (([tmp_path / "f_a"], tmp_path / "new"), "at least two summary records"),
        (([tmp_path / "f_a", tmp_path / "f_b"], tmp_path / "f_a"), "already exists"),
        (([tmp_path / "f_a", tmp_path / "f_b"], tmp_path / "no" / "new"), "no such folder"),
        (([tmp_path / "f_a", a], tmp_path / "new"), "a replay record, not a summary record"),
        (([tmp_path / "f_a", tmp_path / "f_a_again"], tmp_path / "new"),
         "rep_a: folded in more than one of them"),
    ]  # fmt: skip
    for (summaries, dest), message in cases:
        with pytest.raises(folds.FoldError, match=message):
            folds.join(summaries, dest)
    (tmp_path / "f_b" / "replay.csv").write_text("changed\n")
    with pytest.raises(folds.FoldError, match="replay.csv"):
        folds.join([tmp_path / "f_a", tmp_path / "f_b"], tmp_path / "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f_a", "f_a_again", "f_b", "rep_a",
                                                          "rep_b"]  # fmt: skip


def test_retiring_a_file_keeps_the_record_and_names_the_file(tmp_path):
    a = _replay(tmp_path, "rep_a", video=b"v" * 12)
    before = records.load_record(a)
    video = next(art for art in before.artifacts if art.kind == "video")
    after = folds.retire_artifacts(a, ["replay.mp4"], "no page shows it",
                                   today=NOW.date())  # fmt: skip
    assert not (a / "replay.mp4").exists()
    assert [art.path for art in after.artifacts] == ["trajectory.csv"]
    assert after.notes == ("Retired from the publication on 2026-12-02 (no page shows it):\n"
                           f"replay.mp4 (12 bytes, sha256 {video.sha256})")  # fmt: skip
    assert after.model_copy(update={"artifacts": before.artifacts, "notes": None}) == before
    assert records.load_record(a) == after
    records.verify_artifacts(after, a)
    for paths, why, message in ((["replay.mp4"], "x", "no artifact replay.mp4"),
                                (["trajectory.csv"], " ", "say why"),
                                ([], "x", r"no artifact \(none given\)")):  # fmt: skip
        with pytest.raises(folds.FoldError, match=message):
            folds.retire_artifacts(a, paths, why)
    assert (a / "trajectory.csv").is_file()


# ----------------------------------------------------------------------------- book/results


def test_the_published_summary_records_fold_what_they_say():
    summaries = {w.name: r for w, r in records.find_records(RESULTS) if folds.is_fold(r)}
    assert set(summaries) == {results.RECIPE_REPLAYS, results.PRESET_HISTORY,
                              recipes.gait_history_folder(recipes.WALKER),
                              recipes.gait_history_folder(recipes.WALKER_NARROW),
                              recipes.gait_history_folder(recipes.WALKER_HEADING),
                              recipes.gait_history_folder(recipes.WALKER_TURNING),
                              recipes.gait_history_folder(recipes.WALKER_HEADING_ALONE),
                              recipes.gait_history_folder(recipes.WALKER_TURNING_ALONE),
                              recipes.gait_history_folder(recipes.WALKER_TURNING_SHORT),
                              recipes.gait_history_folder(recipes.WALKER_TURNING_AXES),
                              recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_ALONE),
                              recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_8192),
                              recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_MORE_UPDATES),
                              recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_WIDE_KL),
                              recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_FINE_YAW),
                              recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_FAST_START),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_FAST_START_STANDING),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_FAST_START_FINE_PLANAR),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_STRAIGHT_START),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_NO_MPS),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_700),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_EVERY_50),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_700_AGAIN),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_H200),
                              recipes.gait_history_folder(
                                  recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_AGAIN),
                              }  # fmt: skip
    counts = {name: r.summary["runs"] for name, r in summaries.items()}
    assert counts == {results.RECIPE_REPLAYS: 5, results.PRESET_HISTORY: 28,
                      recipes.gait_history_folder(recipes.WALKER): 39,
                      recipes.gait_history_folder(recipes.WALKER_NARROW): 27,
                      recipes.gait_history_folder(recipes.WALKER_HEADING): 48,
                      # 3 seeds x 12 checkpoints, less the 2 whose robots.csv never came back
                      recipes.gait_history_folder(recipes.WALKER_TURNING): 34,
                      # every 50th checkpoint from 450, and 999
                      recipes.gait_history_folder(recipes.WALKER_HEADING_ALONE): 12,
                      recipes.gait_history_folder(recipes.WALKER_TURNING_ALONE): 15,
                      # 3 seeds x 14 checkpoints (every 50th from 150, and 799)
                      recipes.gait_history_folder(recipes.WALKER_TURNING_SHORT): 42,
                      # every 50th checkpoint from 300 to 650, seed 44's to 600
                      recipes.gait_history_folder(recipes.WALKER_TURNING_AXES): 23,
                      # every 25th checkpoint from 450, and 614: no pass stopped it
                      recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_ALONE): 8,
                      # the tests written before the trainings ended (every 25th from 275)
                      recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_8192): 8,
                      # 3 seeds x 11 checkpoints (every 25th from 200, and 449)
                      recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_MORE_UPDATES): 33,
                      # 3 seeds x 17 checkpoints (every 25th from 200, and 599)
                      recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_WIDE_KL): 51,
                      # 3 seeds x 6 checkpoints (every 50th from 200, and 449)
                      recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_FINE_YAW): 18,
                      # 3 seeds x 8 checkpoints (every 50th from 250, and 599)
                      recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_FAST_START): 24,
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_FAST_START_STANDING): 24,
                      # every 25th checkpoint from 350, and 614; resumed, every 25th from 650,
                      # and 813: 20 per seed, but seed 43's resume stopped at its pass, model_675
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_FAST_START_FINE_PLANAR): 54,
                      # every 25th checkpoint from 350, and 699, as the watcher kept up: 10 per
                      # seed (it tests the newest saved checkpoint, so it skips some)
                      recipes.gait_history_folder(recipes.WALKER_TURNING_AXES_STRAIGHT_START): 30,
                      # every 25th checkpoint from 350, as the watcher kept up, to each
                      # seed's pass (43: 450, 44: 500) and the checkpoint saved before its
                      # training stopped; seed 42 to model_599
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW): 24,
                      # seed 43 again alone: every 25th checkpoint from 350 to 500 as it
                      # trained, and 525, its last, tested after the training was stopped
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE): 8,
                      # seeds 44 and 43 again alone, MPS off: every 25th checkpoint from 400
                      # (44) and 450 (43) to each one's pass, and the one saved before it stopped
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_NO_MPS): 14,
                      # seeds 43 and 42 again alone under MPS: every 25th checkpoint from 350
                      # to each one's pass (43: 350, 42: 500) and the one saved before it stopped
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS): 10,
                      # seed 44 again alone under MPS: every 25th checkpoint from 350, and
                      # 699, its last: no pass stopped it
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_700): 15,
                      # seed 42 again alone under MPS, a checkpoint saved every 50th iteration:
                      # model_350, and model_400, its pass
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_EVERY_50):  # noqa: E501
                          2,
                      # seed 44 a third time alone under MPS: as its second, no pass, so
                      # every 25th checkpoint from 350 and 699
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_700_AGAIN):  # noqa: E501
                          15,
                      # seed 43 a fifth time, on an H200: no pass in 650 iterations, so every
                      # 25th checkpoint from 350 and 649
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_H200): 13,
                      # seeds 42 and 43 again alone under MPS on a seventh H100, each folded on
                      # the machine and the two joined: every 25th checkpoint from 350 to each
                      # one's pass (42: 400, 43: 475)
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_AGAIN): 9,
                      }  # fmt: skip
    for name, record in summaries.items():
        records.verify_artifacts(record, RESULTS / name)
        runs = folds.load_fold(RESULTS / name)
        assert [r.name for r in runs] == record.config["sources"]
        # a folded run has no folder of its own, except a gait test a page plots
        kept = {r.name for r in runs if (RESULTS / r.name).is_dir()}
        kept_whole = {recipes.gait_history_folder(recipes.WALKER): {recipes.CANDIDATE_GAIT_TEST},
                      recipes.gait_history_folder(recipes.WALKER_HEADING): {
                          wr.walker_heading_summary()["gait_record"]},
                      recipes.gait_history_folder(
                          recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW): {
                          wr.published_walker()["gait_record"]}}  # fmt: skip
        assert kept == kept_whole.get(name, set())
        assert record.wall_seconds == pytest.approx(sum(r.record.wall_seconds for r in runs))
    gait = folds.rows(RESULTS / recipes.gait_history_folder(recipes.WALKER), "gait_test")
    assert len(gait) == 3 * 13 * 16  # seeds x checkpoints x cases
    assert gait.groupby("run")["verdict_passed"].first().sum() == 0
    heading = folds.rows(RESULTS / recipes.gait_history_folder(recipes.WALKER_HEADING), "gait_test")
    assert len(heading) == 3 * 16 * 16  # seeds x checkpoints x cases
    passed = heading.groupby("run")["verdict_passed"].first()
    assert sorted(passed[passed].index) == [f"h200_walker_heading_gait_s42_model_{i}"
                                            for i in (900, 999)] + [
        "h200_walker_heading_gait_s43_model_999"]  # fmt: skip


def test_the_candidate_reads_the_same_from_its_folder_and_from_the_gait_history(tmp_path):
    root = tmp_path / "results"
    root.mkdir()
    for name in (*(recipes.stage_folder(recipes.WALKER, s, 42) for s in recipes.WALKER.stages),
                 recipes.gait_history_folder(recipes.WALKER)):  # fmt: skip
        (root / name).symlink_to(RESULTS / name)
    folded, whole = wr.seed_run(42, root), wr.seed_run(42)
    assert [it for it, _, _ in folded.gait] == [it for it, _, _ in whole.gait]
    pd.testing.assert_frame_equal(folded.progress(), whole.progress())
    pd.testing.assert_frame_equal(wr.case_table(folded.verdict(550)),
                                  wr.case_table(whole.verdict(550)))  # fmt: skip
    straight = ("forward", "backward", "push")
    assert folded.heading_share(550, straight) == whole.heading_share(550, straight)
    assert 0.5 < whole.heading_share(550, straight) < 1.0
    where = next(w for it, w, _ in folded.gait if it == 550)
    assert where == root / recipes.gait_history_folder(recipes.WALKER) / recipes.CANDIDATE_GAIT_TEST
