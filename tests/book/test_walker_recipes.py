"""The catalogue of the walker recipes at scale (mjlab_microduck.book.walker_recipes): the names
their records are published under, and the checkpoints it names."""

from __future__ import annotations

import re

from mjlab_microduck.book import walker_recipes as recipes

EVERY_RECIPE = {v for v in vars(recipes).values() if isinstance(v, recipes.Recipe)}
AGAIN = {recipe for recipe, _ in recipes.WALKER_TIMED_ALONE}


def test_published_names_start_with_the_machine_and_end_with_the_seed():
    recipe = recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW
    assert recipes.stage_folder(recipe, "main", 43) == (
        "h100_walker_turning_axes_straight_start_fine_yaw_main_s43")
    assert recipes.gait_pattern(recipes.WALKER, 42) == "h200_walker_gait_s42_model_*"
    assert recipes.gait_history_folder(recipes.WALKER_HEADING) == (
        "h200_walker_heading_gait_history")


def test_every_recipe_has_its_own_name_and_a_known_machine():
    names = [recipe.name for recipe in EVERY_RECIPE]
    assert len(names) == len(set(names))  # how many: test_walker_results counts them
    assert {recipe.machine for recipe in EVERY_RECIPE} == {"h100", "h200"}
    assert all(re.fullmatch(r"[a-z0-9_]+", name) for name in names)


def test_a_recipe_trained_again_alone_keeps_its_task_and_extends_its_name():
    base = recipes.WALKER_RECIPE
    assert base is recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW
    for recipe in AGAIN:
        assert recipe.task == base.task and recipe.name.startswith(f"{base.name}_alone")
    # every seed of the recipe drawn
    assert {seed for _, seed in recipes.WALKER_TIMED_ALONE} == set(recipes.SEEDS)


def test_the_walker_s_ci_gait_test_names_its_recipe_seed_and_checkpoint():
    # the ci gait tests of the trainings alone: test_walker_results reads each one's training
    seed, iteration = recipes.WALKER_AT
    assert recipes.WALKER_CI_GAIT_TEST == (
        f"cpu_{recipes.WALKER_RECIPE.name}_gait_s{seed}_model_{iteration}")
