"""Checkpoint acceptance by replay: which checkpoints exist, how they did, which one is best.

Problem it solves: chapter 6 must decide from measurements, not from a reward curve, whether a
published checkpoint walks, and chapter 7 must show what a replay says about a run trained with
broken contacts. The rules that decide belong in code that tests can check, not in notebook
cells. This module

* finds the published checkpoints of the training recipe in ``book/results`` from their run
  records (training runs of the guarded task without fault injection; the SHA-256 of every
  file is checked), and the recorded replays made with the book's protocol, whether each run
  has its own folder or lives on as a row of a summary record (:mod:`mjlab_microduck.runs.folds`),
* turns replay summaries into the reference chapter's table (checkpoint, 4 s displacement,
  mean forward velocity, mean absolute velocity error, min trunk z, min upright, terminations,
  fell-like fraction),
* states the acceptance rule and the best-checkpoint rule as functions of that table,

Live replays, sentences, videos and the reference figures are in
:mod:`mjlab_microduck.book.replay_pages`. Nothing here imports torch or mjlab.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from mjlab_microduck.runs import folds, names, records

if TYPE_CHECKING:  # heavy imports only for type checkers
    import pandas as pd

# ----------------------------------------------------------------------------- the protocol

PROTOCOL_FRAMES = 200  # 4 s at the 50 Hz control rate
PROTOCOL_SEED = 42
PROTOCOL_LIN_VEL_X = 0.15  # m/s; lateral and yaw commands zero
# "Walks" means at least half the commanded forward speed, averaged over the replay.
WALK_FRACTION_OF_COMMAND = 0.5
MIN_FORWARD_VELOCITY_MPS = WALK_FRACTION_OF_COMMAND * PROTOCOL_LIN_VEL_X

# The recipe run chapters 5 and 6 read: the default preset's, trained under that preset's own
# task ID (tasks.velocity.DEFAULT_PRESET_TASK_ID), which its records keep. Spelled out because
# importing the tasks loads mjlab; a test checks that the two agree.
RECIPE_TASK = "Mjlab-Velocity-Flat-MicroDuck-ForwardTrackingTuning"

# A frame looks fallen when the trunk is below this height or the upright proxy (world z of the
# trunk's z axis: 1 upright, 0 on its side) below this value; the replay job counts such frames.
FELL_TRUNK_Z_M = 0.08
FELL_UPRIGHT = 0.35


# The seed's table: column title -> replay summary key.
TABLE_COLUMNS: dict[str, str] = {
    "4 s displacement (m)": "forward_displacement_m",
    "mean forward velocity (m/s)": "mean_forward_velocity_mps",
    "mean abs velocity error (m/s)": "mean_abs_velocity_error_mps",
    "min trunk z (m)": "min_trunk_z_m",
    "min upright": "min_upright_proxy",
    "terminations": "done_count",
    "fell-like fraction": "fell_like_fraction",
}


# ----------------------------------------------------------------------------- discovery


@dataclass(frozen=True)
class PublishedCheckpoint:
    """A slim checkpoint published with a training run's record."""

    name: str  # model_<iteration>.pt
    iteration: int
    path: Path
    sha256: str
    run: str  # the published run's folder name, e.g. h200_train_500
    run_id: str  # the record's run id, e.g. 20261130T071555Z_train_500
    started_at: str


def _iteration_or_none(name: str) -> int | None:
    return names.checkpoint_iteration(name) if names.is_checkpoint_name(name) else None


def is_recipe_training(record: records.RunRecord, task: str = RECIPE_TASK) -> bool:
    """A finished training run of the guarded task without fault injection."""
    return (
        record.kind == "train"
        and record.status == "ok"
        and record.config.get("task") == task
        and not record.config.get("frozen_broadphase", False)
    )


def run_records(results_root: str | Path) -> list[tuple[Path, records.RunRecord]]:
    """Every run record under ``results_root``: each run folder's, and each run a summary
    record folds (its ``where`` is ``<fold>/<old folder name>``); summary records themselves
    are left out."""
    own = [(w, r) for w, r in records.find_records(results_root) if not folds.is_fold(r)]
    folded = [(run.where, run.record) for run in folds.folded_runs(results_root)]
    return sorted(own + folded, key=lambda item: item[0].name)


