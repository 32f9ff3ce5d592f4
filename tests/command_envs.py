"""Small CPU envs of one task for the command-term tests, and the check that a command term
with its share at zero draws exactly what the term it extends draws."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch
from mjlab.envs import ManagerBasedRlEnv

import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)
from mjlab_microduck.tasks.velocity import env_cfg_of_task


@contextmanager
def cpu_env(
    task: str, num_envs: int, seed: int, device: str = "cpu"
) -> Iterator[ManagerBasedRlEnv]:
    """``task``'s training env with ``num_envs`` envs, reset, closed afterwards; on the CPU
    unless a GPU test names its ``device``."""
    cfg = env_cfg_of_task(task)
    cfg.scene.num_envs = num_envs
    cfg.seed = seed
    env = ManagerBasedRlEnv(cfg=cfg, device=device)
    env.reset()
    try:
        yield env
    finally:
        env.close()


def step_outputs(env: ManagerBasedRlEnv, count: int, seed: int) -> list[torch.Tensor]:
    """``count`` steps of ``env`` with random actions in [-1, 1] drawn from ``seed``: each
    step's actor and critic observations, rewards and terminations, cloned."""
    generator = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        action = torch.randn(env.num_envs, env.action_manager.total_action_dim, generator=generator)
        obs, reward, terminated, _, _ = env.step(action.clamp(-1, 1))
        out += [obs["actor"].clone(), obs["critic"].clone(), reward.clone(), terminated.clone()]
    return out


def assert_same_steps_fewer_reads(
    task: str, install: Callable[[], object], seed: int, fewer_per_step: int
) -> None:
    """``task`` on the CPU (4 envs) before and after ``install()``: identical observations,
    rewards and terminations over 12 steps, and at least ``fewer_per_step`` fewer host reads
    per env step after it."""
    from mjlab_microduck.runtime.dispatch_count import host_reads

    with cpu_env(task, 4, seed=seed) as env:
        theirs = step_outputs(env, 12, seed=seed)
        own_reads = host_reads(lambda: step_outputs(env, 2, seed=seed))
    assert install()
    with cpu_env(task, 4, seed=seed) as env:
        ours = step_outputs(env, 12, seed=seed)
        fixed_reads = host_reads(lambda: step_outputs(env, 2, seed=seed))
    assert all(torch.equal(a, b) for a, b in zip(theirs, ours, strict=True))
    assert own_reads - fixed_reads >= 2 * fewer_per_step, (own_reads, fixed_reads)


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
