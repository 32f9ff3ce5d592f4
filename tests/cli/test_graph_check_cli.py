"""``microduck graph-check``: a failing comparison is one FAIL line and exit 1; bad input one
line and exit 2 before an env is built."""

from __future__ import annotations

import pytest

from mjlab_microduck.cli import graph_check as cli
from mjlab_microduck.jobs import graph_check
from mjlab_microduck.runtime import graph_replay


@pytest.mark.slow
def test_replays_that_run_nothing_fail_the_check(monkeypatch, capsys):
    """A replay that launches nothing leaves the values of the capture's call: the check sees
    the difference, prints one FAIL line and exits 1."""
    monkeypatch.setattr(graph_replay.RecordedOps, "replay", lambda self, graph: None)
    assert cli.main(["--steps", "12", "--scope", "managers"]) == 1
    (line,) = capsys.readouterr().out.strip().splitlines()
    assert line.startswith("FAIL: scope managers on cpu") and "between plain runs" in line


@pytest.mark.parametrize(("argv", "message"), [
    (["--steps", "3"], "--steps must be at least 8"),
    (["--num-envs", "0"], "--num-envs must be at least 1"),
    (["--plain-runs", "1"], "--plain-runs must be at least 2"),
    (["--scope", "everything"], "everything"),
    (["--device", "gpu7"], "gpu7"),
])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2_before_an_env_is_built(argv, message, capsys,
                                                                 monkeypatch):  # fmt: skip
    monkeypatch.setattr(graph_check, "env_steps", lambda request: pytest.fail("built an env"))
    assert cli.main(argv) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("microduck graph-check") and message in line