def published_checkpoints(
    results_root: str | Path, task: str = RECIPE_TASK, retired: bool = False
) -> list[PublishedCheckpoint]:
    """Every checkpoint published with a recipe training run, by iteration.

    Read from the records (artifacts of kind ``checkpoint``), never from a list typed here.
    Each record's artifacts are verified (size and SHA-256) first, so a changed file stops the
    build instead of being replayed. The same iteration published by two runs (a resume that
    re-publishes its starting point) is kept once, from the earlier run. With ``retired``, the
    checkpoints of folded runs count too (their name and SHA-256; the file is gone): enough
    to tell which recorded replay replayed which.
    """
    found: dict[int, PublishedCheckpoint] = {}
    candidates = []
    # (folder, record, its checkpoints' artifacts, whether its files are there to verify)
    sources = [(where, record, tuple(record.artifacts), True)
               for where, record in records.find_records(results_root)]  # fmt: skip
    if retired:
        sources += [(run.where, run.record, (*run.record.artifacts, *run.retired), False)
                    for run in folds.folded_runs(results_root)]  # fmt: skip
    for where, record, artifacts, on_disk in sources:
        if not is_recipe_training(record, task):
            continue
        if on_disk:
            records.verify_artifacts(record, where)
        for art in artifacts:
            iteration = _iteration_or_none(art.path)
            if art.kind != "checkpoint" or iteration is None:
                continue
            candidates.append(
                PublishedCheckpoint(
                    name=PurePath(art.path).name, iteration=iteration, path=where / art.path,
                    sha256=art.sha256, run=where.name, run_id=record.run_id,
                    started_at=record.started_at,
                )
            )  # fmt: skip
    for ckpt in sorted(candidates, key=lambda c: (c.iteration, c.started_at, c.run)):
        found.setdefault(ckpt.iteration, ckpt)
    return [found[i] for i in sorted(found)]


def is_protocol_replay(record: records.RunRecord, task: str = RECIPE_TASK) -> bool:
    """A finished replay made with the book's protocol (200 frames, seed 42, 0.15 m/s, no fault,
    no command schedule)."""
    cfg = record.config
    return (
        record.kind == "replay"
        and record.status == "ok"
        and cfg.get("task") == task
        and not cfg.get("schedule")
        and not cfg.get("frozen_broadphase", False)
        and cfg.get("frames") == PROTOCOL_FRAMES
        and cfg.get("seed") == PROTOCOL_SEED
        and math.isclose(float(cfg.get("lin_vel_x", math.nan)), PROTOCOL_LIN_VEL_X)
        and float(cfg.get("lin_vel_y", 0.0)) == 0.0
        and float(cfg.get("ang_vel_z", 0.0)) == 0.0
    )


def replays_checkpoint(record: records.RunRecord, checkpoint: PublishedCheckpoint) -> bool:
    """Whether a replay record replayed this published checkpoint.

    Exact when the record stores the checkpoint's SHA-256 (``config.checkpoint_sha256``).
    Older records name only the file they loaded, usually a copy outside the repository
    (``/tmp/results/train_500/model_499.pt``); then the file name must match and the folder
    must name the same training run (``train_500`` for ``h200_train_500``).
    """
    digest = record.config.get("checkpoint_sha256")
    if digest:
        return digest == checkpoint.sha256
    loaded = PurePath(str(record.config.get("checkpoint", "")))
    if loaded.name != checkpoint.name:
        return False
    folder = loaded.parent.name
    run_name = names.run_name(checkpoint.run_id)
    return bool(folder) and (
        folder in (checkpoint.run, run_name) or checkpoint.run.endswith(f"_{folder}")
    )


@dataclass(frozen=True)
class RecordedReplay:
    """A replay record with the folder holding it."""

    where: Path
    record: records.RunRecord

    @property
    def video(self) -> Path | None:
        for art in self.record.artifacts:
            if art.kind == "video" and art.path.endswith(".mp4"):
                return self.where / art.path
        return None

    @property
    def trajectory(self) -> pd.DataFrame:
        return load_trajectory(self.where, self.record)

    @property
    def folder(self) -> str:
        """Where it lies under the results: its folder, or ``<summary>/<its name>`` when
        folded into a summary record."""
        if (self.where / records.RECORD_FILENAME).is_file():
            return self.where.name
        return f"{self.where.parent.name}/{self.where.name}"


