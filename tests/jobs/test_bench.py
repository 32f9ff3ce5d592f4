"""microduck bench: timing logic with a fake clock and fake envs, outputs, CLI, and a real run.

The fakes advance a fake clock by chosen costs (multiples of 1/8 s, exact in binary floating
point), so every median, quartile, split and share below is asserted exactly. The slow test at
the end runs ``microduck bench --quick`` on the CPU and checks the record and CSV it writes; its
GPU sibling does the same on ``cuda:0`` and checks that mjlab's graph capture and the eager case
were both measured.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from mjlab_microduck.cli._common import parse
from mjlab_microduck.cli.bench import main as bench_cli
from mjlab_microduck.jobs import bench
from mjlab_microduck.runs import records
from mjlab_microduck.tasks.rl_cfg import STEPS_PER_ENV
from mjlab_microduck.tasks.velocity import TASK_ID, UNGUARDED_TASK_ID

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------- fakes


class FakeClock:
    """A clock that only moves when told to; records every read and every sync."""

    def __init__(self) -> None:
        self.now = 0.0
        self.events: list[str] = []

    def __call__(self) -> float:
        self.events.append("read")
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def sync(self) -> None:
        self.events.append("sync")


class Cost:
    """A callable that costs a fixed time per call (optionally more on its first calls)."""

    def __init__(self, clock: FakeClock, seconds: float, first: tuple[float, ...] = ()) -> None:
        self.clock, self.seconds, self.first, self.calls = clock, seconds, list(first), 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        self.clock.advance(self.first.pop(0) if self.first else self.seconds)
        return {}


class FakeSim:
    def __init__(self, clock: FakeClock, costs: dict[str, float]) -> None:
        self.clock, self.costs = clock, costs

    def step(self) -> None:
        self.clock.advance(self.costs["sim.step"])

    def forward(self) -> None:
        self.clock.advance(self.costs["sim.forward"])

    def sense(self) -> None:
        self.clock.advance(self.costs["sim.sense"])

    def reset(self, env_ids=None) -> None:
        self.clock.advance(self.costs["sim.reset"])


class FakeMjlabEnv:
    """The call structure of mjlab's ``ManagerBasedRlEnv.step`` (decimation 4), with costs.

    Every ``reset_every``-th step resets envs: ``_reset_idx`` costs its own time and applies
    reset events inside it (nested: those count as events, not resets).
    """

    decimation = 4

    def __init__(self, clock: FakeClock, costs: dict[str, float], reset_every: int = 2) -> None:
        self.clock, self.costs, self.reset_every = clock, costs, reset_every
        self.steps = 0
        self.sim = FakeSim(clock, costs)
        self.scene = SimpleNamespace(
            write_data_to_sim=Cost(clock, costs["scene"]), update=Cost(clock, 0.0)
        )
        self.action_manager = SimpleNamespace(
            process_action=Cost(clock, costs["actions"]), apply_action=Cost(clock, 0.0)
        )
        self.observation_manager = SimpleNamespace(compute=Cost(clock, costs["observations"]))
        self.reward_manager = SimpleNamespace(compute=Cost(clock, costs["rewards"]))
        self.termination_manager = SimpleNamespace(compute=Cost(clock, costs["terminations"]))
        self.command_manager = SimpleNamespace(compute=Cost(clock, costs["commands"]))
        self.event_manager = SimpleNamespace(apply=Cost(clock, costs["events"]))

    def _reset_idx(self, env_ids=None) -> None:
        self.sim.reset(env_ids)
        self.event_manager.apply(mode="reset")
        self.clock.advance(self.costs["reset_own"])

    def step(self, action) -> None:
        self.steps += 1
        self.action_manager.process_action(action)
        for _ in range(self.decimation):
            self.action_manager.apply_action()
            self.scene.write_data_to_sim()
            self.sim.step()
            self.scene.update(dt=0.005)
        self.termination_manager.compute()
        self.reward_manager.compute(dt=0.02)
        if self.steps % self.reset_every == 0:
            self._reset_idx([0])
        self.sim.forward()
        self.command_manager.compute(dt=0.02)
        self.event_manager.apply(mode="interval", dt=0.02)
        self.sim.sense()
        self.observation_manager.compute(update_history=True)
        self.clock.advance(self.costs["env_glue"])  # mjlab's own bookkeeping: "other"


class FakeRunner:
    """rsl_rl 5's ``OnPolicyRunner.learn`` loop, in the same order, on fake parts."""

    def __init__(self, clock: FakeClock, costs: dict[str, float], steps_per_env: int = 3) -> None:
        self.clock, self.costs = clock, costs
        self.cfg = {"num_steps_per_env": steps_per_env, "save_interval": 1}
        unwrapped = FakeMjlabEnv(clock, costs)
        self.env = SimpleNamespace(step=unwrapped.step, unwrapped=unwrapped)
        self.alg = SimpleNamespace(
            act=Cost(clock, costs["act"], first=(costs["act_first"],)),
            process_env_step=Cost(clock, costs["store"]),
            compute_returns=Cost(clock, costs["returns"]),
            update=Cost(clock, costs["update"]),
        )
        self.logger = SimpleNamespace(process_env_step=Cost(clock, 0.0), log=Cost(clock, 0.0))
        self.saved: list[str] = []
        self.learn_calls: list[tuple[int, bool]] = []

    def learn(self, num_learning_iterations: int, init_at_random_ep_len: bool = False) -> None:
        self.learn_calls.append((num_learning_iterations, init_at_random_ep_len))
        self.clock.advance(self.costs["startup"])
        for it in range(num_learning_iterations):
            for _ in range(self.cfg["num_steps_per_env"]):
                self.alg.act(None)
                self.env.step(None)
                self.alg.process_env_step(None, None, None, {})
                self.logger.process_env_step(None, None, {}, None)
            self.alg.compute_returns(None)
            self.alg.update()
            self.logger.log(it=it)
            if it % self.cfg["save_interval"] == 0:
                self.save(f"model_{it}.pt")

    def save(self, path: str) -> None:
        self.saved.append(path)
        self.clock.advance(self.costs["save"])


