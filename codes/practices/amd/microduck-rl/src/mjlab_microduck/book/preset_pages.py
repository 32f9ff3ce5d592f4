"""The presets chapter 4 compares: what each changed and what it taught (one compact table).

Problem it solves: chapter 4 teaches the recipe that works and lists the presets tried on the
way in one table: the preset each was built on, what it changed (read from the tuning
dataclasses, so the table cannot drift from the code) and its outcome (read from the recorded
replays, or, for the recipes trained at scale, from their gait tests). It also holds the two
small helpers the chapter's prose needs: whether a gait-test command lies inside a preset's
command ranges, and the share of a Gaussian tracking kernel's reward a given error earns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pandas as pd

from mjlab_microduck.analysis import acceptance
from mjlab_microduck.book import walker_recipes, walker_results
from mjlab_microduck.tasks import tuning

BUILT_ON: dict[str, tuning.VelocityTuning | None] = {
    "upstream": None, "book": tuning.UPSTREAM, "gait_slow": tuning.BOOK,
    "stepping": tuning.BOOK, "forward_tracking": tuning.STEPPING,
    "forward_tracking_low_air": tuning.FORWARD_TRACKING,
    "walker": tuning.FORWARD_TRACKING, "walker_narrow": tuning.WALKER,
    "walker_heading": tuning.WALKER, "walker_turning": tuning.WALKER_HEADING,
    "walker_turning_short": tuning.WALKER_TURNING, "walker_turning_axes": tuning.WALKER_TURNING,
    "walker_turning_axes_more_updates": tuning.WALKER_TURNING_AXES,
    "walker_turning_axes_wide_kl": tuning.WALKER_TURNING_AXES,
    "walker_turning_axes_fine_yaw": tuning.WALKER_TURNING_AXES,
    "walker_turning_axes_fine_tracking": tuning.WALKER_TURNING_AXES_FINE_YAW,
    "walker_turning_axes_fast_start": tuning.WALKER_TURNING_AXES,
    "walker_turning_axes_fast_start_standing": tuning.WALKER_TURNING_AXES_FAST_START,
    "walker_turning_axes_fast_start_fine_planar": tuning.WALKER_TURNING_AXES_FAST_START_STANDING,
    "walker_turning_axes_straight_start": tuning.WALKER_TURNING_AXES_FAST_START_FINE_PLANAR,
    "walker_turning_axes_straight_start_fine_yaw": tuning.WALKER_TURNING_AXES_STRAIGHT_START,
}  # fmt: skip
"""The preset each one was derived from (None: the upstream figures); the registered levers not
trained yet too, so that their row reads the same once they are."""
LABELS = {
    "lin_vel_std_m_s": ("tracking std", "m/s"),
    "init_action_std_rad": ("initial action std", "rad"),
    "air_time_min_s": ("air time paid from", "s"),
    "single_stance_weight": ("single_stance weight", ""),
    "gait_period_s": ("gait clock", "s"), "gait_weight": ("gait reward weight", ""),
    "ang_vel_std_rad_s": ("yaw-rate std", "rad/s"), "tracking_weight": ("tracking weight", ""),
    "air_time_weight": ("air-time weight", ""),
    "steps_per_env": ("rollout per env and iteration", "steps"),
    "num_mini_batches": ("PPO mini-batches per epoch", ""),
    "desired_kl": ("PPO KL target per update", ""),
}  # fmt: skip
"""How a changed numeric field reads in the table: its label and unit."""
TABLE_PRESETS = (tuning.UPSTREAM, tuning.BOOK, tuning.GAIT_SLOW, tuning.STEPPING,
                 tuning.FORWARD_TRACKING, tuning.FORWARD_TRACKING_LOW_AIR, tuning.WALKER,
                 tuning.WALKER_NARROW, tuning.WALKER_HEADING, tuning.WALKER_TURNING,
                 tuning.WALKER_TURNING_SHORT, tuning.WALKER_TURNING_AXES,
                 tuning.WALKER_TURNING_AXES_MORE_UPDATES,
                 tuning.WALKER_TURNING_AXES_WIDE_KL,
                 tuning.WALKER_TURNING_AXES_FINE_YAW,
                 tuning.WALKER_TURNING_AXES_FAST_START,
                 tuning.WALKER_TURNING_AXES_FAST_START_STANDING,
                 tuning.WALKER_TURNING_AXES_FAST_START_FINE_PLANAR,
                 tuning.WALKER_TURNING_AXES_STRAIGHT_START,
                 tuning.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW)  # fmt: skip
ENV_COUNT_LEVERS = {
    walker_recipes.WALKER_TURNING_AXES_8192.name: (
        walker_recipes.WALKER_TURNING_AXES_8192, walker_recipes.WALKER_TURNING_AXES)
}  # fmt: skip
"""Levers that change only the envs per training of a recipe at scale: name -> (that recipe,
the recipe it trains again); each has a row under the preset both train."""
LEVERS = tuple(recipe.name for recipe in walker_results.LEVER_RECIPES)
"""Levers tried on the heading recipe (``WALKER_HEADING``; ``walker_results.LEVER_RECIPES``):
their rows need their runs (``preset_table``; ``walker_results.lever_runs`` gives them)."""
STANDS_BELOW_M = 0.05
"""A preset whose largest 4 s displacement stays below this "stands"."""


def command_text(c: tuning.CommandRanges) -> str:
    """Command ranges in one short line: ``x lo…hi, y ±y, yaw ±yaw``."""
    return (
        f"x {c.lin_vel_x_m_s[0]:g}…{c.lin_vel_x_m_s[1]:g}, y ±{c.lin_vel_y_m_s[1]:g}, "
        f"yaw ±{c.ang_vel_z_rad_s[1]:g}"
    )


def value_text(name: str, value: Any) -> str:
    """One tuning field's value as the table shows it."""
    if name == "commands":
        return command_text(value)
    if name == "action_rate_stages":
        return " → ".join(f"{st.weight:g} @ {st.iteration}" for st in value)
    if value is None:
        return "none"
    return f"{value:.3g}"


