"""Does the policy follow its command, or walk one gait whatever it is told?

Problem it solves: the acceptance replay uses one command (0.15 m/s forward). A policy that has
learned a single gait, stepping forward at a fixed pace, passes or fails that replay by where
its pace happens to sit, and the protocol cannot tell it from a policy that tracks the command.
Replaying the same checkpoint under several forward commands can: a tracking policy's speed
rises with the command (slope near 1), a fixed gait's stays flat (slope near 0), and a fixed
gait also walks off when it is told to stand.

``response_slope`` is the least-squares slope of the measured forward velocity against the
command, measured by :func:`mjlab_microduck.book.command_sweep.sweep` (one replay per
command). Nothing here imports torch or mjlab.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SWEEP_COMMANDS_MPS = (0.0, 0.1, 0.15, 0.2, 0.3, 0.4)
"""Forward commands of the sweep: standing, the protocol's 0.15 m/s, up to the task's limit."""

FOLLOWS_COMMAND_SLOPE = 0.5
"""A policy follows its command when its speed rises by at least half of what the command does."""


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
