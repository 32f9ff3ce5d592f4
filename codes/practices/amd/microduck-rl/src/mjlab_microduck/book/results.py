"""Notebook-facing helpers for the training chapters: records, live runs, tables and curves.

Problem it solves: chapters 3-5 must show every number from a run record, side by side with
the run that produced it, without turning notebook cells into a second code base. This module
finds the published records (``book/results/``), runs the package's training driver live with
a short iteration log, finds the records ``microduck recipe`` made on this
machine, and turns records into the reference chapter's tables and into matplotlib curves.
Every table says which run, machine and profile produced each column; the R9700 figures of the
original chapter are a labelled constant, never mixed up with this project's runs.

No-op cases: importing does nothing (no trainer, no matplotlib); the trainer runs only in
:func:`run_live`.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mjlab_microduck.book import reference
from mjlab_microduck.runs import records

if TYPE_CHECKING:  # heavy imports only for type checkers
    import pandas as pd
    from matplotlib.figure import Figure

    from mjlab_microduck.jobs.train import TrainRequest

RESULTS_ENV_VAR = "MICRODUCK_RESULTS"
"""Folder of the published records (default: ``<repo>/book/results``)."""
RECIPE_RESULTS_ENV_VAR = "MICRODUCK_RECIPE_RESULTS"
"""One results folder made by the recipe (default: the newest ``<repo>/logs/results/*``)."""

# The figures reported on a Radeon AI PRO R9700 in the original chapter (book/reference.py):
# the yardstick this book compares against, never shown without REFERENCE_LABEL.
REFERENCE_LABEL = reference.LABEL
REFERENCE_MACHINE = reference.MACHINE
REFERENCE_R9700: dict[str, Any] = reference.FIGURES

# The published recipe run chapters 4 to 6 read: the default preset's (``tasks.tuning``), both
# stages. Runs of the other presets are published beside it as ``h200_<preset>_...``.
# (Plain names: importing the presets would import mjlab; a test ties them to the default.)
RECIPE_RUN_500 = "h200_forward_tracking_train_500"
RECIPE_RUN_1500 = "h200_forward_tracking_resume_1500"
# Their protocol replays, and the other presets' runs with theirs, each folded into one summary
# record (runs.folds): the gait test superseded the 4-s replays, and a table still reads them.
RECIPE_REPLAYS = "h200_forward_tracking_replays"
PRESET_HISTORY = "h200_preset_history"
# The published walker's gait test at full size on its GPU (walker.json's gait_record), kept
# whole beside its recipe's gait history: chapter 6 shows and times it, the drive page reads
# its robots.
WALKER_GAIT_TEST = "h100_walker_turning_axes_straight_start_fine_yaw_gait_s43_model_450"
# The same test of the same checkpoint (its published slim file) repeated on an H200, another
# GPU model with the same evaluation seeds, kept whole: chapter 6 shows it beside the first.
WALKER_GAIT_TEST_H200 = "h200_walker_turning_axes_straight_start_fine_yaw_gait_s43_model_450"

TERMINATION_PREFIX = "Episode_Termination/"

# What the chapters plot by default: (panel title, columns or a column prefix).
TRAINING_PANELS: tuple[tuple[str, str | tuple[str, ...]], ...] = (
    ("mean reward", ("Train/mean_reward",)),
    ("mean episode length (steps)", ("Train/mean_episode_length",)),
    ("throughput (env steps/s)", ("Perf/total_fps",)),
    ("episode ends per reset", TERMINATION_PREFIX),
)
CURRICULUM_PANELS: tuple[tuple[str, str | tuple[str, ...]], ...] = (
    ("standing-env fraction", ("Curriculum/standing_envs/rel_standing_envs",)),
    ("action-rate weight", ("Curriculum/action_rate/weight",)),
    ("command error xy (episode sum)", ("Metrics/twist/error_vel_xy",)),
)


# --------------------------------------------------------------------------- where things are


def repo_root() -> Path | None:
    """The book repository (the folder with ``_toc.yml`` and ``book/results``), or None.

    Searched upwards from this package (an editable install inside the repository) and then
    from the working directory (a notebook runs in ``notebooks/``).
    """
    for start in (Path(__file__).resolve().parent, Path.cwd().resolve()):
        for folder in (start, *start.parents):
            if (folder / "_toc.yml").is_file() and (folder / "book" / "results").is_dir():
                return folder
    return None


def results_root() -> Path:
    """The published records: ``$MICRODUCK_RESULTS`` or ``<repo>/book/results``."""
    value = os.environ.get(RESULTS_ENV_VAR, "").strip()
    if value:
        return Path(value)
    root = repo_root()
    if root is None:
        raise FileNotFoundError(
            f"book/results not found above {Path(__file__).parent} or {Path.cwd()}; "
            f"set {RESULTS_ENV_VAR} to the published results folder"
        )
    return root / "book" / "results"


def book_logs_root(chapter: str) -> Path:
    """Where a chapter's live runs go: ``<repo>/logs/book/<chapter>`` (git-ignored)."""
    root = repo_root()
    return (root if root is not None else Path.cwd()) / "logs" / "book" / chapter


# --------------------------------------------------------------------------- loading runs


@dataclass
class TrainingRun:
    """A training run as the chapters use it: record, scalars and its checkpoints' names.

    ``where`` is the folder holding ``record.json``; ``log_dir`` is mjlab's log folder with the
    full checkpoints when the run is a local one (None for a published copy).
    """

    record: records.RunRecord
    scalars: pd.DataFrame
    where: Path
    log_dir: Path | None = None

    @property
    def checkpoints(self) -> list[str]:
        """Checkpoint file names the run wrote, in iteration order (from its record)."""
        names = str(self.record.summary.get("checkpoints") or "")
        return [n for n in names.split(",") if n]

    @property
    def last_checkpoint_path(self) -> Path:
        """The full last checkpoint of a local run (what a resume loads)."""
        if self.log_dir is None:
            raise FileNotFoundError(f"{self.where}: a published copy has no full checkpoints")
        return self.log_dir / str(self.record.summary["last_checkpoint"])


def load_scalars(record: records.RunRecord, where: str | Path) -> pd.DataFrame:
    """The run's ``scalars.csv`` indexed by iteration."""
    return records.load_scalars(record, where).set_index("iteration")


def load_run(where: str | Path) -> TrainingRun:
    """Read a training run folder (a local run or a published copy)."""
    from mjlab_microduck.jobs.train import find_mjlab_log_dir

    where = Path(where)
    record = records.load_record(where)
    try:
        log_dir: Path | None = find_mjlab_log_dir(where)
    except RuntimeError:
        log_dir = None
    return TrainingRun(record=record, scalars=load_scalars(record, where), where=where,
                       log_dir=log_dir)  # fmt: skip


def load_published(name: str) -> tuple[records.RunRecord, pd.DataFrame | None]:
    """``book/results/<name>``: its record and, when it has one, its scalars by iteration.

    A run folded into a summary record (:mod:`mjlab_microduck.runs.folds`) is found by the
    folder name it was published as: its record as published, and no scalars."""
    from mjlab_microduck.runs import folds

    where = results_root() / name
    if not where.is_dir():
        folded = folds.find_folded(results_root(), name)
        if folded is not None:
            return folded.record, None
    record = records.load_record(where)
    scalars = load_scalars(record, where) if record.scalars_csv else None
    return record, scalars


def published_run(name: str) -> TrainingRun:
    """A published training run as a :class:`TrainingRun` (raises if it has no scalars)."""
    where = results_root() / name
    record = records.load_record(where)
    return TrainingRun(record=record, scalars=load_scalars(record, where), where=where)


def recipe_results_folders() -> list[Path]:
    """Results folders the recipe made, newest first.

    ``$MICRODUCK_RECIPE_RESULTS`` names exactly one folder; otherwise every
    ``<repo>/logs/results/<timestamp>_<label>`` folder, newest first (the names sort by time).
    """
    value = os.environ.get(RECIPE_RESULTS_ENV_VAR, "").strip()
    if value:
        return [Path(value)]
    root = repo_root()
    base = (root if root is not None else Path.cwd()) / "logs" / "results"
    if not base.is_dir():
        return []
    return sorted((p for p in base.iterdir() if p.is_dir()), reverse=True)


def recipe_run(stage: str) -> TrainingRun | None:
    """The newest ok run the recipe published as ``stage`` (e.g. ``train_500``) on this machine.

    A results folder made with only some stages (``--stages smoke``) does not hide an older
    folder that has this one. None when no folder has it yet.
    """
    for folder in recipe_results_folders():
        if (folder / stage / records.RECORD_FILENAME).is_file():
            run = load_run(folder / stage)
            if run.record.status == "ok":
                return run
    return None


# --------------------------------------------------------------------------- live runs

_ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")

HEADLINE_KEYS: tuple[str, ...] = (
    "Learning iteration",
    "Total steps:",
    "Steps per second:",
    "Mean reward:",
    "Mean episode length:",
    "Episode_Termination/",
    "Iteration time:",
    "Loading model checkpoint",
    "Traceback",
    "Error",
)


class IterationLog:
    """A text stream for ``train.run(stream=...)`` that prints one line per PPO iteration.

    rsl_rl prints about 45 lines per iteration; a page keeps, per iteration, the reward, the
    episode length, the throughput, the iteration time and the termination terms that fired,
    on one line (``iteration 3/10: reward -1.25, episode length 19.7, 109 steps/s, 3.5 s;
    fell_over 2.0``), plus any traceback or checkpoint-loading line as it comes. The full log
    stays in the run's ``train.log``. Colour codes are stripped. With ``milestones=True`` only
    the iterations that reach a quarter, half, three quarters and all of the run
    (``progress.MILESTONES``) get their line: a handful of lines however long the run.
    """

    _FIELDS = {
        "Mean reward:": "reward {}",
        "Mean episode length:": "episode length {}",
        "Steps per second:": "{} steps/s",
        "Iteration time:": "{}",
    }

    def __init__(
        self,
        out: TextIO | None = None,
        keys: Sequence[str] = HEADLINE_KEYS,
        milestones: bool = False,
    ):
        self.out = out
        self.keys = tuple(keys)
        self.milestones = milestones
        self.lines_seen = 0
        self.lines_shown = 0
        self._pending = ""
        self._iteration: str | None = None
        self._values: list[str] = []
        self._terms: list[str] = []

    def write(self, text: str) -> int:
        self._pending += text
        *complete, self._pending = self._pending.split("\n")
        for line in complete:
            self._line(line)
        return len(text)

    def flush(self) -> None:
        (self.out or sys.stdout).flush()

    def close(self) -> None:
        if self._pending:
            self._line(self._pending)
            self._pending = ""
        self._emit_iteration()
        self.flush()

    def _show(self, line: str) -> None:
        (self.out or sys.stdout).write(line + "\n")
        self.lines_shown += 1

    def _at_milestone(self, label: str) -> bool:
        """Whether iteration ``k/N`` (counted from 0) completes a milestone fraction of ``N``;
        a label that is not ``k/N`` always counts."""
        from mjlab_microduck.runtime.progress import MILESTONES

        done, _, total = label.partition("/")
        if not (done.isdigit() and total.isdigit()) or int(total) < 1:
            return True
        k, n = int(done), int(total)
        return any(k < fraction * n <= k + 1 for fraction in MILESTONES)

    def _emit_iteration(self) -> None:
        if self._iteration is None:
            return
        if not self.milestones or self._at_milestone(self._iteration):
            text = f"iteration {self._iteration}: " + ", ".join(self._values)
            if self._terms:
                text += "; " + ", ".join(self._terms)
            self._show(text.rstrip(": "))
        self._iteration, self._values, self._terms = None, [], []

    def _line(self, raw: str) -> None:
        self.lines_seen += 1
        line = _ANSI_RE.sub("", raw).strip()
        if not any(key in line for key in self.keys):
            return
        if line.startswith("Learning iteration"):
            self._emit_iteration()
            self._iteration = line.split("Learning iteration", 1)[1].strip()
            return
        key, _, value = line.partition(": ")
        if self._iteration is not None and f"{key}:" in self._FIELDS:
            self._values.append(self._FIELDS[f"{key}:"].format(value.strip()))
        elif self._iteration is not None and key.startswith("Episode_Termination/"):
            try:
                fired = float(value) != 0.0
            except ValueError:
                fired = True
            if fired:
                self._terms.append(f"{key.split('/', 1)[1]} {value.strip()}")
        elif self._iteration is None or not key.startswith(("Total steps",)):
            self._emit_iteration()
            self._show(line)


def finished_run_like(request: TrainRequest, root: str | Path) -> TrainingRun | None:
    """The newest ``ok`` training run under ``root`` that trained exactly ``request`` with this
    code: the same record config (task, preset figures, sizes, seeds, device, resume point),
    profile and commit. None if there is none (or ``root`` does not exist)."""
    from mjlab_microduck.jobs import train
    from mjlab_microduck.runtime import provenance

    root = Path(root)
    if not root.is_dir():
        return None
    want = json.loads(json.dumps(train.record_config(request)))
    commit = provenance.git_commit()
    for where, record in reversed(records.find_records(root)):
        if (
            record.kind == "train"
            and record.status == "ok"
            and record.config == want
            and record.provenance.profile == request.profile
            and record.provenance.git_commit == commit != provenance.UNKNOWN
        ):
            return load_run(where)
    return None


def run_live(
    request: TrainRequest,
    out: TextIO | None = None,
    headlines_only: bool = True,
    reuse_from: str | Path | None = None,
    milestones: bool = False,
) -> TrainingRun:
    """Run the package's driver (``mjlab_microduck.jobs.train.run``) and return the finished run.

    Prints the trainer's iteration log (headlines only, unless ``headlines_only=False``; only
    the milestone iterations' with ``milestones=True``, see :class:`IterationLog`) and
    raises RuntimeError naming the record when the run did not end ``ok``: a chapter must not
    show tables of a failed run. With ``reuse_from``, a run of exactly this request that an
    earlier chapter finished there (:func:`finished_run_like`) is returned instead of training
    it again.
    """
    from mjlab_microduck.jobs import train

    out = out or sys.stdout
    if reuse_from is not None:
        earlier = finished_run_like(request, reuse_from)
        if earlier is not None:
            out.write(
                f"[driver] {request.name}: the same request already finished as "
                f"{earlier.record.run_id} ({_short(earlier.where)}); reusing it\n"
            )
            return earlier
    resume = f", resuming {request.resume_from.name}" if request.resume_from else ""
    out.write(
        f"[driver] {request.name}: {request.num_envs} envs x {request.iterations} iterations "
        f"on {request.device}{resume}, logs under {_short(request.logs_root)}\n"
    )
    stream = IterationLog(out, milestones=milestones) if headlines_only else out
    run_dir, record = train.run(request, stream=stream)
    if isinstance(stream, IterationLog):
        stream.close()
        shown = f"{stream.lines_shown} of {stream.lines_seen} log lines shown, all in "
    else:
        shown = "log in "
    out.write(
        f"[driver] status {record.status} after {record.wall_seconds:.1f} s; "
        f"{shown}{_short(run_dir / train.TRAIN_LOG)}\n"
    )
    if record.status != "ok":
        raise RuntimeError(
            f"live run {run_dir.name} failed: {record.error} "
            f"(record: {run_dir / records.RECORD_FILENAME})"
        )
    return load_run(run_dir)


def _short(path: Path) -> str:
    root = repo_root()
    try:
        return str(Path(path).resolve().relative_to(root)) if root else str(path)
    except ValueError:
        return str(path)


# --------------------------------------------------------------------------- describing runs


def machine(record: records.RunRecord) -> str:
    """``"<device name> (<backend>)"`` from the record's provenance."""
    return f"{record.provenance.device_name} ({record.provenance.backend})"


def term_text(summary: Mapping[str, Any], term: str) -> str:
    """How often a termination term fired, in words, from a training summary."""
    iterations = summary.get("iterations")
    nonzero = summary.get(f"{term}_nonzero_iterations")
    if nonzero is None:
        return "not in this task"
    if nonzero == 0:
        return f"0 in all {iterations} iterations"
    return (
        f"non-zero in {nonzero} of {iterations} iterations "
        f"(max {summary[f'{term}_max']:.2f}, last {summary[f'{term}_last']:.2f})"
    )


def _first_last_best(first: float | None, last: float | None, best: float | None,
                     digits: int) -> str:  # fmt: skip
    if first is None or last is None:
        return "not recorded"
    return f"{first:.{digits}f} → {last:.{digits}f}, best {best:.{digits}f}"


def _throughput(last: float | None, best: float | None) -> str:
    if last is None:
        return "not recorded"
    return f"{last:,.0f} / {best:,.0f}"


def _identity_rows(record: records.RunRecord) -> dict[str, Any]:
    return {
        "run": record.run_id,
        "machine": machine(record),
        "profile": record.provenance.profile or "unknown",
    }


def training_column(record: records.RunRecord) -> dict[str, Any]:
    """One column of the seed's training table, computed from one record."""
    s = record.summary
    wall = s.get("wall_time_first_to_last_s")
    return {
        **_identity_rows(record),
        "envs × iterations": f"{record.config.get('num_envs')} × {s.get('iterations')}",
        "transitions": f"{s['transitions']:,}",
        "TensorBoard first-to-last wall time": "n/a" if wall is None else f"{wall:.1f} s",
        "mean reward (first → last)": _first_last_best(
            s.get("reward_first"), s.get("reward_last"), s.get("reward_best"), 4
        ),
        "mean episode length (first → last)": _first_last_best(
            s.get("episode_length_first"),
            s.get("episode_length_last"),
            s.get("episode_length_best"),
            2,
        ),  # fmt: skip
        "final / best throughput (steps/s)": _throughput(
            s.get("throughput_last"), s.get("throughput_best")
        ),
        "nan_state": term_text(s, "nan_state"),
        "below_ground": term_text(s, "below_ground"),
        "fell_over": term_text(s, "fell_over"),
    }


def _reference_training_column() -> dict[str, Any]:
    ref = REFERENCE_R9700["train_500"]
    return {
        "run": "500 iterations from scratch",
        "machine": REFERENCE_MACHINE,
        "profile": "original chapter",
        "envs × iterations": f"{ref['num_envs']} × {ref['iterations']}",
        "transitions": f"{ref['transitions']:,}",
        "TensorBoard first-to-last wall time": f"{ref['wall_time_first_to_last_s']:.1f} s",
        "mean reward (first → last)": _first_last_best(*ref["reward"], 4),
        "mean episode length (first → last)": _first_last_best(*ref["episode_length"], 2),
        "final / best throughput (steps/s)": _throughput(*ref["throughput"]),
        "nan_state": f"0 in all {ref['iterations']} iterations",
        "below_ground": "not reported for this stage",
        "fell_over": "not reported",
    }


def training_table(runs: Mapping[str, records.RunRecord], reference: bool = False) -> pd.DataFrame:
    """The seed's training table, one column per labelled run (plus the R9700 reference).

    Rows name the run, machine and profile first, so a column is never read without its source.
    """
    import pandas as pd

    columns = {label: training_column(rec) for label, rec in runs.items()}
    if reference:
        columns[REFERENCE_LABEL] = _reference_training_column()
    frame = pd.DataFrame(columns)
    frame.index.name = "metric"
    return frame


def smoke_row(record: records.RunRecord) -> dict[str, Any]:
    """One row of the smoke table (numbers, so they compare across rows)."""
    s = record.summary
    return {
        **_identity_rows(record),
        "num_envs": record.config.get("num_envs"),
        "iterations": s.get("iterations"),
        "transitions": s.get("transitions"),
        "final throughput (steps/s)": s.get("throughput_last"),
        "nan_state (max)": s.get("nan_state_max"),
        "below_ground (max)": s.get("below_ground_max"),
        "fell_over (last)": s.get("fell_over_last"),
    }


def smoke_table(runs: Mapping[str, records.RunRecord]) -> pd.DataFrame:
    """Transitions, final throughput and the termination terms of smoke runs, one row each."""
    import pandas as pd

    frame = pd.DataFrame.from_dict({k: smoke_row(v) for k, v in runs.items()}, orient="index")
    frame.index.name = "run"
    return frame


def reference_smoke_table() -> pd.DataFrame:
    """The smoke figures reported on a Radeon AI PRO R9700 in the original chapter."""
    import pandas as pd

    rows = {}
    for ref in REFERENCE_R9700["smoke"]:
        label = f"{ref['num_envs']} env × {ref['iterations']} ({REFERENCE_LABEL})"
        rows[label] = {
            "run": f"smoke {ref['num_envs']}x{ref['iterations']}",
            "machine": REFERENCE_MACHINE,
            "profile": "original chapter",
            "num_envs": ref["num_envs"],
            "iterations": ref["iterations"],
            "transitions": ref["transitions"],
            "final throughput (steps/s)": ref["throughput_last"],
            "nan_state (max)": ref["nan_state"],
            "below_ground (max)": ref["below_ground"],
            "fell_over (last)": ref["fell_over_last"],
        }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "run"
    return frame


def cumulative_summary(first: records.RunRecord, second: records.RunRecord) -> dict[str, Any]:
    """Numbers of a two-stage run (from scratch, then resumed), for the cumulative table."""
    a, b = first.summary, second.summary
    walls = (a.get("wall_time_first_to_last_s"), b.get("wall_time_first_to_last_s"))
    return {
        "updates": (a["iterations"], b["iterations"]),
        "numbering": (
            (a["first_iteration"], a["last_iteration"]),
            (b["first_iteration"], b["last_iteration"]),
        ),
        "transitions": (a["transitions"], b["transitions"]),
        "wall_time_first_to_last_s": walls,
        "episode_length_growth": (
            b["episode_length_last"] / a["episode_length_first"]
            if a.get("episode_length_first")
            else None
        ),  # fmt: skip
    }


def cumulative_column(first: records.RunRecord, second: records.RunRecord) -> dict[str, Any]:
    """One column of the cumulative (two-stage) table: stage two's curves, both stages' sums."""
    c = cumulative_summary(first, second)
    b = second.summary
    (a0, a1), (b0, b1) = c["numbering"]
    wa, wb = c["wall_time_first_to_last_s"]
    growth = c["episode_length_growth"]
    return {
        "run": f"{first.run_id} + {second.run_id}",
        "machine": machine(second),
        "profile": second.provenance.profile or "unknown",
        "envs": f"{second.config.get('num_envs')}",
        "PPO updates (stage 1 + stage 2)": (
            f"{sum(c['updates'])} ({c['updates'][0]} + {c['updates'][1]})"
        ),
        "iteration numbering": f"{a0}–{a1}, then {b0}–{b1}",
        "last checkpoint": str(b.get("last_checkpoint")),
        "cumulative transitions": (
            f"{sum(c['transitions']):,} ({c['transitions'][0]:,} + {c['transitions'][1]:,})"
        ),
        "wall time, stage 2 / both (TensorBoard first-to-last)": (
            "n/a" if wa is None or wb is None else f"{wb:.1f} s / {wa + wb:.1f} s"
        ),
        "stage-2 mean reward (first → last)": _first_last_best(
            b.get("reward_first"), b.get("reward_last"), b.get("reward_best"), 4
        ),
        "stage-2 mean episode length (first → last)": _first_last_best(
            b.get("episode_length_first"),
            b.get("episode_length_last"),
            b.get("episode_length_best"),
            2,
        ),  # fmt: skip
        "stage-2 final / best throughput (steps/s)": _throughput(
            b.get("throughput_last"), b.get("throughput_best")
        ),
        "stage-2 nan_state": term_text(b, "nan_state"),
        "stage-2 below_ground": term_text(b, "below_ground"),
        "episode length at the end / at iteration 0": (
            "n/a" if growth is None else f"{growth:.1f}×"
        ),
    }


def _reference_cumulative_column() -> dict[str, Any]:
    ref = REFERENCE_R9700["resume_1500"]
    t0, t1 = ref["transitions"]
    w0, w1 = ref["wall_time_first_to_last_s"]
    u0, u1 = ref["iterations"]
    return {
        "run": "500 from scratch + resume for 1000",
        "machine": REFERENCE_MACHINE,
        "profile": "original chapter",
        "envs": f"{ref['num_envs']}",
        "PPO updates (stage 1 + stage 2)": f"{u0 + u1} ({u0} + {u1})",
        "iteration numbering": f"{ref['numbering'][0]}, then {ref['numbering'][1]}".replace(
            "-", "–"
        ),
        "last checkpoint": ref["last_checkpoint"],
        "cumulative transitions": f"{t0 + t1:,} ({t0:,} + {t1:,})",
        "wall time, stage 2 / both (TensorBoard first-to-last)": f"{w1:.1f} s / {w0 + w1:.1f} s",
        "stage-2 mean reward (first → last)": _first_last_best(*ref["reward"], 4),
        "stage-2 mean episode length (first → last)": _first_last_best(*ref["episode_length"], 2),
        "stage-2 final / best throughput (steps/s)": _throughput(*ref["throughput"]),
        "stage-2 nan_state": f"0 in all {u1} iterations",
        "stage-2 below_ground": f"0 in all {u1} iterations",
        "episode length at the end / at iteration 0": (
            f"{ref['episode_length'][1] / REFERENCE_R9700['train_500']['episode_length'][0]:.1f}×"
        ),
    }


def cumulative_table(
    pairs: Mapping[str, tuple[records.RunRecord, records.RunRecord]], reference: bool = False
) -> pd.DataFrame:
    """The two-stage (resume) table, one column per labelled (stage one, stage two) pair."""
    import pandas as pd

    columns = {label: cumulative_column(*pair) for label, pair in pairs.items()}
    if reference:
        columns[REFERENCE_LABEL] = _reference_cumulative_column()
    frame = pd.DataFrame(columns)
    frame.index.name = "metric"
    return frame


def acceptance_checks(first: records.RunRecord, second: records.RunRecord) -> pd.DataFrame:
    """The issue's acceptance criteria for the resumed run, measured, with whether each holds.

    ``nan_state`` and ``below_ground`` must be 0 in every iteration of the resumed stage, and
    the mean episode length at its end at least 10 times its value at iteration 0 of stage one.
    """
    import pandas as pd

    b = second.summary
    growth = cumulative_summary(first, second)["episode_length_growth"]
    rows = []
    for term in ("nan_state", "below_ground"):
        nonzero = b.get(f"{term}_nonzero_iterations")
        rows.append({
            "criterion": f"{term} 0 in every iteration of the resumed stage",
            "measured": term_text(b, term),
            "met": nonzero == 0,
        })  # fmt: skip
    rows.append({
        "criterion": "episode length at the end >= 10 x at iteration 0",
        "measured": "n/a" if growth is None else (
            f"{b['episode_length_last']:.2f} / {first.summary['episode_length_first']:.2f} "
            f"= {growth:.1f}x"
        ),
        "met": growth is not None and growth >= 10,
    })  # fmt: skip
    return pd.DataFrame(rows).set_index("criterion")


def expected_checkpoints(first_iteration: int, iterations: int, save_interval: int) -> list[str]:
    """The checkpoint names rsl_rl writes, by its own rule.

    ``OnPolicyRunner.learn`` runs iterations ``first .. first + iterations - 1``, saves
    ``model_<it>.pt`` whenever ``it % save_interval == 0`` and once more after the last
    iteration. ``first`` is 0 from scratch, and the loaded checkpoint's iteration on resume.
    """
    last = first_iteration + iterations - 1
    saved = {it for it in range(first_iteration, last + 1) if it % save_interval == 0}
    return [f"model_{it}.pt" for it in sorted(saved | {last})]


def curriculum_schedule(iterations: int, task: str | None = None) -> pd.DataFrame:
    """A task's curricula over PPO iterations, from its stage tables (the plan, not a run).

    Both curricula switch on ``env.common_step_counter`` (env steps per env); iteration ``i``
    starts at step ``i * STEPS_PER_ENV``. Columns are named like the logged scalars so the
    frame plots with :data:`CURRICULUM_PANELS`.
    """
    import pandas as pd

    from mjlab_microduck.tasks.mdp import standing_fraction_at
    from mjlab_microduck.tasks.rl_cfg import STEPS_PER_ENV
    from mjlab_microduck.tasks.velocity import (
        TASK_ID,
        TUNING_OF_TASK,
        action_rate_stages,
        standing_stages,
    )

    tuning = TUNING_OF_TASK[task or TASK_ID]
    ramp = action_rate_stages(tuning)
    standing = standing_stages(tuning)

    def weight_at(step: int) -> float:
        weight = float("nan")
        for stage in ramp:  # like mjlab's reward_curriculum: last stage reached
            if step >= stage["step"]:
                weight = stage["weight"]
        return weight

    steps = [i * STEPS_PER_ENV for i in range(iterations)]
    frame = pd.DataFrame(
        {
            "Curriculum/standing_envs/rel_standing_envs": [
                standing_fraction_at(st, standing) for st in steps
            ],
            "Curriculum/action_rate/weight": [weight_at(st) for st in steps],
        },
        index=pd.RangeIndex(iterations, name="iteration"),
    )
    return frame


# --------------------------------------------------------------------------- curves


def _panel_columns(frame: pd.DataFrame, spec: str | Sequence[str]) -> list[str]:
    if isinstance(spec, str):  # a prefix: every column that starts with it
        return [c for c in frame.columns if c.startswith(spec)]
    return [c for c in spec if c in frame.columns]


def plot_training(
    stages: pd.DataFrame | Mapping[str, pd.DataFrame],
    panels: Sequence[tuple[str, str | Sequence[str]]] = TRAINING_PANELS,
    title: str | None = None,
) -> Figure:
    """Curves of one run or of several stages on one iteration axis, one panel per quantity.

    ``stages`` maps a label to a frame indexed by iteration (``scalars.csv``); a later stage
    that starts where an earlier one ended (a resume) gets a dotted line at its first
    iteration. A panel given as a prefix (``Episode_Termination/``) draws one line per column.
    """
    import matplotlib.pyplot as plt
    import pandas as pd
    from matplotlib.ticker import MaxNLocator

    if isinstance(stages, pd.DataFrame):
        stages = {"": stages}
    if not stages:
        raise ValueError("plot_training needs at least one stage")
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(7.5, 2.3 * len(panels)), sharex=True, squeeze=False
    )
    styles = ["-", "--", ":", "-."]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    labels = list(stages)
    for axis, (panel_title, spec) in zip(axes[:, 0], panels, strict=True):
        names: list[str] = []
        for frame in stages.values():
            names.extend(c for c in _panel_columns(frame, spec) if c not in names)
        for s, (label, frame) in enumerate(stages.items()):
            for n, column in enumerate(names):
                if column not in frame:
                    continue
                if isinstance(spec, str):
                    # One colour per term; the line style tells the stages apart, and only the
                    # first stage names the terms so the legend stays readable.
                    colour = colours[n % len(colours)]
                    legend = column.rsplit("/", 1)[-1] if s == 0 else None
                else:
                    colour = colours[s % len(colours)]
                    legend = label or None
                marker = "o" if len(frame) <= 20 else None  # a mini-run has a few points
                axis.plot(frame.index, frame[column], styles[s % len(styles)], color=colour,
                          linewidth=1.3, marker=marker, markersize=4, label=legend)  # fmt: skip
        for label in labels[1:]:
            start = stages[label].index.min()
            if start > stages[labels[0]].index.min():  # a resume, not a run beside the first
                axis.axvline(start, color="grey", linestyle=":", linewidth=1)
        axis.set_ylabel(panel_title, fontsize=9)
        axis.grid(True, alpha=0.3)
        if axis.get_legend_handles_labels()[0]:
            axis.legend(fontsize=8, loc="best")
    axes[-1, 0].set_xlabel("PPO iteration")
    axes[-1, 0].xaxis.set_major_locator(MaxNLocator(integer=True))
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return fig