COSTS = {
    "sim.step": 0.25, "sim.forward": 0.125, "sim.sense": 0.125, "sim.reset": 0.125,
    "scene": 0.125, "actions": 0.125, "observations": 0.25, "rewards": 0.125,
    "terminations": 0.125, "commands": 0.125, "events": 0.125, "reset_own": 0.25,
    "env_glue": 0.5, "act": 0.5, "act_first": 64.0, "store": 0.125, "returns": 0.5,
    "update": 4.0, "startup": 32.0, "save": 16.0,
}  # fmt: skip


# ---------------------------------------------------------------------------- statistics


def test_stats_median_quartiles_and_range_match_numpy():
    samples = [5.0, 1.0, 3.0, 2.0, 4.0]
    stats = bench.Stats.from_samples(samples)
    assert (stats.n, stats.median, stats.p25, stats.p75, stats.min, stats.max) == (
        5, 3.0, 2.0, 4.0, 1.0, 5.0,
    )  # fmt: skip
    even = bench.Stats.from_samples([4.0, 1.0, 3.0, 2.0])
    assert (even.median, even.p25, even.p75) == (2.5, 1.75, 3.25)
    values = list(np.random.default_rng(0).uniform(0, 10, size=17))
    spread = bench.Stats.from_samples(values)
    assert (spread.p25, spread.median, spread.p75) == tuple(np.percentile(values, [25, 50, 75]))
    one = bench.Stats.from_samples([7.0])
    assert (one.median, one.p25, one.p75, one.min, one.max) == (7.0,) * 5


def test_stats_refuse_empty_nonfinite_and_zero_durations():
    with pytest.raises(ValueError, match="no samples"):
        bench.Stats.from_samples([])
    with pytest.raises(ValueError, match="non-finite"):
        bench.Stats.from_samples([1.0, float("nan")])
    with pytest.raises(ValueError, match="did not advance"):
        bench.rates([1.0, 0.0], work=10)


# ---------------------------------------------------------------------------- timing loop


def test_measure_repeats_excludes_warmup_and_syncs_before_every_clock_read():
    clock = FakeClock()
    # Two warm-up calls cost 100 s each (compilation); the timed calls cost 1, 2, 3, ... s.
    step = Cost(clock, 0.0, first=(100.0, 100.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0))
    samples = bench.measure_repeats(
        step, repeats=3, warmup=2, calls_per_repeat=2, clock=clock, sync=clock.sync
    )
    assert samples == [3.0, 7.0, 11.0]
    assert step.calls == 8
    assert clock.events == ["sync", "read"] * 6


def test_measure_env_steps_reports_env_steps_per_second():
    clock = FakeClock()
    step = Cost(clock, 0.0, first=(50.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0))
    stats = bench.measure_env_steps(
        step, num_envs=256, steps=2, repeats=3, warmup=1, clock=clock, sync=clock.sync
    )
    work = 256 * 2
    assert stats.n == 3
    assert stats.median == work / 7.0
    assert stats.min == work / 11.0 and stats.max == work / 3.0
    assert stats.p25 == (work / 11.0 + work / 7.0) / 2
    assert stats.p75 == (work / 7.0 + work / 3.0) / 2


def test_measure_repeats_rejects_bad_sizes():
    with pytest.raises(ValueError):
        bench.measure_repeats(lambda: None, repeats=0)
    with pytest.raises(ValueError):
        bench.measure_repeats(lambda: None, repeats=1, calls_per_repeat=0)


def test_section_timer_counts_nested_regions_exclusively():
    clock = FakeClock()
    timer = bench.SectionTimer(clock, clock.sync)
    inner = timer.wrap("events", Cost(clock, 0.25))

    def outer():
        clock.advance(1.0)
        inner()
        clock.advance(0.5)

    timer.wrap("resets", outer)()
    assert timer.take() == {"resets": 1.5, "events": 0.25}
    assert timer.take() == {}
    assert timer.calls == {"events": 1, "resets": 1}


# ---------------------------------------------------------------------------- training timing


def _expected_costs() -> tuple[float, float, float]:
    """(one env step without resets, learner work per step, learning per iteration)."""
    c = COSTS
    env_step = (
        c["actions"] + 4 * (c["scene"] + c["sim.step"]) + c["terminations"] + c["rewards"]
        + c["sim.forward"] + c["commands"] + c["events"] + c["sim.sense"] + c["observations"]
        + c["env_glue"]
    )  # fmt: skip
    return env_step, c["act"] + c["store"], c["returns"] + c["update"]


def test_measure_training_splits_collection_and_learning_and_drops_warmup():
    clock = FakeClock()
    runner = FakeRunner(clock, COSTS, steps_per_env=4)  # 4 steps: exactly 2 resets/iteration
    samples = bench.measure_training(runner, iterations=3, warmup=1, clock=clock, sync=clock.sync)
    env_step, per_step_learner, learning = _expected_costs()
    resets = 2 * (COSTS["sim.reset"] + COSTS["events"] + COSTS["reset_own"])
    collection = 4 * (env_step + per_step_learner) + resets
    assert len(samples) == 3
    for sample in samples:
        assert sample.collection_s == collection
        assert sample.learning_s == learning
        assert sample.total_s == collection + learning  # logging and saving cost nothing here
        assert sample.sections == {}
    # Warm-up really ran (one learn call covering it) and was excluded: the first act call and
    # rsl_rl's start-up cost 64 s + 32 s, which appear in no sample.
    assert runner.learn_calls == [(4, True)]
    assert all(s.total_s < 32 for s in samples)
    # Checkpoints are not part of the measurement, and the runner is left as it was.
    assert runner.saved == []
    assert "save" not in vars(runner)
    assert isinstance(runner.alg.compute_returns, Cost)
    assert isinstance(runner.logger.log, Cost)


