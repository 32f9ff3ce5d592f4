"""Gait verdicts as a skills table, on made-up verdicts."""

from __future__ import annotations

import run_fakes

from mjlab_microduck.book import gait_pages

THRESHOLDS = {
    "min_progress_ratio_mean": 0.8, "min_progress_ratio_robot": 0.6,
    "max_heading_change_rad": 0.3, "max_stand_displacement_m": 0.05,
    "min_yaw_ratio": 0.8, "min_heading_speed_ratio": 0.8,
}  # fmt: skip


def _verdict(heading: float, failures: list[str]) -> dict:
    table = [
        {"case": "forward_0.15", "mean_progress_ratio": 0.9, "min_progress_ratio": 0.7,
         "heading_speed_ratio": None, "mean_yaw_ratio": None,
         "max_abs_heading_change_rad": heading, "max_displacement_m": 1.0, "terminations": 0},
        {"case": "stand", "mean_progress_ratio": None, "min_progress_ratio": None,
         "heading_speed_ratio": None, "mean_yaw_ratio": None,
         "max_abs_heading_change_rad": 0.01, "max_displacement_m": 0.01, "terminations": 0},
    ]  # fmt: skip
    return {"table": table, "thresholds": THRESHOLDS, "failures": failures}


def _gait_record(run_id: str):
    config = {"seeds": [0, 1], "robots_per_case": 4, "cases": ["forward_0.15", "stand"],
              "duration_s": 10.0, "checkpoint": "runs/model_5.pt"}  # fmt: skip
    return run_fakes.record(run_id=run_id, kind="gait_test", config=config)


def test_skills_table_gives_each_test_its_source_size_skills_and_failures():
    table = gait_pages.skills_table({
        "this build": (_gait_record("live"), _verdict(0.1, [])),
        "recorded": (_gait_record("gpu"), _verdict(0.5, ["forward_0.15: heading"])),
    })  # fmt: skip
    assert list(table.index[:3]) == ["run", "machine", "profile"]
    assert table.loc["size", "this build"] == "model_5.pt, 2 seeds × 4 robots × 2 cases, 10 s"
    assert table.loc["holds its heading", "this build"] == "yes"
    assert table.loc["holds its heading", "recorded"] == "no"
    assert table.loc["stands still", "recorded"] == "yes"
    assert table.loc["failed conditions", "recorded"] == 1


def test_published_skills_table_reads_each_folder_s_record_and_verdict(tmp_path, monkeypatch):
    import json

    from mjlab_microduck.book import walker_results
    from mjlab_microduck.runs import records

    for run_id, heading in (("live", 0.1), ("gpu", 0.5)):
        where = tmp_path / run_id
        where.mkdir()
        records.write_record(_gait_record(run_id), where)
        failures = [] if heading < 0.3 else ["forward_0.15: heading"]
        (where / "verdict.json").write_text(json.dumps(_verdict(heading, failures)))
    monkeypatch.setattr(walker_results, "_results_root", lambda root: tmp_path)
    table = gait_pages.published_skills_table({"a": "live", "b": "gpu"})
    assert list(table.columns) == ["a", "b"]
    assert table.loc["run", "a"] == "live"
    assert table.loc["holds its heading"].tolist() == ["yes", "no"]
    assert table.loc["failed conditions"].tolist() == [0, 1]
