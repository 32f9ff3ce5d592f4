"""Tables and figures of the performance chapter, from ``microduck bench`` records.

Problem it solves: chapter 9 reads the recorded GPU matrix (``book/results/bench_h200*``) and a
live ``--quick`` run and shows the same views of both: throughput against env count, one line
per measurement, the derived ratios, the breakdown of one iteration, the operators and host
reads per env step, and the recorded training throughput beside the R9700 reference. The page
calls these functions, so what a reader types is what builds the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from mjlab_microduck.jobs import bench

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from mjlab_microduck.runs import records

RECORDED_GLOB = "bench_h200*"
"""The published folders of the recorded GPU matrix, under ``book/results``."""
MEASUREMENT_COLUMNS = ("section", "config", "metric", "num_envs", "repeats", "median", "p25",
                       "p75", "min", "max", "unit", "peak_mem_GiB")  # fmt: skip
VERSUS_SIZES = (256, 4096)


def recorded_matrix(results_root: str | Path) -> tuple[list[records.RunRecord], pd.DataFrame]:
    """The recorded GPU matrix: its bench records and their measurements in one frame.

    Raises FileNotFoundError when no ``bench_h200*`` record is published: the recorded matrix
    is part of the book, so no record means no build.
    """
    published = sorted(Path(results_root).glob(f"{RECORDED_GLOB}/record.json"))
    gpu_records, frame = bench.load_runs([p.parent for p in published])
    if not gpu_records:
        raise FileNotFoundError(f"no run record under {results_root}/{RECORDED_GLOB}")
    return gpu_records, frame


def measurement_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Physics, training and fix rows, one line per measurement, memory in GiB ("n/a" if none)."""
    keep = frame[frame.section.isin(["physics", "training", "fixes"])].copy()
    keep["peak_mem_GiB"] = (keep["peak_mem_bytes"] / 2**30).round(2)
    keep["peak_mem_GiB"] = (
        keep["peak_mem_GiB"].astype(object).where(keep["peak_mem_bytes"].notna(), "n/a")
    )
    for column in ("median", "p25", "p75", "min", "max"):
        keep[column] = keep[column].round(3)
    return keep[list(MEASUREMENT_COLUMNS)].reset_index(drop=True)


LAUNCH_COLUMNS = {
    "ops_per_step": "PyTorch operators",
    "host_reads_per_step": "host reads",
    "host_reads_per_step_mjlab_buffers": "host reads, mjlab's delay buffers",
}
"""The launches section's metrics, as the columns of :func:`launch_table` (per env step)."""


def launch_table(frame: pd.DataFrame, num_envs: int) -> pd.DataFrame:
    """Per part of the loop, PyTorch operators and host reads per env step at ``num_envs``
    (the ``launches`` section), in the breakdown's order with ``other`` and ``total`` last;
    parts that dispatch no operator and read nothing are left out."""
    rows = frame[(frame.section == "launches") & (frame.num_envs == num_envs)]
    if rows.empty:
        raise ValueError(f"no launches section at {num_envs} envs in this run")
    table = rows.pivot(index="config", columns="metric", values="median")
    order = [c.label for c in bench.BREAKDOWN_COMPONENTS] + [bench.OTHER, "total"]
    table = table.reindex([label for label in order if label in table.index])
    table = table[[m for m in LAUNCH_COLUMNS if m in table.columns]].rename(columns=LAUNCH_COLUMNS)
    table.index.name, table.columns.name = f"per env step, {num_envs} envs", None
    return table[(table > 0).any(axis=1)].round(1)


def ratio_table(bench_records: Sequence[records.RunRecord]) -> pd.DataFrame:
    """The ratios the harness derives (median over median), one row per ratio and env count."""
    rows = []
    for record in bench_records:
        for key, value in record.summary.items():
            if key.startswith("ratio."):
                _, name, size = key.split(".")
                rows.append({"ratio": name, "num_envs": int(size[1:]), "value": value})
    return (
        pd.DataFrame(rows, columns=["ratio", "num_envs", "value"])
        .sort_values(["ratio", "num_envs"])
        .reset_index(drop=True)
    )


def ratio_value(
    bench_records: Sequence[records.RunRecord], name: str, num_envs: int
) -> float | None:
    """The first record's ``ratio.<name>.n<num_envs>``, or None when no record has it."""
    for record in bench_records:
        value = record.summary.get(f"ratio.{name}.n{num_envs}")
        if value is not None:
            return float(value)
    return None


