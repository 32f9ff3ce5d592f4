"""``TrainRequest.microduck_command``: the shell line of a request parses back to the same run."""

from __future__ import annotations

import pytest


def _parsed(line: str):
    """The request ``microduck train`` builds from ``line``, under the profile it names."""
    import shlex

    from mjlab_microduck.cli._common import parse
    from mjlab_microduck.jobs import train
    from mjlab_microduck.runtime import profiles

    words = shlex.split(line)
    env, rest = (words[0], words[1:]) if "=" in words[0] else (None, words)
    assert rest[:2] == ["microduck", "train"]
    profile = profiles.PROFILES[env.split("=", 1)[1]] if env else profiles.current()
    default = train.TrainRequest(name="train", num_envs=profile.main_envs,
                                 iterations=profile.main_iterations,
                                 save_interval=profile.main_save_interval,
                                 device=profile.device, profile=profile.name)  # fmt: skip
    return parse(train.TrainRequest, rest[2:], "microduck train", default=default)


def test_microduck_command_is_the_shell_line_of_the_same_run():
    from mjlab_microduck.jobs.train import TrainRequest

    smoke = TrainRequest(name="smoke_16x3", num_envs=16, iterations=3, save_interval=3,
                         seed=42, device="cpu", profile="ci")  # fmt: skip
    line = smoke.microduck_command()
    assert line == ("MICRODUCK_PROFILE=ci microduck train --name smoke_16x3 --num-envs 16"
                    " --iterations 3 --save-interval 3")  # fmt: skip
    full = TrainRequest(name="smoke_64x5", num_envs=64, iterations=5, save_interval=5,
                        seed=7, device="cuda:1", profile="full", task="Other-Task")  # fmt: skip
    assert full.microduck_command() == (
        "MICRODUCK_PROFILE=full microduck train --name smoke_64x5 --num-envs 64 --iterations 5"
        " --save-interval 5 --task Other-Task --seed 7 --device cuda:1")
    for request in (smoke, full):
        parsed = _parsed(request.microduck_command())
        for field in ("name", "task", "num_envs", "iterations", "save_interval", "seed",
                      "device", "profile"):
            assert getattr(parsed, field) == getattr(request, field), field


def test_microduck_command_keeps_resume_gpus_extra_args_and_the_broadphase_fault():
    import dataclasses
    from pathlib import Path

    from mjlab_microduck.jobs.train import TrainRequest

    request = TrainRequest(name="more", profile="full", device="cuda", num_envs=128,
                           iterations=50, save_interval=25, logs_root=Path("other logs"),
                           resume_from=Path("logs/run_a/model_99.pt"), frozen_broadphase=True,
                           extra_args=["agent.x=3", "b"], gpu_ids=(0, 1))  # fmt: skip
    line = request.microduck_command()
    assert line.endswith(
        " --logs-root 'other logs' --resume-from logs/run_a/model_99.pt --frozen-broadphase"
        " --extra-args agent.x=3 b --gpu-ids 0 1")  # fmt: skip
    assert _parsed(line) == request  # every field survives the shell line
    with pytest.raises(ValueError, match="start with '-'"):
        dataclasses.replace(request, extra_args=["--agent.x", "3"]).microduck_command()
