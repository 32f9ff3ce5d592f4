"""Export rsl_rl's TensorBoard scalars to a CSV a book can publish.

Event files are large, binary and tied to TensorBoard's version; the book publishes one row per
PPO iteration instead (reward, episode length, throughput, every ``Episode_Termination/*`` term,
curricula, losses), read with TensorBoard's own event reader rather than by parsing protobufs.
A second frame keeps the wall-clock time of each iteration, which the summary needs.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

WALL_TIME_COLUMN = "wall_time"


def read_scalars(event_dir: str | Path) -> pd.DataFrame:
    """All scalar tags under ``event_dir`` as one frame indexed by iteration (``step``).

    Columns are the TensorBoard tags; ``wall_time`` is the latest event time of each iteration.
    Raises FileNotFoundError when the folder holds no event file.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    event_dir = Path(event_dir)
    if not any(event_dir.glob("events.out.tfevents.*")):
        raise FileNotFoundError(f"{event_dir}: no TensorBoard event file")
    # size_guidance 0 keeps every event: the default samples scalars down to 10,000.
    acc = EventAccumulator(str(event_dir), size_guidance={"scalars": 0})
    acc.Reload()
    columns: dict[str, pd.Series] = {}
    wall: dict[int, float] = {}
    for tag in acc.Tags()["scalars"]:
        # "…/time" tags are indexed by seconds, not iterations: they would corrupt the rows.
        if tag.endswith("/time"):
            continue
        events = acc.Scalars(tag)
        columns[tag] = pd.Series({e.step: e.value for e in events}, dtype=float)
        for e in events:
            wall[e.step] = max(wall.get(e.step, 0.0), e.wall_time)
    frame = pd.DataFrame(columns).sort_index()
    frame.index.name = "iteration"
    frame[WALL_TIME_COLUMN] = pd.Series(wall)
    return frame


def export_csv(event_dir: str | Path, csv_path: str | Path) -> pd.DataFrame:
    """Read the scalars and write them atomically to ``csv_path``; returns the frame."""
    from mjlab_microduck.runs.records import atomic_write_text

    frame = read_scalars(event_dir)
    atomic_write_text(csv_path, frame.to_csv())
    return frame
