"""The left-right mirror used for symmetry augmentation: read off the model, and true to the
physics (a mirrored action sequence from a mirrored state gives mirrored observations)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from mjlab_microduck.robot.constants import LEG_JOINT_SUFFIXES, get_spec
from mjlab_microduck.tasks import kl_schedule, symmetry, tuning

WALKER_TASK = "Mjlab-Velocity-Flat-MicroDuck-WalkerTuning"


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return get_spec().compile()


def _hinges(model):
    return [
        model.joint(j).name
        for j in range(model.njnt)
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE
    ]


def test_mirror_name_swaps_sides_and_keeps_the_centre_line():
    assert symmetry.mirror_name("left_knee") == "right_knee"
    assert symmetry.mirror_name("right_hip_roll") == "left_hip_roll"
    assert symmetry.mirror_name("neck_pitch") == "neck_pitch"


def test_joint_mirror_signs_follow_the_hinge_axes(model):
    names = _hinges(model)
    mirror = symmetry.joint_mirror(model, names)
    rows = zip(names, mirror.partner, mirror.sign, strict=True)
    by_name = {n: (names[p], s) for n, p, s in rows}
    # Yaw and roll hinges have the same axis on both legs: a mirrored turn is the opposite
    # angle. The pitch hinges of this model point opposite ways (+y left, -y right), so a
    # mirrored pitch is also the opposite angle. Centre-line pitch maps to itself.
    for suffix in LEG_JOINT_SUFFIXES:
        assert by_name[f"left_{suffix}"] == (f"right_{suffix}", -1.0)
        assert by_name[f"right_{suffix}"] == (f"left_{suffix}", -1.0)
    assert by_name["neck_pitch"] == ("neck_pitch", 1.0)
    assert by_name["head_pitch"] == ("head_pitch", 1.0)
    assert by_name["head_yaw"] == ("head_yaw", -1.0)
    assert by_name["head_roll"] == ("head_roll", -1.0)
    # Mirroring twice is the identity.
    x = np.arange(1, len(names) + 1, dtype=float)
    once = symmetry.Mirror(symmetry._permutation(mirror.partner, mirror.sign))
    np.testing.assert_array_equal(once.apply_numpy(once.apply_numpy(x)), x)


def test_a_hinge_without_a_mirror_image_is_an_error():
    spec = get_spec()
    spec.joint("right_knee").axis = [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="left_knee.*no mirror image"):
        symmetry.joint_mirror(spec.compile(), ["left_knee", "right_knee"])


def test_the_legs_are_mirror_images_in_mass_inertia_and_geometry(model):
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    reflect = symmetry.MIRROR
    for suffix in LEG_JOINT_SUFFIXES:
        left = model.body(model.joint(f"left_{suffix}").bodyid[0]).id
        right = model.body(model.joint(f"right_{suffix}").bodyid[0]).id
        assert model.body_mass[left] == pytest.approx(model.body_mass[right], rel=1e-6)
        np.testing.assert_allclose(data.xpos[right], reflect @ data.xpos[left], atol=1e-6)
        np.testing.assert_allclose(data.xipos[right], reflect @ data.xipos[left], atol=1e-4)
        inertia = {}
        for side, body in (("left", left), ("right", right)):
            rot = data.ximat[body].reshape(3, 3)
            inertia[side] = rot @ np.diag(model.body_inertia[body]) @ rot.T
        np.testing.assert_allclose(inertia["right"], reflect @ inertia["left"] @ reflect, atol=1e-8)
    # The head's mechanism (mouth, camshaft) sits off the centre line: the whole robot's
    # centre of mass is off it by this much, which the test states instead of hiding.
    com_y = float(data.subtree_com[model.body("trunk_base").id][1])
    assert abs(com_y) < 0.003


def test_observation_mirror_swaps_feet_and_flips_lateral_components(model):
    names = _hinges(model)
    joints = symmetry.joint_mirror(model, names)
    mirror = symmetry.observation_mirror(
        ["base_ang_vel", "command", "foot_contact", "foot_contact_forces"],
        [3, 3, 2, 6],
        joints,
        joints,
    )
    x = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 1.0, 0.0, 1, 2, 3, 4, 5, 6], dtype=float)
    np.testing.assert_allclose(
        mirror.apply_numpy(x),
        [-0.1, 0.2, -0.3, 0.4, -0.5, -0.6, 0.0, 1.0, 4, -5, 6, 1, -2, 3],
    )
    # The off-centre IMU's velocity needs the angular velocity; mirroring twice is still the
    # identity, and an IMU on the centre line needs no extra term.
    critic = symmetry.observation_mirror(
        ["base_lin_vel", "base_ang_vel"],
        [3, 3],
        joints,
        joints,
        imu_pos_m=(-0.03, 0.023, 0.06),
    )
    np.testing.assert_allclose(critic.matrix @ critic.matrix, np.eye(6), atol=1e-12)
    assert np.abs(critic.matrix[:3, 3:]).max() > 0.04
    centred = symmetry.observation_mirror(
        ["base_lin_vel", "base_ang_vel"],
        [3, 3],
        joints,
        joints,
        imu_pos_m=(-0.03, 0.0, 0.06),
    )
    np.testing.assert_array_equal(centred.matrix[:3, 3:], np.zeros((3, 3)))
    with pytest.raises(ValueError, match="gait_clock.*no left-right mirror"):
        symmetry.observation_mirror(["gait_clock"], [2], joints, joints)


def _mirror_test_env(num_envs: int = 2):
    """The walker's play env with everything random switched off: no domain randomisation,
    no delays, every robot reset to the same pose facing +x."""
    from mjlab.envs import ManagerBasedRlEnv
    from mjlab.tasks.registry import load_env_cfg

    import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)

    cfg = load_env_cfg(WALKER_TASK, play=True)
    cfg.scene.num_envs = num_envs
    for name in list(cfg.events):
        if name not in ("reset_base", "reset_robot_joints"):
            cfg.events.pop(name)
    cfg.events["reset_base"].params["pose_range"] = {}
    cfg.events["reset_base"].params["velocity_range"] = {}
    cfg.events["reset_robot_joints"].params["position_range"] = (0.0, 0.0)
    cfg.events["reset_robot_joints"].params["velocity_range"] = (0.0, 0.0)
    for actuator in cfg.scene.entities["robot"].articulation.actuators:
        actuator.delay_min_lag = actuator.delay_max_lag = 0
    for group in cfg.observations.values():
        for term in group.terms.values():
            term.delay_min_lag = term.delay_max_lag = 0
    cfg.commands["twist"].resampling_time_range = (1.0e9, 1.0e9)
    return ManagerBasedRlEnv(cfg=cfg, device="cpu")


@pytest.mark.slow
def test_mirrored_actions_from_a_mirrored_state_give_mirrored_observations():
    import torch

    env = _mirror_test_env()
    try:
        mirrors = symmetry.env_mirrors(env)
        twist = env.command_manager.get_term("twist")
        env.reset()
        command = torch.tensor([[0.15, 0.05, 0.4]])
        mirrored_command = command * torch.tensor(symmetry.COMMAND_SIGNS)
        generator = torch.Generator().manual_seed(0)
        errors = {"mirror": [], "no_mirror": []}
        for _ in range(10):
            twist.vel_command_b[:] = torch.cat([command, mirrored_command])
            action = 0.3 * torch.randn(1, env.action_manager.total_action_dim, generator=generator)
            mirrored_action = symmetry._gather(action, mirrors.actions)
            obs, *_ = env.step(torch.cat([action, mirrored_action]))
            for group in ("actor", "critic"):
                left, right = obs[group][0], obs[group][1]
                errors["mirror"].append(
                    (symmetry._gather(left[None], mirrors.groups[group])[0] - right).abs().max()
                )
                errors["no_mirror"].append((left - right).abs().max())
        mirror_error = float(torch.stack(errors["mirror"]).max())
        no_mirror_error = float(torch.stack(errors["no_mirror"]).max())
        # What is left is the head's off-centre mechanism, growing with every step of random
        # actions: over 0.2 s it stays an order of magnitude below the unmirrored difference.
        assert mirror_error < 0.1 * no_mirror_error, (mirror_error, no_mirror_error)
    finally:
        env.close()


@pytest.mark.slow
def test_the_walker_trains_with_mirrored_minibatches(tmp_path, monkeypatch):
    """Two PPO updates of the walker on the CPU: rsl_rl doubles each mini-batch and logs a
    symmetry loss (finite), so the augmentation really ran. The same two updates run under a KL
    stage from the second iteration (``kl_schedule``), on mjlab's runner and rsl_rl's PPO."""
    from dataclasses import asdict, replace

    import torch
    from mjlab.rl import RslRlVecEnvWrapper
    from mjlab.tasks.registry import load_rl_cfg, load_runner_cls

    env = _mirror_test_env(num_envs=8)
    try:
        wrapped = RslRlVecEnvWrapper(env)
        cfg = asdict(load_rl_cfg(WALKER_TASK))
        cfg["num_steps_per_env"] = 4
        cfg["logger"] = "tensorboard"
        runner_cls = load_runner_cls(WALKER_TASK)
        assert runner_cls is symmetry.MirroredVelocityRunner
        staged = replace(tuning.preset_of_task(WALKER_TASK), kl_stages=(tuning.KlStage(1, 0.004),))
        runner_cls = kl_schedule.scheduled_runner(runner_cls, staged)
        runner = runner_cls(wrapped, cfg, str(tmp_path), device="cpu")
        assert runner.alg.symmetry["use_data_augmentation"] is True
        seen, targets = {}, []
        update = runner.alg.update

        def recording_update():
            targets.append(runner.alg.desired_kl)
            seen.update(update())
            return seen

        monkeypatch.setattr(runner.alg, "update", recording_update)
        runner.learn(num_learning_iterations=2)
        assert np.isfinite(seen["symmetry"])
        assert targets == [staged.desired_kl, 0.004] and runner.alg.desired_kl == 0.004
        obs = wrapped.get_observations()
        doubled, actions = symmetry.mirror_augment(wrapped, obs, torch.zeros(8, 14))
        assert doubled.batch_size[0] == 16 and actions.shape == (16, 14)
    finally:
        env.close()
