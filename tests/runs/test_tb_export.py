"""tb_export: TensorBoard event files -> one row per iteration, read with TensorBoard's reader.

The event file is written by torch's own SummaryWriter (what rsl_rl uses), with chosen values,
steps and wall times, so every cell of the exported frame has a hand-known expected value.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from torch.utils.tensorboard import SummaryWriter

from mjlab_microduck.runs.tb_export import WALL_TIME_COLUMN, export_csv, read_scalars

T0 = 1_700_000_000.0

REWARD = {0: -1.5, 1: 0.25, 2: 3.75}
FPS = {0: 1000.0, 1: 2000.0, 2: 3000.0}
FELL = {0: 2.0, 2: 0.5}  # logged only when some episode ended: no row 1


@pytest.fixture()
def event_dir(tmp_path):
    folder = tmp_path / "run"
    writer = SummaryWriter(log_dir=str(folder))
    for step, value in REWARD.items():
        writer.add_scalar("Train/mean_reward", value, step, walltime=T0 + 10 * step)
        # rsl_rl also logs "…/time" tags against seconds, not iterations: must be skipped.
        writer.add_scalar("Train/mean_reward/time", value, 17 + 30 * step, walltime=T0 + 1)
    for step, value in FPS.items():
        writer.add_scalar("Perf/total_fps", value, step, walltime=T0 + 10 * step + 4)
    for step, value in FELL.items():
        writer.add_scalar("Episode_Termination/fell_over", value, step, walltime=T0 + 10 * step + 2)
    writer.close()
    return folder


def test_values_and_steps_become_rows(event_dir):
    frame = read_scalars(event_dir)
    assert frame.index.name == "iteration"
    assert list(frame.index) == [0, 1, 2]
    assert frame["Train/mean_reward"].tolist() == pytest.approx(list(REWARD.values()))
    assert frame["Perf/total_fps"].tolist() == pytest.approx(list(FPS.values()))
    fell = frame["Episode_Termination/fell_over"]
    assert fell[0] == pytest.approx(2.0) and fell[2] == pytest.approx(0.5)
    assert math.isnan(fell[1]), "a step without a value must stay missing, not become 0"


def test_time_tags_are_skipped(event_dir):
    frame = read_scalars(event_dir)
    assert not [c for c in frame.columns if c.endswith("/time")]
    # The skipped tag's steps (17, 47, 77 seconds) must not have created rows either.
    assert set(frame.index) == {0, 1, 2}


def test_wall_time_is_the_latest_event_of_each_iteration(event_dir):
    frame = read_scalars(event_dir)
    # Per step the latest write is Perf/total_fps at T0 + 10*step + 4.
    assert frame[WALL_TIME_COLUMN].tolist() == pytest.approx([T0 + 4, T0 + 14, T0 + 24], abs=1e-3)
    assert frame.columns[-1] == WALL_TIME_COLUMN


def test_export_csv_round_trips_and_leaves_no_temp_file(event_dir, tmp_path):
    csv = tmp_path / "out" / "scalars.csv"
    frame = export_csv(event_dir, csv)
    back = pd.read_csv(csv, index_col="iteration")
    assert list(back.columns) == list(frame.columns)
    pd.testing.assert_frame_equal(back, frame, check_dtype=False, check_names=False)
    assert sorted(p.name for p in csv.parent.iterdir()) == ["scalars.csv"]


def test_folder_without_events_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no TensorBoard event file"):
        read_scalars(tmp_path)
