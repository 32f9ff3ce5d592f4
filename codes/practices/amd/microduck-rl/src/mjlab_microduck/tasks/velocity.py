"""``Mjlab-Velocity-Flat-MicroDuck``: mjlab's velocity task tuned for a 0.9 kg biped.

Built on ``make_velocity_env_cfg()`` and changed as the upstream MicroDuck authors tuned it
(``task-figures`` in the book): small command ranges, joint-position actions around the home
pose, gait rewards scaled to a robot whose feet lift 2 cm, and five terminations: time-out,
``fell_over``, ``nan_state``, ``legs_collapsed`` (the trunk sank to its feet, a fall this
feet-only collision model cannot stop) and ``below_ground``, the guard against missing ground
contacts described in chapter 2. The few figures that decide between standing and walking are
a tuning preset (``tuning.py``); the default task uses ``FORWARD_TRACKING``.

Left out on purpose (the book says why): the head-pose and body-pose commands, the
actuator-model-specific randomisation and the self-collision term (only the soles collide in
this model). Turn-in-place envs come with a preset that asks for them.
"""

from __future__ import annotations

import math

from mjlab.envs import ManagerBasedRlEnvCfg
from mjlab.envs import mdp as envs_mdp
from mjlab.envs.mdp import dr
from mjlab.envs.mdp.actions import JointPositionActionCfg
from mjlab.managers.curriculum_manager import CurriculumTermCfg
from mjlab.managers.event_manager import EventTermCfg
from mjlab.managers.observation_manager import ObservationTermCfg
from mjlab.managers.reward_manager import RewardTermCfg
from mjlab.managers.scene_entity_config import SceneEntityCfg
from mjlab.managers.termination_manager import TerminationTermCfg
from mjlab.sensor import (
    ContactMatch,
    ContactSensorCfg,
    ObjRef,
    RingPatternCfg,
    TerrainHeightSensorCfg,
)
from mjlab.tasks.velocity import mdp
from mjlab.tasks.velocity.mdp import UniformVelocityCommandCfg
from mjlab.tasks.velocity.velocity_env_cfg import make_velocity_env_cfg
from mjlab.utils.noise import UniformNoiseCfg as Unoise

from mjlab_microduck.robot.constants import (
    FOOT_GEOMS,
    FOOT_SITES,
    HEAD_JOINTS,
    ROOT_BODY,
    get_microduck_robot_cfg,
)
from mjlab_microduck.runs.names import TASK_ID, UNGUARDED_TASK_ID
from mjlab_microduck.tasks import axis_command, start_command, turning_command
from mjlab_microduck.tasks import mdp as duck_mdp
from mjlab_microduck.tasks.tuning import (
    CANDIDATE_PRESETS,
    COMPARED_PRESETS,
    DEFAULT_TUNING,
    UPSTREAM,
    VelocityTuning,
)


def preset_task_id(preset: VelocityTuning) -> str:
    """The task that trains ``preset`` under its own name: ``<TASK_ID>-<task_suffix>``."""
    return f"{TASK_ID}-{preset.task_suffix}"


TUNING_OF_TASK: dict[str, VelocityTuning] = {
    TASK_ID: DEFAULT_TUNING,
    UNGUARDED_TASK_ID: DEFAULT_TUNING,
    **{preset_task_id(preset): preset for preset in (*COMPARED_PRESETS, *CANDIDATE_PRESETS)},
}
UPSTREAM_TUNING_TASK_ID = preset_task_id(UPSTREAM)
DEFAULT_PRESET_TASK_ID = preset_task_id(DEFAULT_TUNING)

BELOW_GROUND_MIN_HEIGHT_M = -0.05
COLLAPSED_MIN_HEIGHT_ABOVE_FEET_M = 0.05
FELL_OVER_LIMIT_DEG = 70.0


def _iteration(it: int, tuning: VelocityTuning) -> int:
    """Curricula count env steps per env; the book speaks in PPO iterations of the preset's
    rollout length."""
    return it * tuning.steps_per_env


