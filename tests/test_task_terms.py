"""The task terms the package adds, on hand-computed values (no env needed)."""

from types import SimpleNamespace

import pytest
import torch

from mjlab_microduck.tasks import mdp
from mjlab_microduck.tasks.velocity import ACTION_RATE_STAGES, STANDING_STAGES


def test_standing_fraction_follows_the_last_stage_reached():
    stages = [
        {"step": 0, "fraction": 0.02},
        {"step": 100, "fraction": 0.05},
        {"step": 200, "fraction": 0.1},
    ]
    assert mdp.standing_fraction_at(0, stages) == 0.02
    assert mdp.standing_fraction_at(99, stages) == 0.02
    assert mdp.standing_fraction_at(100, stages) == 0.05
    assert mdp.standing_fraction_at(10_000, stages) == 0.1


def test_curricula_are_counted_in_env_steps_of_24_per_iteration():
    assert STANDING_STAGES[1] == {"step": 500 * 24, "fraction": 0.05}
    assert ACTION_RATE_STAGES[-1] == {"step": 1500 * 24, "weight": -1.0}


def test_raise_standing_fraction_updates_the_command_cfg():
    cfg = SimpleNamespace(rel_standing_envs=0.0)
    term = SimpleNamespace(cfg=cfg)
    env = SimpleNamespace(
        common_step_counter=750 * 24, command_manager=SimpleNamespace(get_term=lambda name: term)
    )
    out = mdp.raise_standing_fraction(env, torch.arange(3), "twist", STANDING_STAGES)
    assert cfg.rel_standing_envs == 0.10
    assert float(out["rel_standing_envs"]) == pytest.approx(0.10)


def test_trunk_below_height():
    z = torch.tensor([0.11, -0.049, -0.051, -3.0])
    assert mdp.trunk_below_height(z, -0.05).tolist() == [False, False, True, True]
