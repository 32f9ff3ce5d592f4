"""The gait test's rule on synthetic trajectories: metrics, freezing at termination, verdict.

What this proves, without a simulator:

* the case table holds the issue's sixteen commands with readable labels;
* a straight walker passes, a robot circling at 0.15 m/s (radius 0.25 m) fails on progress and
  heading with the expected lines, a stander under a forward command fails on progress;
* a robot that falls forward and is reset ahead of its start scores only the ground it covered
  before the termination, and fails;
* turning in place at 0.9 x the command passes, at 0.5 x fails; a stander drifting 0.1 m fails;
* every threshold passes at its value and fails just beyond it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mjlab_microduck.analysis import gait
from mjlab_microduck.analysis.gait import CASE_BY_NAME, GaitCase, Trajectory

DT = 0.02
STEPS = 500  # 10 s at 50 Hz
TERMS = ("time_out", "fell_over", "nan_state", "legs_collapsed", "below_ground")


def trajectory(x, y, heading, z=None, done=None, term_mask=None, contacts=None) -> Trajectory:
    """A Trajectory from world paths of shape (steps + 1, robots); velocities are differences."""
    x, y, heading = (np.asarray(a, dtype=float) for a in (x, y, heading))
    vx, vy = np.gradient(x, DT, axis=0), np.gradient(y, DT, axis=0)
    cos, sin = np.cos(heading), np.sin(heading)
    n = x.shape[0]
    k = np.arange(n)[:, None] * np.ones(x.shape[1])
    left = ((k // 10) % 2 == 0) if contacts is None else contacts[0]
    right = ~left if contacts is None else contacts[1]
    return Trajectory(
        dt=DT, x=x, y=y, z=np.full(x.shape, 0.11) if z is None else z, heading=heading,
        v_forward=vx * cos + vy * sin, v_left=-vx * sin + vy * cos,
        yaw_rate=np.gradient(np.unwrap(heading, axis=0), DT, axis=0),
        upright=np.ones(x.shape), contact_left=left.astype(float),
        contact_right=right.astype(float),
        done=np.zeros(x.shape, bool) if done is None else done,
        term_mask=np.zeros(x.shape) if term_mask is None else term_mask, term_names=TERMS,
    )  # fmt: skip


def straight(speed, headings, direction=0.0, steps=STEPS, start=(1.0, -2.0)) -> Trajectory:
    """Robots moving at ``speed`` along their heading turned by ``direction``."""
    t = np.arange(steps + 1)[:, None] * DT
    h = np.asarray(headings, dtype=float)[None, :]
    x = start[0] + speed * t * np.cos(h + direction)
    y = start[1] + speed * t * np.sin(h + direction)
    return trajectory(x, y, np.repeat(h, steps + 1, axis=0))


def circling(radius=0.25, speed=0.15, robots=2, steps=STEPS) -> Trajectory:
    """Robots walking counter-clockwise circles, starting at heading 0 from the origin."""
    omega = speed / radius
    t = np.arange(steps + 1)[:, None] * DT * np.ones(robots)
    return trajectory(radius * np.sin(omega * t), radius * (1 - np.cos(omega * t)), omega * t)


def turning(rate, robots=2, steps=STEPS) -> Trajectory:
    t = np.arange(steps + 1)[:, None] * DT * np.ones(robots)
    heading = np.angle(np.exp(1j * (0.3 + rate * t)))  # wrapped, as the simulator reports it
    return trajectory(np.zeros_like(t), np.zeros_like(t), heading)


def robots_of(traj: Trajectory, case: GaitCase, seed: int = 0) -> pd.DataFrame:
    frame = gait.robot_metrics(traj, case)
    frame.insert(0, "seed", seed)
    return frame


# ----------------------------------------------------------------------------- cases


def test_case_table():
    names = [case.name for case in gait.CASES]
    assert len(names) == len(set(names)) == 16
    speeds = [c.lin_vel_x for c in gait.CASES if c.name.startswith("forward")]
    assert speeds == [0.1, 0.15, 0.2, 0.3, 0.4]
    assert {c.ang_vel_z for c in gait.CASES if c.kind == "turn"} == {0.5, -0.5, 1.0, -1.0}
    labels = {c.name: c.label for c in gait.CASES}
    assert labels["forward_0.3"] == "forward 0.3 m/s"
    assert labels["backward_0.2"] == "backward 0.2 m/s"
    assert labels["right_0.15"] == "sideways right 0.15 m/s"
    assert labels["turn_left_0.5"] == "turn in place +0.5 rad/s"
    assert labels["walk_turn_right"] == "walk 0.15 m/s and turn -0.5 rad/s"
    assert CASE_BY_NAME["push"].kind == "linear" and CASE_BY_NAME["push"].push_mps == 0.3
    assert CASE_BY_NAME["stand"].kind == "stand"
    assert CASE_BY_NAME["left_0.15"].direction_rad == pytest.approx(math.pi / 2)
    assert [gait.push_sign(i) for i in range(4)] == [1.0, -1.0, 1.0, -1.0]


# ----------------------------------------------------------------------------- metrics


def test_straight_walker_passes_from_any_start_heading():
    case = CASE_BY_NAME["forward_0.15"]
    traj = straight(0.15, headings=[0.0, 1.0, -2.5, math.pi])
    robots = pd.concat([robots_of(traj, case, seed) for seed in (0, 1)], ignore_index=True)
    assert robots["progress_ratio"].to_numpy() == pytest.approx(1.0)
    assert robots["progress_m"].to_numpy() == pytest.approx(1.5)
    assert robots["heading_speed_mps"].to_numpy() == pytest.approx(0.15)
    assert robots["lateral_drift_m"].to_numpy() == pytest.approx(0.0, abs=1e-12)
    assert robots["heading_change_rad"].to_numpy() == pytest.approx(0.0)
    assert robots["contact_left_frac"].to_numpy() == pytest.approx(0.5, abs=0.01)
    assert robots["both_feet_off_frac"].to_numpy() == pytest.approx(0.0)
    assert robots["touchdowns_left_per_s"].to_numpy() == pytest.approx(2.5)
    assert robots["touchdowns_right_per_s"].to_numpy() == pytest.approx(2.5)
    assert not robots["terminated"].any()
    result = gait.verdict(robots)
    assert result.passed and result.failures == []
    assert result.table[["case", "passed", "seeds"]].values.tolist() == [["forward_0.15", True, 2]]


def test_sideways_progress_is_measured_along_the_commanded_direction():
    case = CASE_BY_NAME["left_0.15"]
    m = gait.robot_metrics(straight(0.15, [0.7], direction=math.pi / 2), case)
    assert m["progress_ratio"].iloc[0] == pytest.approx(1.0)
    assert m["heading_speed_mps"].iloc[0] == pytest.approx(0.15)
    # The same walk under a forward command makes no progress and drifts 1.5 m to the left.
    m = gait.robot_metrics(
        straight(0.15, [0.7], direction=math.pi / 2), CASE_BY_NAME["forward_0.15"]
    )
    assert m["progress_ratio"].iloc[0] == pytest.approx(0.0, abs=1e-12)
    assert m["lateral_drift_m"].iloc[0] == pytest.approx(1.5)


def test_circling_fails_progress_and_heading():
    robots = robots_of(circling(), CASE_BY_NAME["forward_0.15"], seed=3)
    end = 0.25 * math.sin(6.0)  # 0.6 rad/s for 10 s
    assert robots["progress_m"].to_numpy() == pytest.approx(end)
    assert robots["heading_change_rad"].to_numpy() == pytest.approx(6.0)
    assert robots["yaw_rate_rad_s"].to_numpy() == pytest.approx(0.6, rel=1e-3)
    # Along its own heading it walks at the commanded speed all the time.
    assert robots["heading_speed_mps"].to_numpy() == pytest.approx(0.15, rel=1e-3)
    result = gait.verdict(robots)
    assert not result.passed
    assert result.failures == [
        "seed 3, forward 0.15 m/s: mean progress -0.05 × command < 0.80",
        "seed 3, forward 0.15 m/s: robot 0 progress -0.05 × command < 0.60",
        "seed 3, forward 0.15 m/s: robot 0 heading change +6.00 rad, |change| > 0.30",
    ]
    assert result.table["failed_conditions"].tolist() == [3]


def test_stander_under_a_forward_command_fails_progress_only():
    robots = robots_of(straight(0.0, [0.0, 2.0]), CASE_BY_NAME["forward_0.2"])
    result = gait.verdict(robots)
    assert result.failures == [
        "seed 0, forward 0.2 m/s: mean progress 0.00 × command < 0.80",
        "seed 0, forward 0.2 m/s: robot 0 progress 0.00 × command < 0.60",
    ]


def test_fall_forward_is_frozen_at_the_termination_and_fails():
    # Robot 1 runs forward at 1 m/s (falling) and the env ends its episode at row 26; from there
    # the rows hold its reset state, 2 m ahead and upright. Robot 0 walks properly.
    case = CASE_BY_NAME["forward_0.15"]
    t = np.arange(STEPS + 1) * DT
    x = np.stack([0.15 * t, np.where(t < 26 * DT, 1.0 * t, 2.0 + 0.15 * t)], axis=1)
    z = np.stack([np.full_like(t, 0.11), np.where(t < 26 * DT, 0.11 - 0.1 * t, 0.11)], axis=1)
    done = np.zeros((STEPS + 1, 2), bool)
    done[26, 1] = done[300, 1] = True  # the second one, after the reset, must not matter
    mask = np.zeros((STEPS + 1, 2))
    mask[26, 1] = 2 + 8  # fell_over and legs_collapsed together
    traj = trajectory(x, np.zeros_like(x), np.zeros_like(x), z=z, done=done, term_mask=mask)
    robots = robots_of(traj, case)
    fallen = robots.iloc[1]
    assert fallen["progress_m"] == pytest.approx(25 * DT)  # row 25: the last one on its feet
    assert fallen["progress_ratio"] == pytest.approx(0.5 / 1.5)
    assert fallen["terminated"] and fallen["termination_time_s"] == pytest.approx(0.52)
    assert fallen["termination_term"] == "fell_over+legs_collapsed"
    assert fallen["min_trunk_z_m"] == pytest.approx(0.11 - 0.1 * 25 * DT)
    # Stopped: no speed and no touch-downs after the termination.
    assert fallen["heading_speed_mps"] == pytest.approx(traj.v_forward[1:26, 1].sum() / STEPS)
    assert fallen["touchdowns_left_per_s"] < 0.2
    assert not robots.iloc[0]["terminated"] and robots.iloc[0]["termination_term"] == ""
    result = gait.verdict(robots)
    assert result.failures == [
        "seed 0, forward 0.15 m/s: mean progress 0.67 × command < 0.80",
        "seed 0, forward 0.15 m/s: robot 1 progress 0.33 × command < 0.60",
        "seed 0, forward 0.15 m/s: 1 of 2 robots terminated (first: robot 1, "
        "fell_over+legs_collapsed at 0.52 s) > 0",
    ]
    path = gait.path_in_start_frame(traj)
    end = path[(path["robot"] == 1) & (path["step"] == STEPS)]
    assert end["forward_m"].iloc[0] == pytest.approx(0.5)


def test_turn_in_place_at_0_9_passes_and_at_0_5_fails():
    case = CASE_BY_NAME["turn_left_0.5"]
    good = robots_of(turning(0.45), case)
    assert good["yaw_ratio"].to_numpy() == pytest.approx(0.9)
    assert good["heading_change_rad"].to_numpy() == pytest.approx(4.5)
    assert np.isnan(good["progress_ratio"]).all()
    assert gait.verdict(good).passed
    bad = robots_of(turning(0.25), case, seed=1)
    assert gait.verdict(bad).failures == [
        "seed 1, turn in place +0.5 rad/s: mean yaw rate 0.50 × command < 0.80"
    ]
    # Turning the wrong way is a negative ratio, never a pass.
    assert (
        gait.verdict(robots_of(turning(-0.5), case))
        .failures[0]
        .endswith("mean yaw rate -1.00 × command < 0.80")
    )


def test_stand_drifting_0_1_m_fails():
    traj = straight(0.01, [0.0, 1.0])  # 0.1 m in 10 s
    robots = robots_of(traj, CASE_BY_NAME["stand"])
    assert robots["displacement_m"].to_numpy() == pytest.approx(0.1)
    assert robots["lateral_drift_m"].to_numpy() == pytest.approx(0.1)  # stand: planar norm
    assert gait.verdict(robots).failures == ["seed 0, stand: robot 0 moved 0.100 m > 0.050"]
    assert gait.verdict(robots_of(straight(0.0, [0.0]), CASE_BY_NAME["stand"])).passed


def test_path_in_start_frame():
    path = gait.path_in_start_frame(straight(0.15, [math.pi / 2], direction=math.pi / 2))
    assert path["step"].tolist() == list(range(0, STEPS + 1, 5))
    last = path.iloc[-1]
    assert (last["forward_m"], last["left_m"]) == (
        pytest.approx(0.0, abs=1e-12),
        pytest.approx(1.5),
    )
    assert last["t_s"] == pytest.approx(10.0)
    # The last row is kept even when the step count is not a multiple of ``every``.
    assert gait.path_in_start_frame(straight(0.1, [0.0], steps=7))["step"].tolist() == [0, 5, 7]


# ----------------------------------------------------------------------------- boundaries


def rows(case: GaitCase, **columns) -> pd.DataFrame:
    """Metric rows for ``case`` with every value passing, then ``columns`` (lists) set."""
    n = len(next(iter(columns.values()))) if columns else 2
    base = {
        "seed": 0, "case": case.name, "robot": np.arange(n), "lin_vel_x": case.lin_vel_x,
        "lin_vel_y": case.lin_vel_y, "ang_vel_z": case.ang_vel_z, "push_mps": case.push_mps,
        "progress_ratio": 1.0 if case.speed else np.nan,
        "heading_speed_mps": case.speed if case.speed else np.nan,
        "yaw_ratio": 1.0 if case.ang_vel_z else np.nan, "heading_change_rad": 0.0,
        "displacement_m": 0.0, "terminated": False, "termination_time_s": np.nan,
        "termination_term": "",
    }  # fmt: skip
    frame = pd.DataFrame({**base, **columns})
    zeros = ("lateral_drift_m", "min_trunk_z_m", "contact_left_frac", "contact_right_frac",
             "both_feet_off_frac", "touchdowns_left_per_s", "touchdowns_right_per_s")  # fmt: skip
    for col in zeros:
        frame[col] = 0.0
    return frame


FORWARD = CASE_BY_NAME["forward_0.3"]
WALK_TURN = CASE_BY_NAME["walk_turn_left"]


@pytest.mark.parametrize(
    ("case", "columns", "passes"),
    [
        (FORWARD, {"progress_ratio": [0.8, 0.8]}, True),
        (FORWARD, {"progress_ratio": [0.8, 0.799]}, False),
        (FORWARD, {"progress_ratio": [1.0, 0.6]}, True),
        (FORWARD, {"progress_ratio": [1.1, 0.599]}, False),
        (FORWARD, {"heading_change_rad": [0.3, -0.3]}, True),
        (FORWARD, {"heading_change_rad": [0.0, -0.301]}, False),
        (CASE_BY_NAME["stand"], {"displacement_m": [0.05, 0.0]}, True),
        (CASE_BY_NAME["stand"], {"displacement_m": [0.0501, 0.0]}, False),
        (CASE_BY_NAME["stand"], {"heading_change_rad": [0.0, 0.301]}, False),
        (CASE_BY_NAME["turn_right_1.0"], {"yaw_ratio": [0.7, 0.9]}, True),
        (CASE_BY_NAME["turn_right_1.0"], {"yaw_ratio": [0.7, 0.899]}, False),
        # A turning case may change heading; only its yaw rate is judged.
        (CASE_BY_NAME["turn_right_1.0"], {"heading_change_rad": [-10.0, -10.0]}, True),
        (WALK_TURN, {"heading_speed_mps": [0.12, 0.12]}, True),
        (WALK_TURN, {"heading_speed_mps": [0.12, 0.1199]}, False),
        (WALK_TURN, {"yaw_ratio": [0.8, 0.8]}, True),
        (WALK_TURN, {"yaw_ratio": [0.8, 0.799]}, False),
        # Walk-and-turn makes no progress along a fixed direction, and is not judged on it.
        (WALK_TURN, {"progress_ratio": [0.1, 0.1], "heading_change_rad": [5.0, 5.0]}, True),
        (CASE_BY_NAME["push"], {"terminated": [False, True],
                                "termination_time_s": [np.nan, 4.5],
                                "termination_term": ["", "fell_over"]}, False),
        (FORWARD, {"progress_ratio": [1.0, np.nan]}, False),
    ],
)  # fmt: skip
def test_thresholds_at_their_boundary(case, columns, passes):
    result = gait.verdict(rows(case, **columns))
    assert result.passed is passes, result.failures
    assert len(result.failures) == (0 if passes else 1), result.failures


def test_failure_lines_name_the_condition_value_and_threshold():
    lines = gait.verdict(
        pd.concat(
            [
                rows(WALK_TURN, heading_speed_mps=[0.06, 0.06], yaw_ratio=[0.5, 0.5]),
                rows(
                    CASE_BY_NAME["push"],
                    terminated=[False, True],
                    termination_time_s=[np.nan, 4.5],
                    termination_term=["", "fell_over"],
                ),
            ],
            ignore_index=True,
        )  # fmt: skip
    ).failures
    assert lines == [
        "seed 0, walk 0.15 m/s and turn +0.5 rad/s: mean heading-frame speed 0.060 m/s = "
        "0.40 × command < 0.80",
        "seed 0, walk 0.15 m/s and turn +0.5 rad/s: mean yaw rate 0.50 × command < 0.80",
        "seed 0, push 0.3 m/s at 4 s, walking 0.15 m/s: 1 of 2 robots terminated (first: "
        "robot 1, fell_over at 4.50 s) > 0",
    ]


def test_verdict_table_takes_the_worst_seed_and_sums_terminations():
    robots = pd.concat([
        rows(FORWARD, progress_ratio=[0.9, 1.0]).assign(seed=0),
        rows(FORWARD, progress_ratio=[0.7, 0.7], heading_change_rad=[0.1, -0.2]).assign(seed=1),
        rows(CASE_BY_NAME["stand"], displacement_m=[0.01, 0.02]).assign(seed=1),
        rows(CASE_BY_NAME["stand"], displacement_m=[0.03, 0.0]).assign(seed=0),
    ], ignore_index=True)  # fmt: skip
    result = gait.verdict(robots)
    table = result.table.set_index("case")
    assert table.loc["forward_0.3", "mean_progress_ratio"] == pytest.approx(0.7)
    assert table.loc["forward_0.3", "max_abs_heading_change_rad"] == pytest.approx(0.2)
    assert not table.loc["forward_0.3", "passed"] and table.loc["stand", "passed"]
    assert table.loc["stand", "max_displacement_m"] == pytest.approx(0.03)
    assert result.failures == ["seed 1, forward 0.3 m/s: mean progress 0.70 × command < 0.80"]
    summary = gait.case_summary(robots)
    assert summary[["case", "seed"]].values.tolist() == [
        ["forward_0.3", 0],
        ["stand", 0],
        ["forward_0.3", 1],
        ["stand", 1],
    ]
    with pytest.raises(ValueError, match="at least one robot"):
        gait.verdict(robots.iloc[0:0])


def test_modes_heading_runs_every_case_and_open_loop_the_zero_yaw_ones():
    assert gait.cases_of_mode(gait.CASES, gait.HEADING_MODE) == gait.CASES
    open_loop = gait.cases_of_mode(gait.CASES, gait.OPEN_LOOP_MODE)
    assert [c.name for c in open_loop] == [
        "forward_0.1", "forward_0.15", "forward_0.2", "forward_0.3", "forward_0.4",
        "backward_0.2", "left_0.15", "right_0.15", "stand", "push",
    ]  # fmt: skip
    assert gait.steers_heading(FORWARD, gait.HEADING_MODE)
    assert not gait.steers_heading(FORWARD, gait.OPEN_LOOP_MODE)
    assert not gait.steers_heading(CASE_BY_NAME["turn_left_0.5"], gait.HEADING_MODE)
    assert not gait.steers_heading(WALK_TURN, gait.HEADING_MODE)
    with pytest.raises(ValueError, match="unknown gait-test mode 'sideways'"):
        gait.cases_of_mode(gait.CASES, "sideways")


def test_the_verdict_judges_heading_mode_and_open_loop_drift_is_measured_beside_it():
    heading = rows(FORWARD, heading_change_rad=[0.1, -0.2]).assign(mode="heading")
    # Open loop, the same case: the median robot turns 0.35 rad, the worst 0.7.
    drifting = rows(FORWARD, heading_change_rad=[0.3, -0.4, 0.7, 0.2]).assign(mode="open_loop")
    standing = rows(CASE_BY_NAME["stand"], heading_change_rad=[0.05, 0.1]).assign(mode="open_loop")
    robots = pd.concat([heading, drifting, standing], ignore_index=True)
    result = gait.verdict(robots)
    assert result.passed and result.table["case"].tolist() == ["forward_0.3"]
    assert len(gait.verdict_rows(robots)) == 2
    drift = gait.open_loop_drift(robots).set_index("case")
    assert drift.index.tolist() == ["forward_0.3", "stand"]
    assert drift.loc["forward_0.3", "median_abs_heading_change_rad"] == pytest.approx(0.35)
    assert drift.loc["forward_0.3", "max_abs_heading_change_rad"] == pytest.approx(0.7)
    assert not drift.loc["forward_0.3", "median_within"]
    assert not drift.loc["forward_0.3", "worst_within"]
    assert drift.loc["stand", "median_within"] and drift.loc["stand", "worst_within"]
    assert drift.loc["stand", "robots"] == 2
    # A table from before the modes (no mode column): every row is judged, no drift measured.
    old = rows(FORWARD, heading_change_rad=[0.1, -0.4])
    assert not gait.verdict(old).passed and gait.open_loop_drift(old).empty
    # The same robots judged open loop would fail: the mode decides, not the numbers.
    assert not gait.verdict(drifting.assign(mode="heading")).passed


def test_analysis_imports_no_simulator_or_plotting():
    import ast
    from pathlib import Path

    imported = set()
    for node in ast.walk(ast.parse(Path(gait.__file__).read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported <= {"__future__", "math", "dataclasses", "numpy", "pandas"}, imported
