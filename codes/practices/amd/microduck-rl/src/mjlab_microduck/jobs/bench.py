"""Benchmarks of the MicroDuck task: how fast it steps, trains, and what the ROCm fixes cost.

Problem it solves: "steps per second" printed by a trainer mixes kernel compilation, graph
capture, asynchronous GPU queues and logging into one number, and a single run says nothing
about noise. This module measures, for ``Mjlab-Velocity-Flat-MicroDuck`` on one device:

``physics``   env steps per second with a zero action and no learning, at several env counts;
``training``  rsl_rl PPO throughput (collection + update) and the iteration time split into
              collection and learning, built in-process the way ``mjlab train`` builds it;
``fixes``     what each ROCm fix costs where it can run: eager stepping against mjlab's graph
              capture, and the per-step broadphase against a cached (frozen) candidate list;
``breakdown`` where one env step's time goes: physics substeps, mjlab's managers, policy
              inference, the PPO update, and an "other" row so the shares sum to 100 %;
``launches``  per part of the same loop, the PyTorch operators an env step dispatches (each a
              kernel launch on a GPU) and those that read a value back to the host (each a
              host sync), with mjlab's own delay buffers too; counts, the same on every backend.

Every measurement happens after a warm-up (kernel compilation and graph capture excluded), with
the device synchronised before each clock read, over several repeats, and is reported as the
median with its interquartile range and min/max. Peak device memory is recorded per
configuration (torch's peak allocation plus Warp's mempool in use; ``None``/"n/a" on a CPU).

Results go to a run record (kind ``bench``, same schema and provenance as training runs) and a
CSV with one row per measurement, both written atomically into a fresh run directory.

Design for testing: the timing core (:func:`measure_repeats`, :class:`SectionTimer`,
:class:`IterationTimer`, :func:`measure_training`, :func:`measure_breakdown`) takes an
injectable clock and sync function and plain callables or duck-typed runner/env objects, so
tests drive it with a fake clock and fake environments and assert exact values. Only the
``_run_*`` functions touch mjlab.

Honesty notes that the record repeats: on CUDA there is no cached broadphase list, so the
"per-step broadphase" case is simply the stock path, and the frozen-broadphase fault
(:mod:`mjlab_microduck.compat.faults`) stands in for the ROCm cache as an *upper bound* of what that
cache saved; the real fork's cache is measured only when this runs on HIP.

No-op cases: importing this module does nothing; mjlab, torch and Warp are imported when a
benchmark runs.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from mjlab_microduck.compat import _hook
from mjlab_microduck.jobs import stopping
from mjlab_microduck.runs import liveness, names, records
from mjlab_microduck.runs.names import TASK_ID, UNGUARDED_TASK_ID
from mjlab_microduck.runtime import backend as backend_of
from mjlab_microduck.runtime.dispatch_count import DispatchCounter

SECTIONS = ("physics", "training", "fixes", "breakdown", "launches")
CSV_FILENAME = "bench.csv"
LOG_FILENAME = "bench.log"
CSV_COLUMNS = (
    "section", "config", "metric", "num_envs", "repeats",
    "median", "p25", "p75", "min", "max", "unit", "peak_mem_bytes",
)  # fmt: skip
# Graph-capture veto registered for the "eager" case (compat/_hook.py's shared veto registry).
EAGER_VETO = "bench:eager"
OTHER = "other"

Clock = Callable[[], float]
Sync = Callable[[], None]


def _no_sync() -> None:
    """CPU: Warp's CPU kernels and torch's CPU ops are synchronous, nothing to wait for."""


# ============================================================================ statistics


@dataclass(frozen=True)
class Stats:
    """Median and spread of one measurement's repeats."""

    n: int
    median: float
    p25: float
    p75: float
    min: float
    max: float

    @classmethod
    def from_samples(cls, samples: Sequence[float]) -> Stats:
        values = [float(v) for v in samples]
        if not values:
            raise ValueError("no samples to summarise")
        if not all(math.isfinite(v) for v in values):
            raise ValueError(f"non-finite sample in {values}")
        p25, median, p75 = (float(q) for q in np.percentile(values, [25, 50, 75]))
        return cls(
            n=len(values),
            median=median,
            p25=p25,
            p75=p75,
            min=min(values),
            max=max(values),
        )


def rates(durations_s: Sequence[float], work: float) -> list[float]:
    """``work`` per second for each duration (e.g. env steps per second of each repeat)."""
    out = []
    for seconds in durations_s:
        if seconds <= 0:
            raise ValueError(f"a timed repeat took {seconds} s; the clock did not advance")
        out.append(work / seconds)
    return out


# ============================================================================ timing core


def measure_repeats(
    step: Callable[[], Any],
    *,
    repeats: int,
    warmup: int = 1,
    calls_per_repeat: int = 1,
    clock: Clock = time.perf_counter,
    sync: Sync = _no_sync,
) -> list[float]:
    """Call ``step`` ``warmup`` times untimed, then time ``repeats`` blocks of
    ``calls_per_repeat`` calls; returns the seconds of each block.

    The device is synchronised before every clock read, so queued GPU work is charged to the
    block that queued it, never to the next one or to nobody.
    """
    if repeats < 1 or calls_per_repeat < 1 or warmup < 0:
        raise ValueError("repeats and calls_per_repeat must be >= 1, warmup >= 0")
    for _ in range(warmup):
        step()
    samples = []
    for _ in range(repeats):
        sync()
        start = clock()
        for _ in range(calls_per_repeat):
            step()
        sync()
        samples.append(clock() - start)
    return samples


def measure_env_steps(
    step: Callable[[], Any],
    num_envs: int,
    *,
    steps: int,
    repeats: int,
    warmup: int,
    clock: Clock = time.perf_counter,
    sync: Sync = _no_sync,
) -> Stats:
    """Env steps per second (one vectorised step of ``num_envs`` envs counts ``num_envs``)."""
    samples = measure_repeats(
        step, repeats=repeats, warmup=warmup, calls_per_repeat=steps, clock=clock, sync=sync
    )
    return Stats.from_samples(rates(samples, num_envs * steps))


