"""The naming rules of run folders and checkpoints, and the ids of the book's tasks.

A run folder is ``<UTC stamp>_<name>`` (``20261130T071555Z_train_500``); its name must be safe as
a path component and on a command line. rsl_rl names a checkpoint ``model_<iteration>.pt``.
Every command checks a name with these functions before it creates anything.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from pathlib import PurePath

# The id the book's task registers under in mjlab (tasks/velocity.py) and that records name in
# their config; its variant without the below-ground guard (chapter 7). Kept here, where reading
# them costs nothing, so that a request or its --help does not have to load mjlab.
TASK_ID = "Mjlab-Velocity-Flat-MicroDuck"
UNGUARDED_TASK_ID = f"{TASK_ID}-Unguarded"
# The folder rsl_rl logs the task's runs under (``logs/rsl_rl/<experiment>/``); here for the
# same reason: finding a run's checkpoints (resume, ``records verify --fix``) needs no mjlab.
EXPERIMENT_NAME = "microduck_velocity"

RUN_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_RUN_STAMP_RE = re.compile(r"^\d{8}T\d{6}Z_")
_STAMP_FORMAT = "%Y%m%dT%H%M%SZ"
CHECKPOINT_RE = re.compile(r"^model_(\d+)\.pt$")


def check_run_name(name: str) -> str:
    """``name`` if it is a valid run name; else ``ValueError`` with one line."""
    if not RUN_NAME_RE.match(name or ""):
        raise ValueError(f"run name {name!r}: use letters, digits, '.', '_' and '-'")
    return name


def run_stem(name: str, now: _dt.datetime | None = None) -> str:
    """The folder name a run called ``name`` gets when it starts at ``now`` (default: now)."""
    stamp = (now or _dt.datetime.now(_dt.timezone.utc)).strftime(_STAMP_FORMAT)
    return f"{stamp}_{check_run_name(name)}"


def run_name(run_id: str) -> str:
    """A run id without its timestamp prefix (``20261130T071555Z_train_500`` -> ``train_500``)."""
    return _RUN_STAMP_RE.sub("", run_id)


def is_checkpoint_name(path: str | os.PathLike[str]) -> bool:
    return CHECKPOINT_RE.match(PurePath(path).name) is not None


def checkpoint_iteration(path: str | os.PathLike[str]) -> int:
    """The iteration rsl_rl put in a checkpoint's file name (``model_499.pt`` -> 499); a
    ``ValueError`` for any other name."""
    match = CHECKPOINT_RE.match(PurePath(path).name)
    if not match:
        raise ValueError(f"{path}: not an rsl_rl checkpoint name (model_<iteration>.pt)")
    return int(match.group(1))


def checkpoint_name(iteration: int) -> str:
    return f"model_{iteration}.pt"