def test_measure_training_needs_a_warmup_iteration():
    clock = FakeClock()
    with pytest.raises(ValueError, match="warmup >= 1"):
        bench.measure_training(FakeRunner(clock, COSTS), iterations=2, warmup=0, clock=clock)


def test_breakdown_attributes_every_second_and_restores_the_env():
    clock = FakeClock()
    runner = FakeRunner(clock, COSTS, steps_per_env=4)
    env = runner.env.unwrapped
    samples, missing = bench.measure_breakdown(
        runner, env, iterations=2, warmup=1, clock=clock, sync=clock.sync
    )
    assert missing == []
    c = COSTS
    expected = {
        "physics_substeps": 4 * 4 * c["sim.step"],
        "physics_forward": 4 * c["sim.forward"],
        "raycast_sensing": 4 * c["sim.sense"],
        "scene_update": 4 * 4 * c["scene"],
        "actions": 4 * c["actions"],
        "observations": 4 * c["observations"],
        "rewards": 4 * c["rewards"],
        "terminations": 4 * c["terminations"],
        "commands": 4 * c["commands"],
        # 4 interval applications + 2 reset applications nested inside _reset_idx
        "events": 6 * c["events"],
        "resets": 2 * (c["sim.reset"] + c["reset_own"]),
        "policy_inference": 4 * c["act"],
        "rollout_storage": 4 * c["store"],
        "ppo_update": c["returns"] + c["update"],
        "logging": 0.0,
    }
    for sample in samples:
        assert sample.sections == expected
        assert sample.total_s - sum(sample.sections.values()) == 4 * c["env_glue"]
    rows = bench.breakdown_rows(samples, 4, [comp.label for comp in bench.BREAKDOWN_COMPONENTS])
    by_label = {row.label: row for row in rows}
    total = samples[0].total_s
    assert by_label["physics_substeps"].ms_per_step.median == 1000.0 * expected[
        "physics_substeps"
    ] / 4
    assert by_label["other"].share_of_total_pct == 100.0 * 4 * c["env_glue"] / total
    assert by_label["ppo_update"].share_pct.median == 100.0 * expected["ppo_update"] / total
    assert sum(row.share_of_total_pct for row in rows) == pytest.approx(100.0, abs=1e-9)
    # Every wrapper is gone: class methods show through again, instance attributes are back.
    assert "_reset_idx" not in vars(env) and "step" not in vars(env.sim)
    assert isinstance(env.observation_manager.compute, Cost)
    assert isinstance(runner.alg.act, Cost)


def test_breakdown_reports_methods_it_could_not_wrap():
    clock = FakeClock()
    runner = FakeRunner(clock, COSTS, steps_per_env=2)
    env = runner.env.unwrapped
    # e.g. another mjlab version: a renamed method, a manager that does not exist
    extra = bench.Component(
        "nowhere", "missing", (("env.scene", "renamed"), ("env.no_such_manager", "compute"))
    )
    samples, missing = bench.measure_breakdown(
        runner, env, iterations=1, clock=clock, sync=clock.sync,
        components=(*bench.BREAKDOWN_COMPONENTS, extra),
    )  # fmt: skip
    assert missing == ["env.scene.renamed", "env.no_such_manager.compute"]
    assert "nowhere" not in samples[0].sections


# ---------------------------------------------------------------------------- outputs


def _row(section, config, metric, n, value, unit="steps/s", peak=None):
    return bench.Row(section, config, metric, n, bench.Stats.from_samples([value]), unit, peak)


def test_launch_rows_per_step_with_other_and_total():
    samples = [
        bench.IterationSample(1.0, 0.5, 2.0, {"ops/rewards": 48.0, "ops/other": 24.0,
                                               "reads/rewards": 24.0}),
        bench.IterationSample(1.0, 0.5, 2.0, {"ops/rewards": 24.0, "ops/other": 24.0}),
    ]  # fmt: skip
    rows = {r.label: r for r in bench.launch_rows(samples, 24, ["rewards", "events"])}
    assert list(rows) == ["rewards", "events", bench.OTHER, "total"]
    assert rows["rewards"].ops_per_step.median == 1.5
    assert (rows["rewards"].host_reads_per_step.min, rows["rewards"].host_reads_per_step.max) == (
        0.0, 1.0,
    )  # fmt: skip
    assert rows["events"].ops_per_step.max == 0.0
    assert (rows["total"].ops_per_step.min, rows["total"].ops_per_step.max) == (2.0, 3.0)
    with pytest.raises(ValueError):
        bench.launch_rows([], 24, ["rewards"])


