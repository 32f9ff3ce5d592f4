"""Multi-GPU scaling figures (mjlab_microduck.analysis.scaling): hand-made runs and the published
pair."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mjlab_microduck.analysis import scaling
from mjlab_microduck.book import results
from mjlab_microduck.runs import records

PAIR = ("h200x2_1gpu_4096", "h200x2_2gpu_4096")


def _run(run_id, gpu_ids, seconds_per_iteration, envs=4096, iterations=30, kind="train"):
    """A record and scalars whose first 10 iterations are slow (warm-up), then steady."""
    record = records.RunRecord(
        run_id=run_id, kind=kind, status="ok",
        config={"num_envs": envs, "steps_per_env": 24, "gpu_ids": gpu_ids},
        provenance=records.Provenance(backend="cuda", device_name="GPU", hostname="h",
                                      date=records.utc_now_iso(), profile="full"),
        started_at=records.utc_now_iso(), finished_at=records.utc_now_iso(),
    )  # fmt: skip
    steps = [5.0] * 10 + [seconds_per_iteration] * (iterations - 10)
    wall = 1_000.0 + np.concatenate([[0.0], np.cumsum(steps[:-1])])
    scalars = pd.DataFrame({"iteration": np.arange(iterations), "wall_time": wall})
    return record, scalars


def test_throughput_of_a_hand_made_run_skips_the_warm_up():
    speed = scaling.throughput(*_run("one", [0], 1.0))
    assert speed.gpus == 1
    assert speed.iterations_timed == 19  # iterations 10 .. 29
    assert speed.seconds == pytest.approx(19.0)
    assert speed.env_steps_per_s == pytest.approx(24 * 4096)
    two = scaling.throughput(*_run("two", [0, 1], 1.25))
    assert two.gpus == 2
    assert two.env_steps_per_s == pytest.approx(2 * 24 * 4096 / 1.25)
    assert two.env_steps_per_s_per_gpu == pytest.approx(24 * 4096 / 1.25)
    # Without the warm-up cut the slow start would count: 10 × 5 s more over 10 more iterations.
    assert scaling.throughput(*_run("one", [0], 1.0), warmup=0).seconds == pytest.approx(69.0)


def test_scaling_table_compares_against_the_fewest_gpus():
    table = scaling.scaling_table([_run("two", [0, 1], 1.25), _run("one", [0], 1.0)])
    assert list(table["run"]) == ["one", "two"]
    assert list(table["envs in total"]) == [4096, 8192]
    assert list(table["per-GPU efficiency"]) == [1.0, 0.8]
    assert list(table["speed-up"]) == [1.0, 1.6]
    assert list(table["s per iteration"]) == [1.0, 1.25]
    assert table["rsl_rl total_fps (rank 0)"].isna().all()  # these hand-made runs logged none


def test_pairs_table_keeps_each_pair_on_its_rows_and_against_its_own_baseline():
    pairs = {
        "A": [_run("a1", [0], 1.0), _run("a2", [0, 1], 1.25)],
        "B": [_run("b2", [0, 1], 2.0), _run("b1", [0], 2.0)],  # the other order
    }
    table = scaling.pairs_table(pairs)
    assert table.index.names == ["pair", "GPUs"]
    assert list(table.index) == [("A", 1), ("A", 2), ("B", 1), ("B", 2)]
    assert list(table["run"]) == ["a1", "a2", "b1", "b2"]
    # Each pair against its own one-GPU run, not against pair A's.
    assert list(table.loc["A", "per-GPU efficiency"]) == [1.0, 0.8]
    assert list(table.loc["B", "per-GPU efficiency"]) == [1.0, 1.0]
    assert table.loc[("B", 2), "speed-up"] == 2.0
    with pytest.raises(ValueError, match="at least one pair"):
        scaling.pairs_table({})


def test_pairs_provenance_lists_each_distinct_value_of_a_pair():
    one, two = _run("one", [0], 1.0), _run("two", [0, 1], 1.0)
    two[0].provenance.git_commit = "5bbfa5515e20758ecaf71e6cea993bf833e97a3d"
    one[0].provenance.driver_version = two[0].provenance.driver_version = "580.159.04"
    table = scaling.pairs_provenance({"A": [one, two], "B": [one]})
    assert list(table.index) == ["A", "B"] and table.index.name == "pair"
    assert list(table.columns) == ["device", "driver", "commit", "profile", "date"]
    assert table.loc["A", "commit"] == "unknown, 5bbfa55"
    assert table.loc["A", "driver"] == "580.159.04"  # the same on both runs: shown once
    assert table.loc["B", "device"] == "GPU"
    assert table.loc["B", "date"] == one[0].provenance.date[:10]


def test_a_cpu_run_counts_one_process():
    record, frame = _run("cpu", None, 2.0, envs=64)
    assert scaling.throughput(record, frame).env_steps_per_s == pytest.approx(24 * 64 / 2.0)


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (_run("short", [0], 1.0, iterations=11), "too few to time"),
        (_run("replay", [0], 1.0, kind="replay"), "not a training run"),
        (
            (_run("flat", [0], 1.0)[0], pd.DataFrame({"iteration": range(30), "wall_time": 5.0})),
            "does not increase",
        ),
        ((_run("nowall", [0], 1.0)[0], pd.DataFrame({"iteration": range(30)})), "'wall_time'"),
    ],
)
def test_bad_runs_are_refused_with_a_reason(run, message):
    with pytest.raises(ValueError, match=message):
        scaling.throughput(*run)


def test_unequal_loads_are_not_compared():
    with pytest.raises(ValueError, match="equal loads"):
        scaling.scaling_table([_run("one", [0], 1.0), _run("two", [0, 1], 1.0, envs=2048)])


def test_the_published_pair_meets_the_rule_and_matches_its_csv():
    runs = [results.load_published(name) for name in PAIR]
    table = scaling.scaling_table(runs)
    assert list(table["GPUs"]) == [1, 2]
    assert list(table["envs per GPU"]) == [4096, 4096]
    two = table.iloc[1]
    assert two["per-GPU efficiency"] >= scaling.PER_GPU_EFFICIENCY_RULE
    # rsl_rl's rank-0 figure counts both ranks' transitions: about twice the one-GPU figure.
    fps_one, fps_two = table["rsl_rl total_fps (rank 0)"]
    assert 1.6 < fps_two / fps_one < 2.2
    # The same ratio straight from the CSVs: seconds per iteration after the warm-up.
    per_iteration = []
    for _, frame in runs:
        frame = frame.reset_index()
        steady = frame[frame["iteration"] >= scaling.WARMUP_ITERATIONS]
        per_iteration.append(np.diff(steady["wall_time"].to_numpy()).mean())
    assert two["per-GPU efficiency"] == pytest.approx(per_iteration[0] / per_iteration[1], abs=1e-3)
    # Each rank of the two-GPU run was recorded with its device and mjlab's seed + rank.
    ranks = runs[1][0].config["ranks"]
    assert [(r["device"], r["seed"]) for r in ranks] == [("cuda:0", 42), ("cuda:1", 43)]


def test_env_steps_collected_count_every_rank():
    record, frame = _run("two", [0, 1], 1.0)
    steps = scaling.env_steps_collected(record, frame)
    assert list(steps[:3]) == [2 * 24 * 4096, 4 * 24 * 4096, 6 * 24 * 4096]
    resumed = frame.assign(iteration=frame["iteration"] + 500)  # a resumed run counts from 1
    assert scaling.env_steps_collected(record, resumed).iloc[0] == 2 * 24 * 4096


def test_plot_learning_puts_each_run_on_both_axes():
    import matplotlib

    matplotlib.use("Agg")
    one, two = _run("one", [0], 1.0), _run("two", [0, 1], 1.0)
    for _, frame in (one, two):
        frame["Train/mean_reward"] = frame["iteration"] * 2.0
    fig = scaling.plot_learning([one, two], columns=["Train/mean_reward"])
    by_iteration, by_steps = fig.axes
    assert [line.get_label() for line in by_iteration.lines] == ["1 GPU × 4096 envs",
                                                                "2 GPUs × 4096 envs"]  # fmt: skip
    # Same iteration axis; the two-GPU run has collected twice as much at each point.
    assert list(by_iteration.lines[1].get_xdata()) == list(range(30))
    x_one, x_two = (line.get_xdata() for line in by_steps.lines)
    assert np.allclose(x_two, 2 * x_one)
    assert x_one[0] == pytest.approx(24 * 4096 / 1e6)
