"""Left-right mirror of the MicroDuck's observations and actions, for rsl_rl's symmetry
augmentation.

Problem it solves: a policy trained without it learns a left and a right turn as two skills,
and one of them wins: the 256-env recipe circles to the right under a straight command. With
``symmetry_cfg`` in the PPO config, rsl_rl 5 adds the mirror image of every sample to each
mini-batch, so the policy learns both sides from the same experience and has no side to
prefer. The mirror of each joint (partner and sign) is read off the compiled model, from the
world axis of every hinge at the zero pose, and :func:`joint_mirror` raises if a hinge has no
mirror image: a model change cannot teach the policy a wrong mirror.

No-op cases: nothing here runs unless a task's runner sets ``symmetry_cfg``
(:class:`MirroredVelocityRunner`); :func:`mirror_augment` is then called by PPO's update.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from mjlab_microduck.tasks.runner import AtomicSaveVelocityRunner

if TYPE_CHECKING:
    import mujoco
    import torch

# Reflection through the trunk's sagittal (x-z) plane. Polar vectors (velocities, gravity,
# forces) map as v -> M v; axial vectors (angular velocities, hinge axes) as w -> -M w.
MIRROR = np.diag([1.0, -1.0, 1.0])
POLAR_SIGNS = (1.0, -1.0, 1.0)
AXIAL_SIGNS = (-1.0, 1.0, -1.0)
# The twist command (vx, vy, yaw rate) mirrors to (vx, -vy, -yaw rate).
COMMAND_SIGNS = (1.0, -1.0, -1.0)
AXIS_TOLERANCE = 1e-6
_SIDES = ("left_", "right_")
# mjlab's IMU sensors (robot/imu_lin_vel, robot/imu_ang_vel) sit at this site of the trunk.
IMU_SITE = "imu"


def mirror_name(name: str) -> str:
    """``left_knee`` <-> ``right_knee``; a joint on the centre line is its own mirror."""
    for side, other in (_SIDES, _SIDES[::-1]):
        if name.startswith(side):
            return other + name[len(side) :]
    return name


@dataclass(frozen=True)
class JointMirror:
    """For each joint ``i`` of ``names``: its mirror image is ``sign[i]`` times the value of
    joint ``partner[i]``."""

    names: tuple[str, ...]
    partner: tuple[int, ...]
    sign: tuple[float, ...]


def hinge_axes(model: mujoco.MjModel) -> dict[str, np.ndarray]:
    """World axis of every hinge joint at the model's zero pose (trunk frame = world frame)."""
    import mujoco

    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return {
        model.joint(j).name: data.xaxis[j].copy()
        for j in range(model.njnt)
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE
    }


def joint_mirror(model: mujoco.MjModel, names: Sequence[str]) -> JointMirror:
    """Partner and sign of each joint in ``names``, from the model's hinge axes.

    A hinge turning by ``q`` about axis ``a`` looks, in the mirror, like a turn by ``q`` about
    ``-M a``. Its partner's axis is either that (sign +1) or its opposite (sign -1); anything
    else means the model is not mirror-symmetric there, and that is an error.
    """
    axes = hinge_axes(model)
    index = {name: i for i, name in enumerate(names)}
    partners, signs = [], []
    for name in names:
        other = mirror_name(name)
        if name not in axes or other not in axes or other not in index:
            raise ValueError(f"joint {name!r}: no hinge {other!r} to mirror it onto")
        mirrored_axis = -MIRROR @ axes[name]
        if np.allclose(axes[other], mirrored_axis, atol=AXIS_TOLERANCE):
            signs.append(1.0)
        elif np.allclose(axes[other], -mirrored_axis, atol=AXIS_TOLERANCE):
            signs.append(-1.0)
        else:
            raise ValueError(
                f"joint {name!r}: axis {axes[name].round(4).tolist()} has no mirror image in "
                f"{other!r} (axis {axes[other].round(4).tolist()})"
            )
        partners.append(index[other])
    return JointMirror(tuple(names), tuple(partners), tuple(signs))


# ---------------------------------------------------------------- observation layout