def test_ratios_and_summary_from_rows():
    rows = [
        _row("physics", "zero_action", "env_steps_per_s", 256, 40_000.0),
        _row("training", "ppo", "env_steps_per_s", 256, 10_000.0),
        _row("fixes", "graph", "env_steps_per_s", 256, 40_000.0),
        _row("fixes", "eager", "env_steps_per_s", 256, 20_000.0),
        _row("fixes", "frozen_broadphase", "env_steps_per_s", 256, 25_000.0),
        _row("fixes", "buffer_syncs", "env_steps_per_s", 256, 32_000.0),  # against graph
        _row("fixes", "quat_syncs", "env_steps_per_s", 256, 20_000.0),
        _row("fixes", "manager_graphs", "env_steps_per_s", 256, 60_000.0),
        _row("fixes", "eager", "env_steps_per_s", 4096, 1.0),  # no partner: no ratio
        _row("fixes", "eager", "env_steps_per_s", 64, 3.0),
        _row("fixes", "buffer_syncs", "env_steps_per_s", 64, 2.0),  # no graph: against eager
    ]
    ratios = bench.derived_ratios(rows)
    assert ratios == {
        "ratio.training_over_physics.n256": 0.25,
        "ratio.eager_over_graph.n256": 0.5,
        "ratio.per_step_over_frozen.n256": 0.8,
        "ratio.sync_free_over_buffer_syncs.n256": 1.25,
        "ratio.sync_free_over_buffer_syncs.n64": 1.5,
        "ratio.sync_free_over_quat_syncs.n256": 2.0,
        "ratio.graphs_over_eager_managers.n256": 1.5,
    }
    results = bench.BenchResults(rows=rows, extra={"fixes.backend": "cuda"}, errors=["x"])
    summary = results.summary()
    assert summary["physics.zero_action.n256.env_steps_per_s"] == 40_000.0
    assert summary["physics.zero_action.n256.env_steps_per_s.p25"] == 40_000.0
    assert summary["ratio.eager_over_graph.n256"] == 0.5
    assert summary["fixes.backend"] == "cuda"
    assert (summary["measurements"], summary["errors"]) == (11, 1)


def test_csv_round_trips_exactly_and_leaves_memory_blank_when_unknown(tmp_path):
    rows = [
        bench.Row("physics", "zero_action", "env_steps_per_s", 64,
                  bench.Stats.from_samples([1 / 3, 2 / 3, 1.0]), "steps/s", None),
        bench.Row("training", "ppo", "iteration_s", 256,
                  bench.Stats.from_samples([0.1, 0.2]), "s", 123456789),
    ]  # fmt: skip
    path = records.atomic_write_text(tmp_path / bench.CSV_FILENAME, bench.csv_text(rows))
    assert path.read_text().splitlines()[0] == ",".join(bench.CSV_COLUMNS)
    frame = bench.load_csv(path)
    assert list(frame.columns) == list(bench.CSV_COLUMNS)
    assert frame.loc[0, "median"] == 2 / 3 and frame.loc[0, "p25"] == (1 / 3 + 2 / 3) / 2
    assert frame.loc[1, "p75"] == rows[1].stats.p75
    assert np.isnan(frame.loc[0, "peak_mem_bytes"])
    assert frame.loc[1, "peak_mem_bytes"] == 123456789
    assert list(frame["repeats"]) == [3, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == [bench.CSV_FILENAME]  # no temp left


def test_load_runs_refuses_a_record_of_another_kind(tmp_path):
    from mjlab_microduck.runtime import provenance

    record = records.RunRecord(
        run_id="x", kind="train", status="running", started_at=records.utc_now_iso(),
        provenance=provenance.collect(device="cpu"),
    )  # fmt: skip
    records.write_record(record, tmp_path)
    with pytest.raises(records.RecordError, match="not a bench run"):
        bench.load_runs([tmp_path])
    records_, frame = bench.load_runs([])
    assert records_ == [] and list(frame.columns) == ["run_id", "device", *bench.CSV_COLUMNS]


def test_load_csv_rejects_a_foreign_csv(tmp_path):
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="missing columns"):
        bench.load_csv(tmp_path / "x.csv")


# ---------------------------------------------------------------------------- plans


def test_fix_plan_per_backend():
    cpu, cpu_skipped = bench.fix_plan("cpu", broadphase_fix_active=False)
    assert [c.name for c in cpu] == ["eager", "frozen_broadphase", "buffer_syncs"]
    assert set(cpu_skipped) == {"graph", "fork_cache", "quat_syncs", "manager_graphs"}
    cuda, cuda_skipped = bench.fix_plan("cuda", broadphase_fix_active=False)
    assert [(c.name, c.mode, c.graph) for c in cuda] == [
        ("graph", "stock", True), ("eager", "veto_graph", False),
        ("frozen_broadphase", "frozen_fault", False), ("manager_graphs", "graphs", True),
        ("buffer_syncs", "buffer_syncs", True),
    ]  # fmt: skip
    assert "upper bound" in cuda_skipped["fork_cache"]
    frozen = cuda[2]
    assert frozen.task == UNGUARDED_TASK_ID and cuda[0].task == cuda[4].task == TASK_ID
    assert cuda[4].description.endswith("otherwise as graph")
    hip, hip_skipped = bench.fix_plan("hip", broadphase_fix_active=True)
    assert [(c.name, c.mode, c.graph) for c in hip] == [
        ("eager", "stock", False), ("fork_cache", "fork_cache", False),
        ("manager_graphs", "graphs", False), ("buffer_syncs", "buffer_syncs", False),
    ]  # fmt: skip
    assert "graph" in hip_skipped
    hip_plain, hip_plain_skipped = bench.fix_plan(
        "hip", broadphase_fix_active=False, buffer_fix_active=False
    )
    assert [c.name for c in hip_plain] == ["eager", "manager_graphs"]
    # where graphs are the default (a CUDA build of torch), the case takes them out instead
    graphed, _ = bench.fix_plan("cuda", False, graphs_default=True)
    assert [(c.name, c.mode, c.graph) for c in graphed][3] == (
        "eager_managers", "eager_managers", True)
    assert "MICRODUCK_MANAGER_GRAPHS=0" in graphed[3].description
    assert "manager_graphs" not in {c.name for c in graphed}
    assert {"fork_cache", "buffer_syncs", "quat_syncs"} <= set(hip_plain_skipped)
    both, _ = bench.fix_plan("cuda", False, buffer_fix_active=True, quat_fix_active=True)
    assert [(c.name, c.mode, c.graph) for c in both[-2:]] == [
        ("buffer_syncs", "buffer_syncs", True), ("quat_syncs", "quat_syncs", True),
    ]  # fmt: skip
    assert both[-1].description.startswith("mjlab's own rotation-to-quaternion conversion")
    with pytest.raises(ValueError):
        bench.fix_plan("tpu", False)