def recorded_replays(results_root: str | Path) -> list[RecordedReplay]:
    """Every finished replay record under ``results_root``, in folder order, folded ones
    included (with the files their fold kept, e.g. the video)."""
    return [
        RecordedReplay(where, rec)
        for where, rec in run_records(results_root)
        if rec.kind == "replay" and rec.status == "ok"
    ]


def recorded_protocol_replay(
    checkpoint: PublishedCheckpoint, replays: Iterable[RecordedReplay], task: str = RECIPE_TASK
) -> RecordedReplay | None:
    """The recorded protocol replay of ``checkpoint``, or None (the first, if several)."""
    for rep in replays:
        if is_protocol_replay(rep.record, task) and replays_checkpoint(rep.record, checkpoint):
            return rep
    return None


def recorded_summaries(
    checkpoints: Iterable[PublishedCheckpoint], results_root: str | Path
) -> dict[str, dict[str, Any]]:
    """Checkpoint name -> the summary of its recorded protocol replay, for those that have one."""
    replays = recorded_replays(results_root)
    found = {c.name: recorded_protocol_replay(c, replays) for c in checkpoints}
    return {name: dict(rep.record.summary) for name, rep in found.items() if rep is not None}


def load_trajectory(where: str | Path, record: records.RunRecord | None = None) -> pd.DataFrame:
    """A replay's per-frame ``trajectory.csv`` (its artifact of kind ``trajectory``)."""
    import pandas as pd

    where = Path(where)
    record = record or records.load_record(where)
    for art in record.artifacts:
        if art.kind == "trajectory":
            return pd.read_csv(where / art.path, index_col="frame")
    raise records.RecordError(f"{where / records.RECORD_FILENAME}: replay has no trajectory")


def _where_text(rep: RecordedReplay) -> str:
    # A folded replay's name comes first: a narrow table column cuts the end of the text.
    if "/" in rep.folder:
        fold, name = rep.folder.split("/", 1)
        return f"{name}, a row of book/results/{fold}"
    return f"book/results/{rep.folder}"


def inventory(
    checkpoints: Sequence[PublishedCheckpoint],
    replays: Sequence[RecordedReplay],
    expected: Sequence[str] = (),
) -> pd.DataFrame:
    """One row per checkpoint: where it is published and which recorded replay exists.

    ``expected`` names checkpoints the recipe should publish (``model_750.pt``, ...); those not
    found are listed as not published yet rather than silently left out.
    """
    import pandas as pd

    by_name = {c.name: c for c in checkpoints}
    names = sorted(set(by_name) | set(expected), key=lambda n: (_iteration_or_none(n) or -1, n))
    rows = {}
    for name in names:
        ckpt = by_name.get(name)
        rep = recorded_protocol_replay(ckpt, replays) if ckpt else None
        prov = rep.record.provenance if rep else None
        rows[name] = {
            "published in": f"book/results/{ckpt.run}" if ckpt else "not published yet",
            "sha256": ckpt.sha256[:12] if ckpt else "",
            "recorded protocol replay": (
                f"{_where_text(rep)} ({prov.device_name}, {prov.backend})"
                if rep and prov
                else "none"
            ),
        }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "checkpoint"
    return frame


# ----------------------------------------------------------------------------- live replays


# ----------------------------------------------------------------------------- the table


def table_row(summary: Mapping[str, Any]) -> dict[str, Any]:
    """One row of the seed's table from a replay summary (missing values stay None)."""
    return {title: summary.get(key) for title, key in TABLE_COLUMNS.items()}


