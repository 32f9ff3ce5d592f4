"""The plain-MuJoCo rollout of an export (jobs/plain_mujoco.py): the heading law, the delays as
mjlab computes them, the observation from the spec, and the published export walking in MuJoCo's
C library with no mjlab in the loop."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from mjlab_microduck.analysis import gait
from mjlab_microduck.jobs import plain_mujoco as pm

REPO = Path(__file__).resolve().parents[2]
# The published export of the book's walker (WALKER_HEADING seed 42, model_999).
EXPORT = REPO / "book" / "results" / "cpu_export_walker_heading_s42_model_999"


def test_wrap_and_heading_law():
    assert pm.wrap_to_pi(math.pi + 0.1) == pytest.approx(-math.pi + 0.1)
    assert pm.wrap_to_pi(-math.pi - 0.1) == pytest.approx(math.pi - 0.1)
    # 0.5 rad/s per rad, clipped to the command range; the short way round through +-pi.
    assert pm.heading_law(0.4, 0.0, 0.5, (-1.0, 1.0)) == pytest.approx(0.2)
    assert pm.heading_law(3.0, 0.0, 0.5, (-1.0, 1.0)) == pytest.approx(1.0)
    assert pm.heading_law(3.0, -3.0, 0.5, (-1.0, 1.0)) == pytest.approx(0.5 * (6.0 - 2 * math.pi))


def test_typical_lag_is_the_middle_rounded_down():
    assert [pm.typical_lag(r) for r in ([0, 0], [0, 1], [1, 1], [0, 3], [2, 5])] == [0, 0, 1, 1, 3]


@pytest.mark.parametrize("lag", [0, 1, 2])
def test_lag_matches_mjlab_delay_buffer(lag):
    import torch
    from mjlab.utils.buffers import DelayBuffer

    theirs = DelayBuffer(min_lag=lag, max_lag=lag, batch_size=1)
    mine = pm._Lag(lag)
    for step in range(6):
        value = np.array([float(step)])
        theirs.append(torch.tensor([[float(step)]]))
        assert mine(value)[0] == float(theirs.compute()[0, 0]), step
    mine.reset()
    assert mine(np.array([9.0]))[0] == 9.0  # a reset refills the history with the new value


def test_load_spec_refuses_a_folder_that_is_not_an_export(tmp_path):
    with pytest.raises(pm.ExportFolderError, match="no spec.json"):
        pm.load_spec(tmp_path)
    (tmp_path / "spec.json").write_text(json.dumps({"format": "other", "version": 1}))
    with pytest.raises(pm.ExportFolderError, match="not a microduck-drive-spec"):
        pm.load_spec(tmp_path)
    spec = json.loads((EXPORT / "spec.json").read_text())
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    with pytest.raises(pm.ExportFolderError, match="policy.onnx is missing"):
        pm.load_spec(tmp_path)


def test_first_observation_of_the_published_export():
    robot = pm.PlainMujocoRobot(EXPORT)
    obs = robot.reset(0.3, pm.Command(0.15, -0.1, 0.2))
    spec = robot.spec
    assert obs.shape == (spec["observation"]["size"],) == (51,)
    names = [t["name"] for t in spec["observation"]["terms"]]
    assert names == ["base_ang_vel", "projected_gravity", "joint_pos", "joint_vel", "actions",
                     "command"]  # fmt: skip
    # At rest in the default pose, turned 0.3 rad: gravity straight down the trunk's z, no
    # joint offset, no motion, no last action, and the command as given.
    np.testing.assert_allclose(obs[3:6], [0.0, 0.0, -1.0], atol=1e-6)
    np.testing.assert_allclose(obs[:3], 0.0, atol=1e-9)
    np.testing.assert_allclose(obs[6:48], 0.0, atol=1e-9)
    np.testing.assert_allclose(obs[48:], [0.15, -0.1, 0.2], atol=1e-7)
    assert robot.heading() == pytest.approx(0.3)
    assert robot.action_lag == 1  # actuator delay 0-3 physics steps -> 1


def test_heading_hold_sets_the_yaw_command_from_the_heading():
    robot = pm.PlainMujocoRobot(EXPORT)
    robot.reset(0.0, pm.Command(0.0, 0.0, 0.7, hold_heading=True))
    # The first observation keeps the command as given; from then on the law replaces wz.
    assert robot.obs[-1] == pytest.approx(0.7)
    robot.command.target_heading = 0.4
    assert robot.command_vector()[2] == pytest.approx(0.5 * (0.4 - robot.heading()))


@pytest.mark.slow
def test_the_published_export_walks_in_plain_mujoco_and_repeats_itself():
    robot = pm.PlainMujocoRobot(EXPORT)
    case = gait.CASE_BY_NAME["forward_0.15"]
    first = pm.rollout(robot, pm.case_command(case, gait.HEADING_MODE), 10.0)
    again = pm.rollout(robot, pm.case_command(case, gait.HEADING_MODE), 10.0)
    np.testing.assert_array_equal(first.x, again.x)  # deterministic: no noise, fixed delays
    metrics = gait.robot_metrics(first, case).iloc[0]
    assert metrics["progress_ratio"] >= gait.MIN_PROGRESS_RATIO_MEAN
    assert abs(metrics["heading_change_rad"]) <= gait.MAX_HEADING_CHANGE_RAD
    assert not metrics["terminated"]
    # Turning in place at 1 rad/s; at 0.5 rad/s the nominal robot stalls (chapter 6 says so).
    stand = pm.run_cases(EXPORT, (gait.CASE_BY_NAME["stand"], gait.CASE_BY_NAME["turn_left_1.0"]),
                         modes=(gait.HEADING_MODE,))  # fmt: skip
    assert list(stand["case"]) == ["stand", "turn_left_1.0"]
    turn = stand.set_index("case").loc["turn_left_1.0"]
    assert turn["yaw_ratio"] >= gait.MIN_YAW_RATIO
    assert stand.set_index("case").loc["stand", "displacement_m"] <= gait.MAX_STAND_DISPLACEMENT_M


@pytest.mark.slow
def test_a_fall_ends_the_rollout_with_its_termination(tmp_path):
    folder = tmp_path / "export"
    shutil.copytree(EXPORT, folder)
    # Motors with no strength: the robot folds up and falls.
    xml = (folder / "scene.xml").read_text().replace('gainprm="0.52"', 'gainprm="0"')
    xml = xml.replace('biasprm="0 -0.52"', 'biasprm="0 0"')
    (folder / "scene.xml").write_text(xml)
    robot = pm.PlainMujocoRobot(folder)
    traj = pm.rollout(robot, pm.Command(), 4.0)
    first = gait.first_termination(traj.done)[0]
    assert 1 <= first < traj.steps
    fired = int(traj.term_mask[first, 0])
    names = [n for i, n in enumerate(traj.term_names) if fired >> i & 1]
    assert names and set(names) <= {"fell_over", "legs_collapsed"}
    assert np.all(traj.x[first:] == traj.x[first])  # stopped there
