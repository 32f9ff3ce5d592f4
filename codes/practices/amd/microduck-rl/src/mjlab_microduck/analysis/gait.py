"""The gait test's cases, per-robot metrics and pass rule, as pure functions.

Problem it solves: a reward curve, or a replay at one command, cannot say whether a policy
walks. The gait test holds a set of velocity commands fixed (forward at five speeds, backward,
sideways, stand, turns in place, walk-and-turn, a sideways shove), runs several robots per case
for several seeds, and judges every robot's trajectory by one written rule. This module is that
rule: the case table, the metrics of a trajectory and the verdict. It imports only numpy and
pandas, so it is tested on synthetic trajectories and re-applied to a saved ``robots.csv``
without a simulator; ``jobs/gait_test.py`` produces the trajectories.

Frames: ``v_forward``/``v_left`` are the trunk's velocity in its heading frame (the world
velocity rotated by minus the heading: yaw only, so a pitched trunk does not shrink it).
Progress is measured along the commanded direction fixed at the start (start heading turned by
``atan2(cmd_y, cmd_x)``), so a robot that walks in circles cannot score it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

MIN_PROGRESS_RATIO_MEAN = 0.8
"""Linear cases: the mean robot covers at least 80 % of the ideal path along the command."""
MIN_PROGRESS_RATIO_ROBOT = 0.6
"""Linear cases: no single robot covers less than 60 % of it."""
MAX_HEADING_CHANGE_RAD = 0.3
"""Cases without a yaw command: no robot turns by more than 0.3 rad (17 degrees)."""
MAX_STAND_DISPLACEMENT_M = 0.05
"""Stand: no robot moves more than 5 cm."""
MIN_YAW_RATIO = 0.8
"""Turning cases: the mean yaw rate is at least 80 % of the command."""
MIN_HEADING_SPEED_RATIO = 0.8
"""Walk-and-turn: mean speed along the commanded direction (heading frame) over the command."""
PUSH_TIME_S = 4.0
"""When the push case's shove comes."""

HEADING_MODE = "heading"
"""The verdict's mode: a case without a yaw command walks a straight line through mjlab's heading
command (the yaw-rate command set every step to ``clip(stiffness * wrap(target - heading))``,
target = the robot's start heading), as mjlab and Isaac Lab train and play their walkers; turning
cases command their yaw rate."""
OPEN_LOOP_MODE = "open_loop"
"""Measured beside the verdict: the yaw-rate command held at 0, so a robot's own yaw bias (its
randomised friction, centre of mass and masses) shows as heading drift."""
MODES = (HEADING_MODE, OPEN_LOOP_MODE)
HEADING_CONTROL_STIFFNESS = 0.5
"""mjlab's ``heading_control_stiffness`` of its velocity tasks, rad/s per rad of heading error."""
OPEN_LOOP_MAX_MEDIAN_HEADING_CHANGE_RAD = 0.3
"""Open loop, per case: the median robot turns by at most 0.3 rad in 10 s."""
OPEN_LOOP_MAX_WORST_HEADING_CHANGE_RAD = 0.6
"""Open loop, per case: the worst robot turns by at most 0.6 rad in 10 s."""
_EPS = 1e-9
# A value equal to its threshold passes; the margin absorbs float rounding of derived values
# (0.8 * 0.15 is 0.12000000000000001).

THRESHOLDS = {
    "min_progress_ratio_mean": MIN_PROGRESS_RATIO_MEAN,
    "min_progress_ratio_robot": MIN_PROGRESS_RATIO_ROBOT,
    "max_heading_change_rad": MAX_HEADING_CHANGE_RAD,
    "max_stand_displacement_m": MAX_STAND_DISPLACEMENT_M,
    "min_yaw_ratio": MIN_YAW_RATIO,
    "min_heading_speed_ratio": MIN_HEADING_SPEED_RATIO,
}


