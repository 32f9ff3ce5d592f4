"""graph_check: an env stepped plainly and replayed from graphs, compared value for value; on a
CPU through the hook's recorded stand-in, where any difference is a failure (the command's
verdicts and refusals: tests/cli/test_graph_check_cli.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from mjlab_microduck.compat import manager_graphs
from mjlab_microduck.jobs import graph_check


@pytest.mark.slow
def test_the_step_scope_replays_every_graph_safe_call_of_a_step_exactly():
    """Every call of the step scope captured and replayed through falls and resets, with the
    plain values to the bit. Observations are captured twice: between resets they read the
    contact data the rewards computed, after one they compute it afresh."""
    request = graph_check.GraphCheckRequest(steps=40)
    result = graph_check.compare(request)
    assert result.passed, result.line()
    assert (result.difference, result.spread) == (0.0, 0.0)
    assert result.eager == {} and result.calls == 6 and result.graphs >= 7
    assert result.resets >= 3 and result.replays > 6 * (40 - 8)
    assert result.line().startswith("PASS: scope step on cpu, 6 envs x 40 steps")
    assert result.host_tensors == []  # on a CPU every tensor is a host one
    # the hook is as it was before the check
    assert manager_graphs.status().details.get("scope", "managers") == "managers"


def _run(*rewards, logged=("a",)):
    """A run of env steps whose rewards are ``rewards`` (one list per step)."""
    return [{"rewards": torch.tensor(r), **{f"logged {k}": torch.tensor(0.0) for k in logged}}
            for r in rewards]  # fmt: skip


def test_a_failure_names_the_first_step_that_parts_beyond_the_plain_runs_own_noise():
    """The noise at a step is the largest difference between any two plain runs there; the
    replayed run is measured against the plain run nearest it."""
    plain = _run([0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [5.0, 1.0])
    again = _run([0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [2.0, 1.0])  # the plain runs part at 3
    # the replay parts at step 1 (0.5 over no noise); at step 3 within the noise (1 < 3)
    replayed = _run([0.0, 1.0], [0.0, 1.5], [0.0, 1.0], [4.0, 1.0])
    assert graph_check.first_parting([plain, again], replayed) == (1, "rewards: 1 against 1.5")
    assert graph_check.first_parting([plain, again], again) is None
    gaps = graph_check.step_differences(plain, replayed)
    assert [gap for gap, _ in gaps] == [0.0, 0.5, 0.0, 1.0]
    # a third plain run that parts at step 1 too widens the noise there: the replay is then
    # judged against the plain run nearest it, and passes
    third = _run([0.0, 1.0], [0.0, 1.4], [0.0, 1.0], [4.0, 1.0])
    assert graph_check.noise([plain, again, third]) == pytest.approx([0.0, 0.4, 0.0, 3.0])
    nearest = graph_check.nearest_differences([plain, again, third], replayed)
    assert [gap for gap, _ in nearest] == pytest.approx([0.0, 0.1, 0.0, 0.0])
    assert graph_check.first_parting([plain, again, third], replayed) is None
    with pytest.raises(ValueError, match="at least 2 plain runs"):
        graph_check.first_parting([plain], replayed)


def test_steps_that_hold_other_metrics_nans_or_more_steps_part_infinitely():
    plain = _run([0.0], [1.0])
    other_metric = _run([0.0], [1.0], logged=("b",))
    assert graph_check.step_differences(plain, other_metric)[0] == (
        float("inf"), "only one run has logged a, logged b")
    nan = _run([0.0], [float("nan")])
    assert graph_check.step_differences(plain, nan)[1] == (float("inf"), "rewards: 1 against nan")
    assert graph_check.step_differences(nan, nan)[1][0] == 0.0  # NaN on both sides agrees
    longer = _run([0.0], [1.0], [2.0])
    assert graph_check.step_differences(plain, longer)[-1] == (
        float("inf"), "one run has more steps")
    result = graph_check.GraphCheckResult(
        device="cuda:0", scope="step", num_envs=4, steps=8, resets=0, calls=6, graphs=7,
        replays=20, spread=0.0, difference=float("inf"), parted_at=1,
        parted="rewards: 1 against nan")
    assert not result.passed
    assert result.line().endswith("; parts at step 1: rewards: 1 against nan")
    noted = replace(result, host_tensors=["aten.index.Tensor at mjlab/action.py:9", "x"])
    assert noted.line().endswith("; parts at step 1: rewards: 1 against nan; 2 operators of a "
                                 "step read host tensors, the first aten.index.Tensor at "
                                 "mjlab/action.py:9")  # fmt: skip


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (torch.cuda); its CPU "
                    "sibling is test_the_step_scope_replays_every_graph_safe_call_of_a_step_"
                    "exactly")
def test_on_a_gpu_the_step_scope_replays_as_plain_calls():
    result = graph_check.compare(graph_check.GraphCheckRequest(device="cuda:0", num_envs=256))
    assert result.passed, result.line()
