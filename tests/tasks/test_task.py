"""The MicroDuck task in a real mjlab env on CPU: registration, stepping, terminations."""

import math
import sys
from pathlib import Path

import pytest
import suite_memo
import torch
from mjlab.envs import ManagerBasedRlEnv
from mjlab.tasks.registry import list_tasks

import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)
from mjlab_microduck.tasks.tuning import BOOK, GAIT_SLOW, STEPPING
from mjlab_microduck.tasks.velocity import (
    TASK_ID,
    TUNING_OF_TASK,
    UNGUARDED_TASK_ID,
    microduck_flat_env_cfg,
)


def _env(num_envs=4, **kwargs):
    cfg = microduck_flat_env_cfg(**kwargs)
    cfg.scene.num_envs = num_envs
    cfg.seed = 42
    return ManagerBasedRlEnv(cfg=cfg, device="cpu")


@pytest.fixture(scope="module")
def env():
    env = _env()
    env.reset()
    yield env
    env.close()


@pytest.mark.slow
def test_tasks_registered_and_listed_by_mjlab_list_envs():
    assert TASK_ID in list_tasks() and UNGUARDED_TASK_ID in list_tasks()
    # The console script finds the task through the package's ``mjlab.tasks`` entry point; it
    # returns the number of tasks as its exit status, so the status is not checked.
    list_envs = Path(sys.executable).with_name("list-envs")
    out = suite_memo.run("list_envs", [str(list_envs)], timeout=300).stdout
    assert TASK_ID in out and UNGUARDED_TASK_ID in out
    assert all(task in list_tasks() and task in out for task in TUNING_OF_TASK)


def test_terminations_are_the_five_guards(env):
    assert env.termination_manager.active_terms == [
        "time_out",
        "fell_over",
        "nan_state",
        "legs_collapsed",
        "below_ground",
    ]
    unguarded = microduck_flat_env_cfg(below_ground_guard=False)
    assert "below_ground" not in unguarded.terminations


def test_steps_with_finite_rewards_and_observations(env):
    actions = torch.zeros(env.num_envs, env.action_manager.total_action_dim)
    for _ in range(25):
        obs, reward, terminated, truncated, _ = env.step(actions)
    assert torch.isfinite(reward).all()
    assert all(torch.isfinite(v).all() for v in obs.values())
    assert obs["actor"].shape == (4, 51) and obs["critic"].shape == (4, 66)
    # Zero action from the home pose: everybody is still up after half a second.
    assert not terminated.any()
    z = env.scene["robot"].data.root_link_pos_w[:, 2]
    assert ((z > 0.09) & (z < 0.125)).all()


def _step_once(env):
    actions = torch.zeros(env.num_envs, env.action_manager.total_action_dim)
    return env.step(actions)


def test_trunk_below_ground_terminates_with_below_ground_not_timeout(env):
    env.reset()
    robot = env.scene["robot"]
    pose = torch.cat(
        [robot.data.root_link_pos_w.clone(), robot.data.root_link_quat_w.clone()], dim=-1
    )
    pose[0, 2] = -0.2
    robot.write_root_link_pose_to_sim(pose[0:1], env_ids=torch.tensor([0]))
    env.sim.forward()
    _step_once(env)
    tm = env.termination_manager
    assert bool(tm.get_term("below_ground")[0])
    assert not bool(tm.time_outs[0])
    assert bool(tm.terminated[0])
    assert not bool(tm.get_term("below_ground")[1:].any())


def test_non_finite_state_terminates_with_nan_state(env):
    env.reset()
    qvel = env.sim.data.qvel
    qvel[1, 6] = math.nan
    _step_once(env)
    assert bool(env.termination_manager.get_term("nan_state")[1])
    assert not bool(env.termination_manager.get_term("nan_state")[0])


def test_the_stepping_preset_adds_its_reward_and_steps_finite():
    env = _env(num_envs=2, tuning=STEPPING)
    try:
        env.reset()
        assert "single_stance" in env.reward_manager.active_terms
        assert env.reward_manager.get_term_cfg("air_time").params["threshold_min"] == 0.05
        actions = torch.zeros(env.num_envs, env.action_manager.total_action_dim)
        for _ in range(5):
            _, reward, *_ = env.step(actions)
        assert torch.isfinite(reward).all()
    finally:
        env.close()
    assert "single_stance" in microduck_flat_env_cfg().rewards  # the default task's preset
    assert "single_stance" not in microduck_flat_env_cfg(tuning=BOOK).rewards