# How each observation term of the MicroDuck task mirrors; a term missing here is an error
# (see observation_mirror), never passed through unmirrored.
_VECTOR_TERMS = {
    "base_lin_vel": POLAR_SIGNS,
    "projected_gravity": POLAR_SIGNS,
    "base_ang_vel": AXIAL_SIGNS,
    "command": COMMAND_SIGNS,
}
_JOINT_TERMS = ("joint_pos", "joint_vel")
_ACTION_TERMS = ("actions",)
# Per-foot terms, feet in the order (left, right): mirroring swaps the feet; contact forces are
# polar vectors per foot.
_FOOT_SCALAR_TERMS = ("foot_height", "foot_air_time", "foot_contact")
_FOOT_VECTOR_TERMS = ("foot_contact_forces",)


@dataclass(frozen=True, eq=False)
class Mirror:
    """A mirror of a flat vector as a linear map: ``mirrored = x @ matrix.T``.

    Almost every row is one entry (a partner and a sign); the velocity measured at the
    off-centre IMU also needs the angular velocity (see :func:`imu_velocity_mirror`).
    """

    matrix: np.ndarray

    def apply_numpy(self, x: np.ndarray) -> np.ndarray:
        return x @ self.matrix.T


def _permutation(partner: Sequence[int], sign: Sequence[float]) -> np.ndarray:
    matrix = np.zeros((len(partner), len(partner)))
    matrix[np.arange(len(partner)), list(partner)] = sign
    return matrix