@pytest.mark.parametrize("quat_fix_active", [True, False])
def test_a_cpu_skips_the_quaternion_case_for_its_own_reason(quat_fix_active):
    """The quat_syncs hook is installed on a CPU too: its case is skipped there because a CPU
    pays nothing for a sync, never with the reason of an inactive hook."""
    _, skipped = bench.fix_plan("cpu", False, quat_fix_active=quat_fix_active)
    assert skipped["quat_syncs"] == bench.CPU_SYNC_SKIP
    assert "not active" not in skipped["quat_syncs"] and "GPUs only" in skipped["quat_syncs"]
    _, gpu_skipped = bench.fix_plan("cuda", False, quat_fix_active=False)
    assert gpu_skipped["quat_syncs"] == (
        "the quat_syncs hook is not active, so every case has those syncs"
    )
    _, buffer_off = bench.fix_plan("cpu", False, buffer_fix_active=False)
    assert "not active" in buffer_off["buffer_syncs"]  # the buffer case runs on a CPU


def test_eager_case_vetoes_mjlab_graph_capture_and_restores_it():
    from mjlab.sim.sim import Simulation

    original = Simulation.__dict__["_should_use_cuda_graph"]
    fake_sim = SimpleNamespace(wp_device=SimpleNamespace(is_cuda=True, alias="cuda:0"))
    eager = bench.FixCase("eager", "veto_graph", TASK_ID, "test")
    with bench.fix_context(eager):
        assert Simulation._should_use_cuda_graph(fake_sim) is False
        assert fake_sim._microduck_graph_veto.startswith(bench.EAGER_VETO)
    assert Simulation.__dict__["_should_use_cuda_graph"] is original


def test_buffer_syncs_case_puts_mjlab_buffer_back_only_inside():
    from mjlab.utils.buffers.circular_buffer import CircularBuffer

    from mjlab_microduck.compat import buffer_syncs
    from mjlab_microduck.runtime.dispatch_count import host_reads

    assert buffer_syncs.status().active
    case = bench.fix_plan("cpu", False)[0][-1]
    with bench.fix_context(case):
        assert not buffer_syncs.status().active
        assert host_reads(lambda: CircularBuffer(2, 3, "cpu").append(torch.ones(3)))
    assert buffer_syncs.status().active
    assert not host_reads(lambda: CircularBuffer(2, 3, "cpu").append(torch.ones(3)))


def test_quat_syncs_case_puts_mjlab_conversion_back_only_inside():
    import mjlab.entity.data as entity_data

    from mjlab_microduck.compat import quat_syncs
    from mjlab_microduck.runtime.dispatch_count import host_reads

    assert quat_syncs.status().active
    case = bench.fix_plan("cuda", False, quat_fix_active=True)[0][-1]
    assert case.name == "quat_syncs"
    matrices = torch.eye(3).expand(4, 3, 3)
    with bench.fix_context(case):
        assert not quat_syncs.status().active
        assert host_reads(lambda: entity_data.quat_from_matrix(matrices))
    assert quat_syncs.status().active
    assert not host_reads(lambda: entity_data.quat_from_matrix(matrices))


def test_manager_graphs_case_switches_the_hook_on_only_inside(monkeypatch):
    from mjlab_microduck.compat import manager_graphs

    monkeypatch.delenv(manager_graphs.ENV_VAR, raising=False)
    assert not manager_graphs.status().active
    case = bench.fix_plan("cuda", False)[0][3]
    assert case.name == "manager_graphs"
    with bench.fix_context(case):
        assert manager_graphs.status().active and manager_graphs.mode() == "1"
    assert not manager_graphs.status().active
    assert manager_graphs.ENV_VAR not in os.environ


def test_eager_managers_case_takes_the_default_graphs_out_only_inside(monkeypatch):
    from mjlab_microduck.compat import manager_graphs

    monkeypatch.setenv(manager_graphs.ENV_VAR, "1")  # graphs on, as auto is on a CUDA build
    manager_graphs.uninstall()
    manager_graphs.install()
    try:
        case = bench.fix_plan("cuda", False, graphs_default=True)[0][3]
        with bench.fix_context(case):
            assert not manager_graphs.status().active
        assert manager_graphs.status().active
    finally:
        monkeypatch.delenv(manager_graphs.ENV_VAR)
        manager_graphs.uninstall()
        manager_graphs.install()
    assert not manager_graphs.status().active  # auto on this CPU: off


def test_graphs_ratio_reads_either_case_as_graphs_over_eager_managers():
    default_on = [_row("fixes", "graph", "env_steps_per_s", 256, 50_000.0),
                  _row("fixes", "eager_managers", "env_steps_per_s", 256, 40_000.0)]
    assert bench.derived_ratios(default_on)["ratio.graphs_over_eager_managers.n256"] == 1.25
    opt_in = [_row("fixes", "eager", "env_steps_per_s", 256, 40_000.0),
              _row("fixes", "manager_graphs", "env_steps_per_s", 256, 50_000.0)]
    assert bench.derived_ratios(opt_in)["ratio.graphs_over_eager_managers.n256"] == 1.25


