"""The task terms the package adds, on hand-computed values (no env needed)."""

import math
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch

from mjlab_microduck.tasks import mdp
from mjlab_microduck.tasks.tuning import BOOK, STEPPING, UPSTREAM, WALKER, WALKER_NARROW
from mjlab_microduck.tasks.velocity import action_rate_stages, standing_stages

STANDING_STAGES = standing_stages(UPSTREAM)


def test_standing_fraction_follows_the_last_stage_reached():
    stages = [
        {"step": 0, "fraction": 0.02},
        {"step": 100, "fraction": 0.05},
        {"step": 200, "fraction": 0.1},
    ]
    assert mdp.standing_fraction_at(0, stages) == 0.02
    assert mdp.standing_fraction_at(99, stages) == 0.02
    assert mdp.standing_fraction_at(100, stages) == 0.05
    assert mdp.standing_fraction_at(10_000, stages) == 0.1


def test_curricula_are_counted_in_env_steps_of_24_per_iteration():
    assert STANDING_STAGES[1] == {"step": 500 * 24, "fraction": 0.05}
    assert action_rate_stages(UPSTREAM)[-1] == {"step": 1500 * 24, "weight": -1.0}
    assert action_rate_stages(BOOK)[-1] == {"step": 1000 * 24, "weight": -0.2}


def test_a_preset_with_a_shorter_rollout_counts_its_curricula_in_its_own_iterations():
    from mjlab.tasks.registry import load_rl_cfg

    from mjlab_microduck.tasks.tuning import WALKER_TURNING, WALKER_TURNING_SHORT
    from mjlab_microduck.tasks.velocity import TASK_ID

    assert WALKER_TURNING_SHORT.steps_per_env == 12
    # the same stages, by iteration: 12 env steps per iteration instead of 24
    assert action_rate_stages(WALKER_TURNING_SHORT)[1] == {"step": 500 * 12, "weight": -0.15}
    assert action_rate_stages(WALKER_TURNING)[1] == {"step": 500 * 24, "weight": -0.15}
    assert standing_stages(WALKER_TURNING_SHORT)[1] == {"step": 1000 * 12, "fraction": 0.15}
    # and its runner collects that many steps per env and iteration
    assert load_rl_cfg(f"{TASK_ID}-WalkerTurningShortTuning").num_steps_per_env == 12
    assert load_rl_cfg(f"{TASK_ID}-WalkerTurningTuning").num_steps_per_env == 24


def test_the_narrow_walker_changes_only_kernels_and_standing_envs():
    assert standing_stages(WALKER)[0] == {"step": 0, "fraction": 0.02}
    assert standing_stages(WALKER_NARROW)[0] == {"step": 0, "fraction": 0.10}
    assert (WALKER_NARROW.lin_vel_std_m_s, WALKER_NARROW.ang_vel_std_rad_s) == (0.15, 0.3)
    same = {k for k in WALKER.__dataclass_fields__
            if getattr(WALKER, k) == getattr(WALKER_NARROW, k)}
    assert set(WALKER.__dataclass_fields__) - same == {
        "name", "lin_vel_std_m_s", "ang_vel_std_rad_s", "standing_stages"}


def test_standing_still_earns_less_tracking_reward_with_the_book_tuning():
    # exp(-0.15^2 / 0.1) = 0.7985 upstream; exp(-0.15^2 / 0.04) = 0.5698 in the book's preset.
    assert UPSTREAM.standing_tracking_reward(0.15) == pytest.approx(0.79852, abs=1e-5)
    assert BOOK.standing_tracking_reward(0.15) == pytest.approx(0.56978, abs=1e-5)
    assert BOOK.standing_tracking_reward(0.0) == 1.0


def test_raise_standing_fraction_updates_the_command_cfg():
    cfg = SimpleNamespace(rel_standing_envs=0.0)
    term = SimpleNamespace(cfg=cfg)
    env = SimpleNamespace(
        common_step_counter=750 * 24, command_manager=SimpleNamespace(get_term=lambda name: term)
    )
    out = mdp.raise_standing_fraction(env, torch.arange(3), "twist", STANDING_STAGES)
    assert cfg.rel_standing_envs == 0.10
    assert float(out["rel_standing_envs"]) == pytest.approx(0.10)


