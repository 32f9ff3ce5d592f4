"""Does an env step replayed from graphs give what plain calls give, on this device?

Problem: the ``manager_graphs`` hook replays kernels, not Python. Its CPU stand-in checks the
Python bookkeeping value for value (the tests), but what only a GPU's own graphs can get wrong
(their memory, their stream) shows only on that GPU, which has no test runner. This job steps a
task's env with the same random actions several times with plain calls (``plain_runs``, three
by default) and once with the hook's scope replayed, and compares every observation, reward,
termination and logged metric, step by step. A replayed step passes when it differs from the
nearest plain run no more than the plain runs differ from one another at that step (GPU physics
need not repeat bit for bit, random actions make the runs part as robots fall, and one pair of
plain runs may happen to agree at a step where a third does not), or by at most
:data:`TOLERANCE`; the check passes when every step
does and every call of the scope was captured and replayed (none left eager). A failure names
the first step that parts and what parted there, which is where to look; on a GPU the result
also lists the operators of a plain step that take a tensor in host memory beside device
tensors (``host_tensors``), which a graph may replay with a stale value.

On a CPU the hook's recorded stand-in (``emulate``) replays; elsewhere the device's graphs
(``MICRODUCK_MANAGER_GRAPHS=1``). The hook's variables are put back afterwards.

No-op: importing this module does nothing.
"""

from __future__ import annotations

import contextlib
import io
import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mjlab_microduck.compat import manager_graphs
from mjlab_microduck.runtime import backend, graph_replay

TASK = "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesTuning"
TOLERANCE = 1e-5
Scope = Literal["managers", "step"]


@dataclass(frozen=True)
class GraphCheckRequest:
    """Step a task's env plainly several times and once replayed from graphs; pass when the
    replayed steps match. Exit 0 pass, 1 fail, 2 bad input."""

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
    plain_runs: int = 3
    """runs with plain calls: their differences at each step are the noise the replayed run is
    measured against (at least 2)"""
    json: bool = False
    """print the result as JSON"""

    def check(self) -> None:
        """Refuse what can be seen before an env exists (``ValueError``, one line)."""
        if self.num_envs < 1:
            raise ValueError(f"--num-envs must be at least 1, got {self.num_envs}")
        if self.plain_runs < 2:
            raise ValueError(f"--plain-runs must be at least 2, got {self.plain_runs}")
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
    """largest difference between two plain runs"""
    difference: float = 0.0
    """largest difference, over the steps, between the replayed run and the plain run nearest it
    at that step"""
    parted_at: int | None = None
    """the first step (0-based) whose replayed values differ from the nearest plain run's more
    than the plain runs differ from one another there (None: none does)"""
    parted: str = ""
    """what parted there, e.g. ``rewards: 0.31 against 0`` or ``logged metrics: ...``"""
    host_tensors: list[str] = field(default_factory=list)
    """operators of a plain step on a GPU that take a host tensor beside device tensors, each
    ``<operator> at <file:line>``, once each (none on a CPU, where every tensor is a host one)"""

    @property
    def passed(self) -> bool:
        return (not self.eager and self.graphs > 0 and self.replays > 0
                and self.parted_at is None)  # fmt: skip

    def line(self) -> str:
        verdict = "PASS" if self.passed else "FAIL"
        eager = f", eager: {self.eager}" if self.eager else ""
        parted = ("" if self.parted_at is None
                  else f"; parts at step {self.parted_at}: {self.parted}")  # fmt: skip
        host = (f"; {len(self.host_tensors)} operators of a step read host tensors, the first "
                f"{self.host_tensors[0]}" if self.host_tensors else "")  # fmt: skip
        return (f"{verdict}: scope {self.scope} on {self.device}, {self.num_envs} envs x "
                f"{self.steps} steps ({self.resets} resets): {self.calls} calls, {self.graphs} "
                f"graphs, {self.replays} replays; largest difference {self.difference:.3g} "
                f"against {self.spread:.3g} between plain runs{parted}{host}{eager}")  # fmt: skip


Step = dict[str, Any]
"""One env step's values by name: observations, rewards, terminations, time-outs and each logged
metric (``logged <key>``)."""


def env_steps(request: GraphCheckRequest, host_tensors: list[str] | None = None) -> list[Step]:
    """Every step's actor and critic observations, rewards, terminations, time-outs and
    logged metrics, cloned, under random actions that make robots fall and reset. Given
    ``host_tensors``, the second step is watched and each operator it dispatches with a host
    tensor beside device tensors is added to it, once."""
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
        for index in range(request.steps):
            action = torch.randn(request.num_envs, env.action_manager.total_action_dim,
                                 generator=generator).to(request.device)  # fmt: skip
            # the second step: the first may fill caches from Python once
            watch = host_tensors is not None and index == 1
            with graph_replay.HostTraffic() if watch else contextlib.nullcontext() as traffic:
                obs, reward, terminated, truncated, extras = env.step(action)
            if watch:
                host_tensors.extend(dict.fromkeys(traffic.host_tensors))
            step = {"actor observations": obs["actor"].clone(),
                    "critic observations": obs["critic"].clone(), "rewards": reward.clone(),
                    "terminations": terminated.clone(), "time-outs": truncated.clone()}
            step.update((f"logged {key}", value.clone()) for key, value
                        in sorted(extras["log"].items()) if isinstance(value, torch.Tensor))
            out.append(step)  # fmt: skip
    finally:
        env.close()
    return out