def _skew(r: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def imu_velocity_mirror(imu_pos_m: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """``(A_v, A_w)`` with mirrored ``v_imu' = A_v v_imu + A_w w``.

    The velocimeter sits at ``r`` (trunk frame), off the centre line on this robot, so
    ``v_imu = v + w x r``. The mirrored trunk moves as ``M v`` and turns as ``-M w`` with its
    IMU still at ``r``, which gives ``v_imu' = M v_imu + [r - M r]x M w``: zero extra term for
    an IMU on the centre line.
    """
    r = np.asarray(imu_pos_m, dtype=float)
    return MIRROR, _skew(r - MIRROR @ r) @ MIRROR


def _block_diag(blocks: list[np.ndarray]) -> np.ndarray:
    size = sum(b.shape[0] for b in blocks)
    out = np.zeros((size, size))
    offset = 0
    for block in blocks:
        n = block.shape[0]
        out[offset : offset + n, offset : offset + n] = block
        offset += n
    return out


def _term_block(
    term: str, width: int, joints: JointMirror, actions: JointMirror, num_feet: int
) -> np.ndarray:
    if term in _VECTOR_TERMS:
        signs = _VECTOR_TERMS[term]
        if width != len(signs):
            raise ValueError(f"observation {term!r}: width {width}, expected {len(signs)}")
        return np.diag(signs)
    if term in _JOINT_TERMS or term in _ACTION_TERMS:
        mirror = joints if term in _JOINT_TERMS else actions
        if width != len(mirror.names):
            raise ValueError(f"observation {term!r}: width {width}, {len(mirror.names)} joints")
        return _permutation(mirror.partner, mirror.sign)
    if term in _FOOT_SCALAR_TERMS or term in _FOOT_VECTOR_TERMS:
        if num_feet != 2 or width % num_feet:
            raise ValueError(f"observation {term!r}: width {width} is not per left/right foot")
        per_foot = width // num_feet
        signs = POLAR_SIGNS if term in _FOOT_VECTOR_TERMS else (1.0,) * per_foot
        if len(signs) != per_foot:
            raise ValueError(f"observation {term!r}: {per_foot} values per foot, expected 3")
        partner = [per_foot + i for i in range(per_foot)] + list(range(per_foot))
        return _permutation(partner, tuple(signs) * num_feet)
    raise ValueError(
        f"observation {term!r} has no left-right mirror; add it to tasks/symmetry.py before "
        "training with symmetry augmentation"
    )


def observation_mirror(
    terms: Sequence[str],
    widths: Sequence[int],
    joints: JointMirror,
    actions: JointMirror,
    num_feet: int = 2,
    imu_pos_m: Sequence[float] = (0.0, 0.0, 0.0),
) -> Mirror:
    """The mirror of one concatenated observation group, term by term.

    ``base_lin_vel`` is the IMU's velocimeter: mirroring it needs ``base_ang_vel`` of the same
    group and the IMU's position ``imu_pos_m`` in the trunk frame.
    """
    terms, widths = list(terms), [int(w) for w in widths]
    matrix = _block_diag(
        [_term_block(t, w, joints, actions, num_feet) for t, w in zip(terms, widths, strict=True)]
    )
    if "base_lin_vel" in terms:
        if "base_ang_vel" not in terms:
            raise ValueError("observation 'base_lin_vel' needs 'base_ang_vel' in its group")
        starts = dict(zip(terms, np.cumsum([0, *widths[:-1]]), strict=True))
        v, w = int(starts["base_lin_vel"]), int(starts["base_ang_vel"])
        a_v, a_w = imu_velocity_mirror(imu_pos_m)
        matrix[v : v + 3, v : v + 3] = a_v
        matrix[v : v + 3, w : w + 3] = a_w
    return Mirror(matrix)


# ---------------------------------------------------------------- rsl_rl hook


@dataclass(frozen=True)
class EnvMirrors:
    groups: dict[str, Mirror]
    actions: Mirror


_MIRRORS_ATTR = "_microduck_mirrors"


def env_mirrors(env: Any) -> EnvMirrors:
    """Mirrors of every observation group and of the action vector of a MicroDuck env
    (computed once per env, from its model, robot joints and action targets)."""
    base = getattr(env, "unwrapped", env)
    cached = getattr(base, _MIRRORS_ATTR, None)
    if cached is not None:
        return cached
    from mjlab_microduck.robot.constants import FOOT_SITES, get_spec

    robot = base.scene["robot"]
    # The robot's own model: joint names without the scene's entity prefix.
    local = get_spec().compile()
    joints = joint_mirror(local, list(robot.joint_names))
    action_names = list(base.action_manager.get_term("joint_pos").target_names)
    actions = joint_mirror(local, action_names)
    manager = base.observation_manager
    groups = {
        group: observation_mirror(
            manager.active_terms[group],
            [int(np.prod(dims)) for dims in manager.group_obs_term_dim[group]],
            joints,
            actions,
            num_feet=len(FOOT_SITES),
            imu_pos_m=_site_pos(local, IMU_SITE),
        )
        for group in manager.active_terms
    }
    mirrors = EnvMirrors(groups, Mirror(_permutation(actions.partner, actions.sign)))
    setattr(base, _MIRRORS_ATTR, mirrors)
    return mirrors


def _site_pos(model: mujoco.MjModel, site: str) -> np.ndarray:
    """A site's position in its body's frame (the IMU is on the trunk)."""
    return np.asarray(model.site(site).pos, dtype=float)


def _gather(x: torch.Tensor, mirror: Mirror) -> torch.Tensor:
    import torch

    return x @ torch.as_tensor(mirror.matrix.T, device=x.device, dtype=x.dtype)


def mirror_augment(env: Any, obs=None, actions=None):
    """rsl_rl's ``data_augmentation_func``: each batch followed by its mirror image.

    ``obs`` is rsl_rl's TensorDict of observation groups, ``actions`` a (batch, actions)
    tensor; either may be None. Returns them with the batch doubled: originals first, as
    rsl_rl expects.
    """
    import torch

    mirrors = env_mirrors(env)
    obs_out = None
    if obs is not None:
        mirrored = obs.clone()
        for group in obs.keys():
            if group not in mirrors.groups:
                raise KeyError(f"observation group {group!r} has no mirror")
            mirrored[group] = _gather(obs[group], mirrors.groups[group])
        obs_out = torch.cat([obs, mirrored], dim=0)
    actions_out = None
    if actions is not None:
        actions_out = torch.cat([actions, _gather(actions, mirrors.actions)], dim=0)
    return obs_out, actions_out


SYMMETRY_CFG = {
    "use_data_augmentation": True,
    "use_mirror_loss": False,
    "mirror_loss_coeff": 0.0,
    "data_augmentation_func": "mjlab_microduck.tasks.symmetry:mirror_augment",
}


class MirroredVelocityRunner(AtomicSaveVelocityRunner):
    """The velocity runner (checkpoints saved whole) with rsl_rl's symmetry augmentation on."""

    def __init__(self, env, train_cfg: dict, *args, **kwargs):
        train_cfg["algorithm"]["symmetry_cfg"] = dict(SYMMETRY_CFG)
        super().__init__(env, train_cfg, *args, **kwargs)
