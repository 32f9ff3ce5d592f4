"""The replay memo (mjlab_microduck.jobs.replay_memo): a video-less replay computed once per
build is served to an identical request, and only to an identical one."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pandas as pd
import pytest

from mjlab_microduck.compat import faults
from mjlab_microduck.jobs import replay, replay_memo
from mjlab_microduck.jobs.replay import ReplayRequest


@pytest.fixture
def request_(tmp_path):
    checkpoint = tmp_path / "model_7.pt"
    checkpoint.write_bytes(b"weights")
    return ReplayRequest(checkpoint=checkpoint, video=False)


@pytest.fixture
def memo(tmp_path, monkeypatch):
    where = tmp_path / "memo"
    monkeypatch.setenv(replay_memo.ENV_VAR, str(where))
    return where


def _trajectory() -> pd.DataFrame:
    """Two frames with every column :func:`replay.simulate` writes."""
    return pd.DataFrame({
        "x": [0.0, 0.0125], "y": [0.0, 0.001], "z": [0.1, 0.1], "yaw": [0.0, 0.01],
        "yaw0": [0.0, 0.0], "vx_b": [0.1, 0.15], "vy_b": [0.0, 0.0], "upright": [1.0, 0.99],
        "done": [False, False], "t_s": [0.0, 0.02], "segment": [0, 0], "cmd_vx": [0.15, 0.15],
        "cmd_vy": [0.0, 0.0], "cmd_wz": [0.0, 0.0], "wz_b": [0.0, 0.5]})  # fmt: skip


def test_the_key_follows_the_physics_and_the_weights_not_the_rendering(request_, tmp_path):
    base = replay_memo.key(request_)
    assert base is not None and len(base) == 64
    assert replay_memo.key(replace(request_, width=64, height=48, camera="fixed")) == base
    for changed in (replace(request_, seed=43), replace(request_, lin_vel_x=0.2),
                    replace(request_, frames=50), replace(request_, task="Other-Task"),
                    replace(request_, frozen_broadphase=True)):  # fmt: skip
        assert replay_memo.key(changed) != base
    copy = tmp_path / "elsewhere.pt"
    copy.write_bytes(b"weights")
    assert replay_memo.key(replace(request_, checkpoint=copy)) == base  # content, not path
    copy.write_bytes(b"other weights")
    assert replay_memo.key(replace(request_, checkpoint=copy)) != base
    assert replay_memo.key(replace(request_, video=True)) is None
    assert replay_memo.key(replace(request_, gif=True)) is None


def test_the_fault_in_force_is_part_of_the_key(request_, monkeypatch):
    base = replay_memo.key(request_)
    keys = set()
    for mode in ("fork", "list"):  # as faults.status() reports a fault switched on
        with monkeypatch.context() as patch:
            patch.setattr(faults, "is_enabled", lambda: True)
            status = SimpleNamespace(details={"mode": mode})
            patch.setattr(faults, "status", lambda status=status: status)
            keys.add(replay_memo.key(request_))
    assert len(keys) == 2 and base not in keys
    assert replay_memo.key(request_) == base


def test_a_kept_trajectory_comes_back_exactly(request_, memo):
    assert replay_memo.load(request_) is None
    path = replay_memo.store(request_, _trajectory(), 0.02)
    assert path is not None and path.parent == memo
    frame, dt = replay_memo.load(request_)
    pd.testing.assert_frame_equal(frame, _trajectory())
    assert dt == 0.02
    assert replay_memo.load(replace(request_, seed=1)) is None


def test_without_the_variable_nothing_is_read_or_written(request_, tmp_path, monkeypatch):
    monkeypatch.delenv(replay_memo.ENV_VAR, raising=False)
    assert replay_memo.store(request_, _trajectory(), 0.02) is None
    assert replay_memo.load(request_) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model_7.pt"]


def test_simulate_computes_a_replay_once_and_serves_it_to_the_same_request(request_, memo,
                                                                          monkeypatch):  # fmt: skip
    calls = []

    def fake(request, progress):
        calls.append(request)
        return _trajectory(), ["frame"] if request.video else [], 0.02

    monkeypatch.setattr(replay, "_simulate", fake)
    first = replay.simulate(request_, progress=False, memo=True)
    again = replay.simulate(replace(request_, width=64), progress=False, memo=True)
    assert len(calls) == 1
    pd.testing.assert_frame_equal(again[0], first[0])
    assert again[1:] == ([], 0.02)
    with_video = replay.simulate(replace(request_, video=True), progress=False, memo=True)
    assert len(calls) == 2 and with_video[1] == ["frame"]  # frames are never kept
    replay.simulate(replace(request_, seed=7), progress=False, memo=True)
    assert len(calls) == 3
    # A caller that does not ask for the memo (a test patching the simulation) always runs it,
    # and what it computes is not kept.
    replay.simulate(request_, progress=False)
    replay.simulate(replace(request_, seed=8), progress=False)
    assert len(calls) == 5
    assert replay_memo.load(replace(request_, seed=8)) is None


def test_a_run_record_says_when_its_trajectory_came_from_the_memo(request_, memo, monkeypatch,
                                                                  tmp_path):  # fmt: skip
    monkeypatch.setattr(replay, "_simulate", lambda request, progress: (_trajectory(), [], 0.02))
    monkeypatch.setattr(replay.recording, "checkpoint_config", lambda request: {})
    monkeypatch.setattr(replay, "shadows_enabled", lambda request: False)
    _, made = replay.run(request_, tmp_path / "out", "made", progress=False, memo=True)
    _, read = replay.run(request_, tmp_path / "out", "read", progress=False, memo=True)
    assert made.notes is None and read.notes == replay.MEMO_NOTE
    assert made.summary == read.summary


def test_chapter_6s_replays_and_the_tests_of_them_are_one_replay(tmp_path, monkeypatch):
    """The requests that should meet in the memo do: chapter 6's protocol replay of the recipe's
    last checkpoint (book.replay_pages.replay_live), the 0.15 m/s replay of its command sweep and
    test_replay's protocol test of the same checkpoint."""
    from mjlab_microduck.analysis import acceptance
    from mjlab_microduck.book import replay_pages, results

    checkpoint = results.results_root() / results.RECIPE_RUN_1500 / "model_1498.pt"
    made = {}

    def fake_run(request, out_root, name, progress=True, memo=False):
        made.update(request=request, memo=memo)
        raise RuntimeError("stop here")

    monkeypatch.setattr(replay, "run", fake_run)
    with pytest.raises(RuntimeError, match="stop here"):
        replay_pages.replay_live(
            checkpoint, tmp_path, "ch06_model_1498", task=acceptance.RECIPE_TASK
        )
    assert made["memo"] is True
    chapter = replay_memo.key(made["request"])
    protocol = ReplayRequest(checkpoint=checkpoint, task=acceptance.RECIPE_TASK)
    swept = replace(protocol, lin_vel_x=0.15,
                    video=False, gif=False)  # fmt: skip
    tested = ReplayRequest(checkpoint=checkpoint, video=False, task=acceptance.RECIPE_TASK)
    assert chapter is not None and replay_memo.key(swept) == chapter == replay_memo.key(tested)