class SectionTimer:
    """Exclusive time per label over nested, synchronised regions.

    A region entered while another is open is subtracted from the outer one, so an event
    applied during a reset counts as "events", not twice. ``take()`` returns and clears the
    totals (one call per iteration).
    """

    def __init__(self, clock: Clock = time.perf_counter, sync: Sync = _no_sync) -> None:
        self.clock = clock
        self.sync = sync
        self.exclusive: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._stack: list[list[Any]] = []  # [label, start, time spent in children]

    def enter(self, label: str) -> None:
        self.sync()
        self._stack.append([label, self.clock(), 0.0])

    def exit(self) -> None:
        self.sync()
        label, start, children = self._stack.pop()
        elapsed = self.clock() - start
        self.exclusive[label] = self.exclusive.get(label, 0.0) + elapsed - children
        self.calls[label] = self.calls.get(label, 0) + 1
        if self._stack:
            self._stack[-1][2] += elapsed

    def wrap(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.enter(label)
            try:
                return fn(*args, **kwargs)
            finally:
                self.exit()

        return timed

    def take(self) -> dict[str, float]:
        totals = dict(self.exclusive)
        self.exclusive.clear()
        return totals


@dataclass(frozen=True)
class IterationSample:
    """One PPO iteration: collection (rollout), learning (returns + update), total (incl.
    logging), and exclusive per-section seconds when a :class:`SectionTimer` was attached."""

    collection_s: float
    learning_s: float
    total_s: float
    sections: dict[str, float] = field(default_factory=dict)


class IterationTimer:
    """Marks the phases of rsl_rl's ``learn`` loop with synchronised clock reads.

    rsl_rl's loop per iteration: rollout (``alg.act``/``env.step`` x steps) ->
    ``alg.compute_returns`` -> ``alg.update`` -> ``logger.log`` -> checkpoint check. Collection
    ends when ``compute_returns`` is entered, learning when ``update`` returns (rsl_rl's own
    split), the iteration when ``log`` returns; the next iteration starts there.
    """

    def __init__(
        self,
        clock: Clock = time.perf_counter,
        sync: Sync = _no_sync,
        sections: SectionTimer | DispatchCounter | None = None,
    ) -> None:
        self.clock = clock
        self.sync = sync
        self.sections = sections
        self.samples: list[IterationSample] = []
        self._start: float | None = None
        self._collected: float | None = None
        self._learned: float | None = None

    def _now(self) -> float:
        self.sync()
        return self.clock()

    def start(self) -> None:
        self._start = self._now()

    def collection_done(self) -> None:
        self._collected = self._now()

    def learning_done(self) -> None:
        self._learned = self._now()

    def iteration_done(self) -> None:
        now = self._now()
        if self._start is None or self._collected is None or self._learned is None:
            raise RuntimeError("iteration ended before collection and learning were marked")
        self.samples.append(
            IterationSample(
                collection_s=self._collected - self._start,
                learning_s=self._learned - self._collected,
                total_s=now - self._start,
                sections=self.sections.take() if self.sections is not None else {},
            )
        )
        self._start, self._collected, self._learned = now, None, None


@contextlib.contextmanager
def instrument_training(runner: Any, timer: IterationTimer) -> Iterator[None]:
    """Hook ``timer`` into an rsl_rl runner's ``learn`` loop; checkpoint saving is switched off
    (writing checkpoints and ONNX exports is not what is being measured)."""
    alg, logger = runner.alg, runner.logger
    patches = _hook.PatchSet()

    def hook_compute_returns(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def compute_returns(*args: Any, **kwargs: Any) -> Any:
            timer.collection_done()
            return original(*args, **kwargs)

        return compute_returns

    def hook_after(mark: Callable[[], None]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def make(original: Callable[..., Any]) -> Callable[..., Any]:
            @functools.wraps(original)
            def hooked(*args: Any, **kwargs: Any) -> Any:
                result = original(*args, **kwargs)
                mark()
                return result

            return hooked

        return make

    patches.wrap(alg, "compute_returns", hook_compute_returns)
    patches.wrap(alg, "update", hook_after(timer.learning_done))
    patches.wrap(logger, "log", hook_after(timer.iteration_done))
    patches.replace(runner, "save", lambda *args, **kwargs: None)
    try:
        yield
    finally:
        patches.revert_all()


def measure_training(
    runner: Any,
    *,
    iterations: int,
    warmup: int = 1,
    clock: Clock = time.perf_counter,
    sync: Sync = _no_sync,
    sections: SectionTimer | DispatchCounter | None = None,
) -> list[IterationSample]:
    """Run ``warmup + iterations`` PPO iterations in one ``runner.learn`` call and return the
    timed samples of the last ``iterations``.

    At least one warm-up iteration is required: the first one also pays for the logging writer,
    the first policy launches and rsl_rl's start-up work.
    """
    if warmup < 1 or iterations < 1:
        raise ValueError("training needs warmup >= 1 and iterations >= 1")
    timer = IterationTimer(clock, sync, sections)
    with instrument_training(runner, timer):
        timer.start()
        runner.learn(num_learning_iterations=warmup + iterations, init_at_random_ep_len=True)
    if len(timer.samples) != warmup + iterations:
        raise RuntimeError(
            f"expected {warmup + iterations} iterations from runner.learn, saw {len(timer.samples)}"
        )
    return timer.samples[warmup:]


@dataclass(frozen=True)
class Component:
    """One row of the step breakdown: a label and the methods whose time it collects."""

    label: str
    description: str
    targets: tuple[tuple[str, str], ...]  # (dotted path from {"env", "runner"}, method name)


# Order = display order. Paths start at the unwrapped mjlab env or the rsl_rl runner.
BREAKDOWN_COMPONENTS: tuple[Component, ...] = (
    Component("physics_substeps", "sim.step: decimation x mjwarp.step", (("env.sim", "step"),)),
    Component(
        "physics_forward",
        "sim.forward: kinematics refresh once per env step",
        (("env.sim", "forward"),),
    ),
    Component("raycast_sensing", "sim.sense: foot height raycasts", (("env.sim", "sense"),)),
    Component(
        "scene_update",
        "scene.write_data_to_sim / scene.update: actuators, sensors",
        (("env.scene", "write_data_to_sim"), ("env.scene", "update")),
    ),
    Component(
        "actions",
        "action_manager.process_action / apply_action",
        (("env.action_manager", "process_action"), ("env.action_manager", "apply_action")),
    ),
    Component(
        "observations", "observation_manager.compute", (("env.observation_manager", "compute"),)
    ),
    Component("rewards", "reward_manager.compute", (("env.reward_manager", "compute"),)),
    Component(
        "terminations", "termination_manager.compute", (("env.termination_manager", "compute"),)
    ),
    Component("commands", "command_manager.compute", (("env.command_manager", "compute"),)),
    Component("events", "event_manager.apply (interval, reset)", (("env.event_manager", "apply"),)),
    Component(
        "resets",
        "env._reset_idx without the events/observations inside it",
        (("env", "_reset_idx"),),
    ),
    Component("policy_inference", "alg.act: actor and critic forward", (("runner.alg", "act"),)),
    Component(
        "rollout_storage",
        "alg.process_env_step: store the transition",
        (("runner.alg", "process_env_step"),),
    ),
    Component(
        "ppo_update",
        "alg.compute_returns + alg.update (5 epochs x 4 mini-batches)",
        (("runner.alg", "compute_returns"), ("runner.alg", "update")),
    ),
    Component(
        "logging",
        "rsl_rl logger: episode bookkeeping and TensorBoard",
        (("runner.logger", "process_env_step"), ("runner.logger", "log")),
    ),
)


def _resolve(roots: dict[str, Any], path: str) -> Any:
    head, *rest = path.split(".")
    obj = roots[head]
    for part in rest:
        obj = getattr(obj, part)
    return obj


def measure_breakdown(
    runner: Any,
    env: Any,
    *,
    iterations: int,
    warmup: int = 1,
    clock: Clock = time.perf_counter,
    sync: Sync = _no_sync,
    components: Sequence[Component] = BREAKDOWN_COMPONENTS,
    sections: SectionTimer | DispatchCounter | None = None,
) -> tuple[list[IterationSample], list[str]]:
    """Training iterations with every component's methods wrapped in synchronised timers (or
    in ``sections``, a :class:`DispatchCounter` counting inside its ``with`` block).

    ``env`` is the unwrapped mjlab env. Returns the measured samples (``sections`` filled) and
    the ``path.method`` targets that did not exist (left out, their time lands in "other").
    """
    timer = sections if sections is not None else SectionTimer(clock, sync)
    roots = {"env": env, "runner": runner}
    missing: list[str] = []
    patches = _hook.PatchSet()
    try:
        for component in components:
            for path, method in component.targets:
                try:
                    owner = _resolve(roots, path)
                    getattr(owner, method)
                except AttributeError:
                    missing.append(f"{path}.{method}")
                    continue
                patches.wrap(owner, method, functools.partial(timer.wrap, component.label))
        samples = measure_training(
            runner, iterations=iterations, warmup=warmup, clock=clock, sync=sync, sections=timer
        )
    finally:
        patches.revert_all()
    return samples, missing


@dataclass(frozen=True)
class BreakdownRow:
    """A component's time per env step (ms) and share of the iteration (%)."""

    label: str
    ms_per_step: Stats
    share_pct: Stats
    share_of_total_pct: float  # from summed times over all measured iterations (sums to 100)


def breakdown_rows(
    samples: Sequence[IterationSample], steps_per_iteration: int, labels: Sequence[str]
) -> list[BreakdownRow]:
    """Per-component rows plus ``other`` (iteration time not inside any component).

    ``share_of_total_pct`` of all rows, ``other`` included, sums to 100 up to rounding.
    """
    if not samples:
        raise ValueError("no breakdown samples")
    total = sum(s.total_s for s in samples)
    rows = []

    def row(label: str, per_iteration: list[float]) -> BreakdownRow:
        return BreakdownRow(
            label=label,
            ms_per_step=Stats.from_samples(
                [1000.0 * t / steps_per_iteration for t in per_iteration]
            ),
            share_pct=Stats.from_samples(
                [100.0 * t / s.total_s for t, s in zip(per_iteration, samples, strict=True)]
            ),
            share_of_total_pct=100.0 * sum(per_iteration) / total,
        )

    for label in labels:
        rows.append(row(label, [s.sections.get(label, 0.0) for s in samples]))
    rows.append(row(OTHER, [s.total_s - sum(s.sections.values()) for s in samples]))
    return rows


@dataclass(frozen=True)
class LaunchRow:
    """A part's PyTorch operators and host reads per env step (``total``: the whole step)."""

    label: str
    ops_per_step: Stats
    host_reads_per_step: Stats


def launch_rows(
    samples: Sequence[IterationSample], steps_per_iteration: int, labels: Sequence[str]
) -> list[LaunchRow]:
    """Per-part rows from iterations counted by a :class:`DispatchCounter`, then ``other``
    (outside every part) and ``total``."""
    if not samples:
        raise ValueError("no counted iterations")

    def per_step(kind: str, label: str | None) -> Stats:
        def count(sample: IterationSample) -> float:
            if label is None:  # the whole step: every part's count
                return sum(v for k, v in sample.sections.items() if k.startswith(f"{kind}/"))
            return sample.sections.get(f"{kind}/{label}", 0.0)

        return Stats.from_samples([count(s) / steps_per_iteration for s in samples])

    return [
        LaunchRow(label, per_step("ops", label), per_step("reads", label))
        for label in [*labels, OTHER]
    ] + [LaunchRow("total", per_step("ops", None), per_step("reads", None))]


# ============================================================================ results


@dataclass(frozen=True)
class Row:
    """One CSV row: one measurement (a metric of one configuration at one env count)."""

    section: str
    config: str
    metric: str
    num_envs: int
    stats: Stats
    unit: str
    peak_mem_bytes: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "section": self.section,
            "config": self.config,
            "metric": self.metric,
            "num_envs": self.num_envs,
            "repeats": self.stats.n,
            "median": self.stats.median,
            "p25": self.stats.p25,
            "p75": self.stats.p75,
            "min": self.stats.min,
            "max": self.stats.max,
            "unit": self.unit,
            "peak_mem_bytes": self.peak_mem_bytes,
        }


def csv_text(rows: Sequence[Row]) -> str:
    """The CSV (header = :data:`CSV_COLUMNS`); an unknown memory figure is an empty cell."""
    import csv

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        values = row.as_dict()
        if values["peak_mem_bytes"] is None:
            values["peak_mem_bytes"] = ""
        for key in ("median", "p25", "p75", "min", "max"):
            values[key] = repr(float(values[key]))  # shortest exact round-trip text
        writer.writerow(values)
    return buffer.getvalue()


def load_csv(path: str | os.PathLike[str]) -> Any:
    """A bench CSV as a DataFrame (``peak_mem_bytes`` is missing, not 0, where unknown)."""
    import pandas as pd

    frame = pd.read_csv(path)
    missing = [c for c in CSV_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: not a bench CSV, missing columns {', '.join(missing)}")
    return frame


def load_runs(run_dirs: Sequence[str | os.PathLike[str]]) -> tuple[list[records.RunRecord], Any]:
    """Bench records and their CSV rows in one DataFrame (columns ``run_id`` and ``device``
    added), e.g. the published ``book/results/bench_h200*`` directories of one matrix split
    over several runs. Raises :class:`records.RecordError` for a run that is not a bench run."""
    import pandas as pd

    loaded, frames = [], []
    for run_dir in run_dirs:
        record = records.load_record(run_dir)
        if record.kind != "bench":
            raise records.RecordError(f"{run_dir}: a {record.kind} record, not a bench run")
        frame = load_csv(Path(run_dir) / CSV_FILENAME)
        frame.insert(0, "run_id", record.run_id)
        frame.insert(1, "device", record.provenance.device_name)
        loaded.append(record)
        frames.append(frame)
    if not frames:
        return loaded, pd.DataFrame(columns=["run_id", "device", *CSV_COLUMNS])
    return loaded, pd.concat(frames, ignore_index=True)


def breakdown_shares(summary: dict[str, Any], num_envs: int) -> dict[str, float]:
    """``{component: share of the iteration in %}`` of one breakdown, "other" last; the values
    sum to 100 (up to the 4-decimal rounding of the record)."""
    shares = {}
    for label in [c.label for c in BREAKDOWN_COMPONENTS] + [OTHER]:
        value = summary.get(f"breakdown.{label}.n{num_envs}.share_of_total_pct")
        if value is not None:
            shares[label] = float(value)
    return shares


@dataclass
class BenchResults:
    """What a benchmark run collected so far: rows, extra summary values, errors, notes."""

    rows: list[Row] = field(default_factory=list)
    extra: dict[str, records.SummaryValue] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def find(self, section: str, config: str, metric: str, num_envs: int) -> Row | None:
        for row in self.rows:
            if (row.section, row.config, row.metric, row.num_envs) == (
                section, config, metric, num_envs,
            ):  # fmt: skip
                return row
        return None

    def summary(self) -> dict[str, records.SummaryValue]:
        """Flat summary: every row's median (and IQR), derived ratios, extra values."""
        out: dict[str, records.SummaryValue] = {}
        for row in self.rows:
            key = f"{row.section}.{row.config}.n{row.num_envs}.{row.metric}"
            out[key] = round(row.stats.median, 6)
            out[f"{key}.p25"] = round(row.stats.p25, 6)
            out[f"{key}.p75"] = round(row.stats.p75, 6)
        out.update(derived_ratios(self.rows))
        out.update(self.extra)
        out["measurements"] = len(self.rows)
        out["errors"] = len(self.errors)
        return out


def _ratio(numerator: Row | None, denominator: Row | None) -> float | None:
    if numerator is None or denominator is None or denominator.stats.median == 0:
        return None
    return round(numerator.stats.median / denominator.stats.median, 6)


def derived_ratios(rows: Sequence[Row]) -> dict[str, float]:
    """Ratios of medians the book discusses (keys absent where an operand is missing):

    * ``ratio.training_over_physics.n<N>``: PPO training steps/s over zero-action physics;
    * ``ratio.eager_over_graph.n<N>``: throughput kept with graph capture off (HIP fix);
    * ``ratio.per_step_over_frozen.n<N>``: throughput kept with a per-step broadphase compared
      with the frozen (cached) list; ``1 - ratio`` bounds what the ROCm cache saved;
    * ``ratio.per_step_over_fork_cache.n<N>``: the same against the ROCm fork's own cache (HIP);
    * ``ratio.sync_free_over_buffer_syncs.n<N>``: throughput of the backend's default stepping
      (``graph`` where it was measured, else ``eager``) over the same with mjlab's own,
      host-syncing delay buffers; above 1 is what the ``buffer_syncs`` hook buys;
    * ``ratio.sync_free_over_quat_syncs.n<N>``: the same against mjlab's own, mask-indexing
      rotation-to-quaternion conversion (the ``quat_syncs`` hook);
    * ``ratio.graphs_over_eager_managers.n<N>``: throughput with the termination and reward
      managers replayed from graphs (the ``manager_graphs`` hook) over the same with them
      launched operator by operator: the default over ``eager_managers`` where the hook is on
      by default, ``manager_graphs`` over the default where it is opt-in.
    """
    index = {(r.section, r.config, r.metric, r.num_envs): r for r in rows}
    sizes = sorted({r.num_envs for r in rows})
    metric = "env_steps_per_s"
    out: dict[str, float] = {}
    for n in sizes:
        pairs = {
            "training_over_physics": (("training", "ppo"), ("physics", "zero_action")),
            "eager_over_graph": (("fixes", "eager"), ("fixes", "graph")),
            "per_step_over_frozen": (("fixes", "eager"), ("fixes", "frozen_broadphase")),
            "per_step_over_fork_cache": (("fixes", "eager"), ("fixes", "fork_cache")),
        }
        default = "graph" if ("fixes", "graph", metric, n) in index else "eager"
        for hook in SYNC_HOOKS:
            pairs[f"sync_free_over_{hook}"] = (("fixes", default), ("fixes", hook))
        graphs_pair = (("fixes", default), ("fixes", "eager_managers"))
        if ("fixes", "manager_graphs", metric, n) in index:
            graphs_pair = (("fixes", "manager_graphs"), ("fixes", default))
        pairs["graphs_over_eager_managers"] = graphs_pair
        for name, ((s1, c1), (s2, c2)) in pairs.items():
            value = _ratio(index.get((s1, c1, metric, n)), index.get((s2, c2, metric, n)))
            if value is not None:
                out[f"ratio.{name}.n{n}"] = value
    return out


# ============================================================================ device helpers


def device_sync(device: str) -> Sync:
    """Wait for Warp's and torch's queued work on ``device`` (they may use different streams)."""
    if not device.startswith("cuda"):
        return _no_sync
    import torch
    import warp as wp

    def sync() -> None:
        wp.synchronize_device(device)
        torch.cuda.synchronize(device)

    return sync


@dataclass(frozen=True)
class MemoryReading:
    torch_peak_bytes: int
    warp_in_use_bytes: int | None
    warp_high_water_bytes: int | None

    @property
    def peak_bytes(self) -> int:
        return self.torch_peak_bytes + (self.warp_in_use_bytes or 0)


class MemoryProbe:
    """Peak device memory of one configuration.

    torch's peak allocation is reset per configuration. mjlab's simulation lives in Warp arrays
    (Warp's own mempool, invisible to torch), allocated up front when the env is built, so
    Warp's bytes in use at the end of a measurement are added. Warp's high-water mark cannot be
    reset, so it is kept separately as a process-wide figure. On a CPU every reading is None.
    """

    def __init__(self, device: str) -> None:
        self.device = device
        self.gpu = device.startswith("cuda")

    def reset(self) -> None:
        if not self.gpu:
            return
        import torch

        gc.collect()
        torch.cuda.synchronize(self.device)
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(self.device)

    def read(self) -> MemoryReading | None:
        if not self.gpu:
            return None
        import torch

        device_sync(self.device)()
        in_use = high = None
        try:
            import warp as wp

            in_use = int(wp.get_mempool_used_mem_current(self.device))
            high = int(wp.get_mempool_used_mem_high(self.device))
        except Exception:  # noqa: BLE001 - an older/forked Warp without the query: torch only
            pass
        return MemoryReading(int(torch.cuda.max_memory_allocated(self.device)), in_use, high)


# ============================================================================ plans


@dataclass(frozen=True)
class FixCase:
    """One configuration of the ``fixes`` section."""

    name: str
    mode: str  # stock | veto_graph | frozen_fault | fork_cache | <a SYNC_HOOKS name> | graphs
    task: str
    description: str
    graph: bool = False  # whether mjlab captures its physics graphs in this case


SYNC_HOOKS = {
    "buffer_syncs": "mjlab's own delay buffers (a host sync per append and per read)",
    "quat_syncs": "mjlab's own rotation-to-quaternion conversion (two mask indexings per call)",
}
"""The hooks that remove host syncs on every backend, each measured by a fixes case of its name:
the default stepping with that hook out."""


GPU_ONLY_SYNC_HOOKS = ("quat_syncs",)
"""The :data:`SYNC_HOOKS` whose case runs on GPUs only (the hook is installed on a CPU too)."""
CPU_SYNC_SKIP = "a CPU pays nothing for a host sync, so this case runs on GPUs only"
"""Why a :data:`GPU_ONLY_SYNC_HOOKS` case is not measured on a CPU, whether or not its hook is
active there."""


def fix_plan(
    backend: str,
    broadphase_fix_active: bool,
    buffer_fix_active: bool = True,
    quat_fix_active: bool = False,
    graphs_default: bool = False,
) -> tuple[list[FixCase], dict[str, str]]:
    """The cases that can run on ``backend`` and, for the others, why not.

    ``eager`` is always the per-step-broadphase, no-graph case that the ROCm fixes produce, so
    the broadphase and graph ratios compare against it. On GPUs the managers' graphs are measured
    against the default: ``eager_managers`` takes the hook of that name out where it is on by
    default (``graphs_default``), ``manager_graphs`` turns it on where it is opt-in. The
    :data:`SYNC_HOOKS` cases (last) are the default stepping with one of those hooks out; each
    runs only where its hook is active, and a :data:`GPU_ONLY_SYNC_HOOKS` case on GPUs only
    (skipped on a CPU with :data:`CPU_SYNC_SKIP`, not with the inactive hook's reason).
    """
    frozen = FixCase(
        "frozen_broadphase", "frozen_fault", UNGUARDED_TASK_ID,
        "frozen-broadphase fault (first step's candidate list reused), unguarded task as in the "
        "original broken run; eager because the fault vetoes graph capture",
    )  # fmt: skip
    skipped: dict[str, str] = {}
    if backend == "cpu":
        cases = [FixCase("eager", "stock", TASK_ID, "stock CPU stepping (always eager)"), frozen]
        skipped["graph"] = "mjlab captures graphs only on CUDA devices; a CPU always steps eagerly"
        skipped["fork_cache"] = "no cached broadphase outside the ROCm fork; the fault stands in"
    elif backend == "cuda":
        cases = [
            FixCase("graph", "stock", TASK_ID, "stock mjlab: step/forward/reset captured",
                    graph=True),  # fmt: skip
            FixCase("eager", "veto_graph", TASK_ID, "graph capture vetoed: eager as on HIP"),
            frozen,
        ]
        skipped["fork_cache"] = (
            "upstream mujoco_warp has no cached broadphase list, so per-step is the stock path; "
            "the frozen-broadphase fault is an upper bound of what the ROCm cache saved"
        )
    elif backend == "hip":
        cases = [FixCase("eager", "stock", TASK_ID, "package default on HIP: eager, per-step")]
        skipped["graph"] = "graph capture is the failing path on HIP (chapter 2); not measured"
        if broadphase_fix_active:
            cases.append(
                FixCase(
                    "fork_cache",
                    "fork_cache",
                    UNGUARDED_TASK_ID,
                    "broadphase fix removed: the ROCm fork's own cached list, unguarded task",
                )  # fmt: skip
            )
        else:
            skipped["fork_cache"] = "this collision driver has no broadphase cache to measure"
        skipped["frozen_broadphase"] = "on HIP the fork's own cache is measured instead"
    else:
        raise ValueError(f"unknown backend {backend!r}")
    default = cases[0]
    if backend == "cpu":
        skipped["manager_graphs"] = (
            "a CPU has no graphs to launch; the recorded stand-in checks values, not speed"
        )
    elif graphs_default:
        cases.append(FixCase("eager_managers", "eager_managers", TASK_ID,
                             f"termination and reward managers launched operator by operator "
                             f"(MICRODUCK_MANAGER_GRAPHS=0), otherwise as {default.name}",
                             graph=default.graph))  # fmt: skip
    else:
        cases.append(FixCase("manager_graphs", "graphs", TASK_ID,
                             f"termination and reward managers replayed from graphs "
                             f"(MICRODUCK_MANAGER_GRAPHS=1), otherwise as {default.name}",
                             graph=default.graph))  # fmt: skip
    # A CPU pays nothing for a host read: the buffer case stays there as the live chapter's
    # example of a fix case, the conversion's is measured on GPUs only.
    active = {"buffer_syncs": buffer_fix_active, "quat_syncs": quat_fix_active}
    for hook, description in SYNC_HOOKS.items():
        if hook in GPU_ONLY_SYNC_HOOKS and backend == "cpu":
            skipped[hook] = CPU_SYNC_SKIP
        elif active[hook]:
            cases.append(FixCase(hook, hook, TASK_ID, f"{description}, otherwise as {default.name}",
                                 graph=default.graph))  # fmt: skip
        else:
            skipped[hook] = f"the {hook} hook is not active, so every case has those syncs"
    return cases, skipped


@contextlib.contextmanager
def fix_context(case: FixCase) -> Iterator[None]:
    """Switch one fix case on around env creation and measurement; always switched back."""
    if case.mode == "stock":
        yield
    elif case.mode == "veto_graph":
        _hook.add_graph_veto(EAGER_VETO, lambda sim: "benchmark: eager stepping measured")
        try:
            yield
        finally:
            _hook.remove_graph_veto(EAGER_VETO)
    elif case.mode == "frozen_fault":
        from mjlab_microduck.compat import faults

        with faults.frozen_broadphase():
            yield
    elif case.mode == "fork_cache":
        from mjlab_microduck.compat import broadphase

        broadphase.uninstall()
        try:
            yield
        finally:
            broadphase.install()
    elif case.mode in SYNC_HOOKS:
        with hook_out(case.mode):
            yield
    elif case.mode == "graphs":
        from mjlab_microduck.compat import manager_graphs

        with manager_graphs.installed("1"):  # MICRODUCK_MANAGER_GRAPHS=1, then as it was
            yield
    elif case.mode == "eager_managers":
        with hook_out("manager_graphs"):
            yield
    else:
        raise ValueError(f"unknown fix mode {case.mode!r}")


@contextlib.contextmanager
def hook_out(name: str) -> Iterator[None]:
    """mjlab's own code inside (the compat hook ``name`` out), the hook back after."""
    import importlib

    hook = importlib.import_module(f"mjlab_microduck.compat.{name}")
    hook.uninstall()
    try:
        yield
    finally:
        hook.install()


def mjlab_buffers() -> contextlib.AbstractContextManager[None]:
    """mjlab's own delay buffers inside (the ``buffer_syncs`` hook out), the hook back after."""
    return hook_out("buffer_syncs")


@dataclass(frozen=True)
class BenchRequest:
    """One benchmark run. :func:`default_request` fills sizes for a device and mode."""

    name: str = "bench"
    """run name (letters, digits, '.', '_', '-'); the run folder is <UTC stamp>_<name>"""
    device: str = "cpu"
    """cpu, cuda or cuda:N (a ROCm build of torch also says cuda)"""
    out: Path = Path("logs/bench")
    """where the run folder is made"""
    sections: tuple[str, ...] = SECTIONS
    """which of physics, training, fixes, breakdown to measure"""
    quick: bool = False
    """CI sizes (minutes on 2 CPU cores) instead of the device's full plan"""
    task: str = TASK_ID
    """a registered mjlab task"""
    seed: int = 42
    physics_envs: tuple[int, ...] = (16, 64)
    """env counts of the physics section"""
    training_envs: tuple[int, ...] = (64,)
    """env counts of the training section"""
    fixes_envs: tuple[int, ...] = (16,)
    """env counts of the fixes section"""
    breakdown_envs: tuple[int, ...] = (16,)
    """env counts of the breakdown section"""
    launches_envs: tuple[int, ...] = (16,)
    """env counts of the launches section (one counted PPO iteration after one warm-up)"""
    warmup_steps: int = 5
    """untimed env steps before physics/fixes timing"""
    repeats: int = 5
    """timed repeats per physics/fixes configuration"""
    steps_per_repeat: int = 20
    """env steps per timed repeat"""
    training_warmup: int = 1
    """untimed PPO iterations before training timing (at least 1)"""
    training_iterations: int = 3
    """timed PPO iterations per training configuration"""
    breakdown_warmup: int = 1
    """untimed PPO iterations before the breakdown (at least 1)"""
    breakdown_iterations: int = 2
    """timed PPO iterations of the breakdown"""
    machine_label: str | None = None
    """a human label for the machine, kept in the record's provenance"""
    profile: str | None = None
    """the run-size profile recorded with the run (ci or full)"""

    def config(self) -> dict[str, Any]:
        data = asdict(self)
        data["out"] = str(self.out)
        from mjlab_microduck.tasks.rl_cfg import STEPS_PER_ENV  # loads mjlab: only when recording

        data["steps_per_env"] = STEPS_PER_ENV
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}

    def cli_args(self) -> list[str]:
        """The ``microduck bench`` arguments that reproduce this request."""
        args = [
            "--name", self.name, "--device", self.device, "--out", str(self.out),
            "--sections", *self.sections, "--task", self.task, "--seed", str(self.seed),
            "--physics-envs", *map(str, self.physics_envs),
            "--training-envs", *map(str, self.training_envs),
            "--fixes-envs", *map(str, self.fixes_envs),
            "--breakdown-envs", *map(str, self.breakdown_envs),
            "--launches-envs", *map(str, self.launches_envs),
            "--warmup-steps", str(self.warmup_steps), "--repeats", str(self.repeats),
            "--steps-per-repeat", str(self.steps_per_repeat),
            "--training-warmup", str(self.training_warmup),
            "--training-iterations", str(self.training_iterations),
            "--breakdown-warmup", str(self.breakdown_warmup),
            "--breakdown-iterations", str(self.breakdown_iterations),
            "--quick" if self.quick else "--no-quick",
        ]  # fmt: skip
        if self.machine_label:
            args += ["--machine-label", self.machine_label]
        if self.profile:
            args += ["--profile", self.profile]
        return args


# Sizes per (device kind, quick). GPU: the matrix; CPU: what 2 cores manage.
_PLANS: dict[tuple[str, bool], dict[str, Any]] = {
    ("gpu", False): dict(
        physics_envs=(64, 256, 1024, 4096, 8192), training_envs=(256, 4096),
        fixes_envs=(256, 4096), breakdown_envs=(256,), launches_envs=(4096,), warmup_steps=20,
        repeats=5,
        steps_per_repeat=50, training_warmup=2, training_iterations=10, breakdown_warmup=2,
        breakdown_iterations=5,
    ),
    ("gpu", True): dict(
        physics_envs=(64, 256), training_envs=(256,), fixes_envs=(256,), breakdown_envs=(256,),
        launches_envs=(256,), warmup_steps=5, repeats=3, steps_per_repeat=20, training_warmup=1,
        training_iterations=1, breakdown_warmup=1, breakdown_iterations=1,
    ),
    ("cpu", False): dict(
        physics_envs=(16, 64), training_envs=(64,), fixes_envs=(16,), breakdown_envs=(16,),
        launches_envs=(16,), warmup_steps=5, repeats=5, steps_per_repeat=20, training_warmup=1,
        training_iterations=3, breakdown_warmup=1, breakdown_iterations=2,
    ),
    ("cpu", True): dict(
        physics_envs=(4, 16), training_envs=(16,), fixes_envs=(4,), breakdown_envs=(16,),
        launches_envs=(4,), warmup_steps=2, repeats=3, steps_per_repeat=5, training_warmup=1,
        training_iterations=1, breakdown_warmup=1, breakdown_iterations=1,
    ),
}  # fmt: skip


def default_request(device: str = "cpu", quick: bool = False, **overrides: Any) -> BenchRequest:
    """The request for ``device`` (GPU matrix or CPU sizes, ``quick`` for CI) plus overrides."""
    kind = "cpu" if device == "cpu" else "gpu"
    request = BenchRequest(device=device, quick=quick, **_PLANS[(kind, quick)])
    return replace(request, **{k: v for k, v in overrides.items() if v is not None})


def validate(request: BenchRequest) -> BenchRequest:
    """Refuse bad input before a run folder exists (``ValueError``, one line): the name, the
    device (malformed or absent here), the sections, the sizes and the task."""
    names.check_run_name(request.name)
    backend_of.check_device(request.device)
    unknown = [s for s in request.sections if s not in SECTIONS]
    if unknown or not request.sections:
        raise ValueError(
            f"--sections: unknown {', '.join(unknown) or '(none given)'}; "
            f"choose from {', '.join(SECTIONS)}"
        )
    for section in SECTIONS:
        sizes = getattr(request, f"{section}_envs")
        if not sizes or any(n < 1 for n in sizes):
            raise ValueError(f"--{section}-envs {list(sizes)}: env counts are positive integers")
    minimum = {
        "warmup_steps": 0, "repeats": 1, "steps_per_repeat": 1, "training_warmup": 1,
        "training_iterations": 1, "breakdown_warmup": 1, "breakdown_iterations": 1,
    }  # fmt: skip
    for key, low in minimum.items():
        if getattr(request, key) < low:
            raise ValueError(f"--{key.replace('_', '-')} must be at least {low}")
    from mjlab_microduck.tasks.registry import list_tasks

    if request.task not in list_tasks():
        raise ValueError(f"--task {request.task!r} is not a registered task")
    return request


# ============================================================================ mjlab glue


@contextlib.contextmanager
def _quiet(log: TextIO) -> Iterator[None]:
    """mjlab's manager tables, Warp's module lines and rsl_rl's iteration blocks go to the log."""
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        yield
    log.flush()


def build_env(task: str, num_envs: int, device: str, seed: int) -> Any:
    """The task's mjlab env, built as ``mjlab train`` builds it (registry config, seeded)."""
    from mjlab.envs import ManagerBasedRlEnv

    from mjlab_microduck.tasks.registry import load_env_cfg

    cfg = load_env_cfg(task)
    cfg.scene.num_envs = num_envs
    cfg.seed = seed
    return ManagerBasedRlEnv(cfg=cfg, device=device)


def build_runner(task: str, num_envs: int, device: str, seed: int, log_dir: Path) -> Any:
    """Env + ``RslRlVecEnvWrapper`` + the task's runner, as mjlab's ``run_train`` does, with a
    TensorBoard writer in ``log_dir`` (so rsl_rl's per-step bookkeeping runs as in training)."""
    from mjlab.rl import MjlabOnPolicyRunner, RslRlVecEnvWrapper
    from mjlab.utils.torch import configure_torch_backends

    from mjlab_microduck.tasks.registry import load_rl_cfg, load_runner_cls

    configure_torch_backends()
    agent_cfg = load_rl_cfg(task)
    agent_cfg.seed = seed
    agent_cfg.logger = "tensorboard"
    agent_cfg.upload_model = False
    agent_cfg.run_name = "bench"
    env = build_env(task, num_envs, device, seed)
    vec_env = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
    runner_cls = load_runner_cls(task) or MjlabOnPolicyRunner
    return runner_cls(vec_env, asdict(agent_cfg), str(log_dir), device)


def _close(obj: Any) -> None:
    close = getattr(obj, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            close()


def _close_runner(runner: Any) -> None:
    """Close rsl_rl's TensorBoard writer (before its temporary directory goes) and the env."""
    writer = getattr(getattr(runner, "logger", None), "writer", None)
    if writer is not None:
        _close(writer)
    _close(getattr(runner, "env", None))


def _one_line(err: BaseException) -> str:
    return records.error_line(err, limit=500)


def _fmt_rate(stats: Stats) -> str:
    return f"{stats.median:,.0f} (IQR {stats.p25:,.0f}-{stats.p75:,.0f})"


def _fmt_mem(reading: MemoryReading | None) -> str:
    return "n/a" if reading is None else f"{reading.peak_bytes / 2**30:.2f} GiB"


def _record_memory(results: BenchResults, key: str, reading: MemoryReading | None) -> int | None:
    if reading is None:
        results.extra[f"mem.{key}.peak_bytes"] = None
        return None
    results.extra[f"mem.{key}.peak_bytes"] = reading.peak_bytes
    results.extra[f"mem.{key}.torch_peak_bytes"] = reading.torch_peak_bytes
    results.extra[f"mem.{key}.warp_in_use_bytes"] = reading.warp_in_use_bytes
    results.extra[f"mem.{key}.warp_high_water_bytes"] = reading.warp_high_water_bytes
    return reading.peak_bytes


LINE_STYLES = ("each", "sections", "off")
"""What :func:`run` prints as it goes: ``each`` a line per measurement (and per case not
measured), ``sections`` one line per finished section, ``off`` nothing. Every style prints a
failed configuration as it fails, and every measurement line goes to ``bench.log`` whatever the
style."""
_LINES_OF_PROGRESS = {"bar": "each", "milestones": "sections", "off": "off"}


def line_style(lines: str | None = None) -> str:
    """``lines`` if given, else what ``MICRODUCK_PROGRESS`` asks for (``milestones`` gives
    ``sections``, ``off`` gives ``off``), else ``each``; ValueError for anything else."""
    from mjlab_microduck.runtime import progress

    if lines is None:
        chosen = os.environ.get(progress.ENV_VAR, "").strip()
        lines = _LINES_OF_PROGRESS[progress.style()] if chosen else "each"
    if lines not in LINE_STYLES:
        raise ValueError(f"lines={lines!r}: use one of {', '.join(LINE_STYLES)}")
    return lines


@dataclass
class _Ctx:
    request: BenchRequest
    results: BenchResults
    log: TextIO
    stream: TextIO
    sync: Sync
    memory: MemoryProbe
    lines: str = "each"
    said: dict[str, int] = field(default_factory=dict)

    def say(self, text: str, kind: str = "measured") -> None:
        """One line of the run (``kind`` measured, failed or skipped): always into the log,
        onto the stream as :data:`LINE_STYLES` says."""
        self.said[kind] = self.said.get(kind, 0) + 1
        line = f"[bench] {text}\n"
        self.log.write(line)
        self.log.flush()
        if self.lines == "each" or kind == "failed":
            self.stream.write(line)
            self.stream.flush()

    def section_done(self, section: str, seconds: float) -> None:
        """The ``sections`` style's line for a finished section; resets the counts."""
        said, self.said = self.said, {}
        if self.lines != "sections":
            return
        counts = [f"{said.get('measured', 0)} measured"]
        counts += [f"{said[k]} {what}" for k, what in (("failed", "failed"),
                                                        ("skipped", "not measured here"))
                   if said.get(k)]  # fmt: skip
        self.stream.write(f"[bench] {section} done in {seconds:.1f} s: {', '.join(counts)}\n")
        self.stream.flush()


def _measure_zero_action(ctx: _Ctx, env: Any) -> Stats:
    import torch

    req = ctx.request
    with _quiet(ctx.log):
        env.reset()
    action = torch.zeros(env.num_envs, env.action_manager.total_action_dim, device=env.device)
    with _quiet(ctx.log):
        return measure_env_steps(
            lambda: env.step(action), env.num_envs, steps=req.steps_per_repeat,
            repeats=req.repeats, warmup=req.warmup_steps, sync=ctx.sync,
        )  # fmt: skip


def _graph_captured(env: Any) -> bool:
    """True when mjlab stepped this env through a captured graph (a Warp Graph object)."""
    sim = env.sim
    captured = getattr(sim, "step_graph", None) is not None
    return bool(getattr(sim, "use_cuda_graph", False)) and captured


def _run_physics(ctx: _Ctx) -> None:
    req = ctx.request
    for n in req.physics_envs:
        env = None
        try:
            ctx.memory.reset()
            with _quiet(ctx.log):
                env = build_env(req.task, n, req.device, req.seed)
            stats = _measure_zero_action(ctx, env)
            reading = ctx.memory.read()
            peak = _record_memory(ctx.results, f"physics.n{n}", reading)
            ctx.results.extra[f"physics.n{n}.graph_captured"] = _graph_captured(env)
            ctx.results.rows.append(
                Row("physics", "zero_action", "env_steps_per_s", n, stats, "steps/s", peak)
            )
            ctx.say(f"physics n={n}: {_fmt_rate(stats)} env steps/s, peak {_fmt_mem(reading)}")
        except Exception as err:  # noqa: BLE001 - one failed size must not lose the others
            ctx.results.errors.append(f"physics n={n}: {_one_line(err)}")
            ctx.say(f"physics n={n}: FAILED {_one_line(err)}", kind="failed")
        finally:
            if env is not None:
                _close(env)
            del env
            gc.collect()


def _iteration_rows(
    section: str, n: int, steps_per_env: int, samples: Sequence[IterationSample], peak: int | None
) -> list[Row]:
    steps = n * steps_per_env
    return [
        Row(section, "ppo", "env_steps_per_s", n,
            Stats.from_samples(rates([s.total_s for s in samples], steps)), "steps/s", peak),
        Row(section, "ppo", "iteration_s", n,
            Stats.from_samples([s.total_s for s in samples]), "s", peak),
        Row(section, "ppo", "collection_s", n,
            Stats.from_samples([s.collection_s for s in samples]), "s", peak),
        Row(section, "ppo", "learning_s", n,
            Stats.from_samples([s.learning_s for s in samples]), "s", peak),
    ]  # fmt: skip


@contextlib.contextmanager
def _training_session(ctx: _Ctx, n: int) -> Iterator[Any]:
    """A runner with ``n`` envs and a throw-away log dir; closed (writer, env) however the
    measurement ends."""
    req = ctx.request
    with tempfile.TemporaryDirectory(prefix="microduck-bench-") as tmp:
        runner = None
        try:
            with _quiet(ctx.log):
                runner = build_runner(req.task, n, req.device, req.seed, Path(tmp))
            yield runner
        finally:
            if runner is not None:
                _close_runner(runner)
            del runner
            gc.collect()


def _run_training(ctx: _Ctx) -> None:
    req = ctx.request
    for n in req.training_envs:
        runner = None  # drop the previous size's runner before the next one is built
        try:
            ctx.memory.reset()
            with _training_session(ctx, n) as runner:
                steps_per_env = int(runner.cfg["num_steps_per_env"])
                with _quiet(ctx.log):
                    samples = measure_training(
                        runner, iterations=req.training_iterations,
                        warmup=req.training_warmup, sync=ctx.sync,
                    )  # fmt: skip
                reading = ctx.memory.read()
            if _hook_active("manager_graphs"):
                _record_graphs(ctx.results.extra, f"training.manager_graphs.n{n}")
            peak = _record_memory(ctx.results, f"training.n{n}", reading)
            rows = _iteration_rows("training", n, steps_per_env, samples, peak)
            ctx.results.rows.extend(rows)
            ctx.say(
                f"training n={n}: {_fmt_rate(rows[0].stats)} env steps/s, iteration "
                f"{rows[1].stats.median:.3f} s (collection {rows[2].stats.median:.3f} s, "
                f"learning {rows[3].stats.median:.3f} s), peak {_fmt_mem(reading)}"
            )
        except Exception as err:  # noqa: BLE001
            ctx.results.errors.append(f"training n={n}: {_one_line(err)}")
            ctx.say(f"training n={n}: FAILED {_one_line(err)}", kind="failed")


def _hook_active(name: str) -> bool:
    """Whether the compat hook ``name`` acts in this process."""
    import importlib

    return importlib.import_module(f"mjlab_microduck.compat.{name}").status().active


def _run_fixes(ctx: _Ctx) -> None:
    req = ctx.request
    backend = backend_of.warp_backend(req.device)
    cases, skipped = fix_plan(
        backend, _hook_active("broadphase"), _hook_active("buffer_syncs"),
        _hook_active("quat_syncs"), graphs_default=_hook_active("manager_graphs"),
    )
    ctx.results.extra["fixes.backend"] = backend
    for name, reason in skipped.items():
        ctx.results.extra[f"fixes.skipped.{name}"] = reason
        ctx.say(f"fixes {name}: not measured here: {reason}", kind="skipped")
    for n in req.fixes_envs:
        for case in cases:
            env = None
            try:
                ctx.memory.reset()
                with fix_context(case):
                    with _quiet(ctx.log):
                        env = build_env(case.task, n, req.device, req.seed)
                    captured = _graph_captured(env)
                    if case.graph and not captured:
                        raise RuntimeError("mjlab did not capture a graph on this device")
                    if not case.graph and captured:
                        raise RuntimeError("a graph was captured where eager stepping was asked")
                    stats = _measure_zero_action(ctx, env)
                    if case.mode == "frozen_fault":
                        from mjlab_microduck.compat import faults

                        frozen_calls = faults.status().details.get("frozen_broadphase_calls", 0)
                        if not frozen_calls:
                            raise RuntimeError("the frozen-broadphase fault never engaged")
                        ctx.results.extra[f"fixes.frozen_broadphase.n{n}.frozen_calls"] = (
                            frozen_calls
                        )
                    if case.mode == "graphs":
                        _record_graphs(ctx.results.extra, f"fixes.manager_graphs.n{n}")
                reading = ctx.memory.read()
                peak = _record_memory(ctx.results, f"fixes.{case.name}.n{n}", reading)
                ctx.results.extra[f"fixes.{case.name}.n{n}.graph_captured"] = captured
                ctx.results.rows.append(
                    Row("fixes", case.name, "env_steps_per_s", n, stats, "steps/s", peak)
                )
                ctx.say(f"fixes {case.name} n={n}: {_fmt_rate(stats)} env steps/s")
            except Exception as err:  # noqa: BLE001
                ctx.results.errors.append(f"fixes {case.name} n={n}: {_one_line(err)}")
                ctx.say(f"fixes {case.name} n={n}: FAILED {_one_line(err)}", kind="failed")
            finally:
                if env is not None:
                    _close(env)
                del env
                gc.collect()
    for case in cases:
        ctx.results.extra[f"fixes.{case.name}.description"] = case.description


def _record_graphs(extra: dict[str, Any], prefix: str) -> None:
    """What the ``manager_graphs`` hook did: graphs captured, replays, managers left eager
    and why (a capture that failed on this device says so here)."""
    from mjlab_microduck.compat import manager_graphs

    details = manager_graphs.status().details
    extra[f"{prefix}.graphs"] = details.get("graphs", 0)
    extra[f"{prefix}.replays"] = details.get("replays", 0)
    extra[f"{prefix}.scope"] = details.get("scope", manager_graphs.DEFAULT_SCOPE)
    for manager, why in details.get("eager", {}).items():
        extra[f"{prefix}.eager.{manager}"] = why


def _run_breakdown(ctx: _Ctx) -> None:
    req = ctx.request
    labels = [c.label for c in BREAKDOWN_COMPONENTS]
    for n in req.breakdown_envs:
        runner = None  # drop the previous size's runner before the next one is built
        try:
            ctx.memory.reset()
            with _training_session(ctx, n) as runner:
                steps_per_env = int(runner.cfg["num_steps_per_env"])
                with _quiet(ctx.log):
                    samples, missing = measure_breakdown(
                        runner, runner.env.unwrapped, iterations=req.breakdown_iterations,
                        warmup=req.breakdown_warmup, sync=ctx.sync,
                    )  # fmt: skip
                reading = ctx.memory.read()
            peak = _record_memory(ctx.results, f"breakdown.n{n}", reading)
            if missing:
                ctx.results.extra[f"breakdown.n{n}.not_instrumented"] = ", ".join(missing)
            rows = breakdown_rows(samples, steps_per_env, labels)
            for brow in rows:
                ctx.results.rows.append(
                    Row("breakdown", brow.label, "ms_per_step", n, brow.ms_per_step, "ms", peak)
                )
                ctx.results.rows.append(
                    Row("breakdown", brow.label, "share_pct", n, brow.share_pct, "%", peak)
                )
                key = f"breakdown.{brow.label}.n{n}.share_of_total_pct"
                ctx.results.extra[key] = round(brow.share_of_total_pct, 4)
            step_ms = Stats.from_samples([1000.0 * s.total_s / steps_per_env for s in samples])
            ctx.results.rows.append(
                Row("breakdown", "iteration", "ms_per_step", n, step_ms, "ms", peak)
            )
            top = sorted(rows, key=lambda r: -r.share_of_total_pct)[:3]
            ctx.say(
                f"breakdown n={n}: {step_ms.median:.2f} ms per env step (instrumented); "
                + ", ".join(f"{r.label} {r.share_of_total_pct:.1f}%" for r in top)
            )
        except Exception as err:  # noqa: BLE001
            ctx.results.errors.append(f"breakdown n={n}: {_one_line(err)}")
            ctx.say(f"breakdown n={n}: FAILED {_one_line(err)}", kind="failed")


def _run_launches(ctx: _Ctx) -> None:
    """One counted PPO iteration per env count, as installed and, where the ``buffer_syncs``
    hook is active, again with mjlab's own delay buffers (the same runner, warm)."""
    req = ctx.request
    labels = [c.label for c in BREAKDOWN_COMPONENTS]
    variants: dict[str, Callable[[], Any]] = {"": contextlib.nullcontext}
    if _hook_active("buffer_syncs"):
        variants["_mjlab_buffers"] = mjlab_buffers
    for n in req.launches_envs:
        try:
            counted: dict[str, list[LaunchRow]] = {}
            with _training_session(ctx, n) as runner:
                steps_per_env = int(runner.cfg["num_steps_per_env"])
                for suffix, context in variants.items():
                    counter = DispatchCounter()
                    with context(), _quiet(ctx.log), counter:
                        samples, _ = measure_breakdown(
                            runner, runner.env.unwrapped, iterations=1, warmup=1,
                            sections=counter,
                        )  # fmt: skip
                    counted[suffix] = launch_rows(samples, steps_per_env, labels)
            for suffix, rows in counted.items():
                for lrow in rows:
                    if not suffix:
                        ctx.results.rows.append(Row("launches", lrow.label, "ops_per_step", n,
                                                    lrow.ops_per_step, "ops"))  # fmt: skip
                    ctx.results.rows.append(Row("launches", lrow.label,
                                                f"host_reads_per_step{suffix}", n,
                                                lrow.host_reads_per_step, "reads"))  # fmt: skip
            reads = ", ".join(
                f"{rows[-1].host_reads_per_step.median:.1f}"
                + (" with mjlab's own delay buffers" if suffix else "")
                for suffix, rows in counted.items()
            )
            ctx.say(f"launches n={n}: {counted[''][-1].ops_per_step.median:.0f} PyTorch "
                    f"operators and host reads {reads} per env step")  # fmt: skip
        except Exception as err:  # noqa: BLE001
            ctx.results.errors.append(f"launches n={n}: {_one_line(err)}")
            ctx.say(f"launches n={n}: FAILED {_one_line(err)}", kind="failed")


_SECTION_RUNNERS: dict[str, Callable[[_Ctx], None]] = {
    "physics": _run_physics,
    "training": _run_training,
    "fixes": _run_fixes,
    "breakdown": _run_breakdown,
    "launches": _run_launches,
}

NOTES = (
    "Timings exclude env construction (kernel compilation, graph capture) and warm-up; the "
    "device is synchronised (Warp and torch) before every clock read. Spread = IQR and min/max "
    "over repeats. Training runs rsl_rl's own learn loop with a TensorBoard writer; checkpoint "
    "saving is switched off while timing. Breakdown timers synchronise around every wrapped "
    "call, so its per-step time is higher than the training section's. Fixes on CUDA: no "
    "cached broadphase exists, per-step is the stock path, and the frozen-broadphase fault "
    "(unguarded task) is an upper bound of what the ROCm cache saved. Fixes case buffer_syncs: "
    "the default stepping with mjlab's own delay buffers (a host sync per append and read); "
    "quat_syncs: with mjlab's own rotation-to-quaternion conversion (two mask indexings). "
    "manager_graphs (GPU, where opt-in): the termination and reward managers replayed from "
    "graphs; eager_managers (GPU, where graphs are the default): those managers launched "
    "operator by operator. "
    "Launches: PyTorch operators and host reads counted at the dispatcher in one PPO iteration "
    "after one warm-up, per env step (the update's spread over the iteration's steps); Warp's "
    "kernels are not PyTorch operators and are not counted. Peak memory = torch peak "
    "allocation + Warp mempool in use (n/a on CPU)."
)


SOURCE_KEY = "package_source_sha256"  # config: the package's source the run was made with
RUN_NAME_KEYS = ("name", "out")  # config that says where a run went, not what it measured


def identical_run(root: Path, request: BenchRequest) -> tuple[Path, records.RunRecord] | None:
    """The newest ok run under ``root`` that measured exactly ``request`` (every config value
    but its name and folder) with this package's very source, or None.

    The build's chapter 9 makes the quick CPU run that ``microduck bench --quick`` makes; a test
    of that run can read the build's instead of making it again.
    """
    from mjlab_microduck.runtime import provenance

    wanted = {k: v for k, v in request.config().items() if k not in RUN_NAME_KEYS}
    wanted[SOURCE_KEY] = provenance.package_source_digest()
    found = []
    for path in sorted(Path(root).glob(f"*/{records.RECORD_FILENAME}")):
        try:
            record = records.load_record(path)
        except records.RecordError:
            continue
        config = {k: v for k, v in record.config.items() if k not in RUN_NAME_KEYS}
        if record.kind == "bench" and record.status == "ok" and config == wanted:
            found.append((record.finished_at or "", path.parent, record))
    if not found:
        return None
    _, run_dir, record = max(found, key=lambda item: item[0])
    return run_dir, record


def hooks_active() -> str:
    """The compat hooks acting in this process, comma-separated: what the measured stepping
    was (``MICRODUCK_MANAGER_GRAPHS=1`` before a run adds ``manager_graphs``, say)."""
    from mjlab_microduck import compat

    compat.install_all()
    return ",".join(status.fix for status in compat.report() if status.active)


def run(
    request: BenchRequest, stream: TextIO | None = None, lines: str | None = None
) -> tuple[Path, records.RunRecord]:
    """Run the requested sections and write ``record.json`` + ``bench.csv`` into a new run dir.

    ``stream`` (stdout by default) gets the run's lines in the style :func:`line_style` picks
    from ``lines``: one per measurement, one per section (``sections``, what a book page shows)
    or none; ``bench.log`` keeps every line either way.

    A configuration that fails is reported and skipped; the run then ends with status
    ``failed`` and the error names each failed configuration, while everything that was
    measured is still written. SIGINT, SIGTERM or SIGHUP end it ``interrupted``, with the rows
    measured so far in ``bench.csv``; while it runs, the record's heartbeat is refreshed every
    minute with the sections done.
    """
    from mjlab_microduck.runtime import provenance

    stream = stream or sys.stdout
    lines = line_style(lines)
    os.environ.setdefault("WANDB_MODE", "offline")
    with stopping.signals_raise() as signals:
        command = ["microduck", "bench", *request.cli_args()]
        # Provenance (which runs tools) before the folder exists: a signal until the record is
        # written leaves nothing behind.
        prov = provenance.collect(
            profile=request.profile,
            command=command,
            device=request.device,
            machine_label=request.machine_label,
        )
        run_dir = records.new_run_dir(request.out, request.name)
        record = records.RunRecord(
            run_id=run_dir.name,
            kind="bench",
            status="running",
            command=command,
            config={**request.config(), SOURCE_KEY: provenance.package_source_digest()},
            provenance=prov,
            started_at=records.utc_now_iso(),
            notes=NOTES,
            process=liveness.this_process(),
        )
        records.write_record(record, run_dir)
        started = time.monotonic()
        results = BenchResults()
        results.extra["hooks_active"] = hooks_active()
        done: list[str] = []
        progress = lambda: {"sections_done": ",".join(done)}  # noqa: E731
        try:
            with liveness.Heartbeat(record, run_dir, progress=progress), \
                    open(run_dir / LOG_FILENAME, "w", encoding="utf-8") as log:  # fmt: skip
                ctx = _Ctx(request, results, log, stream, device_sync(request.device),
                           MemoryProbe(request.device), lines)  # fmt: skip
                for section in request.sections:
                    section_start = time.monotonic()
                    _SECTION_RUNNERS[section](ctx)
                    seconds = time.monotonic() - section_start
                    results.extra[f"section_seconds.{section}"] = round(seconds, 3)
                    ctx.section_done(section, seconds)
                    done.append(section)
            status = "ok" if not results.errors else "failed"
            record = record.model_copy(
                update={
                    "status": status,
                    "error": "; ".join(results.errors)[:2000] if results.errors else None,
                    **_written(run_dir, results),
                }
            )
        except BaseException as err:  # noqa: BLE001 - even a signal leaves its record behind
            stop = stopping.as_interrupted(err)
            if stop is not None:
                # What was measured before the signal is kept: the rows so far, in bench.csv.
                what = f"after {', '.join(done)}" if done else "before its first section ended"
                record = records.mark_interrupted(
                    record, f"interrupted by {stop.signal_name} {what}",
                    signal=stop.signal_name, **_written(run_dir, results),
                )  # fmt: skip
            else:
                record = records.mark_failed(record, err, summary=results.summary())
            if not isinstance(err, (Exception, stopping.Interrupted)):
                raise
        finally:
            signals.hold()  # a signal now would only lose the record being written
            record = records.finalize(record, run_dir, started)
    return run_dir, record


def _written(run_dir: Path, results: BenchResults) -> dict[str, Any]:
    """Write ``bench.csv``; the summary and artifacts (CSV and log) a record lists."""
    records.atomic_write_text(run_dir / CSV_FILENAME, csv_text(results.rows))
    return {
        "summary": results.summary(),
        "artifacts": [
            records.artifact(run_dir / CSV_FILENAME, run_dir, "bench_csv"),
            records.artifact(run_dir / LOG_FILENAME, run_dir, "log"),
        ],
    }


def publish(run_dir: str | os.PathLike[str], dest: str | os.PathLike[str]) -> records.RunRecord:
    """Copy a finished bench run's record and CSV into the book (``book/results/<name>``).

    Refuses failed runs and existing destinations; the log stays behind in ``logs/``.
    """
    source = Path(run_dir)

    def copy_files(record: records.RunRecord, staging: Path) -> list[records.Artifact]:
        records.atomic_copy(source / CSV_FILENAME, staging / CSV_FILENAME)
        return [records.artifact(staging / CSV_FILENAME, staging, "bench_csv")]

    return records.publish_run(source, dest, copy_files, kind="bench")


# ============================================================================ command line
