"""Does the policy follow its command, or walk one gait whatever it is told?

Problem it solves: the acceptance replay uses one command (0.15 m/s forward). A policy that has
learned a single gait, stepping forward at a fixed pace, passes or fails that replay by where
its pace happens to sit, and the protocol cannot tell it from a policy that tracks the command.
Replaying the same checkpoint under several forward commands can: a tracking policy's speed
rises with the command (slope near 1), a fixed gait's stays flat (slope near 0), and a fixed
gait also walks off when it is told to stand.

``sweep`` runs the package's replay (same play environment, seed and frames, no video) once per
command; ``response_slope`` is the least-squares slope of the measured forward velocity against
the command. Nothing here is GPU-specific; on a CPU each 4 s replay takes seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mjlab_microduck.jobs import replay

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SWEEP_COMMANDS_MPS = (0.0, 0.1, 0.15, 0.2, 0.3, 0.4)
"""Forward commands of the sweep: standing, the protocol's 0.15 m/s, up to the task's limit."""

FOLLOWS_COMMAND_SLOPE = 0.5
"""A policy follows its command when its speed rises by at least half of what the command does."""


def sweep(
    request: replay.ReplayRequest,
    commands: Sequence[float] = SWEEP_COMMANDS_MPS,
    progress: bool = True,
) -> pd.DataFrame:
    """One replay of ``request``'s checkpoint per forward command; one row of metrics each.

    Lateral and yaw commands stay as the request has them (zero in the protocol); video is off.
    """
    from tqdm.auto import tqdm

    if not commands:
        raise replay.ReplayError("command sweep needs at least one command")
    rows = []
    for command in tqdm(commands, desc="commands", disable=not progress):
        one = replace(request, lin_vel_x=float(command), video=False, gif=False)
        trajectory, _, dt = replay.simulate(one, progress=False)
        metrics = replay.compute_metrics(trajectory, (one.lin_vel_x, one.lin_vel_y), dt)
        drift = replay.drift_metrics(trajectory)
        rows.append(
            {
                "command_mps": float(command),
                **asdict(metrics),
                "heading_change_rad": drift["heading_change_rad"],
            }
        )
    return pd.DataFrame(rows)


def response_slope(swept: pd.DataFrame) -> float:
    """Least-squares slope of mean forward velocity against the forward command."""
    if swept["command_mps"].nunique() < 2:
        raise ValueError("a response slope needs at least two different commands")
    slope, _ = np.polyfit(swept["command_mps"], swept["mean_forward_velocity_mps"], 1)
    return float(slope)


def follows_command(swept: pd.DataFrame) -> bool:
    """The sweep's rule: no termination under any command and a slope of at least
    :data:`FOLLOWS_COMMAND_SLOPE`."""
    return bool((swept["done_count"] == 0).all()) and (
        response_slope(swept) >= FOLLOWS_COMMAND_SLOPE
    )


STILL_MPS = 0.01
"""Under this mean forward speed a policy counts as standing (4 s of 0.01 m/s is 4 cm)."""


def verdict_sentence(swept: pd.DataFrame) -> str:
    """The sweep's outcome for the page: the rule's verdict and what the speeds show.

    A policy that passes may still stand under small commands (it reaches half the command only
    from some speed on); one that fails is told why: terminations, walking off when told to
    stand, a flat response (one gait), or a rise too shallow.
    """
    slope = response_slope(swept)
    speed = dict(zip(swept["command_mps"], swept["mean_forward_velocity_mps"], strict=True))
    terminations = int(swept["done_count"].sum())
    if follows_command(swept):
        text = (
            f"it follows the command: its speed rises by {slope:.2f} m/s per m/s of command, "
            "without a termination"
        )
        moving = [c for c in speed if c > 0]
        still = [c for c in moving if abs(speed[c]) < STILL_MPS]
        if still:
            shown = ", ".join(f"{c:g}" for c in still)
            text += (
                f"; but told {shown} m/s it stands (under {STILL_MPS:g} m/s), so its speed "
                "control begins only above that"
            )
        return text + "."
    reasons = [f"{terminations} termination(s) in the sweep"] if terminations else []
    if speed.get(0.0, 0.0) > 3 * STILL_MPS:
        reasons.append("told to stand, it still walks off")
    if slope < 0.2:
        reasons.append(
            "told to go faster, it does not: it has learned one gait, not a controller of its speed"
        )
    elif slope < FOLLOWS_COMMAND_SLOPE:
        reasons.append(f"its speed rises by only {slope:.2f} m/s per m/s of command")
    return "it does not follow the command; " + "; ".join(reasons) + "."


def plot_response(swept: pd.DataFrame, title: str | None = None) -> Figure:
    """Measured forward velocity against the command, with the ideal (y = x) and the
    acceptance line (half the command)."""
    import matplotlib.pyplot as plt

    fig, axis = plt.subplots(figsize=(5.5, 3.6))
    top = float(swept["command_mps"].max())
    line = np.array([0.0, top])
    axis.plot(line, line, color="grey", linewidth=1, label="follows exactly")
    axis.plot(line, line / 2, ":", color="grey", linewidth=1, label="half the command")
    axis.plot(swept["command_mps"], swept["mean_forward_velocity_mps"], "o-", label="measured")
    axis.set_xlabel("forward command (m/s)")
    axis.set_ylabel("mean forward velocity (m/s)")
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=8, loc="upper left")
    if title:
        axis.set_title(title, fontsize=10)
    fig.tight_layout()
    return fig
