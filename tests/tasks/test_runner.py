"""The velocity runner writes each checkpoint whole or not at all."""

from types import SimpleNamespace

import pytest
import torch

from mjlab_microduck.runs import names
from mjlab_microduck.tasks.runner import AtomicSaveVelocityRunner


class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("stopped while saving")


def _runner(state: dict, logger: str = "tensorboard") -> tuple[AtomicSaveVelocityRunner, list]:
    """A runner with only what mjlab's ``save`` reads: the algorithm's state, the iteration, the
    env's step counter, the config's upload flag and the logger (no policy: the ONNX export
    beside the checkpoint fails and says so, as mjlab lets it)."""
    uploads: list = []
    runner = object.__new__(AtomicSaveVelocityRunner)
    runner.alg = SimpleNamespace(save=lambda: dict(state))
    runner.current_learning_iteration = 5
    runner.env = SimpleNamespace(unwrapped=SimpleNamespace(common_step_counter=120))
    runner.cfg = {"upload_model": True}
    runner.logger = SimpleNamespace(
        logger_type=logger, save_model=lambda path, it: uploads.append((path, it))
    )
    return runner, uploads


def test_a_saved_checkpoint_holds_mjlabs_dictionary_and_nothing_is_left_beside_it(tmp_path):
    runner, uploads = _runner({"model_state_dict": {"w": torch.ones(2)}})
    path = tmp_path / "model_5.pt"
    runner.save(str(path))
    saved = torch.load(path, weights_only=False)
    assert saved["iter"] == 5 and torch.equal(saved["model_state_dict"]["w"], torch.ones(2))
    assert saved["infos"]["env_state"] == {"common_step_counter": 120}
    assert [p.name for p in tmp_path.iterdir()] == ["model_5.pt"]


def test_a_save_that_stops_halfway_leaves_no_checkpoint_and_the_earlier_one_whole(tmp_path):
    good, _ = _runner({"model_state_dict": {"w": torch.zeros(3)}})
    good.save(str(tmp_path / "model_0.pt"))
    broken, _ = _runner({"model_state_dict": _Unpicklable()})
    with pytest.raises(RuntimeError, match="stopped while saving"):
        broken.save(str(tmp_path / "model_5.pt"))
    assert not (tmp_path / "model_5.pt").exists()
    # What is left is a .partial file no checkpoint listing takes for a checkpoint.
    checkpoints = [p.name for p in tmp_path.iterdir() if names.is_checkpoint_name(p)]
    assert checkpoints == ["model_0.pt"]
    assert torch.equal(torch.load(tmp_path / "model_0.pt", weights_only=False)
                       ["model_state_dict"]["w"], torch.zeros(3))  # fmt: skip


def test_a_logger_that_uploads_by_name_gets_mjlabs_save_and_the_checkpoints_own_name(tmp_path):
    runner, uploads = _runner({"model_state_dict": {}}, logger="wandb")
    runner.save(str(tmp_path / "model_5.pt"))
    assert uploads == [(str(tmp_path / "model_5.pt"), 5)]
    assert [p.name for p in tmp_path.iterdir()] == ["model_5.pt"]