@dataclass(frozen=True)
class GaitCase:
    """One fixed command: heading-frame velocity (m/s, m/s, rad/s) and an optional shove.

    ``push_mps`` is a sideways velocity change of the trunk at :data:`PUSH_TIME_S`.
    """

    name: str
    lin_vel_x: float
    lin_vel_y: float
    ang_vel_z: float
    push_mps: float = 0.0

    @property
    def speed(self) -> float:
        return math.hypot(self.lin_vel_x, self.lin_vel_y)

    @property
    def kind(self) -> str:
        """``linear`` (push included), ``walk_turn``, ``turn`` (in place) or ``stand``."""
        linear = self.speed > 0.0
        if linear and self.ang_vel_z != 0.0:
            return "walk_turn"
        if linear:
            return "linear"
        return "turn" if self.ang_vel_z != 0.0 else "stand"

    @property
    def direction_rad(self) -> float:
        """Commanded direction relative to the start heading (0 for stand and turns)."""
        return math.atan2(self.lin_vel_y, self.lin_vel_x) if self.speed > 0.0 else 0.0

    @property
    def label(self) -> str:
        """How failure lines and tables name the case, e.g. ``forward 0.3 m/s``."""
        kind, speed, yaw = self.kind, f"{self.speed:g} m/s", f"{self.ang_vel_z:+.1f} rad/s"
        if kind == "stand":
            return "stand"
        if kind == "turn":
            return f"turn in place {yaw}"
        if kind == "walk_turn":
            return f"walk {speed} and turn {yaw}"
        if self.push_mps:
            return f"push {self.push_mps:g} m/s at {PUSH_TIME_S:g} s, walking {speed}"
        x, y = self.lin_vel_x, self.lin_vel_y
        if y == 0.0:
            return f"{'forward' if x > 0 else 'backward'} {speed}"
        if x == 0.0:
            return f"sideways {'left' if y > 0 else 'right'} {speed}"
        return f"velocity ({x:g}, {y:g}) m/s"


CASES: tuple[GaitCase, ...] = (
    *(GaitCase(f"forward_{v:g}", v, 0.0, 0.0) for v in (0.1, 0.15, 0.2, 0.3, 0.4)),
    GaitCase("backward_0.2", -0.2, 0.0, 0.0),
    GaitCase("left_0.15", 0.0, 0.15, 0.0),
    GaitCase("right_0.15", 0.0, -0.15, 0.0),
    GaitCase("stand", 0.0, 0.0, 0.0),
    GaitCase("turn_left_0.5", 0.0, 0.0, 0.5),
    GaitCase("turn_right_0.5", 0.0, 0.0, -0.5),
    GaitCase("turn_left_1.0", 0.0, 0.0, 1.0),
    GaitCase("turn_right_1.0", 0.0, 0.0, -1.0),
    GaitCase("walk_turn_left", 0.15, 0.0, 0.5),
    GaitCase("walk_turn_right", 0.15, 0.0, -0.5),
    GaitCase("push", 0.15, 0.0, 0.0, push_mps=0.3),
)
CASE_BY_NAME: dict[str, GaitCase] = {case.name: case for case in CASES}


def cases_of_mode(cases: tuple[GaitCase, ...], mode: str) -> tuple[GaitCase, ...]:
    """The cases a mode runs: every case steered by heading, the zero-yaw ones open loop."""
    if mode == HEADING_MODE:
        return cases
    if mode == OPEN_LOOP_MODE:
        return tuple(c for c in cases if c.ang_vel_z == 0.0)
    raise ValueError(f"unknown gait-test mode {mode!r}; known: {', '.join(MODES)}")


def steers_heading(case: GaitCase, mode: str) -> bool:
    """True where the heading command sets the yaw rate: zero-yaw cases in heading mode."""
    return mode == HEADING_MODE and case.ang_vel_z == 0.0


def push_sign(robot: int) -> float:
    """Side of the push case's shove: left (+1) for even robot indices, right (-1) for odd."""
    return 1.0 if robot % 2 == 0 else -1.0


# --------------------------------------------------------------------------- trajectories

_HELD_FIELDS = ("x", "y", "z", "heading", "upright", "contact_left", "contact_right")
_STOPPED_FIELDS = ("v_forward", "v_left", "yaw_rate")


