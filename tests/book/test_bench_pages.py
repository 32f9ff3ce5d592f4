"""The performance chapter's tables, figures and sentences, on made-up bench records."""

from __future__ import annotations

from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mjlab_microduck.book import bench_pages, results  # noqa: E402
from mjlab_microduck.jobs import bench  # noqa: E402


def _record(run_id="r1", summary=None, device="NVIDIA H200", date="2026-05-01T10:00:00"):
    provenance = SimpleNamespace(device_name=device, date=date)
    return SimpleNamespace(run_id=run_id, summary=summary or {}, provenance=provenance)


def _frame():
    rows = []
    for section, config, n, median in (("physics", "zero_action", 64, 1000.0),
                                       ("physics", "zero_action", 256, 3000.0),
                                       ("training", "ppo", 256, 1500.0),
                                       ("fixes", "eager", 256, 2500.0),
                                       ("breakdown", "ppo", 256, 0.5)):
        rows.append({"section": section, "config": config, "metric": "env_steps_per_s",
                     "num_envs": n, "repeats": 3, "median": median + 0.00049,
                     "p25": median - 10, "p75": median + 10, "min": median - 20,
                     "max": median + 20, "unit": "env_steps/s",
                     "peak_mem_bytes": 2**30 if section == "physics" else float("nan")})
    return pd.DataFrame(rows)


def test_measurement_table_keeps_the_measured_sections_and_marks_missing_memory():
    table = bench_pages.measurement_table(_frame())
    assert list(table.columns) == list(bench_pages.MEASUREMENT_COLUMNS)
    assert list(table.section) == ["physics", "physics", "training", "fixes"]
    assert list(table.peak_mem_GiB) == [1.0, 1.0, "n/a", "n/a"]
    assert table.loc[0, "median"] == 1000.0  # rounded to 3 decimals


def _launches(n=16):
    values = {  # part: (operators, host reads, host reads with mjlab's delay buffers)
        "physics_substeps": (0.0, 0.0, 0.0), "scene_update": (275.6, 0.0, 8.75),
        "rewards": (408.0, 0.0, 0.0), "other": (30.0, 5.0, 5.0), "total": (713.6, 5.0, 13.75),
    }  # fmt: skip
    return pd.DataFrame([
        {"section": "launches", "config": part, "metric": metric, "num_envs": n, "median": v}
        for part, triple in values.items()
        for metric, v in zip(bench_pages.LAUNCH_COLUMNS, triple, strict=True)
    ])  # fmt: skip


def test_launch_table_in_loop_order_without_empty_parts():
    frame = pd.concat([_frame(), _launches(16), _launches(64)])
    table = bench_pages.launch_table(frame, 16)
    assert list(table.index) == ["scene_update", "rewards", "other", "total"]
    assert list(table.columns) == list(bench_pages.LAUNCH_COLUMNS.values())
    assert table.columns.name is None and table.index.name == "per env step, 16 envs"
    assert table.loc["scene_update", "host reads, mjlab's delay buffers"] == 8.8
    assert table.loc["total", "PyTorch operators"] == 713.6
    with pytest.raises(ValueError, match="no launches section at 4 envs"):
        bench_pages.launch_table(frame, 4)


def test_ratio_table_and_ratio_value_read_the_derived_ratios():
    records_ = [_record(summary={"ratio.eager_over_graph.n4096": 0.5,
                                 "ratio.eager_over_graph.n256": 0.25, "other": 1}),
                _record("r2", {"ratio.training_over_physics.n4096": 0.75})]
    table = bench_pages.ratio_table(records_)
    assert table.to_dict("records") == [
        {"ratio": "eager_over_graph", "num_envs": 256, "value": 0.25},
        {"ratio": "eager_over_graph", "num_envs": 4096, "value": 0.5},
        {"ratio": "training_over_physics", "num_envs": 4096, "value": 0.75},
    ]
    assert bench_pages.ratio_value(records_, "training_over_physics", 4096) == 0.75
    assert bench_pages.ratio_value(records_, "per_step_over_frozen", 4096) is None
    assert bench_pages.ratio_table([]).empty


def test_versus_reference_puts_the_recorded_training_beside_the_r9700():
    record = _record(summary={"training.ppo.n256.env_steps_per_s": 8000.4,
                              "training.ppo.n4096.env_steps_per_s": 80000.0})
    versus = bench_pages.versus_reference([record], 4000.0)
    assert list(versus["num_envs"]) == [256, 4096]
    assert list(versus["ratio"]) == [2.0, 20.0]
    assert list(versus["training steps/s"]) == [8000, 80000]
    assert bench_pages.versus_reference([_record()], 4000.0).empty


def test_figures_draw_the_rows_they_are_given():
    fig = bench_pages.throughput_figure(_frame(), "t")
    assert len(fig.axes[0].get_legend().get_texts()) == 2
    plt.close(fig)
    label = bench.BREAKDOWN_COMPONENTS[0].label
    record = _record(summary={f"breakdown.{label}.n256.share_of_total_pct": 70.0,
                              f"breakdown.{bench.OTHER}.n256.share_of_total_pct": 30.0})
    fig, shares = bench_pages.breakdown_figure(record, 256, "b")
    assert shares.to_dict() == {bench.OTHER: 30.0, label: 70.0}  # smallest first, largest on top
    plt.close(fig)


def test_recorded_matrix_reads_the_published_records_and_refuses_none(tmp_path):
    with pytest.raises(FileNotFoundError):
        bench_pages.recorded_matrix(tmp_path)
    root = results.results_root()
    if not list(root.glob(f"{bench_pages.RECORDED_GLOB}/record.json")):
        pytest.skip("no published bench matrix here")
    gpu_records, frame = bench_pages.recorded_matrix(root)
    assert gpu_records and {"section", "median", "run_id"} <= set(frame.columns)


def test_live_facts_read_the_quick_run():
    frame = _frame()
    frame = pd.concat([frame, pd.DataFrame([
        {"section": "training", "config": "ppo", "metric": m, "num_envs": 256, "median": v}
        for m, v in (("iteration_s", 2.0), ("collection_s", 1.5))
    ])], ignore_index=True)  # fmt: skip
    record = SimpleNamespace(
        config={"training_envs": [256], "fixes_envs": [256]}, wall_seconds=61.4,
        summary={"ratio.training_over_physics.n256": 0.5},
    )  # fmt: skip
    facts = bench_pages.live_facts(record, frame)
    assert facts["wall time of the run (s)"] == 61
    assert facts["physics, 64 envs (env steps/s)"] == 1000
    assert facts["physics, 256 envs (env steps/s)"] == 3000
    assert facts["PPO training, 256 envs (env steps/s)"] == 1500
    assert facts["collection share of an iteration"] == "75%"
    assert facts["training over physics, 256 envs"] == "50%"
    assert facts["per-step over frozen broadphase, 256 envs"] is None


def test_breakdown_facts_name_the_largest_part_and_the_physics_share():
    shares = pd.Series({"physics_substeps": 40.0, "physics_forward": 5.0, "ppo_update": 45.0,
                        bench.OTHER: 10.0})  # fmt: skip
    facts = bench_pages.breakdown_facts(shares)
    assert facts["largest part"] == "ppo_update" and facts["largest part (%)"] == 45.0
    assert facts["physics: substeps, refresh, ray casts (%)"] == 45.0
    assert facts["other (%)"] == 10.0 and facts["all parts (%)"] == 100.0
