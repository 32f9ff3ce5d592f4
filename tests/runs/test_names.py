"""The naming rules (mjlab_microduck.runs.names): run folders and rsl_rl checkpoints."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from mjlab_microduck.runs import names


@pytest.mark.parametrize("name", ["train_500", "smoke-64x5", "a", "h200.run_1"])
def test_good_run_names_pass(name):
    assert names.check_run_name(name) == name


@pytest.mark.parametrize("name", ["", "../escape", "a/b", "bad name", "_hidden", "-flag", "é"])
def test_bad_run_names_are_one_line(name):
    with pytest.raises(ValueError) as info:
        names.check_run_name(name)
    assert "\n" not in str(info.value) and repr(name) in str(info.value)


def test_run_stem_and_run_name_are_inverse():
    when = dt.datetime(2026, 11, 30, 7, 15, 55, tzinfo=dt.timezone.utc)
    stem = names.run_stem("train_500", when)
    assert stem == "20261130T071555Z_train_500"
    assert names.run_name(stem) == "train_500"
    assert names.run_name("train_500") == "train_500"  # no stamp: unchanged


@pytest.mark.parametrize(
    ("path", "iteration"),
    [("model_0.pt", 0), ("model_1498.pt", 1498), (Path("/x/logs/model_499.pt"), 499)],
)
def test_checkpoint_names_give_their_iteration(path, iteration):
    assert names.is_checkpoint_name(path)
    assert names.checkpoint_iteration(path) == iteration
    assert names.checkpoint_name(iteration) == Path(path).name


@pytest.mark.parametrize("path", ["model_.pt", "model_12.pth", "policy_3.pt", "model_3.pt.bak"])
def test_other_files_are_not_checkpoints(path):
    assert not names.is_checkpoint_name(path)
    with pytest.raises(ValueError, match=r"model_<iteration>\.pt"):
        names.checkpoint_iteration(path)
