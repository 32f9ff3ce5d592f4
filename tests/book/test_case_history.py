"""One gait-test case across recipes (mjlab_microduck.book.case_history), each number recomputed
here from the published gait histories' CSV files."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from mjlab_microduck.book import case_history as ch
from mjlab_microduck.book import walker_recipes as recipes
from mjlab_microduck.book import walker_results as wr

RESULTS = Path(__file__).resolve().parents[2] / "book" / "results"
GROUPS = {"axes": recipes.WALKER_TURNING_AXES,
          "fast starts": recipes.WALKER_TURNING_AXES_FAST_START}


def _case(recipe: recipes.Recipe, case: str, first: int, last: int) -> pd.DataFrame:
    rows = pd.read_csv(RESULTS / recipes.gait_history_folder(recipe) / "gait_test.csv")
    return rows[(rows["case.case"] == case) & rows["iteration"].between(first, last)]


@pytest.fixture(scope="module")
def groups():
    return {label: wr.seed_runs(recipe=recipe) for label, recipe in GROUPS.items()}


@pytest.mark.parametrize("case", ["forward_0.4", "stand"])
def test_each_column_is_read_from_the_checkpoints_in_the_window(groups, case):
    table = ch.case_history_table(groups, case, 400, 600)
    assert table.columns.name == case and list(table.index) == list(GROUPS)
    for label, recipe in GROUPS.items():
        rows, row = _case(recipe, case, 400, 600), table.loc[label]
        assert row["checkpoints"] == len(rows) == 15  # 3 seeds x 5 tested checkpoints
        assert row["failed in"] == int((~rows["case.passed"].astype(bool)).sum())
        assert row["robots ended"] == int(rows["case.terminations"].sum())
        moved = rows["case.max_displacement_m"]
        assert row["largest displacement, median (m)"] == round(moved.median(), 3)
        assert row["largest displacement, largest (m)"] == round(moved.max(), 3)
    # a case without a yaw command has no yaw-rate column
    assert "yaw rate / command, median" not in table.columns


def test_a_turning_case_adds_the_slowest_seed_s_yaw_rate(groups):
    table = ch.case_history_table(groups, "walk_turn_right", 400, 600)
    for label, recipe in GROUPS.items():
        rows = _case(recipe, "walk_turn_right", 400, 600)
        assert table.loc[label, "yaw rate / command, median"] == round(
            rows["case.mean_yaw_ratio"].median(), 2)
    # the test's pass rule: a checkpoint below 0.8 fails the case
    straight = {"straight": wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_STRAIGHT_START)}
    row = ch.case_history_table(straight, "walk_turn_right", 400, 600).loc["straight"]
    assert row["yaw rate / command, median"] < 0.8 and row["failed in"] > row["checkpoints"] / 2


def test_fast_starts_halve_the_folds_at_0_4_and_cost_standing(groups):
    folds = ch.case_history_table(groups, "forward_0.4", 400, 600)["robots ended"]
    assert (folds["axes"], folds["fast starts"]) == (62, 31)
    stand = ch.case_history_table(groups, "stand", 400, 600)
    assert stand.loc["axes", "failed in"] == 0 and stand.loc["fast starts", "failed in"] == 14
    assert stand.loc["axes", "largest displacement, largest (m)"] < 0.05
    assert stand.loc["fast starts", "largest displacement, median (m)"] > 0.05


def test_a_window_without_tests_and_an_unknown_case_are_errors(groups):
    with pytest.raises(ValueError, match="no gait test from model_1000 to model_1200"):
        ch.case_history_table(groups, "stand", 1000, 1200)
    with pytest.raises(KeyError, match="no case 'diagonal'"):
        ch.case_history_table(groups, "diagonal", 400, 600)
