"""Checkpoint acceptance by replay: which checkpoints exist, how they did, which one is best.

Problem it solves: chapter 6 must decide from measurements, not from a reward curve, whether a
published checkpoint walks, and chapter 7 must show what a replay says about a run trained with
broken contacts. The rules that decide belong in code that tests can check, not in notebook
cells. This module

* finds the published checkpoints of the training recipe in ``book/results`` from their run
  records (training runs of the guarded task without fault injection; the SHA-256 of every
  file is checked), and the recorded replays made with the book's protocol,
* replays a checkpoint live through :func:`mjlab_microduck.replay.run` (records under
  ``logs/``, git-ignored) with the trainer's chatter kept out of the page,
* turns replay summaries into the reference chapter's table (checkpoint, 4 s displacement,
  mean forward velocity, mean absolute velocity error, min trunk z, min upright, terminations,
  fell-like fraction),
* states the acceptance rule and the best-checkpoint rule as functions of that table,
* copies a replay video to where the HTML build publishes it (``book/_extra/media``, which
  ``html_extra_path`` copies to the site root).

The figures reported on a Radeon AI PRO R9700 in the original chapter are a labelled constant
(:data:`REFERENCE_R9700_REPLAYS`), never mixed up with this project's replays.

No-op cases: importing does nothing heavy; simulations run only in :func:`replay_live`.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from mjlab_microduck import records
from mjlab_microduck.tasks.velocity import DEFAULT_PRESET_TASK_ID, TASK_ID

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
# task ID, which its records keep. Both IDs build the same environment.
RECIPE_TASK = DEFAULT_PRESET_TASK_ID

REFERENCE_LABEL = "reported on a Radeon AI PRO R9700 in the original chapter"

# Replay figures of the original chapter (seed facts, "Checkpoint replay"): 200 frames, seed 42,
# lin_vel_x 0.15. They were reported on a Radeon AI PRO R9700 in the original chapter; they are
# the yardstick, not results of this project. The fell-like fraction was recorded there but
# not tabulated, hence None.
REFERENCE_R9700_REPLAYS: tuple[dict[str, Any], ...] = (
    {"checkpoint": "model_499.pt", "forward_displacement_m": 0.0234,
     "mean_forward_velocity_mps": 0.0052, "mean_abs_velocity_error_mps": 0.1450,
     "min_trunk_z_m": 0.1130, "min_upright_proxy": 0.9896, "done_count": 0},
    {"checkpoint": "model_750.pt", "forward_displacement_m": 0.3251,
     "mean_forward_velocity_mps": 0.0799, "mean_abs_velocity_error_mps": 0.0784,
     "min_trunk_z_m": 0.1046, "min_upright_proxy": 0.9842, "done_count": 0},
    {"checkpoint": "model_1000.pt", "forward_displacement_m": 0.2090,
     "mean_forward_velocity_mps": 0.0515, "mean_abs_velocity_error_mps": 0.1047,
     "min_trunk_z_m": 0.1062, "min_upright_proxy": 0.9925, "done_count": 0},
    {"checkpoint": "model_1250.pt", "forward_displacement_m": 0.3015,
     "mean_forward_velocity_mps": 0.0750, "mean_abs_velocity_error_mps": 0.0936,
     "min_trunk_z_m": 0.1118, "min_upright_proxy": 0.9891, "done_count": 0},
    {"checkpoint": "model_1498.pt", "forward_displacement_m": 0.1840,
     "mean_forward_velocity_mps": 0.0454, "mean_abs_velocity_error_mps": 0.1097,
     "min_trunk_z_m": 0.1114, "min_upright_proxy": 0.9924, "done_count": 0},
)  # fmt: skip

# The discarded experiment as the original chapter reports it (seed facts, "The discarded
# experiment"), reported on a Radeon AI PRO R9700 in the original chapter.
REFERENCE_R9700_DISCARDED: dict[str, Any] = {
    "num_envs": 256,
    "iterations": 500,
    "reward_first": 1.0781,
    "reward_last": 45.4360,
    "episode_length_best": 886.71,
    "nan_state": 0,
    "replay_min_trunk_z_m": -78.45,  # after continuing to about iteration 1000
    "stock_replay_terminations": 2,  # the same checkpoint, contacts fixed, 4 s
}

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
VELOCITY_COLUMN = "mean forward velocity (m/s)"
ERROR_COLUMN = "mean abs velocity error (m/s)"

MEDIA_DIRNAME = "media"
_CHECKPOINT_RE = re.compile(r"^model_(\d+)\.pt$")
_RUN_STAMP_RE = re.compile(r"^\d{8}T\d{6}Z_")


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


def checkpoint_iteration(name: str) -> int | None:
    """``model_750.pt`` -> 750; None for any other file name."""
    match = _CHECKPOINT_RE.match(PurePath(name).name)
    return int(match.group(1)) if match else None


def _run_name(run_id: str) -> str:
    """A run id without its timestamp prefix (``20261130T071555Z_train_500`` -> ``train_500``)."""
    return _RUN_STAMP_RE.sub("", run_id)


def is_recipe_training(record: records.RunRecord, task: str = RECIPE_TASK) -> bool:
    """A finished training run of the guarded task without fault injection."""
    return (
        record.kind == "train"
        and record.status == "ok"
        and record.config.get("task") == task
        and not record.config.get("frozen_broadphase", False)
    )


def published_checkpoints(
    results_root: str | Path, task: str = RECIPE_TASK
) -> list[PublishedCheckpoint]:
    """Every checkpoint published with a recipe training run, by iteration.

    Read from the records (artifacts of kind ``checkpoint``), never from a list typed here.
    Each record's artifacts are verified (size and SHA-256) first, so a changed file stops the
    build instead of being replayed. The same iteration published by two runs (a resume that
    re-publishes its starting point) is kept once, from the earlier run.
    """
    found: dict[int, PublishedCheckpoint] = {}
    candidates = []
    for where, record in records.find_records(results_root):
        if not is_recipe_training(record, task):
            continue
        records.verify_artifacts(record, where)
        for art in record.artifacts:
            iteration = checkpoint_iteration(art.path)
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
    run_name = _run_name(checkpoint.run_id)
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


def recorded_replays(results_root: str | Path) -> list[RecordedReplay]:
    """Every finished replay record under ``results_root``, in folder order."""
    return [
        RecordedReplay(where, rec)
        for where, rec in records.find_records(results_root)
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


def load_trajectory(where: str | Path, record: records.RunRecord | None = None) -> pd.DataFrame:
    """A replay's per-frame ``trajectory.csv`` (its artifact of kind ``trajectory``)."""
    import pandas as pd

    where = Path(where)
    record = record or records.load_record(where)
    for art in record.artifacts:
        if art.kind == "trajectory":
            return pd.read_csv(where / art.path, index_col="frame")
    raise records.RecordError(f"{where / records.RECORD_FILENAME}: replay has no trajectory")


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
    names = sorted(set(by_name) | set(expected), key=lambda n: (checkpoint_iteration(n) or -1, n))
    rows = {}
    for name in names:
        ckpt = by_name.get(name)
        rep = recorded_protocol_replay(ckpt, replays) if ckpt else None
        prov = rep.record.provenance if rep else None
        rows[name] = {
            "published in": f"book/results/{ckpt.run}" if ckpt else "not published yet",
            "sha256": ckpt.sha256[:12] if ckpt else "",
            "recorded protocol replay": (
                f"book/results/{rep.where.name} ({prov.device_name}, {prov.backend})"
                if rep and prov
                else "none"
            ),
        }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "checkpoint"
    return frame