CHANGE_TEXTS: dict[str, Callable[[Any, Any], str]] = {
    "mirror_symmetry": lambda old, new: "left–right symmetry augmentation",
    "standing_stages": lambda old, new: (
        f"standing envs {old[0].fraction:.0%} → {new[0].fraction:.0%} from the start"),
    "heading": lambda old, new: (
        f"mjlab's heading command in {new.envs_fraction:.0%} of the envs "
        f"(stiffness {new.control_stiffness:g})"),
    "turn_in_place": lambda old, new: (
        f"turn-in-place envs: {new.envs_fraction:.0%} of the draws that are not "
        f"standing, yaw rate at least {new.min_turn_rate_rad_s:g} rad/s"),
    "single_axis": lambda old, new: (
        f"single-axis envs: {new.envs_fraction:.0%} of the draws that neither stand "
        f"nor turn in place walk along x or y only, at least {new.min_speed_m_s:g} m/s"),
    "fast_start": lambda old, new: (
        "fast starts drawn only among the draws that do not stand"
        if old is not None and replace(old, spares_standing=True) == new else
        f"starts from {new.min_speed_m_s:g} m/s up instead of {old.min_speed_m_s:g}"
        if old is not None and replace(old, min_speed_m_s=new.min_speed_m_s) == new else
        f"fast starts: {new.envs_fraction:.0%} of the commands drawn at a reset"
        + (" that do not stand" if new.spares_standing else "")
        + f" walk straight forward at least {new.min_speed_m_s:g} m/s, heading held"),
    "fine_yaw": lambda old, new: (
        f"a narrow yaw-rate term beside the wide one: std {new.std_rad_s:g} rad/s, "
        f"weight {new.weight:g}"),
    "fine_planar": lambda old, new: (
        f"a narrow planar-velocity term beside the wide one: std {new.std_m_s:g} m/s, "
        f"weight {new.weight:g}"),
    "commands": lambda old, new: f"commands {command_text(new)} (was {command_text(old)})",
    "action_rate_stages": lambda old, new: (
        f"action-rate ramp {value_text('action_rate_stages', new)}"),
}  # fmt: skip
"""How a changed tuning field reads in the table, from its old and new value; a field not
listed reads ``<label> old → new <unit>`` (``LABELS``)."""


def changes(preset: tuning.VelocityTuning) -> str:
    """What ``preset`` changed against the preset it was built on, field by field."""
    parent = BUILT_ON[preset.name]
    if parent is None:
        return "the upstream figures"
    out = []
    for f in fields(preset):
        old, new = getattr(parent, f.name), getattr(preset, f.name)
        if f.name == "name" or old == new:
            continue
        if f.name in CHANGE_TEXTS:
            out.append(CHANGE_TEXTS[f.name](old, new))
        else:
            label, unit = LABELS[f.name]
            out.append(
                f"{label} {value_text(f.name, old)} → {value_text(f.name, new)} {unit}".strip()
            )
    return "; ".join(out)