def test_frozen_case_switches_the_fault_on_only_inside():
    from mjlab_microduck.compat import faults

    case = bench.fix_plan("cpu", False)[0][1]
    assert not faults.is_enabled()
    with bench.fix_context(case):
        assert faults.is_enabled()
    assert not faults.is_enabled()


def test_default_requests_match_the_issue_matrix():
    gpu = bench.default_request("cuda:0")
    assert gpu.physics_envs == (64, 256, 1024, 4096, 8192)
    assert gpu.training_envs == (256, 4096) and gpu.breakdown_envs == (256,)
    quick = bench.default_request("cpu", quick=True)
    assert quick.physics_envs == (4, 16) and quick.training_envs == (16,)
    assert quick.training_iterations == 1 and quick.breakdown_envs == (16,)
    assert quick.launches_envs == (4,) and gpu.launches_envs == (4096,)
    cpu = bench.default_request("cpu")
    assert cpu.physics_envs == (16, 64)
    assert bench.default_request("cpu", repeats=9, physics_envs=None).repeats == 9


def test_cli_arguments_reproduce_the_request(monkeypatch):
    monkeypatch.delenv("MICRODUCK_PROFILE", raising=False)
    request = bench.default_request(
        "cpu", quick=True, name="again", out=Path("somewhere"), sections=("physics", "fixes"),
        physics_envs=(8, 32), repeats=4, machine_label="unit test", profile="ci",
    )  # fmt: skip
    default = bench.default_request("cpu")
    parsed = parse(bench.BenchRequest, request.cli_args(), "microduck bench", default=default)
    assert parsed == request


def test_memory_probe_is_not_applicable_on_cpu():
    probe = bench.MemoryProbe("cpu")
    probe.reset()
    assert probe.read() is None
    assert bench.device_sync("cpu") is bench._no_sync


