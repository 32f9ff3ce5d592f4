"""How well training scales over the GPUs of one host, read from training run records.

Problem it solves: a scaling claim needs one number per run that means the same on one GPU and
on several. rsl_rl's ``Perf/total_fps`` does not quite: on several GPUs rank 0 multiplies its
own transitions by the number of ranks and divides by its own collection and learning time, so
a rank that is slower than rank 0 does not show. The wall clock does: between two iterations
every rank has collected ``steps_per_env × num_envs`` transitions (the all-reduce of the
gradients keeps them in step), and rank 0's TensorBoard time stamps (the ``wall_time`` column
of ``scalars.csv``) say how long that took.

``throughput`` turns one record into env steps per second in total and per GPU, over the
iterations after a warm-up (the first iterations carry Warp's kernel loading and CUDA graph
capture); ``scaling_table`` compares runs at the same environments per GPU against the run
with the fewest GPUs, and ``pairs_table`` does so for several pairs of runs in one table. Only
records are read, so the same figures come out on any machine; the rule the book applies is
:data:`PER_GPU_EFFICIENCY_RULE`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from mjlab_microduck.runs import records

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WARMUP_ITERATIONS = 10
"""Iterations left out at the start of a run before the clock is read."""

FPS_COLUMN = "Perf/total_fps"

PER_GPU_EFFICIENCY_RULE = 0.8
"""Several GPUs must keep at least this share of one GPU's throughput, per GPU."""


@dataclass(frozen=True)
class Throughput:
    """A training run's speed, from its record and scalars."""

    run_id: str
    gpus: int
    envs_per_gpu: int
    steps_per_env: int
    iterations_timed: int
    seconds: float

    @property
    def seconds_per_iteration(self) -> float:
        return self.seconds / self.iterations_timed

    @property
    def env_steps_per_s(self) -> float:
        """Transitions collected per second over all GPUs."""
        steps = self.iterations_timed * self.steps_per_env * self.envs_per_gpu * self.gpus
        return steps / self.seconds

    @property
    def env_steps_per_s_per_gpu(self) -> float:
        return self.env_steps_per_s / self.gpus


def gpu_count(record: records.RunRecord) -> int:
    """Training processes of the run: one per GPU in ``config.gpu_ids``; a CPU run counts one."""
    if record.kind != "train":
        raise ValueError(f"{record.run_id}: a {record.kind} record, not a training run")
    gpu_ids = record.config.get("gpu_ids")
    return len(gpu_ids) if gpu_ids else 1


def _by_iteration(record: records.RunRecord, scalars: pd.DataFrame) -> pd.DataFrame:
    """``scalars.csv`` indexed by iteration, whether it came with ``iteration`` as a column
    (read straight from the file) or as the index (``results.load_published``)."""
    if scalars.index.name != "iteration":
        if "iteration" not in scalars.columns:
            raise ValueError(f"{record.run_id}: scalars have no 'iteration' column")
        scalars = scalars.set_index("iteration")
    return scalars.sort_index()


def throughput(
    record: records.RunRecord, scalars: pd.DataFrame, warmup: int = WARMUP_ITERATIONS
) -> Throughput:
    """Env steps per second of one training run, timed from iteration ``warmup`` to its last.

    ``scalars`` is the run's ``scalars.csv``, with ``iteration`` as a column or as the index.
    """
    frame = _by_iteration(record, scalars)
    if "wall_time" not in frame.columns:
        raise ValueError(f"{record.run_id}: scalars have no 'wall_time' column")
    timed = frame[frame.index >= frame.index.min() + warmup]
    if len(timed) < 2:
        raise ValueError(
            f"{record.run_id}: {len(frame)} iterations, too few to time after a warm-up of {warmup}"
        )
    seconds = float(timed["wall_time"].iloc[-1] - timed["wall_time"].iloc[0])
    if seconds <= 0:
        raise ValueError(f"{record.run_id}: wall_time does not increase over the run")
    return Throughput(
        run_id=record.run_id,
        gpus=gpu_count(record),
        envs_per_gpu=int(record.config["num_envs"]),
        steps_per_env=int(record.config["steps_per_env"]),
        iterations_timed=int(timed.index[-1] - timed.index[0]),
        seconds=seconds,
    )


def per_gpu_efficiency(baseline: Throughput, other: Throughput) -> float:
    """``other``'s throughput per GPU as a share of ``baseline``'s, at equal envs per GPU."""
    if baseline.envs_per_gpu != other.envs_per_gpu:
        raise ValueError(
            f"{other.run_id} has {other.envs_per_gpu} envs per GPU, {baseline.run_id} "
            f"{baseline.envs_per_gpu}: per-GPU throughput compares equal loads only"
        )
    return other.env_steps_per_s_per_gpu / baseline.env_steps_per_s_per_gpu


