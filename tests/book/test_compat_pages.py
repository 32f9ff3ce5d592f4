"""Chapter 2's MicroDuck under the frozen-broadphase fault: the table and the real run."""

from __future__ import annotations

import pytest

from mjlab_microduck.book import compat_pages
from mjlab_microduck.compat import faults


def test_fault_terminations_has_one_row_per_broadphase(monkeypatch):
    calls = []

    def fake(num_envs, steps):
        calls.append((num_envs, steps, faults.status().active))
        sank = len(calls) > 1
        return {"below_ground": 4 * sank, "nan_state": 0}, (-1.23456 if sank else 0.1), 3.5

    monkeypatch.setattr(compat_pages, "hold_home_terminations", fake)
    table, rbound_cm = compat_pages.fault_terminations(2, 5)
    assert list(table.index) == ["stock broadphase",
                                 *(f"frozen broadphase ({m})" for m in faults.MODES)]
    assert list(table.columns) == ["below_ground", "nan_state", compat_pages.TRUNK_Z_COLUMN]
    assert table.loc["stock broadphase", "below_ground"] == 0
    assert table.iloc[1][compat_pages.TRUNK_Z_COLUMN] == -1.235
    assert rbound_cm == 3.5
    assert [c[:2] for c in calls] == [(2, 5)] * (1 + len(faults.MODES))
    assert [c[2] for c in calls] == [False] + [True] * len(faults.MODES)


@pytest.mark.slow
def test_the_fork_fault_sinks_the_microduck_and_the_guard_fires():
    table, rbound_cm = compat_pages.fault_terminations(2, 40)
    assert table.loc["stock broadphase", "below_ground"] == 0
    assert table.loc["frozen broadphase (fork)", "below_ground"] > 0
    assert table.loc["frozen broadphase (fork)", "nan_state"] == 0
    assert rbound_cm > 0
    # `list` mode keeps the floor: no robot sinks and the trunk stands as high as in the stock run
    z = compat_pages.TRUNK_Z_COLUMN
    assert table.loc["frozen broadphase (list)", "below_ground"] == 0
    assert table.loc["frozen broadphase (list)", z] == pytest.approx(
        table.loc["stock broadphase", z], abs=0.005)
    assert table.loc["frozen broadphase (fork)", z] < table.loc["stock broadphase", z]
