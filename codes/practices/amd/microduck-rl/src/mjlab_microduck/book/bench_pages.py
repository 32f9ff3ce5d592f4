"""Tables, figures and sentences of the performance chapter, from ``microduck bench`` records.

Problem it solves: chapter 9 reads the recorded GPU matrix (``book/results/bench_h200*``) and a
live ``--quick`` run and shows the same views of both: throughput against env count, one line
per measurement, the derived ratios, the breakdown of one iteration, and the recorded training
throughput beside the R9700 reference. The page calls these functions, so what a reader types
is what builds the page.
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
SENTENCE_RATIOS = (
    ("training_over_physics", 4096, "PPO training at 4,096 envs runs at {:.0%} of the "
                                    "zero-action physics throughput"),
    ("eager_over_graph", 4096, "eager stepping keeps {:.0%} of the graph-captured "
                               "physics throughput at 4,096 envs"),
    ("per_step_over_frozen", 4096, "the per-step broadphase keeps {:.0%} of the "
                                   "frozen-list throughput at 4,096 envs"),
)  # fmt: skip
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


def matrix_sentence(bench_records: Sequence[records.RunRecord]) -> str:
    """Where and when the matrix was recorded, and the headline ratios it has at 4,096 envs."""
    devices = sorted({r.provenance.device_name for r in bench_records})
    dates = sorted(r.provenance.date[:10] for r in bench_records)
    parts = [
        f"recorded on {', '.join(devices)} ({dates[0]}, "
        f"{len(bench_records)} run record(s): "
        f"{', '.join(r.run_id for r in bench_records)})"
    ]
    for name, size, text in SENTENCE_RATIOS:
        value = ratio_value(bench_records, name, size)
        if value is not None:
            parts.append(text.format(value))
    return "The GPU matrix was " + "; ".join(parts) + "."


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


def versus_sentence(versus: pd.DataFrame) -> str:
    """What :func:`versus_reference`'s table says, in one paragraph."""
    if versus.empty:
        return "The recorded GPU matrix has no training rows, so no ratio to the reference."
    at = {int(row["num_envs"]): row for _, row in versus.iterrows()}
    if not all(n in at for n in VERSUS_SIZES):
        return "The recorded GPU matrix lacks a training row at 256 or 4,096 environments."
    small, large = at[VERSUS_SIZES[0]], at[VERSUS_SIZES[1]]
    return (
        f"Recorded on {versus.iloc[0]['device']}, MicroDuck PPO training ran at "
        f"{small['training steps/s']:,} env steps/s at 256 environments, "
        f"{small['ratio']:g} times the R9700 figure, and at "
        f"{large['training steps/s']:,} at 4,096 environments, {large['ratio']:g} times "
        "it. The second ratio mixes two effects: a larger GPU, and sixteen times more "
        "environments per kernel launch; the first is the like-for-like one."
    )
