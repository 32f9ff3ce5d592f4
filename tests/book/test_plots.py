"""book.plots.plot_failed_by_transitions: one line per group and seed, a colour per group."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mjlab_microduck.book import plots  # noqa: E402


def _frame() -> pd.DataFrame:
    rows = [{"runs": runs, "seed": seed, "transitions (M)": m * envs / 4096,
             "failed conditions": failed}
            for runs, envs in (("4096 envs", 4096), ("8192 envs", 8192))
            for seed in (42, 43)
            for m, failed in ((30.0, 40), (20.0, 50), (40.0, 10 + seed - 42))]  # fmt: skip
    return pd.DataFrame(rows)


def test_one_line_per_group_and_seed_in_transition_order():
    fig = plots.plot_failed_by_transitions(_frame())
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == [
        "4096 envs, seed 42", "4096 envs, seed 43", "8192 envs, seed 42", "8192 envs, seed 43"]
    assert list(lines[0].get_xdata()) == [20.0, 30.0, 40.0]
    assert list(lines[1].get_ydata()) == [50, 40, 11]
    assert list(lines[3].get_xdata()) == [40.0, 60.0, 80.0]
    # a colour per group, a line style per seed
    assert lines[0].get_color() == lines[1].get_color() != lines[2].get_color()
    assert lines[0].get_linestyle() == lines[2].get_linestyle() != lines[1].get_linestyle()
    assert ax.get_ylim()[0] == 0 and ax.get_xlabel() == "transitions collected (millions)"
    plt.close(fig)


def test_nothing_to_plot_is_refused():
    with pytest.raises(ValueError, match="at least one gait-tested checkpoint"):
        plots.plot_failed_by_transitions(_frame().iloc[:0])