def scaling_table(
    runs: Sequence[tuple[records.RunRecord, pd.DataFrame]], warmup: int = WARMUP_ITERATIONS
) -> pd.DataFrame:
    """One row per run, fewest GPUs first; efficiency against the first row's run.

    The last column is rsl_rl's own ``Perf/total_fps`` (rank 0's log, median after the
    warm-up) beside the wall-clock figure, so the two can be compared.
    """
    if not runs:
        raise ValueError("scaling_table needs at least one run")
    measured = sorted(
        ((throughput(rec, df, warmup), _by_iteration(rec, df)) for rec, df in runs),
        key=lambda pair: pair[0].gpus,
    )
    baseline = measured[0][0]
    rows = []
    for speed, frame in measured:
        logged = frame[frame.index >= frame.index.min() + warmup]
        fps = logged[FPS_COLUMN].median() if FPS_COLUMN in logged else None
        rows.append(
            {
                "run": speed.run_id,
                "GPUs": speed.gpus,
                "envs per GPU": speed.envs_per_gpu,
                "envs in total": speed.envs_per_gpu * speed.gpus,
                "iterations timed": speed.iterations_timed,
                "s per iteration": round(speed.seconds_per_iteration, 3),
                "env steps/s": round(speed.env_steps_per_s),
                "env steps/s per GPU": round(speed.env_steps_per_s_per_gpu),
                "speed-up": round(speed.env_steps_per_s / baseline.env_steps_per_s, 3),
                "per-GPU efficiency": round(per_gpu_efficiency(baseline, speed), 3),
                "rsl_rl total_fps (rank 0)": None if fps is None else round(float(fps)),
            }
        )
    return pd.DataFrame(rows)


def pairs_table(
    pairs: Mapping[str, Sequence[tuple[records.RunRecord, pd.DataFrame]]],
    warmup: int = WARMUP_ITERATIONS,
) -> pd.DataFrame:
    """:func:`scaling_table` of several comparisons in one table, indexed by (pair, GPUs).

    Efficiency and speed-up are against the run with the fewest GPUs of the same pair, so each
    row reads against the rows of its own pair; the index keeps the pair's name on every row.
    """
    if not pairs:
        raise ValueError("pairs_table needs at least one pair")
    tables = {name: scaling_table(runs, warmup).set_index("GPUs") for name, runs in pairs.items()}
    return pd.concat(tables, names=["pair", "GPUs"])


def pairs_provenance(
    pairs: Mapping[str, Sequence[tuple[records.RunRecord, pd.DataFrame]]],
) -> pd.DataFrame:
    """Where each pair ran, one row per pair; a field on which its runs differ lists each value."""

    def values(runs: Sequence[tuple[records.RunRecord, pd.DataFrame]], field: str) -> str:
        seen = [getattr(record.provenance, field) or "unknown" for record, _ in runs]
        if field == "git_commit":
            seen = [commit[:7] for commit in seen]
        elif field == "date":
            seen = [date[:10] for date in seen]
        return ", ".join(dict.fromkeys(seen))  # distinct, in the order of the runs

    fields = {"device_name": "device", "driver_version": "driver", "git_commit": "commit",
              "profile": "profile", "date": "date"}  # fmt: skip
    rows = {name: {label: values(runs, f) for f, label in fields.items()}
            for name, runs in pairs.items()}  # fmt: skip
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("pair")


LEARNING_COLUMNS = ("Train/mean_reward", "Train/mean_episode_length")


def env_steps_collected(record: records.RunRecord, scalars: pd.DataFrame) -> pd.Series:
    """Transitions all ranks have collected by the end of each iteration, indexed by iteration."""
    iterations = _by_iteration(record, scalars).index
    per_iteration = int(record.config["steps_per_env"]) * int(record.config["num_envs"])
    done = iterations - iterations.min() + 1
    return pd.Series(done * per_iteration * gpu_count(record), index=iterations)


def plot_learning(
    runs: Sequence[tuple[records.RunRecord, pd.DataFrame]],
    columns: Sequence[str] = LEARNING_COLUMNS,
) -> Figure:
    """Learning curves of runs side by side: against PPO iterations (left) and against the
    transitions collected (right), where a run on more GPUs has seen more per iteration."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(columns), 2, figsize=(10, 2.6 * len(columns)), squeeze=False)
    for record, scalars in runs:
        frame = _by_iteration(record, scalars)
        gpus = gpu_count(record)
        label = f"{gpus} GPU{'s' if gpus > 1 else ''} × {record.config['num_envs']} envs"
        steps = env_steps_collected(record, frame) / 1e6
        for row, column in enumerate(columns):
            axes[row, 0].plot(frame.index, frame[column], label=label, linewidth=1.3)
            axes[row, 1].plot(steps, frame[column], label=label, linewidth=1.3)
            axes[row, 0].set_ylabel(column, fontsize=9)
    for axis in axes.flat:
        axis.grid(True, alpha=0.3)
    axes[0, 0].legend(fontsize=8, loc="best")
    axes[-1, 0].set_xlabel("PPO iteration")
    axes[-1, 1].set_xlabel("env steps collected (millions, all GPUs)")
    fig.tight_layout()
    return fig