# ----------------------------------------------------------------------------- live replays


@dataclass(frozen=True)
class LiveReplay:
    """One replay run in this process, with its record and the text it printed."""

    label: str
    run_dir: Path
    record: records.RunRecord
    seconds: float
    log: str

    @property
    def summary(self) -> dict[str, Any]:
        return dict(self.record.summary)

    @property
    def video(self) -> Path | None:
        return RecordedReplay(self.run_dir, self.record).video

    @property
    def trajectory(self) -> pd.DataFrame:
        return load_trajectory(self.run_dir, self.record)


def replay_live(
    checkpoint: str | Path,
    out_root: str | Path,
    name: str,
    *,
    label: str | None = None,
    device: str = "cpu",
    video: bool = False,
    width: int = 320,
    height: int = 240,
    task: str = TASK_ID,
    frozen_broadphase: bool = False,
    frames: int = PROTOCOL_FRAMES,
    quiet: bool = True,
) -> LiveReplay:
    """Replay ``checkpoint`` with the protocol's seed and command via :func:`replay.run`.

    With ``quiet`` the environment's printed set-up (network layout, Warp module loads, mjlab
    configuration warnings) is kept in :attr:`LiveReplay.log` instead of the page; errors are
    raised as usual.
    """
    from mjlab_microduck import replay

    request = replay.ReplayRequest(
        checkpoint=Path(checkpoint), task=task, frames=frames, seed=PROTOCOL_SEED,
        lin_vel_x=PROTOCOL_LIN_VEL_X, device=device, video=video, width=width, height=height,
        frozen_broadphase=frozen_broadphase,
    )  # fmt: skip
    buffer = io.StringIO()
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        if quiet:
            stack.enter_context(contextlib.redirect_stdout(buffer))
            stack.enter_context(contextlib.redirect_stderr(buffer))
        run_dir, record = replay.run(request, Path(out_root), name, progress=False)
    return LiveReplay(
        label=label or Path(checkpoint).name, run_dir=run_dir, record=record,
        seconds=time.monotonic() - started, log=buffer.getvalue(),
    )  # fmt: skip


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
    from mjlab_microduck.replay import FELL_TRUNK_Z_M, FELL_UPRIGHT

    z, upright = summary.get("min_trunk_z_m"), summary.get("min_upright_proxy")
    if z is None or upright is None:
        return None
    return 0.0 if z >= FELL_TRUNK_Z_M and upright >= FELL_UPRIGHT else None