def outcome_text(
    outcomes: pd.DataFrame, name: str, command_mps: float = acceptance.PROTOCOL_LIN_VEL_X
) -> str:
    """A replayed preset's outcome from :func:`acceptance.preset_outcomes`' row ``name``."""
    row = outcomes.loc[name]
    n, stable = row["checkpoints replayed"], row["stable"]
    falls = f" ({n - stable} of {n} replays ends in a fall)" if stable < n else ""
    speed = row["best mean forward velocity (m/s)"]
    if abs(row["largest 4 s displacement (m)"]) < STANDS_BELOW_M:
        return (
            f"stands: no checkpoint moves more than "
            f"{abs(row['largest 4 s displacement (m)']):.3f} m in 4 s{falls}"
        )
    if row["walks"] != "yes":
        return (
            f"steps, but at most {speed:.3f} m/s under {command_mps:g} m/s, short of the "
            f"walking rule (chapter 6){falls}"
        )
    return (
        f"walks forward at {speed:.3f} m/s under {command_mps:g} m/s for 4 s "
        f"({row['best checkpoint']}), but in circles (chapter 6): the original recipe's "
        "preset"
    )


def scale_outcomes(
    n_walker_seeds: int, n_narrow_seeds: int, walker_record: dict | None = None
) -> dict[str, str]:
    """The outcomes of the recipes trained at scale, judged by their gait tests
    (``walker_record``: WALKER_HEADING's summary, ``walker_results.walker_heading_summary``)."""
    outcomes = {
        "walker": (
            f"the closest to walking: turns on command and walks forward and backward "
            f"within minutes, but no checkpoint of its {n_walker_seeds} seeds passes "
            f"the gait test (chapter 5)"
        ),
        "walker_narrow": (
            f"stands still, but never learns to turn; no checkpoint of its "
            f"{n_narrow_seeds} seeds passes the gait test (below the table)"
        ),
    }
    if walker_record is not None:
        # the seeds' first passing checkpoint: h200_walker_heading_main_s42/model_900
        stage, first = walker_record["side_by_side"]["first_passing"].split("/")
        outcomes["walker_heading"] = (
            f"walks: {walker_record['seeds_passing']} of its {len(walker_record['seeds'])} "
            f"seeds pass the whole gait test, the first at {first} of seed "
            f"{stage.rsplit('_s', 1)[1]} (next section)"
        )
        alone = walker_record.get("alone")
        if alone is not None:
            again = f"; trained again alone, seed {alone['seed']} "
            outcomes["walker_heading"] += again + (
                f"from {alone['first_passing'].rsplit('/', 1)[1]} "
                f"({alone['time_to_walk_s'] / 60.0:.1f} min)"
                if alone["first_passing"] else f"passes no checkpoint by {alone['last_tested']}"
            )  # fmt: skip
    return outcomes


def lever_outcome(runs: Sequence[Any], alone: Sequence[Any] = ()) -> str:
    """The outcome of a lever tried on the heading recipe (``WALKER_HEADING``): in how many of
    its seeds (each a :class:`~mjlab_microduck.book.walker_results.SeedRun`) a checkpoint passes
    the gait test by the last one tested, the first to pass and, for ``alone`` (a seed trained
    again alone on the GPU), the first to pass there. The first is the one reached soonest; for
    a recipe published by its gait tests alone (no training clock) it is the earliest
    iteration."""
    first = walker_results.first_passing
    last = max(int(run.progress()["iteration"].max()) for run in runs)
    recipe = runs[0].recipe
    at = f" ({recipe.num_envs} envs each, on one {recipe.machine.upper()})"
    hits = {run.seed: hit for run in runs if (hit := first(run)) is not None}
    if not hits:
        closest = min(
            (int(row["failed_conditions"]), int(row["iteration"]), run.seed)
            for run in runs
            for _, row in run.progress().iterrows()
        )
        return (
            f"no checkpoint of its {len(runs)} seeds{at} passes the gait test by model_{last}; "
            f"the closest, seed {closest[2]}'s model_{closest[1]}, fails {closest[0]} "
            + ("condition" if closest[0] == 1 else "conditions")
        )
    timed = all(math.isfinite(minutes) for _, minutes in hits.values())
    seed, (iteration, minutes) = min(hits.items(), key=lambda item: item[1][1 if timed else 0])
    when = f"{minutes:.1f} min, " if timed else ""
    text = (
        f"passes in {len(hits)} of its {len(runs)} seeds{at} by model_{last}: seed {seed} from "
        f"model_{iteration} ({when}{len(runs)} trainings sharing the GPU"
        + ("" if timed else "; published by its gait tests alone") + ")"
    )
    for run in alone:
        hit = first(run)
        tested = int(run.progress()["iteration"].max())
        text += (
            f"; trained again alone, seed {run.seed} "
            + (f"from model_{hit[0]} ({hit[1]:.1f} min)" if hit
               else f"passes no checkpoint by model_{tested}")
        )  # fmt: skip
    return text