def live_facts(record: records.RunRecord, frame: pd.DataFrame) -> dict[str, Any]:
    """What chapter 9 reads off a ``--quick`` run, as values: the wall time, the zero-action
    physics throughput at its smallest and largest env count, PPO training throughput, the
    share of an iteration spent collecting, training over physics at the training size, and
    the per-step over frozen broadphase ratio at the fixes' size (``None`` where the run did
    not measure it)."""
    physics = frame[(frame.section == "physics") & (frame.metric == "env_steps_per_s")]
    physics = physics.sort_values("num_envs")
    train = frame[frame.section == "training"].set_index("metric")
    n_train, n_fix = int(record.config["training_envs"][0]), int(record.config["fixes_envs"][0])
    small, large = physics.iloc[0], physics.iloc[-1]
    ratio = record.summary.get(f"ratio.training_over_physics.n{n_train}")
    frozen = record.summary.get(f"ratio.per_step_over_frozen.n{n_fix}")
    collect = float(train.loc["collection_s", "median"]) / float(train.loc["iteration_s", "median"])
    return {
        "wall time of the run (s)": round(record.wall_seconds or 0.0),
        f"physics, {int(small['num_envs'])} envs (env steps/s)": round(float(small["median"])),
        f"physics, {int(large['num_envs'])} envs (env steps/s)": round(float(large["median"])),
        f"PPO training, {n_train} envs (env steps/s)": round(
            float(train.loc["env_steps_per_s", "median"])
        ),
        "collection share of an iteration": f"{collect:.0%}",
        f"training over physics, {n_train} envs": None if ratio is None else f"{ratio:.0%}",
        f"per-step over frozen broadphase, {n_fix} envs": (
            None if frozen is None else round(float(frozen), 2)
        ),
    }


PHYSICS_PARTS = ("physics_substeps", "physics_forward", "raycast_sensing")
"""The breakdown's parts that are the physics: substeps, kinematics refresh, ray casts."""


def breakdown_facts(shares: pd.Series) -> dict[str, Any]:
    """What chapter 9 reads off one iteration's breakdown (percent per part, as
    :func:`breakdown_figure` returns them): the largest part and its share, the physics parts
    together, "other" (what no timer covers) and the sum of all shares."""
    top = shares.sort_values(ascending=False)
    return {
        "largest part": top.index[0],
        "largest part (%)": round(float(top.iloc[0]), 1),
        "physics: substeps, refresh, ray casts (%)": round(
            float(sum(shares.get(k, 0.0) for k in PHYSICS_PARTS)), 1
        ),
        "other (%)": round(float(shares.get(bench.OTHER, 0.0)), 1),
        "all parts (%)": round(float(shares.sum()), 1),
    }


def throughput_figure(frame: pd.DataFrame, title: str) -> Figure:
    """Physics and training env steps/s against env count (log-log), IQR as error bars."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for section, config, label in (
        ("physics", "zero_action", "physics (zero action)"),
        ("training", "ppo", "PPO training"),
    ):
        rows = frame[
            (frame.section == section)
            & (frame.config == config)
            & (frame.metric == "env_steps_per_s")
        ].sort_values("num_envs")
        if rows.empty:
            continue
        yerr = [rows["median"] - rows["p25"], rows["p75"] - rows["median"]]
        ax.errorbar(rows["num_envs"], rows["median"], yerr=yerr, marker="o", capsize=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = sorted({int(n) for n in frame.num_envs[frame.section.isin(["physics", "training"])]})
    ax.set_xticks(sizes, [f"{n:,}" for n in sizes])
    ax.minorticks_off()
    ax.set_xlabel("parallel environments")
    ax.set_ylabel("env steps per second (median, IQR)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    return fig


def breakdown_figure(
    record: records.RunRecord, num_envs: int, title: str
) -> tuple[Figure, pd.Series]:
    """Shares of one training iteration as bars, largest at the top, "other" included."""
    import matplotlib.pyplot as plt

    shares = pd.Series(bench.breakdown_shares(record.summary, num_envs)).sort_values()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.barh(shares.index, shares.values)
    ax.set_xlabel("share of one PPO iteration (%)")
    ax.set_title(title)
    for y, value in enumerate(shares.values):
        ax.text(value, y, f" {value:.1f}%", va="center", fontsize=8)
    ax.set_xlim(0, max(shares.values) * 1.2)
    fig.tight_layout()
    return fig, shares


def versus_reference(
    bench_records: Sequence[records.RunRecord], reference_sps: float
) -> pd.DataFrame:
    """Recorded PPO training throughput at 256 and 4,096 envs beside one R9700 figure."""
    rows: list[dict[str, Any]] = []
    for record in bench_records:
        for n in VERSUS_SIZES:
            value = record.summary.get(f"training.ppo.n{n}.env_steps_per_s")
            if value is not None:
                rows.append(
                    {
                        "recorded run": record.run_id,
                        "device": record.provenance.device_name,
                        "num_envs": n,
                        "training steps/s": round(float(value)),
                        "R9700 reference steps/s (256 envs)": int(reference_sps),
                        "ratio": round(float(value) / reference_sps, 1),
                    }
                )
    return pd.DataFrame(rows)