def replay_table(rows: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """The seed's replay table; ``rows`` maps a row label (e.g. ``model_499.pt``) to a summary."""
    import pandas as pd

    frame = pd.DataFrame.from_dict(
        {label: table_row(summary) for label, summary in rows.items()},
        orient="index", columns=list(TABLE_COLUMNS),
    )  # fmt: skip
    frame.index.name = "checkpoint"
    return frame


def implied_fell_like_fraction(summary: Mapping[str, Any]) -> float | None:
    """0.0 when the minima alone prove that no frame looked fallen, else None.

    A frame looks fallen when the trunk is below 0.08 m or the upright proxy below 0.35; if the
    lowest trunk height and the lowest upright value are both above those limits, no frame can
    be. Used for the reference figures, which report the minima but not the fraction.
    """
    z, upright = summary.get("min_trunk_z_m"), summary.get("min_upright_proxy")
    if z is None or upright is None:
        return None
    return 0.0 if z >= FELL_TRUNK_Z_M and upright >= FELL_UPRIGHT else None


def device_comparison(
    live: Mapping[str, Mapping[str, Any]],
    recorded: Mapping[str, Mapping[str, Any]],
    live_label: str,
    recorded_label: str,
) -> pd.DataFrame:
    """Both devices' numbers for the checkpoints replayed on both, and their difference.

    Rows are ``(checkpoint, source)`` with source ``live_label``, ``recorded_label`` and
    ``difference`` (recorded minus live). Nothing is hidden: both values are shown.
    """
    import pandas as pd

    parts = []
    for name in (n for n in live if n in recorded):
        a, b = replay_table({name: live[name]}), replay_table({name: recorded[name]})
        diff = b.astype(float) - a.astype(float)
        for label, frame in ((live_label, a), (recorded_label, b), ("difference", diff)):
            frame = frame.copy()
            frame.index = pd.MultiIndex.from_tuples([(name, label)], names=["checkpoint", "source"])
            parts.append(frame)
    if not parts:
        return pd.DataFrame(columns=list(TABLE_COLUMNS))
    return pd.concat(parts)


# ----------------------------------------------------------------------------- the rules


@dataclass(frozen=True)
class Verdict:
    """The acceptance rule applied to one replay."""

    stable: bool  # no termination and no fallen-looking frame
    walks: bool  # stable and at least half the commanded forward speed
    reason: str


def verdict(summary: Mapping[str, Any], command_mps: float = PROTOCOL_LIN_VEL_X) -> Verdict:
    """Acceptance of one protocol replay.

    *Stable*: ``done_count == 0`` and ``fell_like_fraction == 0`` (no frame with the trunk below
    0.08 m or the upright proxy below 0.35). *Walks*: stable and a mean forward velocity of at
    least :data:`WALK_FRACTION_OF_COMMAND` of the command. Missing values never pass.
    """
    done = summary.get("done_count")
    fell = summary.get("fell_like_fraction")
    velocity = summary.get("mean_forward_velocity_mps")
    threshold = WALK_FRACTION_OF_COMMAND * command_mps
    problems = []
    if done is None or done != 0:
        problems.append(f"{done} termination(s)")
    if fell is None or fell != 0:
        problems.append(f"fell-like fraction {fell}")
    stable = not problems
    walks = stable and velocity is not None and velocity >= threshold
    if not stable:
        reason = "not stable: " + ", ".join(problems)
    elif walks:
        reason = f"walks: {velocity:.4f} m/s >= {threshold:.4f} m/s"
    else:
        reason = f"stable, does not walk: {velocity:.4f} m/s < {threshold:.4f} m/s"
    return Verdict(stable=stable, walks=walks, reason=reason)


def verdict_table(
    rows: Mapping[str, Mapping[str, Any]], command_mps: float = PROTOCOL_LIN_VEL_X
) -> pd.DataFrame:
    """``stable``, ``walks`` and the reason for every row label."""
    import pandas as pd

    frame = pd.DataFrame.from_dict(
        {label: vars(verdict(s, command_mps)) for label, s in rows.items()}, orient="index"
    )
    frame.index.name = "checkpoint"
    return frame


def rank_checkpoints(
    rows: Mapping[str, Mapping[str, Any]], command_mps: float = PROTOCOL_LIN_VEL_X
) -> list[str]:
    """Row labels from best to worst by the book's rule.

    Stable checkpoints come first; among equals the higher mean forward velocity wins, then the
    lower mean absolute velocity error, then the later iteration (the label's number). The
    best checkpoint is the first; it is *accepted* only if its verdict says it walks.
    """

    def key(label: str) -> tuple:
        s = rows[label]
        velocity = s.get("mean_forward_velocity_mps")
        error = s.get("mean_abs_velocity_error_mps")
        iteration = _iteration_or_none(label)
        return (
            not verdict(s, command_mps).stable,
            -(velocity if velocity is not None else -math.inf),
            error if error is not None else math.inf,
            -(iteration if iteration is not None else -1),
        )

    return sorted(rows, key=key)


# ----------------------------------------------------------------------------- presets


def recorded_presets(results_root: str | Path) -> dict[str, str]:
    """Tuning preset name -> task, for every published recipe run whose record names a preset."""
    found: dict[str, str] = {}
    for _, record in sorted(run_records(results_root), key=lambda r: r[1].started_at):
        tuning = record.config.get("tuning")
        task = str(record.config.get("task"))
        if isinstance(tuning, dict) and is_recipe_training(record, task):
            found.setdefault(str(tuning["name"]), task)
    return found


def recorded_preset_rows(results_root: str | Path, task: str) -> dict[str, dict[str, Any]]:
    """Checkpoint name -> summary of the recorded protocol replay, for one preset's run."""
    replays = recorded_replays(results_root)
    rows = {}
    for ckpt in published_checkpoints(results_root, task=task, retired=True):
        rep = recorded_protocol_replay(ckpt, replays, task=task)
        if rep is not None:
            rows[ckpt.name] = dict(rep.record.summary)
    return rows


def best_recorded_checkpoint(results_root: str | Path, task: str) -> PublishedCheckpoint:
    """The checkpoint of ``task``'s recipe run that its recorded protocol replays rank first
    (its ``path`` exists only if the checkpoint is still published)."""
    rows = recorded_preset_rows(results_root, task)
    if not rows:
        raise LookupError(f"no recorded protocol replay of a checkpoint of {task}")
    best = rank_checkpoints(rows)[0]
    return next(c for c in published_checkpoints(results_root, task=task, retired=True)
                if c.name == best)  # fmt: skip


def preset_outcomes(results_root: str | Path) -> pd.DataFrame:
    """One row per recorded preset: its recorded replays reduced by this module's rules."""
    import pandas as pd

    out = []
    for name, task in recorded_presets(results_root).items():
        rows = recorded_preset_rows(results_root, task)
        if not rows:
            continue
        best = rank_checkpoints(rows)[0]
        out.append({
            "preset": name, "task": task, "checkpoints replayed": len(rows),
            "stable": sum(verdict(r).stable for r in rows.values()),
            "best checkpoint": best,
            "best mean forward velocity (m/s)": rows[best]["mean_forward_velocity_mps"],
            "largest 4 s displacement (m)": max(r["forward_displacement_m"] for r in rows.values()),
            "walks": "yes" if verdict(rows[best]).walks else "no",
        })  # fmt: skip
    return pd.DataFrame(out).set_index("preset")


# ----------------------------------------------------------------------------- publishing media


def rule_counts(
    by_machine: Mapping[str, Mapping[str, Mapping[str, Any]]],
    command_mps: float = PROTOCOL_LIN_VEL_X,
) -> pd.DataFrame:
    """Per machine (label -> {checkpoint: replay summary}): how many checkpoints were replayed,
    how many are stable and walk by the 4-s rule, which walk, and the largest |4 s
    displacement|; one row each, for the page to show instead of a sentence."""
    import pandas as pd

    rows = []
    for label, summaries in by_machine.items():
        verdicts = {name: verdict(row, command_mps) for name, row in summaries.items()}
        moves = [abs(row["forward_displacement_m"]) for row in summaries.values()]
        rows.append({
            "replays": label,
            "checkpoints": len(summaries),
            "stable": sum(v.stable for v in verdicts.values()),
            "walk": sum(v.walks for v in verdicts.values()),
            "walking checkpoints": ", ".join(n for n, v in verdicts.items() if v.walks) or "none",
            "largest |4 s displacement| (m)": round(max(moves), 4) if moves else float("nan"),
        })  # fmt: skip
    return pd.DataFrame(rows).set_index("replays")