def preset_table(
    walker_runs: Sequence[Any],
    narrow_runs: Sequence[Any],
    results_root: str | Path | None = None,
    walker_record: dict | None = None,
    levers: Mapping[str, tuple[Sequence[Any], Sequence[Any]]] | None = None,
) -> pd.DataFrame:
    """One row per preset tried: built on, what it changed, and its outcome (the heading recipe,
    ``WALKER_HEADING``, from ``walker_record``, ``walker_results.walker_heading_summary()``; its
    row is left out without one). ``levers`` maps a lever's preset name (:data:`LEVERS`) to its
    seed runs and its seeds trained again alone (:func:`lever_outcome`); a lever's row is left
    out without them."""
    if results_root is None:
        from mjlab_microduck.book import results

        results_root = results.results_root()
    outcomes = acceptance.preset_outcomes(results_root)
    at_scale = scale_outcomes(len(walker_runs), len(narrow_runs), walker_record)
    for name, (runs, alone) in (levers or {}).items():
        if name not in LEVERS:
            raise ValueError(f"{name!r} is not a lever of the table (one of {LEVERS})")
        at_scale[name] = lever_outcome(runs, alone)
    rows = []
    for p in TABLE_PRESETS:
        if p.name not in at_scale and p.name in ("walker_heading", *LEVERS):
            continue
        parent = BUILT_ON[p.name]
        rows.append(
            {
                "preset": p.name.upper(),
                "built on": parent.name.upper() if parent else "",
                "what it changed": changes(p),
                "outcome": at_scale.get(p.name) or outcome_text(outcomes, p.name),
            }
        )
        for name, (lever, base) in ENV_COUNT_LEVERS.items():
            if base.name == p.name and name in at_scale:
                rows.append({
                    "preset": f"{p.name.upper()} × {lever.num_envs} envs",
                    "built on": p.name.upper(),
                    "what it changed": f"{lever.num_envs} envs per training instead of "
                    f"{base.num_envs}",
                    "outcome": at_scale[name],
                })  # fmt: skip
    return pd.DataFrame(rows).set_index("preset")


def inside(command: Any, ranges: tuning.CommandRanges, eps: float = 1e-9) -> bool:
    """Whether a command (``lin_vel_x``, ``lin_vel_y``, ``ang_vel_z``) lies in ``ranges``."""
    return (
        ranges.lin_vel_x_m_s[0] - eps <= command.lin_vel_x <= ranges.lin_vel_x_m_s[1] + eps
        and abs(command.lin_vel_y) <= ranges.lin_vel_y_m_s[1] + eps
        and abs(command.ang_vel_z) <= ranges.ang_vel_z_rad_s[1] + eps
    )


def kernel_share(error: float, std: float) -> float:
    """Share of a tracking term's reward earned with this error: ``exp(-error^2 / std^2)``."""
    return math.exp(-(error**2) / std**2)


def candidate_table(results_root: str | Path) -> pd.DataFrame:
    """The presets registered as candidates (``tuning.CANDIDATE_PRESETS``): their tracking
    kernels and weight at the start, what sharpens them (the iteration from which
    ``kernel_stages`` narrows the kernels, and to what; the std and weight of a narrow yaw-rate
    or planar-velocity term added beside the wide one; NaN where a preset has none), and
    whether a run published in ``results_root`` trained them (a training run's tuning, or the
    preset's own task in a gait test of a recipe published by its gait tests alone)."""
    from mjlab_microduck.runs import records

    published = [rec.config for _, rec in records.find_records(results_root)]
    trained = {config.get("tuning", {}).get("name") for config in published}
    tasks = {str(config.get("task", "")) for config in published}
    for task in tasks:
        try:
            trained.add(tuning.preset_of_task(task).name)
        except KeyError:  # the default task, or another package's
            continue
    nan = math.nan
    rows = {}
    for p in tuning.CANDIDATE_PRESETS:
        # Every candidate narrows its kernels at most once; a second stage would need columns.
        stage = p.kernel_stages[0] if p.kernel_stages else None
        rows[p.name] = {
            "tracking std (m/s)": p.lin_vel_std_m_s,
            "yaw-rate std (rad/s)": round(p.ang_vel_std_rad_s, 2),
            "tracking weight": p.tracking_weight,
            "narrowed from iteration": stage.iteration if stage else nan,
            "narrowed tracking std (m/s)": stage.lin_vel_std_m_s if stage else nan,
            "narrowed yaw-rate std (rad/s)": round(stage.ang_vel_std_rad_s, 2) if stage else nan,
            "narrow yaw-rate term std (rad/s)": p.fine_yaw.std_rad_s if p.fine_yaw else nan,
            "narrow yaw-rate term weight": p.fine_yaw.weight if p.fine_yaw else nan,
            "narrow planar term std (m/s)": p.fine_planar.std_m_s if p.fine_planar else nan,
            "narrow planar term weight": p.fine_planar.weight if p.fine_planar else nan,
            "trained": p.name in trained,
        }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame["narrowed from iteration"] = frame["narrowed from iteration"].astype("Int64")
    frame.index.name = "preset"
    return frame