def test_trunk_below_height():
    z = torch.tensor([0.11, -0.049, -0.051, -3.0])
    assert mdp.trunk_below_height(z, -0.05).tolist() == [False, False, True, True]


def test_trunk_height_above_lower_sole():
    trunk = torch.tensor([0.11, 0.028, 0.035])
    feet = torch.tensor([[0.0, 0.02], [0.07, 0.05], [0.016, 0.02]])
    height = mdp.trunk_height_above_lower_sole(trunk, feet)
    assert height.tolist() == pytest.approx([0.11, -0.022, 0.019], abs=1e-7)


def _fake_robot_env(trunk_z, feet_z):
    data = SimpleNamespace(
        root_link_pos_w=torch.tensor([[0.0, 0.0, z] for z in trunk_z]),
        site_pos_w=torch.tensor([[[0.0, 0.0, f] for f in feet] for feet in feet_z]),
    )
    return SimpleNamespace(scene={"robot": SimpleNamespace(data=data)})


def test_legs_collapsed_ends_a_fold_but_not_a_whole_robot_sinking():
    cfg = SimpleNamespace(name="robot", site_ids=[0, 1])
    env = _fake_robot_env(
        trunk_z=[0.11, 0.03, -0.5, 0.085],
        feet_z=[[0.0, 0.0], [0.05, 0.07], [-0.61, -0.6], [0.035, 0.0]],
    )
    out = mdp.legs_collapsed(env, min_height_above_feet_m=0.05, asset_cfg=cfg)
    # standing; folded legs (trunk below its feet); sinking whole (0.11 above the soles); one
    # foot lifted 3.5 cm (0.085 above the stance foot).
    assert out.tolist() == [False, True, False, False]


def test_single_stance_pays_one_foot_down_while_commanded():
    in_contact = torch.tensor([[True, False], [True, True], [False, False], [False, True]])
    command = torch.tensor([[0.15, 0.0, 0.0], [0.15, 0.0, 0.0], [0.15, 0.0, 0.0], [0.0, 0.0, 0.0]])
    out = mdp.single_stance_indicator(in_contact, command, command_threshold=0.01)
    # one foot and commanded; both feet down; both up (a hop); one foot but told to stand
    assert out.tolist() == [1.0, 0.0, 0.0, 0.0]
    turning = torch.tensor([[0.0, 0.0, 0.5]])
    assert mdp.single_stance_indicator(in_contact[:1], turning, 0.01).tolist() == [1.0]


def test_single_stance_reads_the_contact_sensor_and_the_command():
    sensor = SimpleNamespace(data=SimpleNamespace(current_contact_time=torch.tensor([[0.3, 0.0]])))
    env = SimpleNamespace(
        scene={"feet": sensor},
        command_manager=SimpleNamespace(get_command=lambda name: torch.tensor([[0.2, 0.0, 0.0]])),
    )
    assert mdp.single_stance(env, "feet", "twist").tolist() == [1.0]


def test_the_fine_yaw_term_pays_the_yaw_rate_error_alone():
    command = torch.tensor([[0.0, 0.3, 0.5], [0.0, 0.0, 0.5], [0.0, 0.0, 0.0]])
    # roll and pitch rates of a walking trunk, which mjlab's angular kernel counts as error
    ang_vel = torch.tensor([[0.8, -0.6, 0.5], [0.0, 0.0, 0.35], [0.0, 0.0, 0.15]])
    robot = SimpleNamespace(data=SimpleNamespace(root_link_ang_vel_b=ang_vel))
    env = SimpleNamespace(scene={"robot": robot},
                          command_manager=SimpleNamespace(get_command=lambda name: command))
    reward = mdp.track_yaw_rate(env, std=0.15)
    assert reward.tolist() == pytest.approx([1.0, math.exp(-1.0), math.exp(-1.0)])


