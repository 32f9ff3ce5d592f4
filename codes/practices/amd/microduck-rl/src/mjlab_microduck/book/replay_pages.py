"""What the replay chapters show: live replays, the reference replays, tables, videos.

The rules these use (which checkpoint walks, which is best) are pure functions of records in
:mod:`mjlab_microduck.analysis.acceptance`; this module runs replays in the notebook's process,
turns rule outcomes into tables and publishes videos where the HTML build serves them.
"""

from __future__ import annotations

import contextlib
import io
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mjlab_microduck.analysis.acceptance import (
    PROTOCOL_FRAMES,
    PROTOCOL_LIN_VEL_X,
    PROTOCOL_SEED,
    RecordedReplay,
    implied_fell_like_fraction,
    load_trajectory,
    replay_table,
    verdict,
)
from mjlab_microduck.book import reference
from mjlab_microduck.book.preset_pages import kernel_share
from mjlab_microduck.runs import records
from mjlab_microduck.runs.names import TASK_ID

REFERENCE_LABEL = reference.LABEL


MEDIA_DIRNAME = "media"


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

    @property
    def from_memo(self) -> bool:
        """Whether the trajectory was read back from the build's replay memo: then
        :attr:`seconds` timed the reading, not a replay."""
        from mjlab_microduck.jobs import replay

        return self.record.notes == replay.MEMO_NOTE


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
    from mjlab_microduck.jobs import replay

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
        run_dir, record = replay.run(request, Path(out_root), name, progress=False, memo=True)
    return LiveReplay(
        label=label or Path(checkpoint).name, run_dir=run_dir, record=record,
        seconds=time.monotonic() - started, log=buffer.getvalue(),
    )  # fmt: skip


def reference_rows() -> dict[str, dict[str, Any]]:
    """The reference replays as summaries the rules accept; the fell-like fraction, which the
    original chapter does not tabulate, is filled in only where the minima imply it."""
    rows = {}
    for row in reference.FIGURES["replays"]:
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


def outcome(summary: Mapping[str, Any]) -> str:
    """A replay's outcome by the 4-s rule, as the devices must agree on it: its terminations,
    and whether it is stable and walks."""
    v = verdict(summary)
    walks = "walks" if v.walks else "stable, does not walk" if v.stable else "not stable"
    return f"{summary.get('done_count')} terminations, {walks}"


def agreement_table(
    live: Mapping[str, Mapping[str, Any]], recorded: Mapping[str, Mapping[str, Any]]
) -> pd.DataFrame:
    """Per checkpoint replayed on both devices: each one's :func:`outcome`, whether they agree,
    and the absolute differences of the continuous metrics (quoted, not hidden)."""
    rows = {}
    for name in (n for n in live if n in recorded):
        a, b = live[name], recorded[name]
        rows[name] = {
            "outcome, live": outcome(a),
            "outcome, recorded": outcome(b),
            "agree": outcome(a) == outcome(b),
            "|Δ 4 s displacement| (m)": abs(
                a["forward_displacement_m"] - b["forward_displacement_m"]
            ),
            "|Δ mean forward velocity| (m/s)": abs(
                a["mean_forward_velocity_mps"] - b["mean_forward_velocity_mps"]
            ),
            "|Δ min trunk z| (m)": abs(a["min_trunk_z_m"] - b["min_trunk_z_m"]),
        }
    columns = ["outcome, live", "outcome, recorded", "agree", "|Δ 4 s displacement| (m)",
               "|Δ mean forward velocity| (m/s)", "|Δ min trunk z| (m)"]  # fmt: skip
    return pd.DataFrame.from_dict(rows, orient="index", columns=columns)


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


def timing_text(replays: Sequence[LiveReplay], frames: int = PROTOCOL_FRAMES) -> str:
    """How long the replays without video took, as a clause for the page. Only replays that ran
    are timed: one read back from the build's replay memo took no replay time here, and the
    memo keeps no duration of the run that made it."""
    ran = [r.seconds for r in replays if not r.from_memo]
    kept = len(replays) - len(ran)
    memo = ("read back from the build's replay memo (each identical replay ran earlier in the "
            "build)")  # fmt: skip
    if not ran:
        return f"each trajectory was {memo}, so this page timed no replay"
    timed = (f"one replay of {frames} frames without video took {seconds_text(ran)} here, "
             "including building the environment")  # fmt: skip
    if not kept:
        return timed
    verb = "was" if kept == 1 else "were"
    return f"{timed}; {kept} of the {len(replays)} trajectories {verb} {memo}"


def plot_path_against_command(trajectory: pd.DataFrame, label: str):
    """The trunk's path in its start frame (:func:`mjlab_microduck.jobs.replay.path_in_start_frame`)
    beside the straight line the replay protocol commands (``PROTOCOL_LIN_VEL_X`` ahead for
    ``PROTOCOL_FRAMES`` frames, 4 s); returns the axes."""
    import matplotlib.pyplot as plt

    from mjlab_microduck.jobs import replay

    path = replay.path_in_start_frame(trajectory)
    seconds = trajectory.index.to_numpy() * 4.0 / PROTOCOL_FRAMES
    _, ax = plt.subplots(figsize=(6, 3.2))
    ax.plot(path["forward_m"], path["left_m"], label=label)
    ax.plot(PROTOCOL_LIN_VEL_X * seconds, 0 * seconds, "--",
            label=f"commanded: {PROTOCOL_LIN_VEL_X:g} m/s straight ahead")  # fmt: skip
    ax.set_xlabel("forward along the first heading (m)")
    ax.set_ylabel("left (m)")
    ax.set_aspect("equal")
    ax.legend(loc="lower right", fontsize=8)
    return ax


def turn_and_sway(
    trajectory: pd.DataFrame, duration_s: float, yaw_std_rad_s: float, sway_std_mps: float = 0.1
) -> dict[str, float]:
    """Where a straight replay's speed went and what it costs in the tracking rewards:
    :func:`mjlab_microduck.jobs.replay.drift_metrics`, the mean turn rate (heading change over
    ``duration_s``), the share of the yaw-rate reward (kernel ``yaw_std_rad_s``) a steady turn
    at that rate keeps under a zero yaw command, and the share the sideways sway alone would
    forfeit under a linear kernel of ``sway_std_mps`` (per frame, as the reward pays it)."""
    from mjlab_microduck.jobs import replay

    drift = replay.drift_metrics(trajectory)
    rate = drift["heading_change_rad"] / duration_s
    sway_kept = trajectory["vy_b"].map(lambda v: kernel_share(v, sway_std_mps)).mean()
    return {
        **drift,
        "mean_turn_rate_rad_s": rate,
        "yaw-rate reward kept at that turn rate": kernel_share(rate, yaw_std_rad_s),
        f"sway's cost under a {sway_std_mps:g} m/s kernel": 1 - float(sway_kept),
    }
