"""Small CPU envs of one task for the command-term tests, and the check that a command term
with its share at zero draws exactly what the term it extends draws."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from mjlab.envs import ManagerBasedRlEnv

import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)
from mjlab_microduck.tasks.velocity import env_cfg_of_task


@contextmanager
def cpu_env(task: str, num_envs: int, seed: int) -> Iterator[ManagerBasedRlEnv]:
    """``task``'s training env on the CPU with ``num_envs`` envs, reset, closed afterwards."""
    cfg = env_cfg_of_task(task)
    cfg.scene.num_envs = num_envs
    cfg.seed = seed
    env = ManagerBasedRlEnv(cfg=cfg, device="cpu")
    env.reset()
    try:
        yield env
    finally:
        env.close()


def assert_zero_share_draws_as(term, share: str, flags: str, parent_resample, seed: int) -> None:
    """With ``term.cfg.<share>`` at 0, ``term`` draws what ``parent_resample`` (the extended
    term's ``_resample_command``) draws, flags none of its envs ``<flags>`` and leaves the random
    stream where the parent leaves it (the next draw is the same too)."""
    ids = torch.arange(term.num_envs)
    kept = getattr(term.cfg, share)
    try:
        setattr(term.cfg, share, 0.0)
        torch.manual_seed(seed)
        term._resample_command(ids)
        ours, next_ours = term.vel_command_b.clone(), torch.rand(3)
        assert not getattr(term, flags).any()
        torch.manual_seed(seed)
        parent_resample(term, ids)
        assert torch.equal(term.vel_command_b, ours)
        assert torch.equal(torch.rand(3), next_ours)
    finally:
        setattr(term.cfg, share, kept)