@dataclass(frozen=True)
class Trajectory:
    """Samples of R robots, each field of shape ``(steps + 1, R)``; row 0 is the start.

    ``x``, ``y``, ``z``: trunk position, world (m). ``heading``: trunk yaw, world (rad).
    ``v_forward``, ``v_left``: trunk velocity in the heading frame (m/s). ``yaw_rate``: world z
    angular velocity (rad/s). ``upright``: minus the z of gravity in the trunk frame (1 upright).
    ``contact_left/right``: foot on the ground. ``done``: the env ended the episode in the step
    that led to this row (the row then holds the reset state). ``term_mask``: which
    termination terms fired, bit i for ``term_names[i]``.
    """

    dt: float
    x: np.ndarray
    y: np.ndarray
    z: np.ndarray
    heading: np.ndarray
    v_forward: np.ndarray
    v_left: np.ndarray
    yaw_rate: np.ndarray
    upright: np.ndarray
    contact_left: np.ndarray
    contact_right: np.ndarray
    done: np.ndarray
    term_mask: np.ndarray
    term_names: tuple[str, ...] = field(default=())

    @property
    def steps(self) -> int:
        return self.x.shape[0] - 1

    @property
    def robots(self) -> int:
        return self.x.shape[1]


def first_termination(done: np.ndarray) -> np.ndarray:
    """Row of each robot's first termination (row >= 1), or -1 if it never terminated."""
    hit = np.asarray(done, dtype=bool).copy()
    hit[0] = False  # row 0 is the start, before any step
    first = hit.argmax(axis=0)
    return np.where(hit.any(axis=0), first, -1)


def frozen(traj: Trajectory) -> Trajectory:
    """The trajectory with every robot stopped from its first termination on.

    The row of a termination already holds the env's reset state, so from that row on the
    pose, height, upright and contacts hold the last sample before it and the velocities are
    zero: a robot that falls forward and is reset scores only the ground it covered on its feet.
    """
    first = first_termination(traj.done)
    rows = np.arange(traj.steps + 1)[:, None]
    after = (first >= 1)[None, :] & (rows >= first[None, :])
    last = np.clip(first - 1, 0, None)
    changes = {}
    for name in _HELD_FIELDS:
        values = np.array(getattr(traj, name), dtype=float)
        held = values[last, np.arange(traj.robots)]
        changes[name] = np.where(after, held[None, :], values)
    for name in _STOPPED_FIELDS:
        changes[name] = np.where(after, 0.0, np.asarray(getattr(traj, name), dtype=float))
    return replace(traj, **changes)


def _touchdowns(contact: np.ndarray) -> np.ndarray:
    on = np.asarray(contact) > 0.5
    return (on[1:] & ~on[:-1]).sum(axis=0)


def _term_names(mask: int, names: tuple[str, ...]) -> str:
    fired = [name for i, name in enumerate(names) if mask >> i & 1]
    return "+".join(fired) if fired else ("unknown" if mask else "")


