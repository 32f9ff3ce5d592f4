"""graph_check: an env stepped plainly and replayed from graphs, compared value for value; on a
CPU through the hook's recorded stand-in, where any difference is a failure (the command's
verdicts and refusals: tests/cli/test_graph_check_cli.py)."""

from __future__ import annotations

import pytest
import torch

from mjlab_microduck.compat import manager_graphs
from mjlab_microduck.jobs import graph_check


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
    # the hook is as it was before the check
    assert manager_graphs.status().details.get("scope", "managers") == "managers"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU (torch.cuda); its CPU "
                    "sibling is test_the_step_scope_replays_every_graph_safe_call_of_a_step_"
                    "exactly")
def test_on_a_gpu_the_step_scope_replays_as_plain_calls():
    result = graph_check.compare(graph_check.GraphCheckRequest(device="cuda:0", num_envs=256))
    assert result.passed, result.line()
