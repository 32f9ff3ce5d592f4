"""What chapters 3 and 4 read off training runs and their task, as values for tables.

Problem it solves: chapter 4 explains survival, exploration and the termination guards from
the recorded curves; the figures it points at (when the episode length passes a level, how far
``fell_over`` falls, what ``legs_collapsed`` settles at) are computed here once and shown in
one table with the run's source (:func:`mjlab_microduck.book.tables.run_facts`), instead of
being glued into sentences one by one. Chapter 3 explains why a random policy falls from the
task a smoke run trains (:func:`random_policy_figures`) and from what its runs logged
(:func:`random_policy_table`, rows named by :func:`label_with_action_std`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from mjlab_microduck.book.results import term_text

LENGTH = "Train/mean_episode_length"
TERMINATION = "Episode_Termination/{}"
REWARD = "Train/mean_reward"
REWARD_TERM = "Episode_Reward/"
STD = "Policy/mean_std"


def first_iteration_above(series: pd.Series, level: float) -> int | None:
    """The first iteration (index) at which ``series`` exceeds ``level``; None if it never does."""
    above = series[series > level]
    return None if above.empty else int(above.index[0])


def curve_facts(scalars: pd.DataFrame, summary: Mapping[str, Any]) -> dict[str, Any]:
    """The figures chapter 4 reads off a training run: survival (the episode length passing
    100 and 500 control steps, ``fell_over`` from its peak to the last iteration,
    ``legs_collapsed`` at the median of the last four fifths and at the end), exploration
    (``Policy/mean_std`` first and last), numerical health and the sinking guard (how often
    ``nan_state`` and ``below_ground`` fired), and the throughput (last, best, median)."""
    fell = scalars[TERMINATION.format("fell_over")]
    collapsed = scalars[TERMINATION.format("legs_collapsed")]
    std = scalars["Policy/mean_std"]
    fps = scalars["Perf/total_fps"]
    return {
        "mean episode length first > 100 steps": first_iteration_above(scalars[LENGTH], 100),
        "mean episode length first > 500 steps": first_iteration_above(scalars[LENGTH], 500),
        "fell_over per reset: peak → last": f"{fell.max():.2f} → {fell.iloc[-1]:.2f}",
        "legs_collapsed per reset: median of the last 4/5 → last": (
            f"{collapsed.iloc[len(collapsed) // 5:].median():.2f} → {collapsed.iloc[-1]:.2f}"
        ),
        "Policy/mean_std: first → last": f"{std.iloc[0]:.2f} → {std.iloc[-1]:.2f}",
        "nan_state": term_text(summary, "nan_state"),
        "below_ground": term_text(summary, "below_ground"),
        "env steps/s: last, best, median": (
            f"{fps.iloc[-1]:,.0f}, {fps.max():,.0f}, {fps.median():,.0f}"
        ),
    }


def standing_share(command_mps: float, std_mps: float) -> float:
    """The share of a Gaussian tracking term ``exp(-error² / std²)`` that a robot standing
    still earns under a forward command of ``command_mps``."""
    return math.exp(-(command_mps**2) / std_mps**2)


def random_policy_figures(task_id: str) -> pd.Series:
    """What an untrained policy of ``task_id`` is up against, from the task as mjlab registered
    it: its tuning preset, the policy's initial action std, the action scale, the control rate,
    the ``fell_over`` limit and the episode limit."""
    from mjlab_microduck.tasks.registry import load_env_cfg, load_rl_cfg
    from mjlab_microduck.tasks.velocity import FELL_OVER_LIMIT_DEG, TUNING_OF_TASK

    env_cfg = load_env_cfg(task_id)
    control_dt = env_cfg.decimation * env_cfg.sim.mujoco.timestep
    return pd.Series({
        "tuning preset": TUNING_OF_TASK[task_id].name.upper(),
        "initial action std (policy)": load_rl_cfg(task_id).actor.distribution_cfg["init_std"],
        "action scale (rad per unit action)": env_cfg.actions["joint_pos"].scale,
        "control rate (Hz)": round(1 / control_dt, 6),
        "fell_over limit (degrees of tilt)": FELL_OVER_LIMIT_DEG,
        "episode limit (s)": env_cfg.episode_length_s,
    }, name=task_id)  # fmt: skip


def random_policy_row(scalars: pd.DataFrame, control_dt_s: float) -> dict[str, Any]:
    """One run's early iterations: its policy's action std at the first iteration, the mean
    episode length and reward of the last, and that iteration's reward terms (each an episode
    sum per second of episode limit) split into what the positive terms pay and what the
    penalties take, with the largest penalty by name."""
    last = scalars.iloc[-1]
    terms = last[[c for c in scalars.columns if c.startswith(REWARD_TERM)]].astype(float)
    penalties = terms[terms < 0]
    return {
        "action std (first iteration)": round(float(scalars[STD].iloc[0]), 2),
        "episode length (last, steps)": round(float(last[LENGTH]), 1),
        "episode length (last, s)": round(float(last[LENGTH]) * control_dt_s, 2),
        "mean reward (last)": round(float(last[REWARD]), 2),
        "positive terms (last, per s of episode limit)": round(float(terms[terms > 0].sum()), 3),
        "penalties (last, per s of episode limit)": round(float(penalties.sum()), 3),
        "largest penalty (last)": (
            penalties.idxmin().removeprefix(REWARD_TERM) if len(penalties) else None
        ),
    }


def random_policy_table(runs: Mapping[str, pd.DataFrame], control_dt_s: float) -> pd.DataFrame:
    """:func:`random_policy_row` for each run's scalars, one row per label."""
    frame = pd.DataFrame.from_dict(
        {label: random_policy_row(scalars, control_dt_s) for label, scalars in runs.items()},
        orient="index",
    )
    frame.index.name = "run"
    return frame


def label_with_action_std(label: str, scalars: pd.DataFrame) -> str:
    """``label`` with the action std the run's policy started at (``Policy/mean_std`` of its
    first iteration, one decimal) inside its closing parenthesis, or in a new one:
    ``recorded 64x5 (H200, full)`` becomes ``recorded 64x5 (H200, full, action std 1.0)``. Runs
    of tasks whose action noise differs then say so in their row names."""
    std = f"action std {float(scalars[STD].iloc[0]):.1f}"
    if label.endswith(")"):
        return f"{label[:-1]}, {std})"
    return f"{label} ({std})"


def reward_sign(rewards: pd.Series) -> str:
    """How a run's mean reward reads over its iterations, for a sentence: ``positive in every
    iteration``, ``negative in every iteration`` or ``of both signs``."""
    if (rewards > 0).all():
        return "positive in every iteration"
    if (rewards < 0).all():
        return "negative in every iteration"
    return "of both signs"
