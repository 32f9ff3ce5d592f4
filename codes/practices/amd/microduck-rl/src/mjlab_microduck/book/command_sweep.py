"""The command sweep of chapter 6: replays under several commands, their verdict and plot.

The rules (slope, "follows its command") are in :mod:`mjlab_microduck.analysis.command_response`;
this module runs the replays (one per command, same seed and frames, no video), gives what the
rules found as values and draws the response.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from mjlab_microduck.analysis.command_response import (
    FOLLOWS_COMMAND_SLOPE,
    STILL_MPS,
    SWEEP_COMMANDS_MPS,
    follows_command,
    response_slope,
)
from mjlab_microduck.jobs import replay

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def sweep(
    request: replay.ReplayRequest,
    commands: Sequence[float] = SWEEP_COMMANDS_MPS,
    progress: bool = True,
) -> pd.DataFrame:
    """One replay of ``request``'s checkpoint per forward command; one row of metrics each.

    Lateral and yaw commands stay as the request has them (zero in the protocol); video is off.
    The replays go through the replay memo (``replay.simulate(memo=True)``): one the build
    already made (a protocol replay of the same checkpoint) is read back, not made again.
    ``progress`` reports the replays that run; those read back are not timed as if they ran,
    one line counts them (neither with ``MICRODUCK_PROGRESS=off``).
    """
    import sys

    from mjlab_microduck.jobs import replay_memo
    from mjlab_microduck.runtime.progress import progress_bar, style

    if not commands:
        raise replay.ReplayError("command sweep needs at least one command")
    requests = [replace(request, lin_vel_x=float(c), video=False, gif=False) for c in commands]
    kept = [replay_memo.load(one) for one in requests]
    to_run = sum(k is None for k in kept)
    # MICRODUCK_PROGRESS=off silences this line as it silences the bar
    if progress and to_run < len(requests) and style(sys.stderr) != "off":
        print(f"commands: {len(requests) - to_run} of {len(requests)} replays read back from the "
              "build's replay memo", file=sys.stderr)  # fmt: skip
    rows = []
    with progress_bar(to_run, "commands replayed", enabled=progress and to_run > 0) as bar:
        for one, hit in zip(requests, kept, strict=True):
            if hit is None:
                trajectory, _, dt = replay.simulate(one, progress=False, memo=True)
                bar.update()
            else:
                trajectory, dt = hit
            metrics = replay.compute_metrics(trajectory, (one.lin_vel_x, one.lin_vel_y), dt)
            drift = replay.drift_metrics(trajectory)
            rows.append(
                {
                    "command_mps": one.lin_vel_x,
                    **asdict(metrics),
                    "heading_change_rad": drift["heading_change_rad"],
                }
            )
    return pd.DataFrame(rows)


def findings(swept: pd.DataFrame) -> pd.Series:
    """What the rules find in a sweep, as values for the page: the slope, the terminations,
    whether the policy follows its command (slope at least :data:`FOLLOWS_COMMAND_SLOPE`, no
    termination), the moving commands under which it stands anyway (under :data:`STILL_MPS`),
    and whether it walks off when told to stand."""
    speed = dict(zip(swept["command_mps"], swept["mean_forward_velocity_mps"], strict=True))
    still = [c for c, v in speed.items() if c > 0 and abs(v) < STILL_MPS]
    return pd.Series({
        "slope (m/s per m/s of command)": round(response_slope(swept), 2),
        "terminations": int(swept["done_count"].sum()),
        f"follows the command (slope ≥ {FOLLOWS_COMMAND_SLOPE:g}, no termination)":
            follows_command(swept),
        f"commands it stands under (m/s, speed < {STILL_MPS:g})":
            ", ".join(f"{c:g}" for c in still) or "none",
        "walks off when told to stand": speed.get(0.0, 0.0) > 3 * STILL_MPS,
    }, name="command sweep")  # fmt: skip


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