def standing_stages(tuning: VelocityTuning) -> list[duck_mdp.StandingStage]:
    """The preset's standing-env schedule in env steps, as ``raise_standing_fraction`` takes it."""
    return [
        {"step": _iteration(stage.iteration, tuning), "fraction": stage.fraction}
        for stage in tuning.standing_stages
    ]


def action_rate_stages(tuning: VelocityTuning) -> list[dict]:
    """The preset's penalty ramp in the form of mjlab's ``reward_curriculum``."""
    return [
        {"step": _iteration(stage.iteration, tuning), "weight": stage.weight}
        for stage in tuning.action_rate_stages
    ]


def kernel_curricula(tuning: VelocityTuning) -> dict[str, list[dict]]:
    """The preset's later kernel widths per tracking reward, as ``reward_curriculum`` stages."""
    if not tuning.kernel_stages:
        return {}

    def stage_at(stage, std: float) -> dict:
        return {"step": _iteration(stage.iteration, tuning), "params": {"std": std}}

    stages = tuning.kernel_stages
    return {
        "track_linear_velocity": [stage_at(st, st.lin_vel_std_m_s) for st in stages],
        "track_angular_velocity": [stage_at(st, st.ang_vel_std_rad_s) for st in stages],
    }


_LEG_STD_STANDING = {
    r".*_hip_yaw": 0.1,
    r".*_hip_roll": 0.05,
    r".*_hip_pitch": 0.15,
    r".*_knee": 0.15,
    r".*_ankle": 0.1,
}
_LEG_STD_WALKING = {
    r".*_hip_yaw": 0.3,
    r".*_hip_roll": 0.05,
    r".*_hip_pitch": 0.4,
    r".*_knee": 0.4,
    r".*_ankle": 0.25,
}
# Without the head-pose command the head should simply stay at home.
_HEAD_STD = {name: 0.1 for name in HEAD_JOINTS}


def microduck_flat_env_cfg(
    play: bool = False, below_ground_guard: bool = True, tuning: VelocityTuning = DEFAULT_TUNING
) -> ManagerBasedRlEnvCfg:
    """The MicroDuck flat-ground velocity env; ``play`` gives the replay/evaluation variant."""
    cfg = make_velocity_env_cfg()
    cfg.scene.entities = {"robot": get_microduck_robot_cfg()}

    # Flat plane, no terrain generator, no terrain raycast: the robot sees no height map.
    assert cfg.scene.terrain is not None
    cfg.scene.terrain.terrain_type = "plane"
    cfg.scene.terrain.terrain_generator = None
    cfg.sim.njmax = 300
    cfg.sim.nconmax = None
    cfg.sim.contact_sensor_maxmatch = 64
    cfg.sim.mujoco.ccd_iterations = 50

    foot_height = TerrainHeightSensorCfg(
        name="foot_height_scan",
        frame=tuple(ObjRef(type="site", name=s, entity="robot") for s in FOOT_SITES),
        pattern=RingPatternCfg.single_ring(radius=0.02, num_samples=4),
        ray_alignment="yaw",
        max_distance=1.0,
        exclude_parent_body=True,
        include_geom_groups=(0,),
    )
    feet_ground = ContactSensorCfg(
        name="feet_ground_contact",
        primary=ContactMatch(mode="geom", pattern=FOOT_GEOMS, entity="robot"),
        secondary=ContactMatch(mode="body", pattern="terrain"),
        fields=("found", "force"),
        reduce="netforce",
        num_slots=1,
        track_air_time=True,
    )
    cfg.scene.sensors = (foot_height, feet_ground)

    _configure_observations(cfg, tuning)
    _configure_actions(cfg)
    _configure_commands(cfg, tuning)
    _configure_events(cfg)
    _configure_rewards(cfg, tuning)
    _configure_terminations(cfg, below_ground_guard)

    cfg.curriculum = {
        "standing_envs": CurriculumTermCfg(
            func=duck_mdp.raise_standing_fraction,
            params={"command_name": "twist", "stages": standing_stages(tuning)},
        ),
        "action_rate": CurriculumTermCfg(
            func=envs_mdp.reward_curriculum,
            params={"reward_name": "action_rate_l2", "stages": action_rate_stages(tuning)},
        ),
    }
    for reward_name, stages in kernel_curricula(tuning).items():
        cfg.curriculum[f"{reward_name}_std"] = CurriculumTermCfg(
            func=envs_mdp.reward_curriculum,
            params={"reward_name": reward_name, "stages": stages},
        )

    cfg.viewer.body_name = ROOT_BODY
    cfg.viewer.distance = 0.6
    cfg.viewer.elevation = -15.0

    if play:
        _apply_play_overrides(cfg)
    return cfg