# ---------------------------------------------------------------------------- CLI errors


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--device", "cpu", "--sections", "physics", "bogus"], "unknown bogus"),
        (["--device", "tpu"], "expected cpu, cuda or cuda:N"),
        (["--device", "cpu", "--physics-envs", "0", "16"], "positive integers"),
        (["--device", "cpu", "--training-envs", "a", "b"], "--training-envs"),
        (["--device", "cpu", "--training-warmup", "0"], "at least 1"),
        (["--device", "cpu", "--name", "bad name"], "run name 'bad name'"),
        (["--device", "cpu", "--task", "Nope"], "--task 'Nope' is not a registered task"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys, tmp_path):
    assert bench_cli([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("microduck bench: ") and message in err
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []  # nothing was started


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without GPU")
def test_gpu_device_without_gpu_is_refused(capsys, tmp_path):
    assert bench_cli(["--device", "cuda:0", "--out", str(tmp_path)]) == 2
    assert "torch sees no GPU" in capsys.readouterr().err


# ---------------------------------------------------------------------------- real runs


def _run_quick(device: str, out: Path) -> tuple[Path, records.RunRecord]:
    entry = "from mjlab_microduck.cli import console_main; console_main()"
    microduck = [sys.executable, "-c", entry]
    command = [*microduck, "bench", "--quick", "--device", device, "--out", str(out),
               "--name", "quick"]  # fmt: skip
    proc = subprocess.run(
        command, capture_output=True, text=True, timeout=1200, cwd=REPO,
        env={**os.environ, "WANDB_MODE": "offline"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    assert f"run record: {run_dir / 'record.json'} (status ok)" in proc.stdout
    return run_dir, records.load_record(run_dir)


def _check_quick_outputs(run_dir: Path, record: records.RunRecord, physics_sizes, n_train):
    assert record.kind == "bench" and record.status == "ok" and record.error is None
    assert record.command[:2] == ["microduck", "bench"]
    assert record.config["quick"] is True and record.config["task"] == TASK_ID
    records.verify_artifacts(record, run_dir)
    frame = bench.load_csv(run_dir / bench.CSV_FILENAME)
    assert set(frame["section"]) == set(bench.SECTIONS)
    assert (frame[frame.section != "launches"]["median"] > 0).all()  # counts may be 0
    assert (frame["min"] <= frame["p25"]).all() and (frame["p25"] <= frame["median"]).all()
    assert (frame["median"] <= frame["p75"]).all() and (frame["p75"] <= frame["max"]).all()
    physics = frame[frame.section == "physics"]
    assert sorted(physics.num_envs) == list(physics_sizes)
    assert (physics.repeats == 3).all()
    training = frame[frame.section == "training"].set_index("metric")
    assert set(training.index) == {"env_steps_per_s", "iteration_s", "collection_s", "learning_s"}
    assert (training.num_envs == n_train).all() and (training.repeats == 1).all()
    iteration = training.loc["iteration_s", "median"]
    split = training.loc["collection_s", "median"] + training.loc["learning_s", "median"]
    assert split <= iteration + 1e-9
    assert training.loc["env_steps_per_s", "median"] == pytest.approx(
        n_train * STEPS_PER_ENV / iteration, rel=1e-9
    )
    shares = {
        key: value for key, value in record.summary.items()
        if key.startswith("breakdown.") and key.endswith(".share_of_total_pct")
    }  # fmt: skip
    labels = [c.label for c in bench.BREAKDOWN_COMPONENTS] + [bench.OTHER]
    assert len(shares) == len(labels)
    assert sum(shares.values()) == pytest.approx(100.0, abs=0.01)
    assert all(value >= 0 for value in shares.values())
    _check_launches(frame[frame.section == "launches"], labels)
    assert record.summary["errors"] == 0
    loaded, combined = bench.load_runs([run_dir])
    assert [r.run_id for r in loaded] == [record.run_id] and len(combined) == len(frame)
    breakdown_sizes = record.config["breakdown_envs"]
    assert list(bench.breakdown_shares(record.summary, breakdown_sizes[0])) == labels
    return frame


def _check_launches(launches, labels) -> None:
    """Counts per env step: the parts add up to the total; the physics substeps are Warp's,
    not PyTorch's; mjlab's own delay buffers read back twice per physics substep (actuators)
    and twice per delayed actor observation, and the fix reads none of that back."""
    table = launches.pivot(index="config", columns="metric", values="median")
    assert set(table.index) == {*labels, "total"}
    for metric in ("ops_per_step", "host_reads_per_step", "host_reads_per_step_mjlab_buffers"):
        assert table.loc[labels, metric].sum() == pytest.approx(table.loc["total", metric])
    assert table.loc["physics_substeps", "ops_per_step"] == 0
    assert table.loc["rewards", "ops_per_step"] > 100
    assert table.loc["scene_update", "host_reads_per_step"] == 0
    assert table.loc["scene_update", "host_reads_per_step_mjlab_buffers"] >= 8
    assert table.loc["observations", "host_reads_per_step"] == 0
    assert table.loc["observations", "host_reads_per_step_mjlab_buffers"] >= 6


def _quick_cpu_run(out: Path) -> tuple[Path, records.RunRecord]:
    """The quick CPU run: the build's own when it made the identical one (chapter 9 runs the
    quick CPU plan into logs/bench) with this very source, else one made now by the command."""
    profile = os.environ.get("MICRODUCK_PROFILE") or "ci"
    request = bench.default_request("cpu", True, profile=profile, name="quick", out=out)
    built = bench.identical_run(REPO / "logs" / "bench", request)
    return built if built is not None else _run_quick("cpu", out)


def test_identical_run_is_the_newest_ok_run_of_the_same_plan_and_source(tmp_path):
    from mjlab_microduck.runtime import provenance

    request = bench.default_request("cpu", True, profile="ci", name="quick", out=tmp_path / "x")
    same = {**request.config(), "name": "book_quick", "out": "logs/bench",
            bench.SOURCE_KEY: provenance.package_source_digest()}  # fmt: skip

    def write(name, finished, status="ok", **changes):
        record = records.RunRecord(
            run_id=name, kind="bench", status=status, error="boom" if status == "failed" else None,
            config={**same, **changes}, started_at="2026-12-01T10:00:00+00:00",
            finished_at=finished, provenance=records.Provenance(
                backend="cpu", device_name="cpu", hostname="h", date="2026-12-01T10:00:00+00:00"),
        )  # fmt: skip
        records.write_record(record, tmp_path / "bench" / name / records.RECORD_FILENAME)

    assert bench.identical_run(tmp_path / "bench", request) is None
    write("a_older", "2026-12-01T10:01:00+00:00")
    write("b_newer", "2026-12-01T10:05:00+00:00")
    write("c_failed", "2026-12-01T10:09:00+00:00", status="failed")
    write("d_other_sizes", "2026-12-01T10:09:00+00:00", physics_envs=[4, 32])
    write("e_other_source", "2026-12-01T10:09:00+00:00", **{bench.SOURCE_KEY: "0" * 64})
    run_dir, record = bench.identical_run(tmp_path / "bench", request)
    assert run_dir == tmp_path / "bench" / "b_newer" and record.run_id == "b_newer"


def test_the_command_says_where_its_run_record_is(monkeypatch, capsys, tmp_path):
    """What `_run_quick` checks of the command's output, without running the benchmark."""
    made = tmp_path / "20261201T000000Z_quick"

    def fake_run(request):
        assert request.quick and request.device == "cpu" and request.name == "quick"
        return made, SimpleNamespace(status="ok", summary={})

    monkeypatch.setattr(bench, "run", fake_run)
    assert bench_cli(["--quick", "--device", "cpu", "--out", str(tmp_path), "--name", "quick"]) == 0
    assert capsys.readouterr().out == f"run record: {made / 'record.json'} (status ok)\n"


@pytest.mark.slow
def test_quick_run_on_cpu_writes_a_valid_record(tmp_path):
    run_dir, record = _quick_cpu_run(tmp_path / "bench")
    frame = _check_quick_outputs(run_dir, record, [4, 16], 16)
    assert record.provenance.backend == "cpu"
    assert frame["peak_mem_bytes"].isna().all()  # "n/a" on a CPU, never 0
    fixes = frame[frame.section == "fixes"]
    assert sorted(fixes.config) == ["buffer_syncs", "eager", "frozen_broadphase"]
    assert "ratio.per_step_over_frozen.n4" in record.summary
    assert record.summary["ratio.sync_free_over_buffer_syncs.n4"] > 0
    assert record.summary["fixes.frozen_broadphase.n4.frozen_calls"] > 0
    assert "graph" in record.summary["fixes.skipped.graph"]
    hooks = record.summary["hooks_active"].split(",")
    assert {"buffer_syncs", "quat_syncs"} <= set(hooks) and "manager_graphs" not in hooks
    # Published copy: record + CSV, hashes verified, refuses a second publication.
    dest = tmp_path / "book" / "bench_test"
    published = bench.publish(run_dir, dest)
    assert json.loads((dest / "record.json").read_text())["run_id"] == record.run_id
    records.verify_artifacts(published, dest)
    with pytest.raises(FileExistsError):
        bench.publish(run_dir, dest)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (torch.cuda)")
def test_quick_run_on_gpu_measures_graph_and_eager(tmp_path):
    run_dir, record = _run_quick("cuda:0", tmp_path / "bench")
    frame = _check_quick_outputs(run_dir, record, [64, 256], 256)
    assert record.provenance.backend in ("cuda", "hip")
    assert (frame["peak_mem_bytes"] > 0).all()
    fixes = set(frame[frame.section == "fixes"].config)
    if record.provenance.backend == "cuda":
        assert fixes == {"graph", "eager", "frozen_broadphase", "eager_managers", "buffer_syncs",
                         "quat_syncs"}  # graphs are the default on a CUDA build
        assert record.summary["ratio.graphs_over_eager_managers.n256"] > 0
        assert record.summary["fixes.graph.n256.graph_captured"] is True
        assert record.summary["fixes.buffer_syncs.n256.graph_captured"] is True
        assert "ratio.sync_free_over_buffer_syncs.n256" in record.summary
        assert record.summary["fixes.eager.n256.graph_captured"] is False
        assert "ratio.eager_over_graph.n256" in record.summary
    else:
        assert "eager" in fixes and "graph" not in fixes


# ---------------------------------------------------------------------------- stopping


def test_a_signal_mid_run_keeps_what_was_measured_and_records_the_run_interrupted(
    tmp_path, monkeypatch
):
    """Fake sections (no mjlab), a real SIGTERM to this process during the second one."""
    import signal
    import time

    def physics(ctx):
        ctx.results.rows.append(bench.Row("physics", "zero_action", "env_steps_per_s", 4,
                                          bench.Stats.from_samples([10.0, 12.0]), "steps/s"))
        ctx.log.write("physics measured\n")

    def training(ctx):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        raise AssertionError("the signal did not stop the section")

    monkeypatch.setattr(bench, "_SECTION_RUNNERS", {"physics": physics, "training": training})
    request = bench.default_request("cpu", quick=True, name="stop", out=tmp_path,
                                    sections=("physics", "training"))  # fmt: skip
    run_dir, record = bench.run(request, stream=open(os.devnull, "w"))
    assert records.load_record(run_dir) == record
    assert (record.status, record.signal) == ("interrupted", "SIGTERM")
    assert record.error == "interrupted by SIGTERM after physics"
    assert record.process.pid == os.getpid() and record.finished_at
    frame = bench.load_csv(run_dir / bench.CSV_FILENAME)
    assert list(frame["median"]) == [11.0]
    assert record.summary["physics.zero_action.n4.env_steps_per_s"] == 11.0
    assert [a.path for a in record.artifacts] == [bench.CSV_FILENAME, bench.LOG_FILENAME]
    records.verify_artifacts(record, run_dir)
    assert (run_dir / bench.LOG_FILENAME).read_text() == "physics measured\n"


# ---------------------------------------------------------------------------- what a run prints


def _two_sizes_one_failing(ctx):
    ctx.results.rows.append(bench.Row("physics", "zero_action", "env_steps_per_s", 4,
                                      bench.Stats.from_samples([10.0, 12.0]), "steps/s"))
    ctx.say("physics n=4: 11 env steps/s")
    ctx.results.errors.append("physics n=16: boom")
    ctx.say("physics n=16: FAILED boom", kind="failed")


def _skipping(ctx):
    ctx.say("fixes graph: not measured here: no graphs", kind="skipped")
    ctx.say("fixes eager n=4: 9 env steps/s")


@pytest.mark.parametrize("lines", bench.LINE_STYLES)
def test_a_run_prints_a_line_per_measurement_per_section_or_none(tmp_path, monkeypatch, lines):
    """Fake sections (no mjlab): ``sections`` (the style a book page gets) prints one line per
    section and each failure, ``off`` the failures only; bench.log keeps every line."""
    import io

    monkeypatch.setattr(bench, "_SECTION_RUNNERS",
                        {"physics": _two_sizes_one_failing, "fixes": _skipping})  # fmt: skip
    request = bench.default_request("cpu", quick=True, name=f"lines_{lines}", out=tmp_path,
                                    sections=("physics", "fixes"))  # fmt: skip
    out = io.StringIO()
    run_dir, record = bench.run(request, stream=out, lines=lines)
    measured = ["[bench] physics n=4: 11 env steps/s", "[bench] physics n=16: FAILED boom",
                "[bench] fixes graph: not measured here: no graphs",
                "[bench] fixes eager n=4: 9 env steps/s"]  # fmt: skip
    assert (run_dir / bench.LOG_FILENAME).read_text().splitlines() == measured
    printed = out.getvalue().splitlines()
    if lines == "each":
        assert printed == measured
    elif lines == "off":
        assert printed == ["[bench] physics n=16: FAILED boom"]
    else:
        assert len(printed) == 3 and printed[0] == "[bench] physics n=16: FAILED boom"
        assert re.fullmatch(r"\[bench\] physics done in \d+\.\d s: 1 measured, 1 failed",
                            printed[1])  # fmt: skip
        assert re.fullmatch(r"\[bench\] fixes done in \d+\.\d s: 1 measured, "
                            r"1 not measured here", printed[2])  # fmt: skip
    assert record.status == "failed" and record.error == "physics n=16: boom"


def test_the_line_style_follows_microduck_progress_unless_asked(monkeypatch):
    from mjlab_microduck.runtime import progress

    monkeypatch.delenv(progress.ENV_VAR, raising=False)
    assert bench.line_style() == "each"  # the command's lines, whatever the stream
    for style, lines in (("milestones", "sections"), ("off", "off"), ("bar", "each")):
        monkeypatch.setenv(progress.ENV_VAR, style)
        assert bench.line_style() == lines
        assert bench.line_style("each") == "each"
    with pytest.raises(ValueError, match="lines='some'"):
        bench.line_style("some")