def test_the_fine_presets_pay_their_narrow_terms_from_the_envs_own_command_and_trunk():
    from mjlab_microduck.tasks import mdp
    from mjlab_microduck.tasks.tuning import WALKER_TURNING_AXES_FINE_TRACKING as FINE

    env = _env(num_envs=2, tuning=FINE)  # the narrow yaw-rate and planar terms both
    try:
        env.reset()
        active = env.reward_manager.active_terms
        assert {"track_yaw_rate_fine", "track_planar_velocity_fine"} <= set(active)
        actions = torch.zeros(env.num_envs, env.action_manager.total_action_dim)
        for _ in range(3):
            _, reward, *_ = env.step(actions)
        assert torch.isfinite(reward).all()
        command = env.command_manager.get_command("twist")
        data = env.scene["robot"].data
        expected = mdp.yaw_rate_kernel(command[:, 2], data.root_link_ang_vel_b[:, 2],
                                       FINE.fine_yaw.std_rad_s)  # fmt: skip
        paid = mdp.track_yaw_rate(env, std=FINE.fine_yaw.std_rad_s)
        assert paid.shape == (2,) and torch.allclose(paid, expected)
        planar = mdp.planar_velocity_kernel(command[:, :2], data.root_link_lin_vel_b[:, :2],
                                            FINE.fine_planar.std_m_s)  # fmt: skip
        paid = mdp.track_planar_velocity(env, std=FINE.fine_planar.std_m_s)
        assert paid.shape == (2,) and torch.allclose(paid, planar)
    finally:
        env.close()


@pytest.mark.slow
def test_the_gait_preset_observes_its_clock_and_standing_earns_half_its_reward():
    env = _env(num_envs=2, tuning=GAIT_SLOW)
    try:
        obs, _ = env.reset()
        assert "gait_clock" in env.observation_manager.active_terms["actor"]
        actions = torch.zeros(env.num_envs, env.action_manager.total_action_dim)
        gait = env.reward_manager.active_terms.index("follow_gait_contacts")
        paid = []
        for _ in range(30):
            obs, reward, *_ = env.step(actions)
            paid.append(env.reward_manager._step_reward[:, gait].clone())
        assert torch.isfinite(reward).all()
        # Zero actions stand on both feet: one foot agrees with the schedule, half the reward.
        assert torch.stack(paid[5:]).mean().item() == pytest.approx(0.5, abs=0.05)
        clock = obs["actor"][:, -2:]
        assert torch.allclose(clock.norm(dim=-1), torch.ones(2), atol=1e-5)
    finally:
        env.close()


@pytest.mark.parametrize(
    ("preset_name", "narrowed"),
    [("WALKER_SHARPENED", (0.15, 0.3)), ("WALKER_TURNING_SHARP", (0.15, math.sqrt(0.5)))],
)
def test_a_sharpened_walker_narrows_its_kernels_at_iteration_300(preset_name, narrowed):
    """WALKER_SHARPENED narrows both kernels; WALKER_TURNING_SHARP only the linear one."""
    from mjlab_microduck.tasks import tuning
    from mjlab_microduck.tasks.rl_cfg import STEPS_PER_ENV

    preset = getattr(tuning, preset_name)
    env = _env(num_envs=2, tuning=preset)
    try:
        rewards = env.reward_manager
        wide = [tuning.WALKER.lin_vel_std_m_s, tuning.WALKER.ang_vel_std_rad_s]
        for step, expected in ((299 * STEPS_PER_ENV, wide), (300 * STEPS_PER_ENV, narrowed)):
            env.common_step_counter = step
            env.curriculum_manager.compute(env_ids=torch.arange(2))
            widths = [
                rewards.get_term_cfg(name).params["std"]
                for name in ("track_linear_velocity", "track_angular_velocity")
            ]
            assert widths == pytest.approx(expected)
    finally:
        env.close()


HEADING_TASK = "Mjlab-Velocity-Flat-MicroDuck-WalkerHeadingTuning"


def test_holding_the_yaw_rate_drops_the_heading_range_mjlab_would_refuse():
    from mjlab.tasks.registry import load_env_cfg

    from mjlab_microduck.tasks.velocity import hold_yaw_rate

    twist = load_env_cfg(HEADING_TASK, play=True).commands["twist"]
    assert twist.heading_command and twist.ranges.heading is not None  # trained with it
    for _ in range(2):  # idempotent
        hold_yaw_rate(twist)
        assert not twist.heading_command and twist.rel_heading_envs == 0.0
        assert twist.ranges.heading is None


def test_a_heading_walker_builds_as_a_one_env_replay_and_export():
    from mjlab_microduck.jobs import export, replay

    for cfg in (export._env_cfg(HEADING_TASK),
                replay._replay_cfg(replay.ReplayRequest(checkpoint=Path("unused.pt"),
                                                        task=HEADING_TASK))):  # fmt: skip
        twist = cfg.commands["twist"]
        assert not twist.heading_command and twist.ranges.heading is None
        env = ManagerBasedRlEnv(cfg, device="cpu")  # mjlab's command term accepts it
        try:
            assert env.num_envs == 1
        finally:
            env.close()