def env_cfg_of_task(task_id: str, play: bool = False) -> ManagerBasedRlEnvCfg:
    """The env config registered under ``task_id``: its preset, guarded unless it says not."""
    if task_id not in TUNING_OF_TASK:
        raise KeyError(f"unknown MicroDuck task {task_id!r}; known: {', '.join(TUNING_OF_TASK)}")
    return microduck_flat_env_cfg(
        play=play,
        below_ground_guard=task_id != UNGUARDED_TASK_ID,
        tuning=TUNING_OF_TASK[task_id],
    )


def _configure_observations(cfg: ManagerBasedRlEnvCfg, tuning: VelocityTuning) -> None:
    actor = cfg.observations["actor"].terms
    critic = cfg.observations["critic"].terms
    for group in (actor, critic):
        group.pop("height_scan", None)
    # The real robot has no velocity estimator: base linear velocity is critic-only.
    actor.pop("base_lin_vel", None)
    # IMU readings arrive 0-1 control steps late, joint velocities one step late.
    actor["base_ang_vel"] = ObservationTermCfg(
        func=mdp.builtin_sensor,
        params={"sensor_name": "robot/imu_ang_vel"},
        noise=Unoise(n_min=-0.03, n_max=0.03),
        delay_min_lag=0,
        delay_max_lag=1,
    )
    actor["projected_gravity"] = ObservationTermCfg(
        func=mdp.projected_gravity,
        noise=Unoise(n_min=-0.01, n_max=0.01),
        delay_min_lag=0,
        delay_max_lag=1,
    )
    actor["joint_pos"] = ObservationTermCfg(
        func=mdp.joint_pos_rel, noise=Unoise(n_min=-0.001, n_max=0.001)
    )
    actor["joint_vel"] = ObservationTermCfg(
        func=mdp.joint_vel_rel,
        noise=Unoise(n_min=-0.25, n_max=0.25),
        delay_min_lag=1,
        delay_max_lag=1,
    )
    if tuning.gait_period_s is not None:
        actor["gait_clock"] = ObservationTermCfg(
            func=duck_mdp.gait_clock, params={"period_s": tuning.gait_period_s}
        )
    for name in ("base_ang_vel", "projected_gravity", "joint_pos", "joint_vel", "gait_clock"):
        if name in actor:
            critic[name] = ObservationTermCfg(
                func=actor[name].func, params=dict(actor[name].params)
            )


def _configure_actions(cfg: ManagerBasedRlEnvCfg) -> None:
    action = cfg.actions["joint_pos"]
    assert isinstance(action, JointPositionActionCfg)
    action.scale = 1.0
    action.use_default_offset = True


def _configure_commands(cfg: ManagerBasedRlEnvCfg, tuning: VelocityTuning) -> None:
    twist = cfg.commands["twist"]
    assert isinstance(twist, UniformVelocityCommandCfg)
    heading = tuning.heading
    twist.heading_command = heading is not None
    twist.rel_heading_envs = heading.envs_fraction if heading else 0.0
    if heading:
        twist.heading_control_stiffness = heading.control_stiffness
    twist.rel_forward_envs = 0.0
    twist.rel_standing_envs = tuning.standing_stages[0].fraction
    twist.ranges = UniformVelocityCommandCfg.Ranges(
        lin_vel_x=tuning.commands.lin_vel_x_m_s,
        lin_vel_y=tuning.commands.lin_vel_y_m_s,
        ang_vel_z=tuning.commands.ang_vel_z_rad_s,
        heading=heading.target_range_rad if heading else None,
    )
    if tuning.turn_in_place:
        cfg.commands["twist"] = turning_command.with_turn_in_place(
            twist,
            tuning.turn_in_place.envs_fraction,
            tuning.turn_in_place.min_turn_rate_rad_s,
        )
    if tuning.single_axis:  # VelocityTuning holds it over turn-in-place envs
        cfg.commands["twist"] = axis_command.with_axes(
            cfg.commands["twist"],
            tuning.single_axis.envs_fraction,
            tuning.single_axis.min_speed_m_s,
        )
    if tuning.fast_start:  # VelocityTuning holds it over single-axis envs
        cfg.commands["twist"] = start_command.with_fast_starts(
            cfg.commands["twist"],
            tuning.fast_start.envs_fraction,
            tuning.fast_start.min_speed_m_s,
            spare_standing=tuning.fast_start.spares_standing,
        )