def robot_metrics(traj: Trajectory, case: GaitCase) -> pd.DataFrame:
    """One row per robot: progress, heading, yaw, drift, height, feet and termination.

    Means are over the ``steps`` post-step rows (row 0 is the start state); displacements run
    from row 0 to the last row of the frozen trajectory. Ratios to a command that is zero are
    NaN, and so are progress and heading speed of cases without a linear command.
    """
    first = first_termination(traj.done)
    f = frozen(traj)
    duration = traj.steps * traj.dt
    heading0 = f.heading[0]
    direction = heading0 + case.direction_rad
    dx, dy = f.x[-1] - f.x[0], f.y[-1] - f.y[0]
    along = dx * np.cos(direction) + dy * np.sin(direction)
    across = -dx * np.sin(direction) + dy * np.cos(direction)
    displacement = np.hypot(dx, dy)
    linear = case.speed > 0.0
    nan = np.full(traj.robots, np.nan)
    # Velocity along the commanded direction *relative to the current heading*: what a robot
    # that turns as commanded can still deliver (walk-and-turn).
    rel = case.direction_rad
    speed_along = f.v_forward[1:] * math.cos(rel) + f.v_left[1:] * math.sin(rel)
    heading_change = np.unwrap(f.heading, axis=0)
    yaw_rate = f.yaw_rate[1:].mean(axis=0)
    contact_l = np.asarray(f.contact_left[1:]) > 0.5
    contact_r = np.asarray(f.contact_right[1:]) > 0.5
    terminated = first >= 1
    masks = np.asarray(traj.term_mask).astype(np.int64)
    return pd.DataFrame({
        "case": case.name,
        "robot": np.arange(traj.robots),
        "lin_vel_x": case.lin_vel_x,
        "lin_vel_y": case.lin_vel_y,
        "ang_vel_z": case.ang_vel_z,
        "push_mps": case.push_mps,
        "duration_s": duration,
        "progress_m": along if linear else nan,
        "progress_ratio": along / (case.speed * duration) if linear else nan,
        "heading_speed_mps": speed_along.mean(axis=0) if linear else nan,
        "heading_change_rad": heading_change[-1] - heading_change[0],
        "yaw_rate_rad_s": yaw_rate,
        "yaw_ratio": yaw_rate / case.ang_vel_z if case.ang_vel_z else nan,
        "lateral_drift_m": across if linear else displacement,
        "displacement_m": displacement,
        "min_trunk_z_m": f.z.min(axis=0),
        "mean_trunk_z_m": f.z[1:].mean(axis=0),
        "min_upright": f.upright.min(axis=0),
        "contact_left_frac": contact_l.mean(axis=0),
        "contact_right_frac": contact_r.mean(axis=0),
        "both_feet_off_frac": (~contact_l & ~contact_r).mean(axis=0),
        "touchdowns_left_per_s": _touchdowns(f.contact_left) / duration,
        "touchdowns_right_per_s": _touchdowns(f.contact_right) / duration,
        "terminated": terminated,
        "termination_time_s": np.where(terminated, first * traj.dt, np.nan),
        "termination_term": [
            _term_names(int(masks[row, r]), traj.term_names) if row >= 1 else ""
            for r, row in enumerate(first)
        ],
    })  # fmt: skip


def path_in_start_frame(traj: Trajectory, every: int = 5) -> pd.DataFrame:
    """Each robot's frozen planar path relative to its start pose, every ``every``-th row.

    ``forward_m`` runs along the start heading, ``left_m`` to its left; the last row is always
    included so a path ends where the metrics measured it.
    """
    f = frozen(traj)
    rows = np.unique(np.r_[np.arange(0, traj.steps + 1, every), traj.steps])
    dx, dy = f.x[rows] - f.x[0], f.y[rows] - f.y[0]
    cos, sin = np.cos(f.heading[0]), np.sin(f.heading[0])
    n = len(rows)
    return pd.DataFrame({
        "robot": np.repeat(np.arange(traj.robots), n),
        "step": np.tile(rows, traj.robots),
        "t_s": np.tile(rows * traj.dt, traj.robots),
        "forward_m": (dx * cos + dy * sin).T.ravel(),
        "left_m": (-dx * sin + dy * cos).T.ravel(),
    })  # fmt: skip


# --------------------------------------------------------------------------- verdict


@dataclass
class GaitVerdict:
    """``passed`` only with no failure; ``failures`` one line each; ``table`` one row per case."""

    passed: bool
    failures: list[str]
    table: pd.DataFrame


def case_of_rows(rows: pd.DataFrame) -> GaitCase:
    """The case a group of ``robots`` rows was run with, rebuilt from its command columns."""
    first = rows.iloc[0]
    return GaitCase(
        str(first["case"]),
        float(first["lin_vel_x"]),
        float(first["lin_vel_y"]),
        float(first["ang_vel_z"]),
        float(first["push_mps"]),
    )


def _groups(robots: pd.DataFrame):
    """``(case name, seed, rows)`` seed by seed, cases in :data:`CASES` order (others last)."""
    known = [c.name for c in CASES if c.name in set(robots["case"])]
    order = known + [c for c in dict.fromkeys(robots["case"]) if c not in known]
    by_key = dict(iter(robots.groupby(["case", "seed"], sort=False)))
    for seed in sorted(robots["seed"].unique()):
        for name in order:
            if (name, seed) in by_key:
                yield name, seed, by_key[(name, seed)]