def reference_rows() -> dict[str, dict[str, Any]]:
    """The reference replays as summaries the rules accept; the fell-like fraction, which the
    original chapter does not tabulate, is filled in only where the minima imply it."""
    rows = {}
    for row in REFERENCE_R9700_REPLAYS:
        summary = dict(row)
        summary["fell_like_fraction"] = implied_fell_like_fraction(row)
        rows[row["checkpoint"]] = summary
    return rows


def reference_table() -> pd.DataFrame:
    """The replay table reported on a Radeon AI PRO R9700 in the original chapter.

    The fell-like fraction column says ``0 (implied by the minima)`` where that follows from
    the reported minima; it is not a reported figure.
    """
    frame = replay_table(reference_rows()).astype(object)
    column = "fell-like fraction"
    frame[column] = [
        "0 (implied by the minima)" if value == 0.0 else None for value in frame[column]
    ]
    return frame


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


def device_agreement_sentence(
    live: Mapping[str, Mapping[str, Any]], recorded: Mapping[str, Mapping[str, Any]]
) -> str:
    """Whether two devices' replays of the same checkpoints agree, as a sentence.

    Agreement is on the verdict (terminations, fell-like fraction, walking or not); the largest
    absolute differences of the continuous metrics are quoted, not hidden.
    """
    common = [name for name in live if name in recorded]
    if not common:
        return "No checkpoint has a replay on both machines yet, so there is nothing to compare."

    def outcome(summary: Mapping[str, Any]) -> tuple:
        v = verdict(summary)
        return (summary.get("done_count"), v.stable, v.walks)

    disagree = [n for n in common if outcome(live[n]) != outcome(recorded[n])]
    largest = {
        title: max(abs(float(live[n][key]) - float(recorded[n][key])) for n in common)
        for title, key in (
            ("4 s displacement", "forward_displacement_m"),
            ("mean forward velocity", "mean_forward_velocity_mps"),
            ("min trunk z", "min_trunk_z_m"),
        )
    }
    units = {"4 s displacement": "m", "mean forward velocity": "m/s", "min trunk z": "m"}
    diffs = ", ".join(f"{v:.4f} {units[t]} in {t}" for t, v in largest.items())
    n = len(common)
    where = (
        "the one checkpoint replayed on both machines"
        if n == 1
        else f"the {n} checkpoints replayed on both machines"
    )
    if disagree:
        return (
            f"On {where} the outcomes differ for {', '.join(disagree)}; the largest "
            f"differences are {diffs}."
        )
    return (
        f"On {where} the outcomes agree (the same number of terminations, the same stability "
        f"and walking verdicts); the largest differences are {diffs}."
    )


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
        iteration = checkpoint_iteration(label)
        return (
            not verdict(s, command_mps).stable,
            -(velocity if velocity is not None else -math.inf),
            error if error is not None else math.inf,
            -(iteration if iteration is not None else -1),
        )

    return sorted(rows, key=key)