def _configure_events(cfg: ManagerBasedRlEnvCfg) -> None:
    cfg.events["reset_base"].params["pose_range"] = {
        "x": (-0.5, 0.5),
        "y": (-0.5, 0.5),
        "z": (0.0, 0.01),
        "yaw": (-math.pi, math.pi),
    }
    cfg.events["push_robot"].interval_range_s = (3.0, 6.0)
    cfg.events["push_robot"].params["velocity_range"] = {"x": (-0.3, 0.3), "y": (-0.3, 0.3)}
    cfg.events["foot_friction"].params["asset_cfg"].geom_names = FOOT_GEOMS
    cfg.events["foot_friction"].params["ranges"] = (0.7, 1.3)
    cfg.events["base_com"].params["asset_cfg"].body_names = (ROOT_BODY,)
    cfg.events["base_com"].params["ranges"] = {i: (-0.003, 0.003) for i in range(3)}
    cfg.events["body_mass"] = EventTermCfg(
        mode="startup",
        func=duck_mdp.body_mass_at_com,
        params={
            "asset_cfg": SceneEntityCfg("robot", body_names=(".*",)),
            "operation": "scale",
            "ranges": (0.95, 1.05),
        },
    )
    cfg.events["joint_armature"] = EventTermCfg(
        mode="startup",
        func=dr.joint_armature,
        params={
            "asset_cfg": SceneEntityCfg("robot", joint_names=(".*",)),
            "operation": "scale",
            "ranges": (0.9, 1.1),
        },
    )


def _configure_rewards(cfg: ManagerBasedRlEnvCfg, tuning: VelocityTuning) -> None:
    rewards = cfg.rewards
    rewards["track_linear_velocity"].params["std"] = tuning.lin_vel_std_m_s
    rewards["track_angular_velocity"].params["std"] = tuning.ang_vel_std_rad_s
    rewards["track_linear_velocity"].weight = tuning.tracking_weight
    rewards["track_angular_velocity"].weight = tuning.tracking_weight
    if tuning.fine_yaw is not None:
        rewards["track_yaw_rate_fine"] = RewardTermCfg(
            func=duck_mdp.track_yaw_rate,
            weight=tuning.fine_yaw.weight,
            params={"std": tuning.fine_yaw.std_rad_s, "command_name": "twist"},
        )
    if tuning.fine_planar is not None:
        rewards["track_planar_velocity_fine"] = RewardTermCfg(
            func=duck_mdp.track_planar_velocity,
            weight=tuning.fine_planar.weight,
            params={"std": tuning.fine_planar.std_m_s, "command_name": "twist"},
        )
    rewards["upright"].weight = 2.0
    rewards["upright"].params["std"] = math.sqrt(0.05)
    rewards["upright"].params["asset_cfg"].body_names = (ROOT_BODY,)
    pose = rewards["pose"].params
    pose["std_standing"] = {**_LEG_STD_STANDING, **_HEAD_STD}
    pose["std_walking"] = {**_LEG_STD_WALKING, **_HEAD_STD}
    pose["std_running"] = {**_LEG_STD_WALKING, **_HEAD_STD}
    pose["walking_threshold"] = 0.01
    rewards["air_time"].weight = tuning.air_time_weight
    rewards["air_time"].params.update(
        {"threshold_min": tuning.air_time_min_s, "threshold_max": 0.300, "command_threshold": 0.01}
    )
    if tuning.single_stance_weight:
        rewards["single_stance"] = RewardTermCfg(
            func=duck_mdp.single_stance,
            weight=tuning.single_stance_weight,
            params={
                "sensor_name": "feet_ground_contact",
                "command_name": "twist",
                "command_threshold": 0.01,
            },
        )
    if tuning.gait_period_s is not None:
        rewards["follow_gait_contacts"] = RewardTermCfg(
            func=duck_mdp.follow_gait_contacts,
            weight=tuning.gait_weight,
            params={
                "sensor_name": "feet_ground_contact",
                "command_name": "twist",
                "period_s": tuning.gait_period_s,
                "command_threshold": 0.01,
            },
        )
    for name in ("foot_clearance", "foot_swing_height"):
        rewards[name].params["target_height"] = 0.02
        rewards[name].params["command_threshold"] = 0.01
    rewards["foot_clearance"].params["asset_cfg"].site_names = FOOT_SITES
    rewards["foot_slip"].weight = -0.1
    rewards["foot_slip"].params["command_threshold"] = 0.01
    rewards["foot_slip"].params["asset_cfg"].site_names = FOOT_SITES
    rewards["body_ang_vel"].weight = -0.05
    rewards["body_ang_vel"].params["asset_cfg"].body_names = (ROOT_BODY,)
    rewards["angular_momentum"].weight = -0.02
    rewards["action_rate_l2"].weight = tuning.action_rate_stages[0].weight
    rewards.pop("soft_landing", None)