def case_summary(robots: pd.DataFrame) -> pd.DataFrame:
    """Per case and seed: the means (and extremes) the rule looks at, one row each."""
    rows = []
    for name, seed, group in _groups(robots):
        case = case_of_rows(group)
        speed = group["heading_speed_mps"].mean()
        rows.append({
            "case": name,
            "label": case.label,
            "kind": case.kind,
            "seed": seed,
            "robots": len(group),
            "mean_progress_ratio": group["progress_ratio"].mean(),
            "min_progress_ratio": group["progress_ratio"].min(),
            "mean_heading_speed_mps": speed,
            "heading_speed_ratio": speed / case.speed if case.speed else np.nan,
            "mean_yaw_ratio": group["yaw_ratio"].mean(),
            "max_abs_heading_change_rad": group["heading_change_rad"].abs().max(),
            "max_displacement_m": group["displacement_m"].max(),
            "mean_lateral_drift_m": group["lateral_drift_m"].mean(),
            "min_trunk_z_m": group["min_trunk_z_m"].min(),
            "contact_left_frac": group["contact_left_frac"].mean(),
            "contact_right_frac": group["contact_right_frac"].mean(),
            "both_feet_off_frac": group["both_feet_off_frac"].mean(),
            "touchdowns_per_s": (
                group["touchdowns_left_per_s"] + group["touchdowns_right_per_s"]
            ).mean(),
            "terminations": int(group["terminated"].astype(bool).sum()),
        })  # fmt: skip
    return pd.DataFrame(rows)


def _worst(group: pd.DataFrame, column: str, largest: bool) -> pd.Series:
    values = group[column].abs() if column == "heading_change_rad" else group[column]
    # NaN (a broken measurement) counts as the worst value, never as a pass.
    values = values.fillna(np.inf if largest else -np.inf)
    return group.loc[values.idxmax() if largest else values.idxmin()]


def _case_failures(seed, case: GaitCase, group: pd.DataFrame) -> list[str]:
    """Every condition ``case`` fails for one seed's robots, one line each.

    Comparisons are written ``not value >= limit`` so that a NaN fails.
    """
    where = f"seed {seed}, {case.label}"
    out = []
    if case.kind == "linear":
        mean = group["progress_ratio"].mean()
        if not mean >= MIN_PROGRESS_RATIO_MEAN - _EPS:
            out.append(
                f"{where}: mean progress {mean:.2f} × command < {MIN_PROGRESS_RATIO_MEAN:.2f}"
            )
        worst = _worst(group, "progress_ratio", largest=False)
        if not worst["progress_ratio"] >= MIN_PROGRESS_RATIO_ROBOT - _EPS:
            out.append(
                f"{where}: robot {worst['robot']} progress {worst['progress_ratio']:.2f} × "
                f"command < {MIN_PROGRESS_RATIO_ROBOT:.2f}"
            )
    if case.kind == "walk_turn":
        speed = group["heading_speed_mps"].mean()
        if not speed >= MIN_HEADING_SPEED_RATIO * case.speed - _EPS:
            out.append(
                f"{where}: mean heading-frame speed {speed:.3f} m/s = {speed / case.speed:.2f} × "
                f"command < {MIN_HEADING_SPEED_RATIO:.2f}"
            )
    if case.kind in ("walk_turn", "turn"):
        ratio = group["yaw_ratio"].mean()
        if not ratio >= MIN_YAW_RATIO - _EPS:
            out.append(f"{where}: mean yaw rate {ratio:.2f} × command < {MIN_YAW_RATIO:.2f}")
    if case.ang_vel_z == 0.0:
        worst = _worst(group, "heading_change_rad", largest=True)
        if not abs(worst["heading_change_rad"]) <= MAX_HEADING_CHANGE_RAD + _EPS:
            out.append(
                f"{where}: robot {worst['robot']} heading change "
                f"{worst['heading_change_rad']:+.2f} rad, |change| > {MAX_HEADING_CHANGE_RAD:.2f}"
            )
    if case.kind == "stand":
        worst = _worst(group, "displacement_m", largest=True)
        if not worst["displacement_m"] <= MAX_STAND_DISPLACEMENT_M + _EPS:
            out.append(
                f"{where}: robot {worst['robot']} moved {worst['displacement_m']:.3f} m "
                f"> {MAX_STAND_DISPLACEMENT_M:.3f}"
            )
    ended = group[group["terminated"].astype(bool)]
    if len(ended):
        first = ended.sort_values("termination_time_s").iloc[0]
        term = first["termination_term"] if isinstance(first["termination_term"], str) else ""
        out.append(
            f"{where}: {len(ended)} of {len(group)} robots terminated (first: robot "
            f"{first['robot']}, {term or 'unknown'} at {first['termination_time_s']:.2f} s) > 0"
        )
    return out


