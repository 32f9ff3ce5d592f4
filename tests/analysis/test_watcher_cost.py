"""What gait tests beside a training cost it, on hand-made clocks whose answer is known."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mjlab_microduck.analysis import watcher_cost


def clock(seconds_per_iteration: list[float], start: float = 1000.0) -> pd.DataFrame:
    """Scalars whose ``wall_time`` advances by the given seconds per iteration."""
    wall = start + np.concatenate([[0.0], np.cumsum(seconds_per_iteration)])
    return pd.DataFrame({"wall_time": wall}, index=pd.Index(range(len(wall)), name="iteration"))


def test_an_iteration_is_beside_a_test_when_its_span_overlaps_it():
    spans = watcher_cost.iteration_spans(clock([1.0] * 10))  # iteration i spans 999+i..1000+i
    assert list(spans.index) == list(range(1, 11))
    assert (spans["seconds"] == 1.0).all()
    beside = watcher_cost.beside_tests(spans, [(1002.5, 1004.0)])
    # 1002-1003 and 1003-1004 overlap; 1004-1005 only touches the end, so it does not
    assert list(beside[beside].index) == [3, 4]


def test_each_test_that_doubles_the_iterations_it_overlaps_costs_their_extra_seconds():
    # ten 1 s iterations, then three of 2 s while a test runs, then ten of 1 s, then another
    # three of 2 s beside a second test
    seconds = [1.0] * 10 + [2.0] * 3 + [1.0] * 10 + [2.0] * 3
    scalars = clock(seconds)
    tests = [(1010.0, 1016.0), (1026.0, 1032.0), (5000.0, 5020.0)]  # the last one after it ended
    cost = watcher_cost.watcher_cost(scalars, tests)
    assert cost["tests"] == 2
    assert cost["iterations_beside"] == 6
    assert cost["beside"] == 2.0 and cost["otherwise"] == 1.0
    assert cost["added_s_per_test"] == pytest.approx(3.0)
    assert cost["added_s"] == pytest.approx(6.0)
    # up to iteration 20 only the first test had slowed it
    assert watcher_cost.watcher_cost(scalars, tests, until_iteration=20)["added_s"] == 3.0


def test_a_training_with_no_test_beside_it_costs_nothing():
    cost = watcher_cost.watcher_cost(clock([1.2] * 5), [])
    assert cost["tests"] == 0 and cost["iterations_beside"] == 0
    assert cost["added_s_per_test"] == 0.0 and cost["added_s"] == 0.0
    assert np.isnan(cost["beside"]) and cost["otherwise"] == pytest.approx(1.2)


def test_a_clock_of_one_iteration_is_refused():
    with pytest.raises(ValueError, match="fewer than two timed iterations"):
        watcher_cost.watcher_cost(clock([]), [])