def test_the_fine_planar_term_pays_the_planar_velocity_error_alone():
    from mjlab_microduck.tasks import tuning

    command = torch.tensor([[0.1, 0.0, 0.0], [0.0, 0.15, 0.5], [0.1, 0.0, 0.0]])
    # a stepping trunk bobs: vertical velocity, which mjlab's linear kernel counts as error
    lin_vel = torch.tensor([[0.1, 0.0, 0.3], [0.06, 0.07, 0.0], [0.0, 0.0, 0.0]])
    robot = SimpleNamespace(data=SimpleNamespace(root_link_lin_vel_b=lin_vel))
    env = SimpleNamespace(scene={"robot": robot},
                          command_manager=SimpleNamespace(get_command=lambda name: command))
    reward = mdp.track_planar_velocity(env, std=0.1)
    # |(0.06, -0.08)| = 0.1: exp(-1); standing under 0.1 m/s: exp(-1) too
    assert reward.tolist() == pytest.approx([1.0, math.exp(-1.0), math.exp(-1.0)])
    fine = tuning.FinePlanarTracking()
    assert math.exp(-((0.2 * 0.1) ** 2) / fine.std_m_s**2) == pytest.approx(0.96, abs=0.005)
    standing = tuning.WALKER_TURNING_AXES.standing_tracking_reward(0.1)  # under the wide kernel
    assert standing == pytest.approx(0.78, abs=0.005)


# Each narrow term stands beside a wide one that stays as it was (the wide kernel is what
# teaches turning and walking); each preset adds its one term to the preset it is built on.
# preset: (built on, term, its function, the preset's field and its std's name, its weight and
# std, the wide term and its weight and std)
FINE_TERMS = {
    "walker_turning_axes_fine_yaw": ("walker_turning_axes", "track_yaw_rate_fine",
                                     mdp.track_yaw_rate, "fine_yaw", "std_rad_s", (2.0, 0.15),
                                     "track_angular_velocity", (4.0, math.sqrt(0.5))),
    "walker_turning_axes_fine_tracking": ("walker_turning_axes_fine_yaw",
                                          "track_planar_velocity_fine", mdp.track_planar_velocity,
                                          "fine_planar", "std_m_s", (2.0, 0.1),
                                          "track_linear_velocity", (4.0, 0.2)),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(FINE_TERMS))
def test_a_fine_preset_adds_one_narrow_term_beside_the_wide_one(name):
    from mjlab_microduck.tasks import tuning
    from mjlab_microduck.tasks.velocity import TASK_ID, env_cfg_of_task

    base, term_name, func, field, std_name, narrow, wide_name, wide = FINE_TERMS[name]
    presets = {p.name: p for p in tuning.CANDIDATE_PRESETS}

    def rewards_of(preset_name: str) -> dict:
        return env_cfg_of_task(f"{TASK_ID}-{presets[preset_name].task_suffix}").rewards

    rewards, setting = rewards_of(name), getattr(presets[name], field)
    term = rewards[term_name]
    assert term.func is func
    assert (term.weight, term.params["std"]) == (setting.weight, getattr(setting, std_name))
    assert (term.weight, term.params["std"]) == narrow
    assert (rewards[wide_name].weight, rewards[wide_name].params["std"]) == pytest.approx(wide)
    assert set(rewards) - set(rewards_of(base)) == {term_name}


def test_presets_differ_only_where_they_say():
    assert (BOOK.air_time_min_s, BOOK.single_stance_weight) == (0.125, 0.0)
    assert (UPSTREAM.air_time_min_s, UPSTREAM.single_stance_weight) == (0.125, 0.0)
    assert (STEPPING.air_time_min_s, STEPPING.single_stance_weight) == (0.05, 1.0)
    assert STEPPING.lin_vel_std_m_s == BOOK.lin_vel_std_m_s
    assert STEPPING.action_rate_stages == BOOK.action_rate_stages


def test_gait_phase_wraps_every_period():
    t = torch.tensor([0.0, 0.125, 0.25, 0.5, 0.625])
    assert mdp.gait_phase_at(t, 0.5).tolist() == pytest.approx([0.0, 0.25, 0.5, 0.0, 0.25])


def test_stance_schedule_alternates_the_feet():
    phase = torch.tensor([0.0, 0.25, 0.5, 0.75])
    assert mdp.stance_schedule(phase).tolist() == [
        [True, False], [True, False], [False, True], [False, True]
    ]


def test_gait_contact_match_counts_agreeing_feet():
    schedule = torch.tensor([[True, False]] * 4)
    contact = torch.tensor([[True, False], [True, True], [False, True], [True, True]])
    moving = torch.tensor([True, True, True, False])
    # In step; standing on both (half agrees); the wrong foot; told to stand and standing.
    assert mdp.gait_contact_match(contact, schedule, moving).tolist() == [1.0, 0.5, 0.0, 1.0]