def verdict_rows(robots: pd.DataFrame) -> pd.DataFrame:
    """The rows the pass rule judges: heading mode where a ``mode`` column says which mode each
    row ran in; all rows of a table without one (every case then held its yaw-rate command)."""
    if "mode" not in robots.columns:
        return robots
    return robots[robots["mode"] == HEADING_MODE]


def open_loop_drift(robots: pd.DataFrame) -> pd.DataFrame:
    """Per case run open loop: the median and worst robot's |heading change| over every seed,
    and whether each is within its limit. Not part of the verdict; empty without such rows."""
    columns = ["case", "label", "robots", "median_abs_heading_change_rad",
               "max_abs_heading_change_rad", "median_within", "worst_within"]  # fmt: skip
    if "mode" not in robots.columns:
        return pd.DataFrame(columns=columns)
    rows = []
    open_loop = robots[robots["mode"] == OPEN_LOOP_MODE]
    for name, group in open_loop.groupby("case", sort=False):
        change = group["heading_change_rad"].abs().fillna(np.inf)
        median, worst = float(change.median()), float(change.max())
        rows.append({
            "case": name,
            "label": case_of_rows(group).label,
            "robots": len(group),
            "median_abs_heading_change_rad": median,
            "max_abs_heading_change_rad": worst,
            "median_within": median <= OPEN_LOOP_MAX_MEDIAN_HEADING_CHANGE_RAD + _EPS,
            "worst_within": worst <= OPEN_LOOP_MAX_WORST_HEADING_CHANGE_RAD + _EPS,
        })  # fmt: skip
    order = {c.name: i for i, c in enumerate(CASES)}
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values("case", key=lambda s: s.map(order)).reset_index(drop=True)


def verdict(robots: pd.DataFrame) -> GaitVerdict:
    """Apply the pass rule to every seed and case of ``robots`` (rows of :func:`robot_metrics`
    with a ``seed`` column; of heading mode only, see :func:`verdict_rows`). The table has one
    row per case: each number is the value of its worst seed, ``terminations`` the total over
    seeds."""
    robots = verdict_rows(robots)
    if robots.empty:
        raise ValueError("the gait verdict needs at least one robot")
    failures: list[str] = []
    failed: dict[str, int] = {}
    for name, seed, group in _groups(robots):
        lines = _case_failures(seed, case_of_rows(group), group)
        failures.extend(lines)
        failed[name] = failed.get(name, 0) + len(lines)
    rows = []
    for name, group in case_summary(robots).groupby("case", sort=False):
        rows.append({
            "case": name,
            "label": group["label"].iloc[0],
            "passed": failed[name] == 0,
            "failed_conditions": failed[name],
            "seeds": len(group),
            "mean_progress_ratio": group["mean_progress_ratio"].min(),
            "min_progress_ratio": group["min_progress_ratio"].min(),
            "heading_speed_ratio": group["heading_speed_ratio"].min(),
            "mean_yaw_ratio": group["mean_yaw_ratio"].min(),
            "max_abs_heading_change_rad": group["max_abs_heading_change_rad"].max(),
            "max_displacement_m": group["max_displacement_m"].max(),
            "terminations": int(group["terminations"].sum()),
        })  # fmt: skip
    return GaitVerdict(passed=not failures, failures=failures, table=pd.DataFrame(rows))