def step_differences(a: list[Step], b: list[Step]) -> list[tuple[float, str]]:
    """Per step of two runs of :func:`env_steps`: the largest absolute difference and where it
    is (``name: value against value``); infinite where the steps hold different names or
    shapes, a NaN against a number, and for each step one run has beyond the other."""
    out = []
    for step_a, step_b in zip(a, b, strict=False):
        if step_a.keys() != step_b.keys():
            only = sorted(step_a.keys() ^ step_b.keys())
            out.append((float("inf"), f"only one run has {', '.join(only)}"))
            continue
        largest, where = 0.0, ""
        for name, x in step_a.items():
            y = step_b[name]
            if x.shape != y.shape:
                largest, where = float("inf"), (f"{name}: shape {tuple(x.shape)} against "
                                                f"{tuple(y.shape)}")  # fmt: skip
                break
            gap = (x.double() - y.double()).abs().flatten()
            # a NaN on one side only is as far apart as values get; on both, no difference
            gap = _nan_gaps(gap, x, y)
            if gap.numel() and float(gap.max()) > largest:
                at = int(gap.argmax())
                largest = float(gap[at])
                where = (f"{name}: {float(x.flatten()[at]):.4g} against "
                         f"{float(y.flatten()[at]):.4g}")  # fmt: skip
        out.append((largest, where))
    return out + [(float("inf"), "one run has more steps")] * abs(len(a) - len(b))


def _nan_gaps(gap: Any, x: Any, y: Any) -> Any:
    """``gap`` with a NaN on one side only as infinity, on both sides as 0."""
    import torch

    nan_x, nan_y = x.double().flatten().isnan(), y.double().flatten().isnan()
    gap = torch.where(nan_x & nan_y, torch.zeros_like(gap), gap)
    return torch.where(nan_x ^ nan_y, torch.full_like(gap, float("inf")), gap)


def noise(plains: Sequence[list[Step]]) -> list[float]:
    """Per step: the largest difference between any two of the plain runs ``plains``."""
    pairs = [step_differences(a, b) for a, b in itertools.combinations(plains, 2)]
    return [max(gap for gap, _ in column) for column in zip(*pairs, strict=True)]


def nearest_differences(
    plains: Sequence[list[Step]], replayed: list[Step]
) -> list[tuple[float, str]]:
    """Per step: the difference between ``replayed`` and the plain run nearest it there."""
    against = [step_differences(plain, replayed) for plain in plains]
    return [min(column, key=lambda hit: hit[0]) for column in zip(*against, strict=True)]


def first_parting(plains: Sequence[list[Step]], replayed: list[Step]) -> tuple[int, str] | None:
    """The first step at which ``replayed`` differs from the nearest of ``plains`` (plain runs,
    at least two) by more than the plain runs differ from one another there, and by more than
    :data:`TOLERANCE`; None when none does."""
    if len(plains) < 2:
        raise ValueError(f"the noise needs at least 2 plain runs, got {len(plains)}")
    return _parting(nearest_differences(plains, replayed), noise(plains))


def _parting(
    nearest: Sequence[tuple[float, str]], spreads: Sequence[float]
) -> tuple[int, str] | None:
    """:func:`first_parting` of per-step differences already measured."""
    for step, ((gap, where), spread) in enumerate(zip(nearest, spreads, strict=False)):
        if gap > max(spread, TOLERANCE):
            return step, where
    return None


def compare(request: GraphCheckRequest) -> GraphCheckResult:
    """Run the env plainly ``plain_runs`` times and once replayed in the request's scope, and
    compare."""
    host_tensors: list[str] = []
    with manager_graphs.installed("0", request.scope):
        plains = [env_steps(request, host_tensors if run == 0 else None)
                  for run in range(request.plain_runs)]  # fmt: skip
    replay_mode = "emulate" if request.device == "cpu" else "1"
    with manager_graphs.installed(replay_mode, request.scope):
        replayed = env_steps(request)
        details = manager_graphs.status().details
    # each difference measured once: the parting, the spread and the largest gap read them
    nearest, spreads = nearest_differences(plains, replayed), noise(plains)
    parted_at, parted = _parting(nearest, spreads) or (None, "")
    return GraphCheckResult(
        device=request.device, scope=request.scope, num_envs=request.num_envs,
        steps=request.steps, resets=sum(
            int(step["terminations"].sum() + step["time-outs"].sum()) for step in plains[0]),
        calls=details.get("managers", 0), graphs=details.get("graphs", 0),
        replays=details.get("replays", 0), eager=dict(details.get("eager", {})),
        spread=max(spreads, default=0.0),
        difference=max((gap for gap, _ in nearest), default=0.0),
        parted_at=parted_at, parted=parted, host_tensors=host_tensors,
    )  # fmt: skip