def _gait_env(step: int, contact_time, command):
    sensor = SimpleNamespace(data=SimpleNamespace(current_contact_time=torch.tensor(contact_time)))
    return SimpleNamespace(
        scene={"feet": sensor}, step_dt=0.02, episode_length_buf=torch.tensor([step]),
        command_manager=SimpleNamespace(get_command=lambda name: torch.tensor([command])),
    )  # fmt: skip


def test_follow_gait_contacts_reads_the_clock_the_sensor_and_the_command():
    # 0.5 s period, 0.02 s steps: step 5 is phase 0.2 (left stance), step 15 phase 0.6 (right).
    left_down = [[0.1, 0.0]]
    assert mdp.follow_gait_contacts(
        _gait_env(5, left_down, [0.2, 0.0, 0.0]), "feet", "twist", 0.5).tolist() == [1.0]
    assert mdp.follow_gait_contacts(
        _gait_env(15, left_down, [0.2, 0.0, 0.0]), "feet", "twist", 0.5).tolist() == [0.0]
    assert mdp.follow_gait_contacts(
        _gait_env(15, [[0.1, 0.1]], [0.0, 0.0, 0.0]), "feet", "twist", 0.5).tolist() == [1.0]


def test_gait_clock_is_sin_and_cos_of_the_phase():
    env = _gait_env(5, [[0.0, 0.0]], [0.0, 0.0, 0.0])  # phase 0.2 of a 0.5 s cycle
    angle = 2 * math.pi * 0.2
    assert mdp.gait_clock(env, 0.5)[0].tolist() == pytest.approx([math.sin(angle), math.cos(angle)])


def test_the_default_preset_is_forward_tracking_and_the_gait_preset_only_adds_the_clock():
    from mjlab_microduck.tasks import tuning

    assert tuning.DEFAULT_TUNING is tuning.FORWARD_TRACKING
    assert tuning.FORWARD_TRACKING == replace(
        STEPPING, name="forward_tracking", commands=tuning.FORWARD_COMMANDS, tracking_weight=4.0)
    assert tuning.FORWARD_TRACKING_LOW_AIR == replace(
        tuning.FORWARD_TRACKING, name="forward_tracking_low_air", air_time_weight=1.5)
    assert tuning.GAIT_SLOW.gait_period_s == 0.5 and tuning.GAIT_SLOW.gait_weight == 1.0
    assert replace(tuning.GAIT_SLOW, name="book", gait_period_s=None, gait_weight=0.0) == BOOK
    assert [p.task_suffix for p in tuning.COMPARED_PRESETS] == [
        "BookTuning", "UpstreamTuning", "GaitSlowTuning", "SteppingTuning",
        "ForwardTrackingTuning", "ForwardTrackingLowAirTuning",
    ]


