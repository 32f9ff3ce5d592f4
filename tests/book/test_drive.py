"""book/drive.py: which checkpoint the book drives (walker.json, else the fallback), the export
it uses, the published Warp gait test beside it, and chapter 6's sim-to-sim tables."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from mjlab_microduck.analysis import gait
from mjlab_microduck.book import drive, results, walker_results
from mjlab_microduck.runs import records

RESULTS = results.results_root()


def test_without_walker_json_the_book_drives_the_fallback(tmp_path):
    policy = drive.book_policy(tmp_path)
    assert policy.checkpoint == tmp_path / drive.FALLBACK_CHECKPOINT
    assert not policy.walker and policy.label.endswith("(not a walker yet)")


def test_walker_json_names_the_walker(tmp_path):
    folder = tmp_path / "h200_walker_x_s1"
    folder.mkdir()
    (folder / "model_9.pt").write_bytes(b"weights")
    (tmp_path / drive.WALKER_JSON).write_text(json.dumps(
        {"checkpoint": "h200_walker_x_s1/model_9.pt", "task": "T"}))  # fmt: skip
    policy = drive.book_policy(tmp_path)
    assert policy == drive.BookPolicy(folder / "model_9.pt", "T", walker=True)
    assert policy.label == "h200_walker_x_s1/model_9.pt, the book's walker"
    (tmp_path / drive.WALKER_JSON).write_text(json.dumps({"checkpoint": "gone/model_1.pt"}))
    with pytest.raises(FileNotFoundError, match="gone/model_1.pt is not there"):
        drive.book_policy(tmp_path)


def test_the_book_checkpoint_has_a_published_export():
    """Fails when walker.json is published without an export of its checkpoint: run
    `microduck export <checkpoint>`, then `microduck records publish <run folder>
    book/results/cpu_export_<name>`."""
    policy = drive.book_policy()
    assert policy.checkpoint.is_file()
    found = drive.find_export(policy.checkpoint, [RESULTS])
    assert found is not None, f"no published export of {policy.checkpoint}"
    record = records.load_record(found)
    assert record.config["checkpoint_sha256"] == records.sha256_file(policy.checkpoint)
    assert drive.export_folder(make=False) == found


def test_find_export_matches_bytes_not_names(tmp_path):
    root = tmp_path / "results"
    published = RESULTS / "cpu_export_walker_heading_s42_model_999"
    shutil.copytree(published, root / "cpu_export_copy")
    checkpoint = RESULTS / "h200_walker_heading_main_s42" / "model_999.pt"
    assert drive.find_export(checkpoint, [tmp_path / "none", root]) == root / "cpu_export_copy"
    other = tmp_path / "model_999.pt"
    other.write_bytes(checkpoint.read_bytes() + b"x")  # same name, other bytes
    assert drive.find_export(other, [root]) is None


def test_the_fallback_has_its_published_warp_gait_test():
    checkpoint = RESULTS / drive.FALLBACK_CHECKPOINT
    assert drive.warp_gait_record(checkpoint) == RESULTS / "h200_walker_gait_s42_model_550"
    assert drive.warp_gait_record(RESULTS / "h200_walker_main_s43" / "model_499.pt") is None
    robots = drive.warp_robots(checkpoint)
    assert len(robots) == 5 * 16 * len(gait.CASES)


def test_the_walker_is_compared_with_its_full_size_warp_test_not_the_ci_one():
    policy = drive.book_policy()
    assert policy.walker
    walker_record = json.loads((RESULTS / drive.WALKER_JSON).read_text())
    # Two published Warp tests name the walker's checkpoint: the H200's and the CPU's.
    assert (RESULTS / walker_record["ci_gait_record"]).is_dir()
    assert drive.warp_gait_record(policy.checkpoint) == RESULTS / walker_record["gait_record"]


def _rows(case: str, mode: str, values: list[float], column: str, **extra) -> pd.DataFrame:
    c = gait.CASE_BY_NAME[case]
    return pd.DataFrame({"case": case, "mode": mode, "ang_vel_z": c.ang_vel_z, column: values,
                         "heading_change_rad": extra.get("heading", 0.0)})  # fmt: skip


def test_sim2sim_table_compares_like_with_like():
    # A record from before the heading mode: no mode column, every yaw command held.
    warp = pd.concat(
        [
            _rows("forward_0.15", "x", [0.8, 0.9, 1.0], "progress_ratio", heading=[0.1, -0.2, 0.3]),
            _rows("turn_left_0.5", "x", [0.9, 1.1], "yaw_ratio"),
        ]
    ).drop(columns="mode")
    plain = pd.concat(
        [
            _rows("forward_0.15", gait.OPEN_LOOP_MODE, [1.05], "progress_ratio", heading=0.05),
            _rows("forward_0.15", gait.HEADING_MODE, [0.95], "progress_ratio", heading=0.01),
            _rows("turn_left_0.5", gait.HEADING_MODE, [0.97], "yaw_ratio"),
        ]
    )
    table = drive.sim2sim_table(plain, warp)
    forward = table.loc["forward 0.15 m/s"]
    assert forward["compared"] == "yaw rate held at 0"
    assert (forward["Warp mean"], forward["Warp min"], forward["Warp max"]) == pytest.approx(
        (0.9, 0.8, 1.0))  # fmt: skip
    assert forward["plain MuJoCo"] == 1.05 and forward["plain MuJoCo, other mode"] == 0.95
    warp_heading, plain_heading = drive.OPEN_LOOP_HEADING_COLUMNS
    assert forward[warp_heading] == pytest.approx(0.2) and forward[plain_heading] == 0.05
    turn = table.loc["turn in place +0.5 rad/s"]
    assert turn["compared"] == "yaw rate commanded" and turn["Warp mean"] == pytest.approx(1.0)
    assert list(table.index) == ["forward 0.15 m/s", "turn in place +0.5 rad/s"]
    outside = drive.outside_warp(table)
    assert list(outside.index) == ["forward 0.15 m/s"]
    assert outside.loc["forward 0.15 m/s", "by"] == pytest.approx(0.05)


def test_heading_columns_are_open_loop_when_the_heading_mode_is_compared():
    warp = pd.concat([
        _rows("forward_0.2", gait.HEADING_MODE, [0.9, 0.95], "progress_ratio",
              heading=[0.01, 0.02]),
        _rows("forward_0.2", gait.OPEN_LOOP_MODE, [0.9, 0.9, 0.9], "progress_ratio",
              heading=[0.1, -0.4, 0.3]),
    ])  # fmt: skip
    plain = pd.concat([
        _rows("forward_0.2", gait.HEADING_MODE, [0.97], "progress_ratio", heading=0.0),
        _rows("forward_0.2", gait.OPEN_LOOP_MODE, [0.96], "progress_ratio", heading=-0.07),
    ])  # fmt: skip
    row = drive.sim2sim_table(plain, warp).loc["forward 0.2 m/s"]
    assert row["compared"] == "heading held" and row["plain MuJoCo"] == 0.97
    warp_heading, plain_heading = drive.OPEN_LOOP_HEADING_COLUMNS
    assert row[warp_heading] == pytest.approx(0.3) and row[plain_heading] == pytest.approx(0.07)


def _sweep():
    return pd.DataFrame(
        {"measure": ["progress / command", "progress / command", "moved (m)"],
         "0 (0 ms)": [0.01, 0.9, 0.0], "1 (5 ms)": [0.9, 0.92, 0.01],
         "2 (10 ms)": [0.1, 0.88, 0.0]},
        index=["backward 0.2 m/s", "forward 0.4 m/s", "stand"])  # fmt: skip


def test_delay_effect_and_finding_say_where_the_delay_matters():
    effect = drive.delay_effect(_sweep())
    assert list(effect.index) == ["backward 0.2 m/s", "forward 0.4 m/s"]
    back = effect.loc["backward 0.2 m/s"]
    assert (back["least at delay"], back["most at delay"]) == ("0 (0 ms)", "1 (5 ms)")
    assert back["spread"] == pytest.approx(0.89)
    assert back["stalls at delay"] == "0 (0 ms), 2 (10 ms)"
    assert effect.loc["forward 0.4 m/s", "stalls at delay"] == "none"
    finding = drive.delay_finding(_sweep())
    assert finding.startswith("backward 0.2 m/s stalls at a delay of 0 (0 ms), 2 (10 ms).")
    assert "moves backward 0.2 m/s most, from 0.01 of the command at a delay of 0 (0 ms)" in finding
    assert finding.endswith("and forward 0.4 m/s least (0.88 to 0.92).")
    calm = _sweep().assign(**{"0 (0 ms)": [0.5, 0.9, 0.0], "2 (10 ms)": [0.6, 0.88, 0.0]})
    assert drive.delay_finding(calm).startswith(
        "No straight line stalls at any actuator delay of the sweep, 0 (0 ms) to 2 (10 ms)")


def test_a_line_stalled_at_every_delay_is_said_so_not_called_the_least_moved():
    sweep = _sweep().assign(**{"1 (5 ms)": [0.01, 0.92, 0.01], "2 (10 ms)": [0.01, 0.88, 0.0]})
    finding = drive.delay_finding(sweep)
    assert finding.startswith("backward 0.2 m/s stalls at every delay.")
    assert finding.endswith(
        "The delay moves forward 0.4 m/s most, from 0.88 of the command at a delay of "
        "2 (10 ms) to 0.92 at 1 (5 ms).")  # fmt: skip
    assert drive.delay_finding(sweep.drop(index="forward 0.4 m/s")) == (
        "backward 0.2 m/s stalls at every delay.")


def _sim2sim(plain: dict[str, float]) -> pd.DataFrame:
    """A sim2sim table of three cases with Warp's range of each and the plain robot's value."""
    return pd.DataFrame({
        "measure": ["progress / command", "progress / command", "moved (m)"],
        "compared": "heading held",
        "Warp min": [0.86, 0.9, 0.004], "Warp max": [1.02, 1.0, 0.005],
        "plain MuJoCo": [plain.get(k, v) for k, v in
                         (("forward", 0.95), ("backward", 0.95), ("stand", 0.0045))],
    }, index=pd.Index(["forward 0.1 m/s", "backward 0.2 m/s", "stand"], name="case"))  # fmt: skip


def test_outside_warp_finding_names_the_stalls_then_the_near_misses():
    assert drive.outside_warp_finding(_sim2sim({})) == (
        "Every case lies within the range of Warp's robots.")
    both = drive.outside_warp_finding(_sim2sim({"forward": 0.01, "stand": 0.002}))
    assert both == (
        "In plain MuJoCo the nominal robot stalls at forward 0.1 m/s (0.01 of the command), "
        "where every Warp robot walked (the worst at 0.86). Every other case lies within the "
        "range of Warp's robots or misses its nearest end: stand by 0.0020 m.")
    # short of Warp's range but walking: a near miss, not a stall; each in its own unit
    assert drive.outside_warp_finding(_sim2sim({"backward": 0.85, "stand": 0.0055})) == (
        "Every case lies within the range of Warp's robots or misses its nearest end: "
        "backward 0.2 m/s by 0.050 of the command and stand by 0.0005 m.")


def test_outside_warp_finding_counts_a_stalled_turn_as_a_stall():
    table = pd.DataFrame({
        "measure": ["yaw rate / command"], "compared": "yaw rate commanded",
        "Warp min": [0.9], "Warp max": [1.1], "plain MuJoCo": [0.05],
    }, index=pd.Index(["turn in place +0.5 rad/s"], name="case"))  # fmt: skip
    assert drive.outside_warp_finding(table) == (
        "In plain MuJoCo the nominal robot stalls at turn in place +0.5 rad/s (0.05 of the "
        "command), where every Warp robot walked (the worst at 0.90). Every other case lies "
        "within the range of Warp's robots.")


@pytest.mark.slow
def test_outside_warp_finding_on_the_published_export_and_warp_test():
    """Chapter 6's glued finding: the walker's export in plain MuJoCo beside its published
    full-size Warp test (the plain rollout is deterministic and takes seconds)."""
    from mjlab_microduck.jobs import plain_mujoco

    plain = plain_mujoco.run_cases(drive.export_folder(make=False), drive.SIM2SIM_CASES)
    warp = drive.warp_robots(drive.book_policy().checkpoint)
    finding = drive.outside_warp_finding(drive.sim2sim_table(plain, warp))
    assert finding == (
        "In plain MuJoCo the nominal robot stalls at forward 0.1 m/s and backward 0.2 m/s "
        "(0.01 and 0.01 of the command), where every Warp robot walked (the worst at 0.86 and "
        "0.88). Every other case lies within the range of Warp's robots or misses its nearest "
        "end: stand by 0.0015 m, turn in place +1.0 rad/s by 0.008 of the command and turn in "
        "place -1.0 rad/s by 0.003 of the command.")
    assert "turn in place +0.5 rad/s" not in finding  # the slow turns are within Warp's range


def test_stalls_marks_the_linear_cases_under_the_stall_line_per_delay():
    sweep = pd.DataFrame(
        {"measure": ["progress / command", "progress / command", "moved (m)"],
         "0 (0 ms)": [0.01, 0.9, 0.0], "1 (5 ms)": [0.9, 0.9, 0.01], "2 (10 ms)": [0.1, 0.05, 0.0]},
        index=["backward 0.2 m/s", "forward 0.4 m/s", "stand"])  # fmt: skip
    stalled = drive.stalls(sweep)
    assert list(stalled.index) == ["backward 0.2 m/s", "forward 0.4 m/s"]
    assert stalled.loc["backward 0.2 m/s"].tolist() == [True, False, True]
    assert stalled.loc["forward 0.4 m/s"].tolist() == [False, False, True]


def test_warp_modes_follow_the_record():
    old = pd.DataFrame({"case": ["stand", "turn"], "ang_vel_z": [0.0, 0.5]})
    assert drive.warp_modes(old) == ["heading", "open_loop"]
    assert drive.warp_modes(old.assign(mode="heading")) == ["heading"]
    assert drive.warp_modes(old.iloc[:0]) == []


def test_export_facts_read_the_published_export():
    facts = drive.export_facts(drive.export_folder(make=False))
    assert facts["physics steps per policy step"] >= 1
    assert facts["heading law stiffness"] == f"{gait.HEADING_CONTROL_STIFFNESS:g}"
    assert "/" in facts["actuator delay, physics steps: drawn in training / fixed"]


def test_training_seed_reads_the_record_beside_the_checkpoint(tmp_path):
    checkpoint = RESULTS / "h200_walker_heading_main_s42" / "model_999.pt"
    assert drive.training_seed(checkpoint) == 42
    assert drive.training_seed(tmp_path / "model_1.pt") is None  # no record beside it


def test_write_drive_files_labels_what_the_page_drives(tmp_path):
    folder = drive.write_drive_files(tmp_path)
    about = json.loads((tmp_path / drive.ABOUT_FILENAME).read_text())
    assert about["label"] == drive.book_policy().label
    assert about["export_run"] == records.load_record(folder).run_id
    # the seed of the published walker, as walker.json and the training's own record name it
    assert about["seed"] == walker_results.published_walker()["seed"]
    beside = drive.book_policy().checkpoint.parent / records.RECORD_FILENAME
    assert about["seed"] == records.load_record(beside).config["seed"]["env"]
    for name in drive.EXPORT_FILES:
        assert (tmp_path / name).read_bytes() == (folder / name).read_bytes()
