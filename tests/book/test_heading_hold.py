"""Heading hold and command errors of the recipes at scale (mjlab_microduck.book.heading_hold),
read from the published gait histories and training scalars, each number recomputed here from
the CSV files themselves."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mjlab_microduck.book import heading_hold as hh
from mjlab_microduck.book import walker_recipes as recipes
from mjlab_microduck.book import walker_results as wr

RESULTS = Path(__file__).resolve().parents[2] / "book" / "results"


def _sideways_worst(recipe: recipes.Recipe, first: int, last: int) -> pd.Series:
    rows = pd.read_csv(RESULTS / recipes.gait_history_folder(recipe) / "gait_test.csv")
    sideways = rows[rows["case.case"].str.startswith(("left_", "right_"))
                    & rows["iteration"].between(first, last)]  # fmt: skip
    return sideways.groupby(["training_seed", "iteration"])["case.max_abs_heading_change_rad"].max()


def test_the_worst_sideways_robot_is_read_from_the_verdicts_table():
    run = wr.seed_run(42, recipe=recipes.WALKER_TURNING_AXES_FINE_YAW)
    expected = _sideways_worst(recipes.WALKER_TURNING_AXES_FINE_YAW, 449, 449).loc[(42, 449)]
    assert hh.worst_heading_rad(run, 449, hh.SIDEWAYS_CASES) == pytest.approx(expected)
    forward = hh.worst_heading_rad(run, 449, ("forward_0.3",))
    assert forward > 0.3 > hh.worst_heading_rad(run, 449, hh.SIDEWAYS_CASES)  # its one failure
    with pytest.raises(KeyError, match="no case starting with"):
        hh.worst_heading_rad(run, 449, ("diagonal",))


def test_the_narrow_yaw_term_holds_the_sideways_heading_better_than_its_base():
    groups = {"axes": wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES),
              "fine yaw": wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_FINE_YAW)}  # fmt: skip
    table = hh.heading_hold_table(groups, 300, 450)
    assert list(table.columns) == ["checkpoints", "worst, median (rad)",
                                   "worst, largest (rad)", "past 0.3 rad"]
    for label, recipe in (("axes", recipes.WALKER_TURNING_AXES),
                          ("fine yaw", recipes.WALKER_TURNING_AXES_FINE_YAW)):  # fmt: skip
        worst = _sideways_worst(recipe, 300, 450)
        row = table.loc[label]
        assert row["checkpoints"] == len(worst) == 12  # 3 seeds x 300, 350, 400, 450 (449)
        assert row["worst, median (rad)"] == round(worst.median(), 2)
        assert row["worst, largest (rad)"] == round(worst.max(), 2)
        assert row["past 0.3 rad"] == int((worst > 0.3).sum())
    assert table.loc["fine yaw", "past 0.3 rad"] == 4
    assert table.loc["axes", "past 0.3 rad"] == 7
    with pytest.raises(ValueError, match="no gait test from model_1000 to model_1200"):
        hh.heading_hold_table(groups, 1000, 1200)


def test_command_errors_are_the_mean_of_the_ten_iterations_up_to_the_one_asked():
    runs = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_FINE_YAW)
    table = hh.command_error_table({"fine yaw": runs}, 449)
    assert list(table.index) == [("fine yaw", s) for s in recipes.SEEDS]
    for seed in recipes.SEEDS:
        main = recipes.stage_folder(recipes.WALKER_TURNING_AXES_FINE_YAW, "main", seed)
        scalars = pd.read_csv(RESULTS / main / "scalars.csv")
        window = scalars[scalars["iteration"].between(440, 449)]
        assert len(window) == 10
        row = table.loc[("fine yaw", seed)]
        assert row["yaw-rate error"] == round(window[hh.YAW_ERROR].mean(), 2)
        assert row["planar velocity error"] == round(window[hh.LINEAR_ERROR].mean(), 3)
    with pytest.raises(KeyError, match="seed 42: no scalars at iteration 600"):
        hh.command_error_table({"fine yaw": runs}, 600)