def test_each_task_reaches_its_presets_terms_and_nothing_else():
    from mjlab_microduck.tasks import tuning
    from mjlab_microduck.tasks.velocity import TASK_ID, env_cfg_of_task

    def figures(task):
        cfg = env_cfg_of_task(task)
        lin, ang = cfg.rewards["track_linear_velocity"], cfg.rewards["track_angular_velocity"]
        ranges = cfg.commands["twist"].ranges
        return (lin.weight, lin.params["std"], ang.weight, ang.params["std"],
                cfg.rewards["air_time"].weight, *ranges.lin_vel_x, *ranges.lin_vel_y,
                *ranges.ang_vel_z)

    omni = (-0.4, 0.4, -0.3, 0.3, -1.0, 1.0)
    forward = (0.0, 0.4, -0.1, 0.1, -0.5, 0.5)
    wide_yaw = math.sqrt(0.5)
    assert figures(TASK_ID) == pytest.approx((4.0, 0.2, 4.0, wide_yaw, 3.0, *forward))
    assert figures(f"{TASK_ID}-ForwardTrackingTuning") == figures(TASK_ID)
    assert figures(f"{TASK_ID}-SteppingTuning") == pytest.approx(
        (2.0, 0.2, 2.0, wide_yaw, 3.0, *omni))
    assert figures(f"{TASK_ID}-ForwardTrackingLowAirTuning") == pytest.approx(
        (4.0, 0.2, 4.0, wide_yaw, 1.5, *forward))
    assert figures(f"{TASK_ID}-ForwardStraightTuning") == pytest.approx(
        (4.0, 0.2, 4.0, 0.35, 3.0, *forward))
    assert figures(f"{TASK_ID}-WalkerTuning") == pytest.approx(
        (4.0, 0.2, 4.0, wide_yaw, 3.0, *omni))
    assert figures(f"{TASK_ID}-WalkerNarrowTuning") == pytest.approx(
        (4.0, 0.15, 4.0, 0.3, 3.0, *omni))
    # The heading walker keeps WALKER's kernels and ranges; its command steers by heading.
    assert figures(f"{TASK_ID}-WalkerHeadingTuning") == figures(f"{TASK_ID}-WalkerTuning")
    assert figures(f"{TASK_ID}-WalkerTurningTuning") == figures(f"{TASK_ID}-WalkerTuning")
    # The sharpened walker starts with WALKER's kernels; its curriculum narrows them later.
    assert figures(f"{TASK_ID}-WalkerSharpenedTuning") == figures(f"{TASK_ID}-WalkerTuning")
    assert figures(f"{TASK_ID}-WalkerTurningSharpTuning") == figures(f"{TASK_ID}-WalkerTuning")
    assert figures(f"{TASK_ID}-WalkerTurningShortTuning") == figures(f"{TASK_ID}-WalkerTuning")
    assert figures(f"{TASK_ID}-WalkerTurningAxesTuning") == figures(f"{TASK_ID}-WalkerTuning")
    # Each candidate changes forward tracking in what it names there, and in nothing else.
    undo = {
        "forward_straight": {"ang_vel_std_rad_s": wide_yaw},
        "walker": {"commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False},
        "walker_narrow": {"commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
                          "lin_vel_std_m_s": 0.2, "ang_vel_std_rad_s": wide_yaw,
                          "standing_stages": tuning.UPSTREAM_STANDING},
        "walker_sharpened": {"commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
                             "standing_stages": tuning.UPSTREAM_STANDING, "kernel_stages": ()},
        "walker_heading": {"commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
                           "standing_stages": tuning.UPSTREAM_STANDING, "heading": None},
        "walker_turning": {"commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
                           "standing_stages": tuning.UPSTREAM_STANDING, "heading": None,
                           "turn_in_place": None},
        "walker_turning_sharp": {"commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
                                 "standing_stages": tuning.UPSTREAM_STANDING, "heading": None,
                                 "turn_in_place": None, "kernel_stages": ()},
        "walker_turning_short": {"commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
                                 "standing_stages": tuning.UPSTREAM_STANDING, "heading": None,
                                 "turn_in_place": None, "steps_per_env": 24},
        "walker_turning_axes": {"commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
                                "standing_stages": tuning.UPSTREAM_STANDING, "heading": None,
                                "turn_in_place": None, "single_axis": None},
        "walker_turning_axes_more_updates": {
            "commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
            "standing_stages": tuning.UPSTREAM_STANDING, "heading": None, "turn_in_place": None,
            "single_axis": None, "num_mini_batches": 4},
        "walker_turning_axes_wide_kl": {
            "commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
            "standing_stages": tuning.UPSTREAM_STANDING, "heading": None, "turn_in_place": None,
            "single_axis": None, "desired_kl": 0.01},
        "walker_turning_axes_kl_staged": {
            "commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
            "standing_stages": tuning.UPSTREAM_STANDING, "heading": None, "turn_in_place": None,
            "single_axis": None, "desired_kl": 0.01, "kl_stages": ()},
        "walker_turning_axes_fine_yaw": {
            "commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
            "standing_stages": tuning.UPSTREAM_STANDING, "heading": None, "turn_in_place": None,
            "single_axis": None, "fine_yaw": None},
        "walker_turning_axes_fine_tracking": {
            "commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
            "standing_stages": tuning.UPSTREAM_STANDING, "heading": None, "turn_in_place": None,
            "single_axis": None, "fine_yaw": None, "fine_planar": None},
        "walker_turning_axes_fast_start": {
            "commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
            "standing_stages": tuning.UPSTREAM_STANDING, "heading": None, "turn_in_place": None,
            "single_axis": None, "fast_start": None},
        "walker_turning_axes_fast_start_standing": {
            "commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
            "standing_stages": tuning.UPSTREAM_STANDING, "heading": None, "turn_in_place": None,
            "single_axis": None, "fast_start": None},
        "walker_turning_axes_fast_start_fine_planar": {
            "commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
            "standing_stages": tuning.UPSTREAM_STANDING, "heading": None, "turn_in_place": None,
            "single_axis": None, "fast_start": None, "fine_planar": None},
        "walker_turning_axes_straight_start": {
            "commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
            "standing_stages": tuning.UPSTREAM_STANDING, "heading": None, "turn_in_place": None,
            "single_axis": None, "fast_start": None, "fine_planar": None},
        "walker_turning_axes_straight_start_fine_yaw": {
            "commands": tuning.FORWARD_COMMANDS, "mirror_symmetry": False,
            "standing_stages": tuning.UPSTREAM_STANDING, "heading": None, "turn_in_place": None,
            "single_axis": None, "fast_start": None, "fine_planar": None, "fine_yaw": None},
    }
    for preset in tuning.CANDIDATE_PRESETS:
        back = replace(preset, name="forward_tracking", **undo[preset.name])
        assert back == tuning.FORWARD_TRACKING


def test_the_heading_walker_trains_with_mjlabs_heading_command_in_half_the_envs():
    from mjlab_microduck.tasks.velocity import TASK_ID, env_cfg_of_task

    twist = env_cfg_of_task(f"{TASK_ID}-WalkerHeadingTuning").commands["twist"]
    assert twist.heading_command and twist.rel_heading_envs == 0.5
    assert twist.heading_control_stiffness == 0.5
    assert twist.ranges.heading == pytest.approx((-math.pi, math.pi))
    assert twist.rel_standing_envs == 0.10  # WALKER_NARROW's standing envs from iteration 0
    # The play config (replays) commands the yaw rate in every env; the gait test steers itself.
    play = env_cfg_of_task(f"{TASK_ID}-WalkerHeadingTuning", play=True).commands["twist"]
    assert play.rel_heading_envs == 0.0 and play.rel_standing_envs == 0.0
    walker = env_cfg_of_task(f"{TASK_ID}-WalkerTuning").commands["twist"]
    assert not walker.heading_command and walker.ranges.heading is None


def test_a_preset_sets_the_ppo_mini_batches_of_its_task():
    from mjlab_microduck.tasks import tuning
    from mjlab_microduck.tasks.registry import load_rl_cfg
    from mjlab_microduck.tasks.velocity import TASK_ID

    more = tuning.WALKER_TURNING_AXES_MORE_UPDATES
    assert more.num_mini_batches == 8 and tuning.WALKER_TURNING_AXES.num_mini_batches == 4
    assert tuning.preset_of_task(f"{TASK_ID}-{more.task_suffix}") is more
    assert load_rl_cfg(f"{TASK_ID}-{more.task_suffix}").algorithm.num_mini_batches == 8
    assert load_rl_cfg(f"{TASK_ID}-WalkerTurningAxesTuning").algorithm.num_mini_batches == 4
    # the rest of the update is the same: 5 epochs, the same learning rate schedule
    assert load_rl_cfg(f"{TASK_ID}-{more.task_suffix}").algorithm.num_learning_epochs == 5
    assert load_rl_cfg(f"{TASK_ID}-{more.task_suffix}").algorithm.desired_kl == 0.01


def test_a_preset_sets_the_kl_target_of_its_task():
    from mjlab_microduck.tasks import tuning
    from mjlab_microduck.tasks.registry import load_rl_cfg
    from mjlab_microduck.tasks.velocity import TASK_ID

    wide = tuning.WALKER_TURNING_AXES_WIDE_KL
    assert wide.desired_kl == 2 * tuning.DEFAULT_DESIRED_KL
    assert tuning.preset_of_task(f"{TASK_ID}-{wide.task_suffix}") is wide
    algorithm = load_rl_cfg(f"{TASK_ID}-{wide.task_suffix}").algorithm
    assert (algorithm.desired_kl, algorithm.schedule, algorithm.num_mini_batches) == (
        0.02, "adaptive", tuning.DEFAULT_NUM_MINI_BATCHES)
    assert load_rl_cfg(f"{TASK_ID}-WalkerTurningAxesTuning").algorithm.desired_kl == 0.01
