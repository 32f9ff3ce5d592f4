"""Does an env step replayed from graphs give what plain calls give, on this device?

Problem: the ``manager_graphs`` hook replays kernels, not Python. Its CPU stand-in checks the
Python bookkeeping value for value (the tests), but what only a GPU's own graphs can get wrong
(their memory, their stream) shows only on that GPU, which has no test runner. This job steps a
task's env with the same random actions three times, twice with plain calls and once with the
hook's scope replayed, and compares every observation, reward, termination and logged metric.
Replayed steps pass when they differ from plain ones no more than two plain runs differ from each
other (GPU physics need not repeat bit for bit), or by at most :data:`TOLERANCE`, and when every
call of the scope was captured and replayed (none left eager).

On a CPU the hook's recorded stand-in (``emulate``) replays; elsewhere the device's graphs
(``MICRODUCK_MANAGER_GRAPHS=1``). The hook's variables are put back afterwards.

No-op: importing this module does nothing.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass, field
from typing import Any, Literal

from mjlab_microduck.compat import manager_graphs
from mjlab_microduck.runtime import backend

TASK = "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesTuning"
TOLERANCE = 1e-5
Scope = Literal["managers", "step"]


@dataclass(frozen=True)
class GraphCheckRequest:
    """Step a task's env plainly twice and once replayed from graphs; pass when the replayed
    steps match. Exit 0 pass, 1 fail, 2 bad input."""

    device: str = "cpu"
    """torch device of the env, e.g. cpu or cuda:0"""
    scope: Scope = "step"
    """the hook's scope to replay (MICRODUCK_GRAPH_SCOPE)"""
    task: str = TASK
    """the registered task whose env steps"""
    num_envs: int = 6
    """envs stepped"""
    steps: int = 40
    """env steps per run (the first four of each call are eager: three watched, one captured)"""
    seed: int = 4
    """the env's seed; the actions are drawn from a generator of their own"""
    json: bool = False
    """print the result as JSON"""

    def check(self) -> None:
        """Refuse what can be seen before an env exists (``ValueError``, one line)."""
        if self.num_envs < 1:
            raise ValueError(f"--num-envs must be at least 1, got {self.num_envs}")
        if self.steps < 8:
            raise ValueError(f"--steps must be at least 8 (four eager calls, then replays), "
                             f"got {self.steps}")  # fmt: skip
        backend.parse_device(self.device)


@dataclass
class GraphCheckResult:
    """What the replayed run did against the plain ones."""

    device: str
    scope: str
    num_envs: int
    steps: int
    resets: int
    """terminated or timed-out envs over the plain run's steps (resets replayed too)"""
    calls: int
    graphs: int
    replays: int
    eager: dict[str, str] = field(default_factory=dict)
    spread: float = 0.0
    """largest difference between the two plain runs"""
    difference: float = 0.0
    """largest difference between the replayed run and the first plain one"""

    @property
    def passed(self) -> bool:
        return (not self.eager and self.graphs > 0 and self.replays > 0
                and self.difference <= max(self.spread, TOLERANCE))  # fmt: skip

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        eager = f", eager: {self.eager}" if self.eager else ""
        return (f"{verdict}: scope {self.scope} on {self.device}, {self.num_envs} envs x "
                f"{self.steps} steps ({self.resets} resets): {self.calls} calls, {self.graphs} "
                f"graphs, {self.replays} replays; largest difference {self.difference:.3g} "
                f"against {self.spread:.3g} between plain runs{eager}")  # fmt: skip


def env_steps(request: GraphCheckRequest) -> list[list[Any]]:
    """Every step's actor and critic observations, rewards, terminations, time-outs and
    logged metrics, cloned, under random actions that make robots fall and reset."""
    import torch
    import warp as wp
    from mjlab.envs import ManagerBasedRlEnv

    import mjlab_microduck.tasks  # noqa: F401  (hooks first, then task registration)
    from mjlab_microduck.tasks.velocity import env_cfg_of_task

    wp.config.quiet = True  # the verdict stays one line: no module loads
    cfg = env_cfg_of_task(request.task)
    cfg.scene.num_envs = request.num_envs
    cfg.seed = request.seed
    with contextlib.redirect_stdout(io.StringIO()):  # mjlab prints every manager's table
        env = ManagerBasedRlEnv(cfg=cfg, device=request.device)
    generator = torch.Generator().manual_seed(5)
    out = []
    try:
        env.reset()
        for _ in range(request.steps):
            action = torch.randn(request.num_envs, env.action_manager.total_action_dim,
                                 generator=generator).to(request.device)  # fmt: skip
            obs, reward, terminated, truncated, extras = env.step(action)
            logged = [value.clone() for _, value in sorted(extras["log"].items())
                      if isinstance(value, torch.Tensor)]  # fmt: skip
            out.append([obs["actor"].clone(), obs["critic"].clone(), reward.clone(),
                        terminated.clone(), truncated.clone(), *logged])  # fmt: skip
    finally:
        env.close()
    return out


def largest_difference(a: list[list[Any]], b: list[list[Any]]) -> float:
    """The largest absolute difference between two runs of :func:`env_steps`; infinite when
    they hand out different things (another number of steps or of logged metrics)."""
    if len(a) != len(b) or any(len(x) != len(y) for x, y in zip(a, b, strict=False)):
        return float("inf")
    largest = 0.0
    for step_a, step_b in zip(a, b, strict=True):
        for x, y in zip(step_a, step_b, strict=True):
            largest = max(largest, float((x.double() - y.double()).abs().max()))
    return largest


def compare(request: GraphCheckRequest) -> GraphCheckResult:
    """Run the env plainly twice and once replayed in the request's scope, and compare."""
    with manager_graphs.installed("0", request.scope):
        plain = env_steps(request)
        again = env_steps(request)
    replay_mode = "emulate" if request.device == "cpu" else "1"
    with manager_graphs.installed(replay_mode, request.scope):
        replayed = env_steps(request)
        details = manager_graphs.status().details
    return GraphCheckResult(
        device=request.device, scope=request.scope, num_envs=request.num_envs,
        steps=request.steps, resets=sum(int(step[3].sum() + step[4].sum()) for step in plain),
        calls=details.get("managers", 0), graphs=details.get("graphs", 0),
        replays=details.get("replays", 0), eager=dict(details.get("eager", {})),
        spread=largest_difference(plain, again), difference=largest_difference(plain, replayed),
    )  # fmt: skip
