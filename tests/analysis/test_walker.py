"""Skills per checkpoint and the time to walk, from gait verdict tables and training clocks."""

from __future__ import annotations

import pandas as pd
import pytest

from mjlab_microduck.analysis import walker

THRESHOLDS = {
    "min_progress_ratio_mean": 0.8,
    "min_progress_ratio_robot": 0.6,
    "max_heading_change_rad": 0.3,
    "max_stand_displacement_m": 0.05,
    "min_yaw_ratio": 0.8,
    "min_heading_speed_ratio": 0.8,
}


def _row(case, **values):
    row = {
        "case": case, "mean_progress_ratio": None, "min_progress_ratio": None,
        "heading_speed_ratio": None, "mean_yaw_ratio": None, "max_abs_heading_change_rad": None,
        "max_displacement_m": 0.0, "terminations": 0,
    }  # fmt: skip
    row.update(values)
    return row


def _walker_table(heading=0.2, progress=0.9, yaw=0.95, stand=0.02, terminations=0):
    return [
        _row("forward_0.15", mean_progress_ratio=progress, min_progress_ratio=0.7,
             max_abs_heading_change_rad=heading, terminations=terminations),
        _row("stand", max_abs_heading_change_rad=0.05, max_displacement_m=stand),
        _row("turn_left_0.5", mean_yaw_ratio=yaw),
        _row("walk_turn_left", heading_speed_ratio=0.9, mean_yaw_ratio=yaw),
    ]  # fmt: skip


def test_a_walker_holds_every_skill_and_each_failure_names_its_own():
    assert all(walker.skills_held(_walker_table(), THRESHOLDS).values())
    drifting = walker.skills_held(_walker_table(heading=0.45), THRESHOLDS)
    assert [s for s, ok in drifting.items() if not ok] == ["holds its heading"]
    slow = walker.skills_held(_walker_table(progress=0.79), THRESHOLDS)
    assert [s for s, ok in slow.items() if not ok] == ["walks where told"]
    lazy = walker.skills_held(_walker_table(yaw=0.5), THRESHOLDS)
    assert [s for s, ok in lazy.items() if not ok] == ["turns on command"]
    wandering = walker.skills_held(_walker_table(stand=0.08), THRESHOLDS)
    assert [s for s, ok in wandering.items() if not ok] == ["stands still"]
    falling = walker.skills_held(_walker_table(terminations=1), THRESHOLDS)
    assert [s for s, ok in falling.items() if not ok] == ["never falls"]
    # Exactly at a threshold still holds (0.8 x 0.15 is not exactly 0.12 in floating point).
    assert walker.skills_held(_walker_table(progress=0.8, heading=0.3), THRESHOLDS)[
        "walks where told"
    ]


def _scalars(first, last, start_s, seconds_per_iteration):
    index = pd.RangeIndex(first, last + 1, name="iteration")
    wall = start_s + 20.0 + seconds_per_iteration * (index - first + 1)
    return pd.DataFrame({"wall_time": wall}, index=index)


def test_the_clock_chains_a_resume_onto_its_main_run():
    main_start = pd.Timestamp("2026-12-01T13:00:00+00:00")
    resume_start = pd.Timestamp("2026-12-01T13:30:00+00:00")  # a gap that must not count
    clock = walker.TrainingClock(
        (
            (main_start.isoformat(), _scalars(0, 499, main_start.timestamp(), 1.0)),
            (
                resume_start.isoformat(),
                _scalars(499, 748, resume_start.timestamp(), 2.0),
            ),
        )
    )
    assert clock.seconds_at(0) == pytest.approx(21.0)
    assert clock.seconds_at(499) == pytest.approx(520.0)
    # The resume's first logged iteration (499 again) is 22 s into its own process.
    assert clock.seconds_at(600) == pytest.approx(520.0 + 20.0 + 2.0 * 102)
    with pytest.raises(ValueError, match="past the last"):
        clock.seconds_at(749)
    minutes = clock.minutes_by_iteration()
    assert list(minutes.index) == list(range(0, 749))  # 499, shared by both stages, once
    for iteration in (0, 499, 600, 748):
        assert minutes.loc[iteration] == pytest.approx(clock.seconds_at(iteration) / 60.0)
    assert walker.TrainingClock(()).minutes_by_iteration().empty


def test_time_to_walk_is_the_first_checkpoint_passing_everything():
    start = pd.Timestamp("2026-12-01T13:00:00+00:00")
    clock = walker.TrainingClock(((start.isoformat(), _scalars(0, 499, start.timestamp(), 1.2)),))
    verdicts = [
        (300, {"table": _walker_table(), "thresholds": THRESHOLDS, "failures": []}),
        (100, {"table": _walker_table(progress=0.1), "thresholds": THRESHOLDS,
               "failures": ["a", "b"]}),
        (200, {"table": _walker_table(heading=0.5), "thresholds": THRESHOLDS, "failures": ["c"]}),
    ]  # fmt: skip
    table = walker.progress_table(verdicts, clock)
    assert table["iteration"].tolist() == [100, 200, 300]
    assert table["walker"].tolist() == [False, False, True]
    assert table["failed_conditions"].tolist() == [2, 1, 0]
    assert int(walker.first_held(table, "walks where told")["iteration"]) == 200
    assert walker.time_to_walk_s(table) == pytest.approx(20.0 + 1.2 * 301)
    assert walker.time_to_walk_s(table[table["iteration"] < 300]) is None
    # without a clock (gait tests published without their training) the minutes are NaN
    untimed = walker.progress_table(verdicts, None)
    assert untimed["minutes"].isna().all()
    assert untimed.drop(columns="minutes").equals(table.drop(columns="minutes"))
