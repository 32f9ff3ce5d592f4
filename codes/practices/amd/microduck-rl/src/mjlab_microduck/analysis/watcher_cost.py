"""What gait tests run on the GPU beside a training cost it: the wall time of its iterations
while a test ran, against the rest.

Problem it solves: a time to walk is read from the training's own clock, and the gait watcher
that finds its first passing checkpoint tests on the same GPU while it trains. Whether those
tests slow the training depends on how the GPU shares its time between processes (with CUDA's
MPS daemon their kernels run side by side; without it each process gets the GPU in turns), so it
is measured, not assumed: an iteration is *beside a test* when its span (the previous
iteration's time stamp to its own) overlaps a test's ``started_at``-``finished_at``, and the
cost of a test is what those iterations took beyond the median of the others.

No-op case: a training with no test beside it (tested afterwards, or never) has no iteration
beside a test; its cost is 0 and the medians beside a test are NaN.

Pure functions of published records (pandas only).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

Interval = tuple[float, float]
"""A test's start and end, seconds since the epoch (the clock of the scalars' ``wall_time``)."""


def iteration_spans(scalars: pd.DataFrame) -> pd.DataFrame:
    """One row per iteration after the first logged one, by iteration: ``start`` (the previous
    iteration's ``wall_time``), ``end`` (its own) and ``seconds`` between them."""
    wall = scalars["wall_time"].dropna().sort_index()
    spans = pd.DataFrame({"start": wall.shift(1), "end": wall}).iloc[1:]
    spans["seconds"] = spans["end"] - spans["start"]
    return spans


def beside_tests(spans: pd.DataFrame, tests: Sequence[Interval]) -> pd.Series:
    """Per iteration of ``spans``: whether its span overlaps one of ``tests``."""
    beside = pd.Series(False, index=spans.index)
    for started, finished in tests:
        beside |= (spans["start"] < finished) & (spans["end"] > started)
    return beside


def watcher_cost(
    scalars: pd.DataFrame, tests: Sequence[Interval], until_iteration: int | None = None
) -> dict:
    """The training's iterations beside ``tests`` against the rest.

    Returns ``tests`` (how many overlap the training at all), ``iterations_beside``, the median
    seconds per iteration ``beside`` a test and ``otherwise``, ``added_s_per_test`` (the
    seconds the iterations beside a test took over ``otherwise``, per test) and ``added_s``
    (those seconds summed up to ``until_iteration``, every iteration when None: what the
    tests added to the clock at that checkpoint).
    """
    spans = iteration_spans(scalars)
    if spans.empty:
        raise ValueError("the scalars hold fewer than two timed iterations")
    beside = beside_tests(spans, tests)
    first, last = spans["start"].iloc[0], spans["end"].iloc[-1]
    overlapping = sum(1 for started, finished in tests if started < last and finished > first)
    otherwise = float(spans.loc[~beside, "seconds"].median())
    added = spans.loc[beside, "seconds"] - otherwise
    until = added if until_iteration is None else added.loc[:until_iteration]
    return {
        "tests": overlapping,
        "iterations_beside": int(beside.sum()),
        "beside": float(spans.loc[beside, "seconds"].median()),
        "otherwise": otherwise,
        "added_s_per_test": float(added.sum()) / overlapping if overlapping else 0.0,
        "added_s": float(until.sum()),
    }