def _configure_terminations(cfg: ManagerBasedRlEnvCfg, below_ground_guard: bool) -> None:
    cfg.terminations = {
        "time_out": TerminationTermCfg(func=mdp.time_out, time_out=True),
        "fell_over": TerminationTermCfg(
            func=mdp.bad_orientation, params={"limit_angle": math.radians(FELL_OVER_LIMIT_DEG)}
        ),
        # Non-finite physics must end the episode before it reaches observations and the policy.
        "nan_state": TerminationTermCfg(func=envs_mdp.nan_detection),
        "legs_collapsed": TerminationTermCfg(
            func=duck_mdp.legs_collapsed,
            params={
                "min_height_above_feet_m": COLLAPSED_MIN_HEIGHT_ABOVE_FEET_M,
                "asset_cfg": SceneEntityCfg("robot", site_names=FOOT_SITES),
            },
        ),
    }
    if below_ground_guard:
        cfg.terminations["below_ground"] = TerminationTermCfg(
            func=duck_mdp.below_ground, params={"min_height_m": BELOW_GROUND_MIN_HEIGHT_M}
        )


def hold_yaw_rate(twist: UniformVelocityCommandCfg) -> None:
    """Switch mjlab's heading command off, so the yaw-rate command written is the one the policy
    sees. mjlab refuses a heading range without the heading command (a task trained with it,
    such as ``WALKER_HEADING``, has one), so the range goes too. Idempotent."""
    twist.heading_command = False
    twist.rel_heading_envs = 0.0
    twist.ranges.heading = None


def _apply_play_overrides(cfg: ManagerBasedRlEnvCfg) -> None:
    cfg.episode_length_s = int(1e9)
    cfg.observations["actor"].enable_corruption = False
    cfg.events.pop("push_robot", None)
    cfg.curriculum = {}
    twist = cfg.commands["twist"]
    assert isinstance(twist, UniformVelocityCommandCfg)
    twist.rel_standing_envs = 0.0
    # A replay holds the yaw rate it is given; the gait test switches heading envs on itself.
    twist.rel_heading_envs = 0.0
    if isinstance(twist, turning_command.TurnInPlaceVelocityCommandCfg):
        twist.rel_turn_in_place_envs = 0.0
    if isinstance(twist, axis_command.AxisVelocityCommandCfg):
        twist.rel_axis_envs = 0.0
    if isinstance(twist, start_command.FastStartVelocityCommandCfg):
        twist.rel_fast_start_envs = 0.0
