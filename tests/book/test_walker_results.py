"""The walker recipe's published records, as the chapters read them."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from mjlab_microduck.analysis import gait, walker, watcher_cost
from mjlab_microduck.book import walker_recipes as recipes
from mjlab_microduck.book import walker_results as wr
from mjlab_microduck.runs import records

RESULTS = Path(__file__).resolve().parents[2] / "book" / "results"
PUBLISHED_CHECKPOINTS = {42: {550}, 43: set(), 44: set()}
"""The WALKER checkpoint still published: its candidate (s42, 550), which the drive page falls
back to and an exercise gait-tests."""


@pytest.fixture(scope="module")
def runs():
    return wr.seed_runs()


def test_three_seeds_of_the_recipe_at_scale_are_published(runs):
    assert [run.seed for run in runs] == list(recipes.SEEDS)
    for run in runs:
        (main_dir, main), (resume_dir, resume) = run.stages
        assert main.config["task"] == resume.config["task"] == recipes.WALKER_TASK
        assert main.config["num_envs"] == resume.config["num_envs"] == 4096
        assert (main.config["iterations"], resume.config["iterations"]) == (500, 250)
        assert resume.config["resume_from_iteration"] == 499
        assert main.provenance.backend == "cuda" and main.provenance.device_name == "NVIDIA H200"
        assert [it for it, _, _ in run.gait] == [*range(100, 451, 50), 499, *range(550, 701, 50)]
        # the checkpoints a page or an exercise replays stay published; the others are retired,
        # and their record names each with its SHA-256
        for iteration, stage_dir in ((499, main_dir), (550, resume_dir), (748, resume_dir)):
            if iteration in PUBLISHED_CHECKPOINTS[run.seed]:
                assert run.checkpoint(iteration).parent == stage_dir
            else:
                with pytest.raises(FileNotFoundError, match="is not published"):
                    run.checkpoint(iteration)
                notes = records.load_record(stage_dir).notes
                assert f"model_{iteration}.pt (776060 bytes, sha256 " in notes


def test_the_clock_runs_forward_across_the_resume(runs):
    for run in runs:
        progress = run.progress()
        assert progress["minutes"].is_monotonic_increasing
        # 4096 envs x 24 steps per iteration take about a second on the GPU, not ten.
        assert 5.0 < float(progress.set_index("iteration").loc[450, "minutes"]) < 15.0


def test_no_published_checkpoint_is_called_a_walker_without_passing(runs):
    for run in runs:
        progress = run.progress()
        for _, row in progress.iterrows():
            verdict = run.verdict(int(row["iteration"]))
            assert row["walker"] == verdict["passed"] == (not verdict["failures"])
        assert walker.time_to_walk_s(progress) is None


def test_failed_conditions_counts_each_tested_checkpoint_s_failing_conditions(runs):
    for run in runs:
        failed = run.failed_conditions()
        assert list(failed.index) == [iteration for iteration, _, _ in run.gait]
        for iteration, count in failed.items():
            table = run.verdict(iteration)["table"]
            assert count == sum(row["failed_conditions"] for row in table) > 0


def test_the_candidate_never_falls_and_fails_fewest_conditions(runs):
    run, iteration = wr.candidate(runs)
    progress = run.progress().set_index("iteration")
    assert progress.loc[iteration, "never falls"]
    best = min(int(r.progress().query("`never falls`")["failed_conditions"].min()) for r in runs)
    assert progress.loc[iteration, "failed_conditions"] == best
    table = wr.case_table(run.verdict(iteration))
    assert len(table) == 16 and table["terminations"].sum() == 0


def test_the_case_table_shows_the_heading_speed_the_walk_and_turn_cases_pass_on():
    verdict, _ = wr.walker_gait(wr.published_walker())
    table = wr.case_table(verdict)
    assert list(table.columns) == [
        "passed", "mean_progress_ratio", "min_progress_ratio", "heading_speed_ratio",
        "mean_yaw_ratio", "max_abs_heading_change_rad", "max_displacement_m", "terminations"]
    walk_turn = table.filter(like="and turn", axis=0)
    # passed although they end up facing away from where they started: judged on heading speed
    assert len(walk_turn) == 2 and walk_turn["passed"].all()
    assert (walk_turn["mean_progress_ratio"] < 0).all()
    assert (walk_turn["heading_speed_ratio"] >= gait.MIN_HEADING_SPEED_RATIO).all()
    assert table.loc[["stand", "turn in place +0.5 rad/s"], "heading_speed_ratio"].isna().all()


@pytest.fixture(scope="module")
def narrow_runs():
    return wr.seed_runs(recipe=recipes.WALKER_NARROW)


def test_the_narrow_recipe_has_three_seeds_of_one_500_iteration_stage(narrow_runs):
    for run in narrow_runs:
        ((main_dir, main),) = run.stages
        assert main.config["task"] == recipes.WALKER_NARROW.task
        assert main.config["tuning"]["ang_vel_std_rad_s"] == 0.3
        assert (main.config["num_envs"], main.config["iterations"]) == (4096, 500)
        with pytest.raises(FileNotFoundError, match="model_499.pt is not published"):
            run.checkpoint(499)  # retired: no page replays a checkpoint of this recipe
        assert [it for it, _, _ in run.gait] == [*range(100, 451, 50), 499]
        # every gait test is a row of the recipe's gait history, none has its own folder
        assert {where.parent.name for _, where, _ in run.gait} == {
            recipes.gait_history_folder(recipes.WALKER_NARROW)}
        assert walker.time_to_walk_s(run.progress()) is None


def test_the_narrow_kernels_stand_still_but_never_turn(narrow_runs):
    frame = wr.progress_frame(narrow_runs)
    assert set(frame["recipe"]) == {"walker_narrow"} and len(frame) == 3 * 9
    assert frame["stands still"].all() and not frame["turns on command"].any()
    for run in narrow_runs:
        cases = wr.case_table(run.verdict(499))
        assert cases.filter(like="turn in place", axis=0)["mean_yaw_ratio"].abs().max() < 0.1


def test_skill_summary_counts_seeds_and_first_minutes(runs, narrow_runs):
    table = wr.skill_summary([*runs, *narrow_runs])
    assert list(table.columns.get_level_values(0).unique()) == ["WALKER", "WALKER_NARROW"]
    assert table.loc["turns on command", ("WALKER", "seeds holding it")] == "3 of 3"
    assert table.loc["turns on command", ("WALKER_NARROW", "seeds holding it")] == "0 of 3"
    assert pd.isna(table.loc["walker", ("WALKER", "first at (min)")])
    progress = [run.progress() for run in narrow_runs]
    first_stand = min(float(p.loc[p["stands still"], "minutes"].min()) for p in progress)
    assert table.loc["stands still", ("WALKER_NARROW", "first at (min)")] == round(first_stand, 1)


def test_stage_table_has_one_row_per_stage_with_its_median_iteration_time(runs, narrow_runs):
    table = wr.stage_table([*runs, *narrow_runs])
    assert len(table) == 3 * 2 + 3
    assert table.loc["h200_walker_resume_s43", "size"] == (
        "4,096 envs × 250 it, resumed from iteration 499"
    )
    # three runs sharing one H200: more than one second per 4096-env iteration, less than two
    assert table["s per iteration (median)"].between(1.0, 2.0).all()
    assert table["machine"].str.startswith("one NVIDIA H200, driver 580").all()


class StandInRun:
    """A seed run with a made-up progress table, on the training record of a published one."""

    def __init__(self, published, seed, rows, recipe=recipes.WALKER_HEADING):
        self.seed, self.recipe = seed, recipe
        self.stages = published.stages
        self.gait = tuple((row["iteration"], Path(f"gait_s{seed}_model_{row['iteration']}"), None)
                          for row in rows)  # fmt: skip
        self._rows = rows

    def progress(self):
        return pd.DataFrame(self._rows)

    def checkpoint(self, iteration):
        return Path(f"h200_walker_heading_main_s{self.seed}") / f"model_{iteration}.pt"

    def verdict(self, iteration):
        row = next(r for r in self._rows if r["iteration"] == iteration)
        return {"passed": row["walker"]}


def _rows(*passing_at):
    return [
        {"iteration": it, "minutes": it / 60.0, "walker": it in passing_at,
         "failed_conditions": 0 if it in passing_at else 3}
        for it in (250, 300, 350)
    ]  # fmt: skip


def _stand_in_runs():
    """Seed 42 passes at 300 and 350, seed 43 never, seed 44 at 250 (reached first)."""
    published = wr.seed_run(42)
    return [
        StandInRun(published, 42, _rows(300, 350)),
        StandInRun(published, 43, _rows()),
        StandInRun(published, 44, _rows(250)),
    ]


def test_the_walker_is_the_passing_checkpoint_reached_first(tmp_path):
    runs = _stand_in_runs()
    summary = wr.walker_summary(runs)
    assert (summary["seed"], summary["iteration"], summary["seeds_passing"]) == (44, 250, 2)
    assert summary["task"] == "Mjlab-Velocity-Flat-MicroDuck-WalkerHeadingTuning"
    assert summary["seeds"]["43"] == {"passed": False, "first_passing": None, "minutes": None,
                                      "tested": 3}  # fmt: skip
    assert summary["seeds"]["42"]["first_passing"] == "model_300"
    assert summary["time_to_walk_s"] == pytest.approx(250.0)
    assert summary["side_by_side"] == {"time_to_walk_s": pytest.approx(250.0), "seeds": 3,
                                       "first_passing": "h200_walker_heading_main_s44/model_250",
                                       "seed": 44, "machine": "h200"}  # fmt: skip
    assert "alone" not in summary
    assert summary["checkpoint"] == "h200_walker_heading_main_s44/model_250.pt"
    assert summary["gait_record"] == "gait_s44_model_250"
    assert "H200" in summary["device"]
    assert wr.published_walker(tmp_path) is None
    path = wr.write_walker(runs, tmp_path)
    assert wr.published_walker(tmp_path) == summary
    with pytest.raises(FileExistsError, match="remove it first"):
        wr.write_walker(runs, tmp_path)
    assert path.read_text().endswith("\n")


def test_a_walker_chosen_among_the_passing_checkpoints_keeps_the_time_to_walk(tmp_path):
    runs = _stand_in_runs()
    summary = wr.walker_summary(runs, walker_at=(42, 350), ci_gait_record="cpu_gait")
    assert (summary["seed"], summary["iteration"]) == (42, 350)
    assert summary["checkpoint"] == "h200_walker_heading_main_s42/model_350.pt"
    assert summary["gait_record"] == "gait_s42_model_350"
    # the time to walk is still the first passing checkpoint's, over all seeds
    assert summary["time_to_walk_s"] == pytest.approx(250.0)
    assert summary["first_passing"] == "h200_walker_heading_main_s44/model_250"
    assert summary["ci_gait_record"] == "cpu_gait"
    for not_passing in ((43, 300), (42, 250), (45, 300)):
        with pytest.raises(ValueError, match="not a passing checkpoint"):
            wr.walker_summary(runs, walker_at=not_passing)
    path = wr.write_walker(runs, tmp_path, walker_at=(42, 350), ci_gait_record="cpu_gait")
    assert wr.published_walker(tmp_path) == summary and path.name == wr.WALKER_FILENAME


def test_the_winning_seed_trained_alone_gives_the_time_to_walk_the_shared_gpu_stays_beside(
    tmp_path,
):
    runs, published = _stand_in_runs(), wr.seed_run(42)
    # Alone, seed 42 first passes at 350 after 300 s (side by side: 300, at 5 min).
    faster = [{**row, "minutes": row["minutes"] * 0.6} for row in _rows(350)]
    alone = [StandInRun(published, 42, faster, recipe=recipes.WALKER_HEADING_ALONE)]
    summary = wr.walker_summary(runs, walker_at=(42, 350), alone=alone)
    assert summary["alone"] == {"time_to_walk_s": pytest.approx(210.0), "seed": 42,
                                "first_passing": "h200_walker_heading_alone_main_s42/model_350",
                                "machine": "h200", "tested": 3, "last_tested": "model_350"}
    assert (summary["time_to_walk_s"], summary["first_passing"]) == (
        summary["alone"]["time_to_walk_s"], summary["alone"]["first_passing"])  # fmt: skip
    assert summary["side_by_side"]["time_to_walk_s"] == pytest.approx(250.0)
    # The walker and the seeds' verdicts are still the side-by-side training's.
    assert summary["checkpoint"] == "h200_walker_heading_main_s42/model_350.pt"
    assert summary["seeds_passing"] == 2
    # Alone and never passing: said so, and the side-by-side figure stays the headline.
    never = [StandInRun(published, 42, _rows(), recipe=recipes.WALKER_HEADING_ALONE)]
    summary = wr.walker_summary(runs, alone=never)
    assert summary["alone"] == {"time_to_walk_s": None, "first_passing": None, "seed": 42,
                                "machine": "h200", "tested": 3, "last_tested": "model_350"}
    assert summary["time_to_walk_s"] == summary["side_by_side"]["time_to_walk_s"]
    wr.write_walker(runs, tmp_path, alone=never)
    assert wr.published_walker(tmp_path) == summary


def test_the_walker_may_be_the_checkpoint_its_timed_training_alone_reached_first(tmp_path):
    runs, published = _stand_in_runs(), wr.seed_run(42)
    # Alone, seed 44 passes at 300 and 350, the first after 150 s.
    halved = [{**row, "minutes": row["minutes"] / 2} for row in _rows(300, 350)]
    alone = [StandInRun(published, 44, halved, recipe=recipes.WALKER_HEADING_ALONE)]
    summary = wr.walker_summary(runs, alone=alone, walker_alone=True, ci_gait_record="cpu")
    assert (summary["seed"], summary["iteration"]) == (44, 300)
    assert summary["checkpoint"] == "h200_walker_heading_main_s44/model_300.pt"
    assert summary["gait_record"] == "gait_s44_model_300"
    # the recipe is the one whose seeds the verdicts are, and the headline is the alone time
    assert (summary["recipe"], summary["seeds_passing"]) == (recipes.WALKER_HEADING.name, 2)
    assert summary["time_to_walk_s"] == pytest.approx(150.0) == summary["alone"]["time_to_walk_s"]
    assert summary["side_by_side"]["time_to_walk_s"] == pytest.approx(250.0)
    assert wr.walker_summary(runs, walker_at=(44, 350), alone=alone,
                             walker_alone=True)["iteration"] == 350  # fmt: skip
    with pytest.raises(ValueError, match="not a passing checkpoint"):
        wr.walker_summary(runs, walker_at=(42, 300), alone=alone, walker_alone=True)
    never = [StandInRun(published, 44, _rows(), recipe=recipes.WALKER_HEADING_ALONE)]
    with pytest.raises(wr.NoWalkerError, match="alone runs"):
        wr.walker_summary(runs, alone=never, walker_alone=True)
    wr.write_walker(runs, tmp_path, alone=alone, walker_alone=True, ci_gait_record="cpu")
    assert wr.published_walker(tmp_path) == summary


def test_a_time_to_walk_says_what_its_start_up_compiled_where_the_record_counted_it():
    runs, published = _stand_in_runs(), wr.seed_run(42)
    path, record = published.stages[0]
    counted = record.model_copy(update={"summary": {
        **record.summary, "warp_modules_loaded": 40, "warp_modules_compiled": 0,
        "warp_compile_s": 0.0}})  # fmt: skip
    alone = StandInRun(published, 44, _rows(250), recipe=recipes.WALKER_HEADING_ALONE)
    alone.stages = ((path, counted),)
    summary = wr.walker_summary(runs, alone=[alone])
    assert summary["alone"]["warp_modules_compiled"] == 0
    assert summary["alone"]["warp_compile_s"] == 0.0
    # The published records did not count them: their entry says nothing rather than 0.
    assert not set(wr.COMPILE_KEYS) & set(summary["side_by_side"])


def test_no_walker_is_published_while_no_seed_passes(tmp_path):
    published = wr.seed_run(42)
    runs = [StandInRun(published, seed, _rows()) for seed in (42, 43, 44)]
    with pytest.raises(wr.NoWalkerError, match="no gait-tested checkpoint of walker_heading"):
        wr.write_walker(runs, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_training_curves_carry_the_clock_of_the_gait_tests(runs):
    curves = wr.training_curves(runs)
    assert list(curves) == list(recipes.SEEDS)
    for run in runs:
        curve = curves[run.seed]
        assert curve["minutes"].is_monotonic_increasing and not curve["minutes"].isna().any()
        progress = run.progress().set_index("iteration")
        for iteration in (100, 499, 700):
            assert curve.loc[iteration, "minutes"] == pytest.approx(
                progress.loc[iteration, "minutes"])


# ----------------------------------------------------------------------------- the published walker


def recipe_of(walker_record: dict) -> recipes.Recipe:
    """The Recipe a walker.json names by its ``recipe``."""
    (recipe,) = {r for r in vars(recipes).values()
                 if isinstance(r, recipes.Recipe) and r.name == walker_record["recipe"]}
    return recipe


@pytest.fixture(scope="module")
def published():
    walker_record = wr.published_walker()
    assert walker_record is not None, "book/results/walker.json is published"
    return walker_record


def test_the_published_walker_passes_its_full_size_gait_test(published):
    verdict, record = wr.walker_gait(published)
    assert verdict["passed"] and verdict["failures"] == [] and verdict["mode"] == "heading"
    assert record.summary["seeds"] == 5 and record.summary["robots_per_case"] == 16
    assert record.summary["terminations"] == 0 and record.summary["cases"] == 16
    assert record.config["task"] == published["task"]
    # The open-loop drift is measured beside the verdict, in the same record.
    assert record.summary["modes"] == "heading,open_loop"
    assert not wr.drift_table(verdict).empty
    checkpoint = wr.walker_checkpoint(published)
    assert record.config["checkpoint_sha256"] != ""
    assert checkpoint.name == f"model_{published['iteration']}.pt"


def test_the_published_walker_passes_its_full_size_gait_test_again_on_an_h200(published):
    import hashlib

    from mjlab_microduck.book import results

    verdict, record = wr.walker_gait(published)
    again_verdict, again = wr.published_gait(results.WALKER_GAIT_TEST_H200)
    assert again.provenance.device_name == "NVIDIA H200" and again.config["device"] == "cuda:0"
    assert "H200" not in record.provenance.device_name  # another GPU model than the first
    # the published slim checkpoint itself, in the walker's task, at the same size and seeds
    checkpoint = wr.walker_checkpoint(published)
    assert again.config["checkpoint_sha256"] == hashlib.sha256(checkpoint.read_bytes()).hexdigest()
    for key in ("task", "seeds", "robots_per_case", "duration_s", "cases", "thresholds"):
        assert again.config[key] == record.config[key], key
    assert again_verdict["passed"] and again_verdict["failures"] == []
    assert again.summary["terminations"] == 0 and again.summary["modes"] == "heading,open_loop"
    assert [row["passed"] for row in again_verdict["table"]] == [True] * 16


def test_at_least_two_of_three_seeds_of_the_walker_recipe_pass(published):
    seeds = wr.seed_verdicts(published)
    assert list(seeds.index) == [f"seed {s}" for s in recipes.SEEDS]
    assert (seeds["passes"] == "yes").sum() == published["seeds_passing"] >= 2
    # walker.json names the seeds' first passing checkpoint (the time to walk side by side)
    first_seed = published["side_by_side"]["seed"]
    first = published["side_by_side"]["first_passing"].rsplit("/model_", 1)[1]
    assert seeds.loc[f"seed {first_seed}", "first passing checkpoint"] == f"model_{first}"
    walker_passes = wr.seed_run(published["seed"], recipe=recipe_of(published)).verdict(
        published["iteration"])["passed"]
    assert walker_passes and published["iteration"] >= int(first)


def test_the_walker_card_names_its_run_machine_and_date(published):
    card = wr.walker_card(published)
    row = card.iloc[0]
    assert card.index[0] == published["recipe"].upper()
    assert row["verdict"] == "passes"
    assert recipe_of(published).machine.upper() in row["machine"]
    assert row["gait test"] == published["gait_record"] and len(row["date"]) == 10
    # each time to walk names the GPU that gave it: the first passing run's recipe's machine
    side_gpu = recipe_of(published).machine.upper()
    minutes = row[f"time to walk, min (3 seeds side by side on one {side_gpu})"]
    assert minutes == pytest.approx(published["side_by_side"]["time_to_walk_s"] / 60.0, abs=0.05)
    alone_gpu = published.get("alone", {}).get("machine", "").upper()
    alone_column = ("time to walk, min (seed "
                    f"{published.get('alone', {}).get('seed')} trained again, alone on one "
                    f"{alone_gpu})")
    if published.get("alone", {}).get("time_to_walk_s") is not None:
        alone = row[alone_column]
        assert alone == pytest.approx(published["time_to_walk_s"] / 60.0, abs=0.05)
    elif "alone" in published:  # trained again alone, and no checkpoint passed: said so
        assert row[alone_column] == (
            f"none: that training passes no checkpoint by {published['alone']['last_tested']}")
        assert published["time_to_walk_s"] == published["side_by_side"]["time_to_walk_s"]
    else:
        assert published["time_to_walk_s"] == published["side_by_side"]["time_to_walk_s"]
    # a start test of the walker's own checkpoint is named where one ran it (chapter 11):
    # WALKER_HEADING's walker folds 21 of its 1024 starts; no start test ran the book's walker
    folds = "starts into 0.4 m/s that fold (start test)"
    assert folds not in card.columns
    assert wr.walker_card(wr.walker_heading_summary()).iloc[0][folds] == "21 of 1024 (2.1 %)"


def test_the_heading_recipe_s_summary_names_its_walker_and_the_book_s_walker_is_sooner(published):
    heading = wr.walker_heading_summary()
    assert (heading["recipe"], heading["seed"], heading["iteration"]) == (
        recipes.WALKER_HEADING.name, *recipes.HEADING_WALKER_AT)
    assert heading["ci_gait_record"] == recipes.HEADING_CI_GAIT_TEST
    assert (RESULTS / recipes.HEADING_CI_GAIT_TEST).is_dir()
    # its walker passes its full-size test, its first pass is seed 42's model_900, and seed 42
    # trained again alone passes nothing
    assert wr.walker_gait(heading)[0]["passed"]
    assert heading["side_by_side"]["first_passing"] == "h200_walker_heading_main_s42/model_900"
    assert heading["alone"]["first_passing"] is None
    # the book's walker comes from a later recipe, whose first pass came sooner
    assert published["recipe"] != heading["recipe"]
    assert published["time_to_walk_s"] < heading["time_to_walk_s"]


def test_a_walker_json_naming_a_missing_checkpoint_is_refused(tmp_path, published):
    with pytest.raises(FileNotFoundError, match="not published"):
        wr.walker_checkpoint(published, tmp_path)


def test_turning_lever_runs_read_back_from_their_records():
    runs = wr.seed_runs(recipe=recipes.WALKER_TURNING)
    assert [r.seed for r in runs] == list(recipes.SEEDS)
    for run in runs:
        # every 50th checkpoint from 250 was tested as it was saved (the last one is model_799)
        iterations = [it for it, _, _ in run.gait]
        assert iterations[0] == 250
        assert all(b - a in (49, 50) for a, b in zip(iterations, iterations[1:], strict=False))
        assert run.stages[0][1].config["task"] == recipes.WALKER_TURNING.task
    passing = {r.seed: [it for it, v in r.verdicts.items() if v["passed"]] for r in runs}
    first = {seed: its[0] for seed, its in passing.items() if its}
    # a seed's first passing checkpoint is published slim, so a page can replay it
    for seed, it in first.items():
        assert runs[recipes.SEEDS.index(seed)].checkpoint(it).is_file()


def test_time_to_walk_table_reads_the_first_passing_checkpoint_and_the_gpu_sharing():
    heading = wr.seed_runs(recipe=recipes.WALKER_HEADING)
    turning = wr.seed_runs(recipe=recipes.WALKER_TURNING)
    alone = [wr.seed_run(43, recipe=recipes.WALKER_TURNING_ALONE)]
    short = wr.seed_runs(recipe=recipes.WALKER_TURNING_SHORT)
    table = wr.time_to_walk_table(
        {"heading": heading, "turning": turning, "alone": alone, "short": short})
    assert list(table["trainings on the GPU"]) == [3, 3, 1, 3]
    # each training's envs and rollout, as its record says
    assert list(table["envs"]) == [4096, 4096, 4096, 8192]
    assert list(table["steps per env"]) == [24, 24, 24, 12]
    assert table.loc["short", "first passing"] == "none"
    # the heading row is that recipe's own side-by-side figure
    walker = wr.walker_heading_summary()
    assert table.loc["heading", "first passing"] == walker["side_by_side"]["first_passing"]
    assert table.loc["heading", "minutes from launch"] == round(
        walker["side_by_side"]["time_to_walk_s"] / 60, 1)
    # alone, an iteration is faster than with three trainings sharing the GPU
    assert table.loc["alone", "s per iteration (median)"] < table.loc[
        "turning", "s per iteration (median)"]
    iteration, minutes = wr.first_passing(alone[0])
    assert table.loc["alone", "first passing"] == (
        f"h200_walker_turning_alone_main_s43/model_{iteration}")
    assert table.loc["alone", "minutes from launch"] == round(minutes, 1)
    # a group none of whose checkpoints passes has no first passing checkpoint
    narrow = wr.time_to_walk_table({"narrow": wr.seed_runs(recipe=recipes.WALKER_NARROW)})
    assert narrow.loc["narrow", "first passing"] == "none"
    assert narrow["minutes from launch"].isna().all()


def test_the_seed_trained_alone_is_one_1000_iteration_run_gait_tested_every_50th():
    run = wr.seed_run(43, recipe=recipes.WALKER_TURNING_ALONE)
    record = run.stages[0][1]
    assert record.config["task"] == recipes.WALKER_TURNING.task
    assert record.config["num_envs"] == 4096 and record.summary["last_iteration"] == 999
    assert [it for it, _, _ in run.gait] == [*range(300, 1000, 50), 999]


def test_the_walker_s_first_seed_trained_again_alone_is_faster_per_iteration_and_passes_nothing():
    run = wr.seed_run(42, recipe=recipes.WALKER_HEADING_ALONE)
    record = run.stages[0][1]
    assert record.config["task"] == recipes.WALKER_HEADING.task and record.status == "ok"
    assert record.config["num_envs"] == 4096 and record.summary["last_iteration"] == 999
    # every 50th checkpoint from 450, and the last, gait-tested as it was saved
    assert [it for it, _, _ in run.gait] == [*range(450, 1000, 50), 999]
    side_by_side = wr.seed_run(42, recipe=recipes.WALKER_HEADING)
    assert wr.first_passing(side_by_side)[0] == 900 and wr.first_passing(run) is None
    table = wr.time_to_walk_table({"alone": [run], "together": wr.seed_runs(
        recipe=recipes.WALKER_HEADING)})  # fmt: skip
    assert table.loc["alone", "trainings on the GPU"] == 1
    assert table.loc["alone", "s per iteration (median)"] < table.loc[
        "together", "s per iteration (median)"]
    # the recipe's summary says so, and its headline stays the side-by-side figure
    alone = wr.walker_heading_summary()["alone"]
    assert alone == {"time_to_walk_s": None, "first_passing": None, "seed": 42, "machine": "h200",
                     "tested": len(run.gait), "last_tested": "model_999"}
    # what its closest checkpoint fails: single robots folding their legs in their first
    # second, walking forward at 0.3 and 0.4 m/s
    closest = int(run.failed_conditions().idxmin())
    verdict = run.verdict(closest)
    assert {r["case"] for r in verdict["table"] if not r["passed"]} <= {
        "forward_0.3", "forward_0.4", "backward_0.2"}
    times = [float(t) for t in re.findall(r"(?:legs_collapsed|fell_over) at ([\d.]+) s",
                                          " ".join(verdict["failures"]))]  # fmt: skip
    assert times and max(times) < 1.0


def test_near_pass_failures_count_the_cases_failing_in_nearly_passing_checkpoints():
    heading = wr.seed_runs(recipe=recipes.WALKER_HEADING)
    turning = wr.seed_runs(recipe=recipes.WALKER_TURNING)
    table = wr.near_pass_failures({"heading": heading, "turning": turning})
    assert list(table.columns) == ["heading", "turning"]
    for label, runs in (("heading", heading), ("turning", turning)):
        frame = wr.progress_frame(runs)
        near = frame[frame["failed_conditions"].between(1, wr.NEAR_PASS_MAX_FAILED)]
        assert table.loc["checkpoints", label] == len(near) > 0
        # a case fails in at most every nearly passing checkpoint, and some case in each
        cases = table.drop(index="checkpoints")[label]
        assert cases.max() <= len(near) and cases.sum() >= len(near)
    # rows follow the gait test's case order, and a case failing nowhere there is left out
    order = [c.name for c in gait.CASES]
    rows = list(table.index[1:])
    assert rows == sorted(rows, key=order.index) and (table.drop(index="checkpoints") > 0).any(
        axis=1).all()
    # the turn-in-place envs took turning in place off the list; walking sideways stayed on it
    assert table.loc["turn_left_0.5", "heading"] > 0 and table.loc["turn_left_0.5", "turning"] == 0
    assert table.loc["left_0.15", "turning"] > 0
    # a tighter bound counts fewer checkpoints
    tight = wr.near_pass_failures({"turning": turning}, max_failed=3)
    assert tight.loc["checkpoints", "turning"] < table.loc["checkpoints", "turning"]


def test_a_recipe_published_by_its_gait_tests_alone_has_no_clock():
    runs = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES)
    assert recipes.WALKER_TURNING_AXES.stages == ()
    assert [r.seed for r in runs] == list(recipes.SEEDS)
    for run in runs:
        assert run.stages == ()
        progress = run.progress()
        assert progress["minutes"].isna().all() and len(progress) == len(run.gait)
        for _, _, record in run.gait:
            # each gait test names the checkpoint it tested, and the lever's task
            assert record.config["task"] == recipes.WALKER_TURNING_AXES.task
            assert len(record.config["checkpoint_sha256"]) == 64
    first = {r.seed: wr.first_passing(r) for r in runs}
    assert first[43][0] == 500 and first[42] is None and first[44] is None


def test_the_straight_start_fine_yaw_seed_trained_again_alone_is_read_by_its_gait_tests():
    recipe = recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE
    (alone,) = [wr.seed_run(43, recipe=recipe)]
    assert recipe.stages == ()
    assert recipe.task == recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW.task
    assert alone.stages == () and len(alone.gait) == 8
    for _, _, record in alone.gait:
        # the card its name starts with, and the lever's task, from each test's own record
        assert "NVIDIA H100" in record.provenance.device_name
        assert record.config["task"] == recipe.task
        assert "_s43/" in record.config["checkpoint"]
    progress = alone.progress()
    assert progress["iteration"].tolist() == list(range(350, 526, 25))
    assert wr.first_passing(alone) is None and progress["minutes"].isna().all()


TIMED_ALONE_STOPPED_AT_A_PASS = {
    # recipe: (CUDA MPS, {seed: (checkpoints tested, first pass)}, seconds per iteration)
    recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_NO_MPS: (
        False, {44: (range(400, 676, 25), 675), 43: (range(450, 476, 25), 450)}, (0.8, 1.0)),
    recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS: (
        True, {43: (range(350, 376, 25), 350), 42: (range(350, 526, 25), 500)}, (0.9, 1.1)),
    # a checkpoint saved every 50th iteration, so the watcher's every 25th is every 50th
    recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_EVERY_50: (
        True, {42: (range(350, 401, 50), 400)}, (0.9, 1.1)),
    recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_AGAIN: (
        True, {42: (range(350, 401, 25), 400), 43: (range(350, 476, 25), 475)}, (0.8, 1.0)),
}  # fmt: skip


def _timed_alone_record(recipe: recipes.Recipe, seed: int, cuda_mps: bool):
    """The one training record of a seed of the walker recipe timed alone, checked for what
    every such training shares: the recipe's task at 4096 envs on the recipe's GPU, ended
    ``ok``, with CUDA MPS as given."""
    assert recipe.task == recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW.task
    run = wr.seed_run(seed, recipe=recipe)
    ((_, record),) = run.stages
    assert record.status == "ok" and record.provenance.cuda_mps is cuda_mps
    assert f"NVIDIA {recipe.machine.upper()}" in record.provenance.device_name
    assert record.config["task"] == recipe.task and record.config["num_envs"] == 4096
    return run, record


@pytest.mark.parametrize(("recipe", "seed", "iterations"), [
    (recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_700, 44, 700),
    (recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_700_AGAIN, 44, 700),
    (recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_H200, 43, 650),
], ids=lambda v: v.name if isinstance(v, recipes.Recipe) else str(v))  # fmt: skip
def test_the_walker_recipe_timed_alone_without_a_pass_ran_its_whole_budget(
        recipe, seed, iterations):
    run, record = _timed_alone_record(recipe, seed, cuda_mps=True)
    # nothing passed, so nothing stopped it: its whole budget, every 25th tested from 350
    assert "stopped_on_request" not in record.summary
    assert record.summary["last_iteration"] == record.config["iterations"] - 1 == iterations - 1
    assert run.progress()["iteration"].tolist() == [*range(350, iterations - 24, 25),
                                                    iterations - 1]  # fmt: skip
    assert wr.first_passing(run) is None
    assert run.progress()["failed_conditions"].min() > 0


@pytest.mark.parametrize("recipe", TIMED_ALONE_STOPPED_AT_A_PASS, ids=lambda r: r.name)
def test_the_walker_recipe_timed_alone_ran_and_stopped_at_a_pass(recipe):
    cuda_mps, expected, (fastest_s, slowest_s) = TIMED_ALONE_STOPPED_AT_A_PASS[recipe]
    for seed, (tested, passed_at) in expected.items():
        run, record = _timed_alone_record(recipe, seed, cuda_mps)
        # the gait watcher stopped it at its first pass, a checkpoint the record keeps (slim)
        assert f"model_{passed_at} passed" in record.summary["stopped_on_request"]
        assert run.checkpoint(passed_at).is_file()
        assert run.progress()["iteration"].tolist() == list(tested)
        assert wr.first_passing(run)[0] == passed_at
        # alone, with MPS or without, an iteration took about a second
        scalars = run.scalars()
        iteration_s = (scalars["Perf/collection_time"] + scalars["Perf/learning_time"]).median()
        assert fastest_s < iteration_s < slowest_s


def test_the_walker_recipe_s_draws_alone_walk_in_time_or_not_and_every_seed_passes_once():
    no_mps = recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_NO_MPS
    # seed 43's second draw alone walked within the target, seed 44's did not
    assert wr.first_passing(wr.seed_run(43, recipe=no_mps))[1] * 60 <= wr.TIME_TO_WALK_TARGET_S
    assert wr.first_passing(wr.seed_run(44, recipe=no_mps))[1] * 60 > wr.TIME_TO_WALK_TARGET_S
    # seed 42 passed nothing side by side; alone, each of the recipe's seeds has a pass
    side_by_side = wr.seed_run(42, recipe=recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW)
    assert wr.first_passing(side_by_side) is None
    passing = {seed for recipe, seed in recipes.WALKER_TIMED_ALONE
               if wr.first_passing(wr.seed_run(seed, recipe=recipe))}  # fmt: skip
    assert passing == set(recipes.SEEDS)


def test_the_mps_benches_ran_on_one_machine_off_then_on():
    off, on = (records.load_record(RESULTS / name) for name in recipes.H100_MPS_BENCHES)
    assert (off.provenance.cuda_mps, on.provenance.cuda_mps) == (False, True)
    assert off.provenance.hostname == on.provenance.hostname
    assert off.provenance.device_name == on.provenance.device_name
    assert off.started_at < on.started_at
    table = wr.time_budget_table(20.0, benches=recipes.H100_MPS_BENCHES)
    assert table["CUDA MPS"].tolist() == ["off", "on"]
    seconds = table["s per iteration alone (median)"]
    # MPS does not slow a lone training: within 10 % of each other
    assert abs(seconds.iloc[1] - seconds.iloc[0]) < 0.1 * seconds.iloc[0]


def test_walker_json_is_what_its_records_say(published):
    assert published == wr.walker_record_summary()
    assert (published["recipe"], published["seed"], published["iteration"]) == (
        recipes.WALKER_RECIPE.name, *recipes.WALKER_AT)
    # every training timed alone stands beside the soonest, which is the headline
    draws = published["alone"]["runs"]
    assert [(d["recipe"], d["seed"], d["machine"]) for d in draws] == [
        (recipe.name, seed, recipe.machine) for recipe, seed in recipes.WALKER_TIMED_ALONE]
    soonest = min((d for d in draws if d["minutes"] is not None), key=lambda d: d["minutes"])
    assert published["time_to_walk_s"] == published["alone"]["time_to_walk_s"] == (
        pytest.approx(soonest["minutes"] * 60.0, abs=0.1))
    assert published["alone"]["machine"] == soonest["machine"]
    assert published["side_by_side"]["machine"] == recipes.WALKER_RECIPE.machine
    assert published["first_passing"].endswith(f"_s{soonest['seed']}/{soonest['first_passing']}")


def test_walker_json_gives_each_gpu_the_soonest_of_its_own_trainings_alone(published):
    alone, draws = published["alone"], published["alone"]["runs"]
    by_machine = alone["by_machine"]
    assert list(by_machine) == list(dict.fromkeys(d["machine"] for d in draws))
    assert set(by_machine) == {"h100", "h200"}
    for machine, there in by_machine.items():
        on = [d for d in draws if d["machine"] == machine]
        assert there["trainings"] == len(on)
        assert there["last_tested"] == f"model_{max(int(d['last_tested'][6:]) for d in on)}"
        timed = [d for d in on if d["minutes"] is not None]
        if not timed:
            assert (there["time_to_walk_s"], there["first_passing"], there["seed"]) == (None,) * 3
            continue
        soonest = min(timed, key=lambda d: d["minutes"])
        assert there["time_to_walk_s"] == pytest.approx(soonest["minutes"] * 60.0, abs=0.1)
        assert there["seed"] == soonest["seed"]
        assert there["first_passing"].endswith(f"_s{soonest['seed']}/{soonest['first_passing']}")
    # the headline is the soonest of all, so its machine's own figure is the headline
    assert by_machine[alone["machine"]]["time_to_walk_s"] == alone["time_to_walk_s"]
    # the card names every other GPU's figure, or that none of its trainings passed
    card = wr.walker_card(published).iloc[0]
    for machine, there in by_machine.items():
        column = (f"time to walk, min (alone on one {machine.upper()}, soonest of "
                  f"{there['trainings']})")
        if machine == alone["machine"]:
            assert column not in card.index
        elif there["time_to_walk_s"] is None:
            assert card[column] == ("none: no training there passes a checkpoint by "
                                    f"{there['last_tested']}")  # fmt: skip
        else:
            assert card[column] == round(there["time_to_walk_s"] / 60.0, 1)


def test_timed_alone_runs_name_each_draw_by_its_order_seed_and_machine(published):
    runs = wr.timed_alone_runs()
    pairs = recipes.WALKER_TIMED_ALONE
    assert [(run.recipe, run.seed) for (run,) in runs.values()] == list(pairs)
    numbers = [int(label.split(":")[0]) for label in runs]
    machines = [int(label.rsplit(" ", 1)[1]) for label in runs]
    assert numbers == list(range(1, len(pairs) + 1))
    assert all(f"seed {seed}," in label for label, (_, seed) in zip(runs, pairs, strict=True))
    # a machine's number is its recipe's: it rises by one with each new recipe, from 1
    steps = {b - a for a, b in zip(machines, machines[1:], strict=False)}
    assert machines[0] == 1 and steps <= {0, 1}
    machine_of = dict(zip((recipe.name for recipe, _ in pairs), machines, strict=True))
    assert [machine_of[recipe.name] for recipe, _ in pairs] == machines
    assert list(runs)[2] == "3: seed 43, machine 2"  # the second training on the second machine
    # a training published by its gait tests alone has no clock to show
    clocked = wr.timed_alone_runs(clocked_only=True)
    unclocked = [label for label, (run,) in runs.items() if not run.stages]
    assert unclocked == [label for label in runs if label not in clocked] and len(unclocked) == 1
    # walker.json's draws carry the same labels, in the same order
    assert wr.alone_draws(published).index.tolist() == list(runs)


def test_alone_draws_lists_every_timed_training_and_whether_it_walked_in_time(published):
    table = wr.alone_draws(published)
    draws = published["alone"]["runs"]
    assert len(table) == len(draws) == len(recipes.WALKER_TIMED_ALONE)
    assert table["walks within 10 min"].tolist() == [
        "yes" if d["minutes"] is not None and d["minutes"] <= 10 else "no" for d in draws]
    assert table["first passing checkpoint"].tolist() == [d["first_passing"] or "none"
                                                         for d in draws]  # fmt: skip
    assert table["GPU"].tolist() == [d["machine"].upper() for d in draws]
    minutes = table["minutes from launch"]
    assert minutes.isna().tolist() == [d["minutes"] is None for d in draws]
    assert minutes.dropna().tolist() == [round(d["minutes"], 1) for d in draws if d["minutes"]]
    card = wr.walker_card(published).iloc[0]
    walked = (table["walks within 10 min"] == "yes").sum()
    assert card["trainings timed alone that walk within 10 min"] == f"{walked} of {len(draws)}"
    # seed 42 passes nothing side by side, but does alone: every seed has passed somewhere
    assert card["seeds passing"] == "2 of 3" and not published["seeds"]["42"]["passed"]
    assert any(d["seed"] == 42 and d["first_passing"] for d in draws)
    assert card["seeds passing in some training (side by side or alone)"] == "3 of 3"
    only_side = {**published, "alone": {**published["alone"], "runs": [
        {**d, "first_passing": None} for d in draws]}}  # fmt: skip
    assert wr.walker_card(only_side).iloc[0][
        "seeds passing in some training (side by side or alone)"] == "2 of 3"
    # one timed training alone has no draws to list
    assert "runs" not in wr.walker_heading_summary()["alone"]
    with pytest.raises(KeyError):
        wr.alone_draws(wr.walker_heading_summary())


def test_failed_conditions_table_lines_up_trainings_checkpoint_by_checkpoint():
    side = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW)
    alone = [wr.seed_run(43, recipe=recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE)]
    table = wr.failed_conditions_table({"side by side": side, "alone": alone})
    assert list(table.index) == ["side by side, s42", "side by side, s43", "side by side, s44",
                                 "alone"]  # fmt: skip
    iterations = sorted({int(i) for run in [*side, *alone] for i in run.progress()["iteration"]})
    assert list(table.columns) == [f"model_{i}" for i in iterations]
    for label, run in zip(table.index, [*side, *alone], strict=True):
        progress = run.progress()
        row = table.loc[label]
        assert row[row != ""].tolist() == progress["failed_conditions"].tolist()
        assert all(isinstance(v, int) for v in row[row != ""])
        assert (row == "").sum() == len(iterations) - len(progress)
    # one run alone keeps its label as it is
    assert list(wr.failed_conditions_table({"alone": alone}).index) == ["alone"]


def test_every_recipe_says_the_env_count_and_the_gpu_its_training_records_ran():
    every_recipe = {v for v in vars(recipes).values() if isinstance(v, recipes.Recipe)}
    assert recipes.WALKER_TURNING_AXES_8192 in every_recipe and len(every_recipe) == 26
    checked = 0
    for recipe in every_recipe:
        for stage in recipe.stages:
            for seed in recipes.SEEDS:
                where = RESULTS / recipes.stage_folder(recipe, stage, seed)
                if where.is_dir():  # a recipe's seed trained again alone is one seed
                    record = records.load_record(where)
                    assert record.config["num_envs"] == recipe.num_envs
                    # the name's first word is the card the provenance names
                    assert f"NVIDIA {recipe.machine.upper()}" in record.provenance.device_name
                    checked += 1
    # WALKER and WALKER_TURNING_AXES_FAST_START_FINE_PLANAR: 2 stages x 3 seeds; 11 recipes x
    # 3 seeds; thirteen seeds alone
    assert checked == 58
    assert recipes.WALKER_TURNING_AXES_FAST_START_FINE_PLANAR.machine == "h100"


def test_twice_the_envs_learn_less_per_transition():
    axes = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES)
    wide = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_8192)
    assert recipes.WALKER_TURNING_AXES_8192.task == recipes.WALKER_TURNING_AXES.task
    frame = wr.transitions_table({"4096": axes, "8192": wide})
    assert list(frame.columns) == ["runs", "seed", "iteration", "envs", "transitions (M)",
                                   "failed conditions"]
    assert len(frame) == sum(len(r.gait) for r in (*axes, *wide))
    # (iteration + 1) x envs x 24 steps
    row = frame.query("runs == '8192' and seed == 42 and iteration == 350").iloc[0]
    assert row["envs"] == 8192 and row["transitions (M)"] == pytest.approx(351 * 8192 * 24 / 1e6)
    assert row["failed conditions"] == 19
    # at the same experience (49-74 M transitions), 4096 envs fail fewer conditions: a pass
    # there, none with 8192
    span = frame[frame["transitions (M)"].between(49, 74)]
    best = span.groupby("runs")["failed conditions"].min()
    assert best["4096"] == 0 and best["8192"] == 19
    with pytest.raises(KeyError, match="not the task of a tuning preset"):
        wr.transitions_table({"x": [replace(wide[0], recipe=recipes.Recipe("x", "Mjlab-X", ()))]})


def test_update_table_reads_the_update_of_each_group_over_a_common_span():
    def run(recipe, rates, seconds):
        scalars = pd.DataFrame({"Loss/learning_rate": rates, "Perf/learning_time": seconds},
                               index=pd.RangeIndex(len(rates), name="iteration"))
        return SimpleNamespace(recipe=recipe, scalars=lambda: scalars)

    four = [run(recipes.WALKER_TURNING, [9e-3, 4e-4, 4e-4, 2e-4, 1e-9],
                [0.2, 0.17, 0.17, 0.19, 9.0])]
    eight = [run(recipes.WALKER_TURNING_AXES_MORE_UPDATES, [9e-3, 2e-4, 1e-4, 2e-4], [0.4] * 4)]
    table = wr.update_table({"four": four, "eight": eight}, from_iteration=1)
    # iterations 1-3: the last one every run logged; the first is left out
    assert list(table.columns) == [
        "gradient steps per iteration", "transitions per step", "KL target",
        "learning rate (iterations 1–3, median)", "update s per iteration (iterations 1–3, median)"]
    assert table.loc["four"].tolist() == [20, 4096 * 24 // 4, 0.01, 4e-4, 0.17]
    assert table.loc["eight"].tolist() == [40, 4096 * 24 // 8, 0.01, 2e-4, 0.4]


def test_single_axis_envs_leave_the_fastest_forward_walk_failing_last():
    turning = [*wr.seed_runs(recipe=recipes.WALKER_TURNING),
               wr.seed_run(43, recipe=recipes.WALKER_TURNING_ALONE)]
    axes = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES)
    table = wr.near_pass_failures({"turning": turning, "axes": axes})
    share = table.drop(index="checkpoints") / table.loc["checkpoints"]
    # sideways failed in most nearly passing checkpoints before, in few with single-axis envs
    assert share.loc["left_0.15", "turning"] > 0.5 > share.loc["left_0.15", "axes"]
    assert share["axes"].idxmax() == "forward_0.4"
    # and there it is single robots folding their legs within the first second
    run, iteration = wr.last_failing_only(axes, "forward_0.4")
    verdict = run.verdict(iteration)
    assert {r["case"] for r in verdict["table"] if not r["passed"]} == {"forward_0.4"}
    times = [float(t) for t in re.findall(r"legs_collapsed at ([\d.]+) s",
                                          " ".join(verdict["failures"]))]  # fmt: skip
    assert times and max(times) < 1.0


def test_last_failing_only_finds_the_last_checkpoint_failing_one_case_alone():
    axes = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES)
    alone = [(run.seed, it) for run in axes for it, _, _ in run.gait
             if [r["case"] for r in run.verdict(it)["table"] if not r["passed"]]
             == ["forward_0.4"]]  # fmt: skip
    run, iteration = wr.last_failing_only(axes, "forward_0.4")
    assert len(alone) > 1 and (run.seed, iteration) == alone[-1]
    # in the runs' order: the last run that has one wins, whatever its iteration
    first, _ = wr.last_failing_only([r for r in axes if r.seed == alone[0][0]], "forward_0.4")
    assert first.seed == alone[0][0]
    with pytest.raises(LookupError, match="no gait-tested checkpoint fails stand alone"):
        wr.last_failing_only(axes, "stand")


def test_start_up_is_the_clock_before_the_first_iteration():
    alone = wr.seed_run(43, recipe=recipes.WALKER_TURNING_ALONE)
    start_up = wr.start_up_s(alone)
    wall = alone.scalars()["wall_time"]
    first = alone.clock().seconds_at(int(wall.index.min()))
    assert 0 < start_up < first
    assert first - start_up == pytest.approx(wall.diff().median())


def test_the_start_up_table_counts_compiled_modules_and_times_each_start_up():
    alone = [wr.seed_run(42, recipe=recipes.WALKER_HEADING_ALONE)]
    warm = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_FAST_START_STANDING)
    table = wr.start_up_table({"alone": alone, "warm": warm})
    assert list(table.index) == ["alone", "warm"]
    assert list(table["trainings on the GPU"]) == [1, 3]
    # the alone run's record predates the count; the warm ones count 0 each
    assert table.loc["alone", "Warp modules compiled"] == "not counted"
    assert [run.stages[0][1].summary["warp_modules_compiled"] for run in warm] == [0, 0, 0]
    assert table.loc["warm", "Warp modules compiled"] == 0
    start_ups = sorted(wr.start_up_s(run) for run in warm)
    assert table.loc["warm", "start-up s (median)"] == round(start_ups[1], 1)
    assert table.loc["warm", "start-up s (longest)"] == round(start_ups[-1], 1)
    assert table.loc["alone", "start-up s (median)"] == round(wr.start_up_s(alone[0]), 1)
    # a cache that holds the task's modules starts in a third of the time, even three at once
    assert 3 * table.loc["warm", "start-up s (longest)"] < table.loc["alone", "start-up s (median)"]


def test_the_time_budget_table_is_the_benchmark_divided_into_the_budget():
    table = wr.time_budget_table(100.0, budget_s=600.0)
    where = wr._results_root(None) / recipes.ENVS_BENCH
    bench = pd.read_csv(where / "bench.csv").query(
        "section == 'training' and metric == 'iteration_s'").set_index("num_envs")["median"]
    assert list(table.index) == [2048, 4096, 8192] == list(bench.index)
    for envs, seconds in bench.items():
        iterations = table.loc[envs, "iterations in 10 min"]
        assert iterations == int(500.0 // seconds)
        transitions_m = round(iterations * envs * 24 / 1e6, 1)
        assert table.loc[envs, "transitions in 10 min (M)"] == transitions_m
        assert table.loc[envs, "as 4096-env iterations"] == round(iterations * envs / 4096)
    assert (table["machine"] == "one NVIDIA H200, driver 580, CUDA 13.0").all()
    # alone on the GPU, twice the envs cost less than twice the time: more experience per minute
    assert table["transitions in 10 min (M)"].is_monotonic_increasing
    assert table.loc[8192, "s per iteration alone (median)"] < 2 * table.loc[
        4096, "s per iteration alone (median)"]
    # a longer start-up leaves fewer iterations
    assert (wr.time_budget_table(300.0)["iterations in 10 min"] < table[
        "iterations in 10 min"]).all()


def test_graphs_buy_iterations_measured_in_one_session_with_the_hook_off_and_on():
    table = wr.time_budget_table(100.0, budget_s=600.0, benches=recipes.GRAPHS_BENCHES)
    assert list(table["run"]) == list(recipes.GRAPHS_BENCHES) and list(table.index) == [4096, 4096]
    assert list(table["managers"]) == ["eager", "graphs"]
    for position, bench in enumerate(recipes.GRAPHS_BENCHES):
        row = table.iloc[position]
        where = wr._results_root(None) / bench
        seconds = float(pd.read_csv(where / "bench.csv").query(
            "section == 'training' and metric == 'iteration_s'")["median"].iloc[0])
        assert row["s per iteration alone (median)"] == round(seconds, 2)
        assert row["iterations in 10 min"] == int(500 // seconds)
        graphs = records.load_record(where).summary.get("training.manager_graphs.n4096.graphs", 0)
        assert (graphs == 2) == (row["managers"] == "graphs")  # both managers captured when on
    eager, graphed = table["s per iteration alone (median)"]
    assert graphed < 0.85 * eager  # what chapter 11 says the graphs buy: more than 15 %
    # the default bench keeps its one row per env count, launched operator by operator
    assert set(wr.time_budget_table(100.0)["managers"]) == {"eager"}


def test_chapter_4_quotes_the_first_passing_iterations_it_compares_the_budget_with():
    # "The seeds that passed first needed 500 iterations of 4096 environments side by side and
    # 650 alone" (chapter 4, "What ten minutes buy")
    side_by_side = [*wr.seed_runs(recipe=recipes.WALKER_TURNING),
                    *wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES)]
    firsts = [hit[0] for r in side_by_side if (hit := wr.first_passing(r)) is not None]
    assert min(firsts) == 500
    assert wr.first_passing(wr.seed_run(43, recipe=recipes.WALKER_TURNING_ALONE))[0] == 650
    turning_runs = wr.seed_runs(recipe=recipes.WALKER_TURNING)
    assert {r.stages[0][1].config["num_envs"] for r in turning_runs} == {4096}


def test_the_watcher_cost_table_measures_each_training_beside_its_group_s_tests():
    by_hand = [wr.seed_run(43, recipe=recipes.WALKER_TURNING_ALONE)]
    by_script = [wr.seed_run(42, recipe=recipes.WALKER_HEADING_ALONE)]
    side_by_side = wr.seed_runs(recipe=recipes.WALKER_TURNING)
    table = wr.watcher_cost_table({"hand": by_hand, "script": by_script, "three": side_by_side})
    assert list(table["trainings on the GPU"]) == [1, 1, 3]
    # three trainings share one watcher: each is measured against every seed's tests
    tests = wr.gait_test_intervals(side_by_side)
    assert len(tests) > max(len(run.gait) for run in side_by_side)
    own = [(run.gait[0][2].started_at, run.gait[0][2].finished_at) for run in side_by_side]
    assert len({start for start, _ in own}) == 3
    # the alone run started by hand: every number recomputed from its records
    (run,) = by_hand
    cost = watcher_cost.watcher_cost(run.scalars(), wr.gait_test_intervals(by_hand))
    # the last checkpoint's test ran after the training had ended
    assert table.loc["hand", "gait tests beside"] == cost["tests"] == len(run.gait) - 1
    assert table.loc["hand", "s per iteration beside a test"] == round(cost["beside"], 2)
    assert table.loc["hand", "s per iteration otherwise"] == round(cost["otherwise"], 2)
    assert table.loc["hand", "s added per test"] == round(cost["added_s_per_test"], 1)
    first = wr.first_passing(run)[0]
    before = watcher_cost.watcher_cost(run.scalars(), wr.gait_test_intervals(by_hand), first)
    assert table.loc["hand", "s added before the first pass"] == round(before["added_s"], 0)
    # by hand a test doubled the training's iterations; under the script it cost it nothing
    assert table.loc["hand", "s per iteration beside a test"] > 1.8 * table.loc[
        "hand", "s per iteration otherwise"]
    assert abs(table.loc["script", "s added per test"]) < 1.0
    assert np.isnan(table.loc["script", "s added before the first pass"])  # it never passed
    assert set(table["CUDA MPS"]) == {"not recorded"}  # these records predate cuda_mps
    for kept, shown in ((True, "on"), (False, "off")):
        where, record = run.stages[0]
        provenance = record.provenance.model_copy(update={"cuda_mps": kept})
        record = record.model_copy(update={"provenance": provenance})
        marked = replace(run, stages=((where, record),))
        assert wr.watcher_cost_table({"marked": [marked]}).loc["marked", "CUDA MPS"] == shown


def test_a_pass_in_a_resumed_stage_is_named_by_that_stage_and_timed_across_the_resume():
    runs = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_FAST_START_FINE_PLANAR)
    table = wr.time_to_walk_table({"fine planar": runs})
    first = table.loc["fine planar", "first passing"]
    # seed 43 passed at model_675, saved by its resume from model_614
    assert first == "h100_walker_turning_axes_fast_start_fine_planar_resume_s43/model_675"
    assert runs[1].checkpoint(675).parent.name == first.split("/")[0]
    assert table.loc["fine planar", "machine"].startswith("one NVIDIA H100")
    # 615 iterations of the first stage, then the resume's own start-up and 61 iterations
    main_s = runs[1].stages[0][1].wall_seconds
    assert main_s < table.loc["fine planar", "minutes from launch"] * 60.0 < main_s + 126.5


def test_lever_scoreboard_counts_passing_seeds_and_the_closest_and_first_passes():
    heading = wr.seed_runs(recipe=recipes.WALKER_HEADING)
    short = wr.seed_runs(recipe=recipes.WALKER_TURNING_SHORT)
    axes = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES)  # published by its gait tests alone
    board = wr.lever_scoreboard({"heading": heading, "short": short, "axes": axes})
    assert list(board.index) == ["heading", "short", "axes"]
    # the heading recipe's row is its summary's: its passing seeds and first pass, with the clock
    walker = wr.walker_heading_summary()
    assert board.loc["heading", "seeds passing"] == f"{walker['seeds_passing']} of 3"
    seed, at = walker["side_by_side"]["seed"], walker["side_by_side"]["first_passing"]
    assert board.loc["heading", "first passing"] == f"s{seed} {at.rsplit('/', 1)[1]}"
    assert board.loc["heading", "minutes from launch"] == pytest.approx(
        walker["side_by_side"]["time_to_walk_s"] / 60.0, abs=0.05)
    assert board.loc["heading", "its failed conditions"] == 0
    # a recipe that never passes: its closest checkpoint is the fewest failed conditions tested
    tested = wr.transitions_table({"short": short})
    assert board.loc["short", "seeds passing"] == "0 of 3"
    assert board.loc["short", "first passing"] == "none"
    assert math.isnan(board.loc["short", "minutes from launch"])
    assert board.loc["short", "its failed conditions"] == tested["failed conditions"].min()
    assert board.loc["short", "tested checkpoints"] == len(tested)
    closest = tested[tested["failed conditions"] == tested["failed conditions"].min()]
    first_closest = closest.sort_values("iteration").iloc[0]
    assert board.loc["short", "closest checkpoint"] == (
        f"s{first_closest['seed']} model_{first_closest['iteration']}")
    # a pass without training records has no clock
    assert board.loc["axes", "seeds passing"] == "1 of 3"
    assert math.isnan(board.loc["axes", "minutes from launch"])


@pytest.mark.parametrize(("tests", "trained", "expected"), [
    (recipes.FINE_YAW_CI_GAIT_TESTS, [recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW],
     [(43, 450), (44, 500)]),
    (recipes.ALONE_CI_GAIT_TESTS, [recipe for recipe, _ in recipes.WALKER_TIMED_ALONE],
     [(42, 400), (43, 350), (42, 500)]),
], ids=["side by side", "alone"])  # fmt: skip
def test_the_last_lever_s_passing_slim_checkpoints_pass_at_ci_size_on_a_cpu(
    tests, trained, expected
):
    import hashlib

    tested = []
    for label, folder in tests.items():
        verdict, record = wr.published_gait(folder)
        seed, iteration = (int(word) for word in re.findall(r"\d+", label))
        # the folder names the training it tests: cpu_<recipe>_gait_s<seed>_model_<iteration>
        (recipe,) = {r for r in trained if folder == f"cpu_{r.name}_gait_s{seed}_model_{iteration}"}
        run = wr.seed_run(seed, recipe=recipe)
        # it ran the published checkpoint, a passing one, in its task, at ci size on a CPU
        checkpoint = run.checkpoint(iteration)
        assert record.config["checkpoint_sha256"] == hashlib.sha256(
            checkpoint.read_bytes()).hexdigest()
        assert run.verdict(iteration)["passed"] and record.config["task"] == run.recipe.task
        assert (record.provenance.backend, record.config["robots_per_case"]) == ("cpu", 4)
        assert verdict["passed"] and record.summary["terminations"] == 0
        tested.append((seed, iteration))
    assert tested == expected
    # the time to walk's checkpoint is among them, and so labelled
    if tests is recipes.ALONE_CI_GAIT_TESTS:
        published = wr.published_walker()
        first_run, first = published["alone"]["first_passing"].split("/")
        (label,) = [label for label in tests if label.endswith("(time to walk)")]
        assert label.startswith(f"seed {published['alone']['seed']}, {first} ")
        assert tests[label] == first_run.replace("h100_", "cpu_").replace("_main_", "_gait_") + (
            f"_{first}")


def test_lever_runs_are_the_preset_tables_levers_with_their_seeds():
    from mjlab_microduck.book import preset_pages
    from mjlab_microduck.tasks import tuning

    levers = wr.lever_runs()
    assert list(levers) == [recipe.name for recipe in wr.LEVER_RECIPES]
    # every lever row of the table, no other: the presets after the heading recipe, and the
    # levers that change only the env count of one of them
    names = [p.name for p in preset_pages.TABLE_PRESETS]
    after_heading = names[names.index(tuning.WALKER_HEADING.name) + 1:]
    assert set(levers) == {*after_heading, *preset_pages.ENV_COUNT_LEVERS}
    for name, (runs, _) in levers.items():
        # each lever trained the three seeds side by side, under its own recipe
        assert [run.seed for run in runs] == list(recipes.SEEDS), name
        assert {run.recipe.name for run in runs} == {name}
    alone = {name: [(run.recipe, run.seed) for run in again]
             for name, (_, again) in levers.items() if again}  # fmt: skip
    # two levers had their one passing seed, 43, trained again alone
    assert alone == {"walker_turning": [(recipes.WALKER_TURNING_ALONE, 43)],
                     "walker_turning_axes": [(recipes.WALKER_TURNING_AXES_ALONE, 43)]}
    assert levers["walker_turning_axes_8192"][0][0].recipe.num_envs == 8192