def acceptance_sentence(
    rows: Mapping[str, Mapping[str, Any]], command_mps: float = PROTOCOL_LIN_VEL_X
) -> str:
    """The outcome of the rules for a table, as one or two sentences for the page."""
    if not rows:
        return "No checkpoint was replayed, so none passes the 4-s rule."
    ranking = rank_checkpoints(rows, command_mps)
    best = ranking[0]
    walkers = [name for name in ranking if verdict(rows[name], command_mps).walks]
    threshold = WALK_FRACTION_OF_COMMAND * command_mps
    single = len(ranking) == 1
    if walkers:
        if single:
            return f"The only replayed checkpoint, {best}, passes the 4-s rule."
        return (
            f"{len(walkers)} of the {len(ranking)} replayed checkpoints walk "
            f"({', '.join(walkers)}); the best, {best}, passes the 4-s rule."
        )
    best_verdict = verdict(rows[best], command_mps)
    subject = (
        f"The only replayed checkpoint, {best},"
        if single
        else f"None of the {len(ranking)} replayed checkpoints walks; the best, {best},"
    )
    if best_verdict.stable:
        velocity = rows[best].get("mean_forward_velocity_mps")
        outcome = (
            f"is stable but reaches only {velocity:.4f} m/s of the {threshold:.3f} m/s required."
        )
    else:
        outcome = f"is {best_verdict.reason}."
    return f"{subject} {outcome} The 4-s rule is not met."


# ----------------------------------------------------------------------------- presets


def recorded_presets(results_root: str | Path) -> dict[str, str]:
    """Tuning preset name -> task, for every published recipe run whose record names a preset."""
    found: dict[str, str] = {}
    for _, record in sorted(records.find_records(results_root), key=lambda r: r[1].started_at):
        tuning = record.config.get("tuning")
        task = str(record.config.get("task"))
        if isinstance(tuning, dict) and is_recipe_training(record, task):
            found.setdefault(str(tuning["name"]), task)
    return found


def recorded_preset_rows(results_root: str | Path, task: str) -> dict[str, dict[str, Any]]:
    """Checkpoint name -> summary of the recorded protocol replay, for one preset's run."""
    replays = recorded_replays(results_root)
    rows = {}
    for ckpt in published_checkpoints(results_root, task=task):
        rep = recorded_protocol_replay(ckpt, replays, task=task)
        if rep is not None:
            rows[ckpt.name] = dict(rep.record.summary)
    return rows


def best_recorded_checkpoint(results_root: str | Path, task: str) -> PublishedCheckpoint:
    """The checkpoint of ``task``'s recipe run that its recorded protocol replays rank first."""
    rows = recorded_preset_rows(results_root, task)
    if not rows:
        raise LookupError(f"no recorded protocol replay of a checkpoint of {task}")
    best = rank_checkpoints(rows)[0]
    return next(c for c in published_checkpoints(results_root, task=task) if c.name == best)


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


def media_dir(repo: str | Path) -> Path:
    """``<repo>/book/_extra/media``: ``html_extra_path`` copies it to ``<site>/media``."""
    return Path(repo) / "book" / "_extra" / MEDIA_DIRNAME


def publish_video(src: str | Path, repo: str | Path, filename: str) -> str:
    """Copy an MP4 where the HTML build publishes it; return its URL relative to a chapter page.

    Chapter pages live one folder below the site root (``notebooks/06_replay.html``), so the
    URL is ``../media/<filename>``. The copy is atomic.
    """
    if not filename.endswith(".mp4") or "/" in filename:
        raise ValueError(f"{filename!r}: expected a plain file name ending in .mp4")
    records.atomic_copy(src, media_dir(repo) / filename)
    return f"../{MEDIA_DIRNAME}/{filename}"


def video_html(url: str, width: int = 480, caption: str | None = None) -> str:
    """A ``<video>`` element for an H.264 MP4 that every browser plays inline."""
    figure = (
        f'<video controls muted loop playsinline preload="metadata" width="{width}">'
        f'<source src="{url}" type="video/mp4">'
        f'Your browser cannot play this video: <a href="{url}">download it</a>.</video>'
    )
    if caption:
        figure = f"<figure>{figure}<figcaption>{caption}</figcaption></figure>"
    return figure


def format_table(frame: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """Round the float columns for display; counts stay integers, missing values say so."""
    shown = frame.copy().astype(object)
    for column in frame.columns:
        for index, value in frame[column].items():
            if value is None or (isinstance(value, float) and math.isnan(value)):
                shown.at[index, column] = "not reported"
            elif column == "terminations":
                shown.at[index, column] = f"{value:g}"
            elif isinstance(value, (int, float)):
                # round first: a tiny negative difference would print as "-0.0000"
                shown.at[index, column] = f"{round(value, digits) + 0.0:.{digits}f}"
    return shown


def seconds_text(values: Sequence[float]) -> str:
    """``"7.9 s"`` or ``"7.6–8.3 s"`` for a list of durations."""
    low, high = min(values), max(values)
    return f"{low:.1f} s" if round(low, 1) == round(high, 1) else f"{low:.1f}–{high:.1f} s"
