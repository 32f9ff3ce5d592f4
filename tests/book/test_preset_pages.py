"""Chapter 4's table of the presets tried, and its two small helpers."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from mjlab_microduck.book import preset_pages
from mjlab_microduck.book import walker_recipes as recipes
from mjlab_microduck.book import walker_results as wr
from mjlab_microduck.tasks import tuning


def test_every_table_preset_names_what_it_was_built_on():
    table = {p.name for p in preset_pages.TABLE_PRESETS}
    assert table <= set(preset_pages.BUILT_ON)
    # the others are levers registered for the next runs, not trained yet
    registered = set(preset_pages.BUILT_ON) - table
    assert registered == {"walker_turning_axes_fine_tracking"}
    assert registered <= {p.name for p in tuning.CANDIDATE_PRESETS}
    assert preset_pages.changes(tuning.UPSTREAM) == "the upstream figures"
    for preset in preset_pages.TABLE_PRESETS[1:]:
        assert preset_pages.changes(preset), f"{preset.name} changes nothing"


def test_changes_reads_the_dataclass_fields():
    text = preset_pages.changes(tuning.WALKER_NARROW)
    assert f"yaw-rate std {tuning.WALKER.ang_vel_std_rad_s:.3g} → " in text
    assert "rad/s" in text
    assert preset_pages.value_text("gait_period_s", None) == "none"
    assert preset_pages.value_text("x", 0.31623) == "0.316"


def test_command_text_and_inside():
    ranges = tuning.CommandRanges((-0.1, 0.2), (-0.1, 0.1), (-0.5, 0.5))
    assert preset_pages.command_text(ranges) == "x -0.1…0.2, y ±0.1, yaw ±0.5"
    command = SimpleNamespace(lin_vel_x=0.2, lin_vel_y=-0.1, ang_vel_z=0.0)
    assert preset_pages.inside(command, ranges)
    assert not preset_pages.inside(SimpleNamespace(lin_vel_x=0.2, lin_vel_y=0.0,
                                                   ang_vel_z=0.6), ranges)


def test_kernel_share():
    assert preset_pages.kernel_share(0.0, 0.3) == 1.0
    assert preset_pages.kernel_share(0.3, 0.3) == pytest.approx(math.exp(-1))
    # chapter 6's turn: 0.49 rad/s under the sqrt(0.5) rad/s yaw kernel keeps 62 % of the reward
    assert preset_pages.kernel_share(0.49, math.sqrt(0.5)) == pytest.approx(0.62, abs=0.005)


def _outcomes(**row):
    base = {"checkpoints replayed": 4, "stable": 4, "best checkpoint": "model_499",
            "best mean forward velocity (m/s)": 0.05, "largest 4 s displacement (m)": 0.2,
            "walks": "no"}
    return pd.DataFrame([{**base, **row}], index=["p"])


def test_outcome_text_tells_stands_steps_and_walks_apart():
    assert preset_pages.outcome_text(
        _outcomes(**{"largest 4 s displacement (m)": 0.01, "stable": 3}), "p"
    ) == "stands: no checkpoint moves more than 0.010 m in 4 s (1 of 4 replays ends in a fall)"
    assert preset_pages.outcome_text(_outcomes(), "p", 0.15).startswith(
        "steps, but at most 0.050 m/s under 0.15 m/s, short of the walking rule")
    assert "walks forward at 0.120 m/s" in preset_pages.outcome_text(
        _outcomes(walks="yes", **{"best mean forward velocity (m/s)": 0.12}), "p")


def test_preset_table_from_the_published_records():
    walker_record = wr.walker_heading_summary()
    turning = wr.seed_runs(recipe=recipes.WALKER_TURNING)
    alone = [wr.seed_run(43, recipe=recipes.WALKER_TURNING_ALONE)]
    short = wr.seed_runs(recipe=recipes.WALKER_TURNING_SHORT)
    axes = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES)
    axes_alone = [wr.seed_run(43, recipe=recipes.WALKER_TURNING_AXES_ALONE)]
    axes_8192 = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_8192)
    more = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_MORE_UPDATES)
    wide_kl = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_WIDE_KL)
    fine_yaw = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_FINE_YAW)
    fast_start = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_FAST_START)
    fast_start_standing = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_FAST_START_STANDING)
    fine_planar = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_FAST_START_FINE_PLANAR)
    straight_start = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_STRAIGHT_START)
    straight_fine_yaw = wr.seed_runs(recipe=recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW)
    levers = {"walker_turning": (turning, alone), "walker_turning_short": (short, ()),
              "walker_turning_axes": (axes, axes_alone),
              "walker_turning_axes_8192": (axes_8192, ()),
              "walker_turning_axes_more_updates": (more, ()),
              "walker_turning_axes_wide_kl": (wide_kl, ()),
              "walker_turning_axes_fine_yaw": (fine_yaw, ()),
              "walker_turning_axes_fast_start": (fast_start, ()),
              "walker_turning_axes_fast_start_standing": (fast_start_standing, ()),
              "walker_turning_axes_fast_start_fine_planar": (fine_planar, ()),
              "walker_turning_axes_straight_start": (straight_start, ()),
              "walker_turning_axes_straight_start_fine_yaw": (straight_fine_yaw, ())}
    table = preset_pages.preset_table(
        wr.seed_runs(), wr.seed_runs(recipe=recipes.WALKER_NARROW), walker_record=walker_record,
        levers=levers)
    # one row per preset, and the env-count lever right under the preset it trains again
    trained = [p.name.upper() for p in preset_pages.TABLE_PRESETS]
    under = trained.index("WALKER_TURNING_AXES") + 1
    assert list(table.index) == [*trained[:under], "WALKER_TURNING_AXES × 8192 envs",
                                 *trained[under:]]
    # a lever whose runs are not given has no row
    partial = preset_pages.preset_table(
        wr.seed_runs(), wr.seed_runs(recipe=recipes.WALKER_NARROW), walker_record=walker_record,
        levers={k: v for k, v in levers.items() if k != "walker_turning_axes_wide_kl"})
    assert list(partial.index) == [n for n in table.index if n != "WALKER_TURNING_AXES_WIDE_KL"]
    assert list(table.columns) == ["built on", "what it changed", "outcome"]
    assert table.loc["WALKER", "built on"] == "FORWARD_TRACKING"
    assert "3 seeds" in table.loc["WALKER", "outcome"]
    assert table["outcome"].str.len().min() > 0
    heading = table.loc["WALKER_HEADING"]
    assert heading["built on"] == "WALKER"
    assert "heading command in 50% of the envs (stiffness 0.5)" in heading["what it changed"]
    assert "standing envs 2% → 10% from the start" in heading["what it changed"]
    first_passing = walker_record["side_by_side"]["first_passing"]
    assert first_passing == "h200_walker_heading_main_s42/model_900"
    assert heading["outcome"].startswith(
        f"walks: {walker_record['seeds_passing']} of its 3 seeds pass the whole gait test, "
        "the first at model_900 of seed 42")
    # and the same seed trained again alone, as walker.json has it
    heading_alone = wr.seed_run(42, recipe=recipes.WALKER_HEADING_ALONE)
    assert wr.first_passing(heading_alone) is None
    assert heading["outcome"].endswith(
        "; trained again alone, seed 42 passes no checkpoint by model_999")
    turning_row = table.loc["WALKER_TURNING"]
    assert turning_row["built on"] == "WALKER_HEADING"
    assert turning_row["what it changed"] == (
        "turn-in-place envs: 15% of the draws that are not standing, yaw rate at least 0.3 rad/s")
    # the outcome is read from the gait tests: seeds passing, the first, and the seed alone
    passing = [r.seed for r in turning if wr.first_passing(r) is not None]
    first_it, first_min = wr.first_passing(turning[recipes.SEEDS.index(43)])
    alone_it, alone_min = wr.first_passing(alone[0])
    assert turning_row["outcome"] == (
        f"passes in {len(passing)} of its 3 seeds (4096 envs each, on one H200) by model_799: "
        f"seed 43 from model_{first_it} "
        f"({first_min:.1f} min, 3 trainings sharing the GPU); trained again alone, seed 43 "
        f"from model_{alone_it} ({alone_min:.1f} min)")
    # The short rollout: 12 steps at 8192 envs, and no seed passes (from its gait tests).
    short_row = table.loc["WALKER_TURNING_SHORT"]
    assert short_row["built on"] == "WALKER_TURNING"
    assert short_row["what it changed"] == "rollout per env and iteration 24 → 12 steps"
    assert [wr.first_passing(r) for r in short] == [None, None, None]
    closest = min((int(row["failed_conditions"]), int(row["iteration"]), r.seed)
                  for r in short for _, row in r.progress().iterrows())
    assert short_row["outcome"] == (
        "no checkpoint of its 3 seeds (8192 envs each, on one H200) passes the gait test by "
        f"model_799; the closest, seed {closest[2]}'s model_{closest[1]}, fails {closest[0]} "
        "conditions")
    # The single-axis lever, published by its gait tests alone: no minutes, and its first
    # passing checkpoint is the earliest one; its seed 43 trained again alone passes none.
    axes_row = table.loc["WALKER_TURNING_AXES"]
    assert axes_row["built on"] == "WALKER_TURNING"
    assert axes_row["what it changed"].startswith("single-axis envs: 30% of the draws")
    assert [wr.first_passing(r) is not None for r in axes] == [False, True, False]
    assert wr.first_passing(axes_alone[0]) is None
    assert axes_row["outcome"] == (
        "passes in 1 of its 3 seeds (4096 envs each, on one H200) by model_650: seed 43 from "
        "model_500 (3 trainings sharing the GPU; published by its gait tests alone); trained "
        "again alone, seed 43 passes no checkpoint by model_614")
    # trained on an H100, and resumed from model_614: its one pass is in the resume
    assert table.loc["WALKER_TURNING_AXES_FAST_START_FINE_PLANAR", "outcome"] == (
        "passes in 1 of its 3 seeds (4096 envs each, on one H100) by model_813: seed 43 from "
        "model_675 (15.9 min, 3 trainings sharing the GPU)")
    # the first lever with two passing seeds; seed 44's watcher stopped it at model_500, and
    # model_475, tested after, passes too
    fine_yaw_row = table.loc["WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW"]
    assert fine_yaw_row["built on"] == "WALKER_TURNING_AXES_STRAIGHT_START"
    assert [wr.first_passing(r) is not None for r in straight_fine_yaw] == [False, True, True]
    assert fine_yaw_row["outcome"] == (
        "passes in 2 of its 3 seeds (4096 envs each, on one H100) by model_599: seed 43 from "
        "model_450 (10.3 min, 3 trainings sharing the GPU)")
    # The levers no seed of which passes: what each changed, and its closest checkpoint.
    unpassed = {
        "WALKER_TURNING_AXES × 8192 envs": (
            axes_8192, "8192 envs per training instead of 4096",
            "(8192 envs each, on one H200)", 375, "seed 42's model_350, fails 19 conditions"),
        "WALKER_TURNING_AXES_MORE_UPDATES": (
            more, "PPO mini-batches per epoch 4 → 8", "(4096 envs each, on one H200)", 449,
            "seed 44's model_449, fails 18 conditions"),
        "WALKER_TURNING_AXES_WIDE_KL": (
            wide_kl, "PPO KL target per update 0.01 → 0.02", "(4096 envs each, on one H200)", 599,
            "seed 42's model_525, fails 1 condition"),
        "WALKER_TURNING_AXES_FINE_YAW": (
            fine_yaw, "a narrow yaw-rate term beside the wide one: std 0.15 rad/s, weight 2",
            "(4096 envs each, on one H200)", 449, "seed 42's model_350, fails 11 conditions"),
        "WALKER_TURNING_AXES_FAST_START": (
            fast_start, "fast starts: 50% of the commands drawn at a reset walk straight "
            "forward at least 0.3 m/s, heading held", "(4096 envs each, on one H200)", 599,
            "seed 43's model_550, fails 14 conditions"),
        "WALKER_TURNING_AXES_FAST_START_STANDING": (
            fast_start_standing, "fast starts drawn only among the draws that do not stand",
            "(4096 envs each, on one H200)", 599, "seed 43's model_599, fails 3 conditions"),
        "WALKER_TURNING_AXES_STRAIGHT_START": (
            straight_start, "starts from 0.1 m/s up instead of 0.3",
            "(4096 envs each, on one H200)", 699, "seed 43's model_699, fails 4 conditions"),
    }  # fmt: skip
    for name, (runs, changed, envs, last, closest) in unpassed.items():
        row = table.loc[name]
        built_on = {"WALKER_TURNING_AXES_FAST_START_STANDING": "WALKER_TURNING_AXES_FAST_START",
                    "WALKER_TURNING_AXES_STRAIGHT_START":
                        "WALKER_TURNING_AXES_FAST_START_FINE_PLANAR"}.get(
                            name, "WALKER_TURNING_AXES")  # fmt: skip
        assert (row["built on"], row["what it changed"]) == (built_on, changed)
        assert [wr.first_passing(r) for r in runs] == [None, None, None]
        assert row["outcome"] == (
            f"no checkpoint of its 3 seeds {envs} passes the gait test by model_{last}; the "
            f"closest, {closest}")
    # Without a published walker, or without the levers' runs, their rows are left out.
    without = preset_pages.preset_table(wr.seed_runs(), wr.seed_runs(recipe=recipes.WALKER_NARROW))
    assert {"WALKER_HEADING", *(n.upper() for n in preset_pages.LEVERS)}.isdisjoint(
        without.index)
    assert set(without.index) == {p.name.upper() for p in preset_pages.TABLE_PRESETS} - {
        "WALKER_HEADING", *(n.upper() for n in preset_pages.LEVERS)}
    with pytest.raises(ValueError, match="not a lever of the table"):
        preset_pages.preset_table(wr.seed_runs(), (), levers={"walker": (turning, ())})


def test_a_lever_without_a_training_clock_is_judged_by_iteration():
    def run(seed, passes_at, minutes=float("nan")):
        rows = [{"iteration": it, "minutes": minutes, "walker": it >= passes_at,
                 "failed_conditions": 0 if it >= passes_at else 3} for it in (300, 350, 400)]
        return SimpleNamespace(seed=seed, stages=(), progress=lambda: pd.DataFrame(rows),
                               recipe=SimpleNamespace(num_envs=2048, machine="h200"))

    untimed = [run(42, 400), run(43, 350)]
    assert preset_pages.lever_outcome(untimed) == (
        "passes in 2 of its 2 seeds (2048 envs each, on one H200) by model_400: seed 43 from "
        "model_350 (2 trainings sharing the GPU; published by its gait tests alone)")
    # none passing: the closest is the fewest failed conditions, the earliest of equals
    assert preset_pages.lever_outcome([run(42, 999), run(43, 999)]) == (
        "no checkpoint of its 2 seeds (2048 envs each, on one H200) passes the gait test by "
        "model_400; the closest, seed 42's model_300, fails 3 conditions")


def test_a_lever_no_seed_passes_says_so_with_its_last_tested_checkpoint():
    narrow = wr.seed_runs(recipe=recipes.WALKER_NARROW)
    last = max(int(r.progress()["iteration"].max()) for r in narrow)
    assert preset_pages.lever_outcome(narrow).startswith(
        "no checkpoint of its 3 seeds (4096 envs each, on one H200) passes the gait test by "
        f"model_{last}; the closest, seed ")


def test_candidate_table_lists_every_candidate_and_what_was_trained(tmp_path):
    import run_fakes

    from mjlab_microduck.runs import records

    folder = tmp_path / "run"
    folder.mkdir()
    config = {"task": "t", "num_envs": 8, "iterations": 2, "tuning": {"name": "walker"}}
    records.write_record(run_fakes.record(config=config), folder)
    table = preset_pages.candidate_table(tmp_path)
    assert list(table.index) == [p.name for p in tuning.CANDIDATE_PRESETS]
    assert bool(table.loc["walker", "trained"])
    assert not table.drop(index="walker")["trained"].any()
    # a gait test of a preset's own task counts too (a recipe published by its gait tests)
    gait = tmp_path / "gait"
    gait.mkdir()
    task = f"Mjlab-Velocity-Flat-MicroDuck-{tuning.WALKER_TURNING_AXES.task_suffix}"
    records.write_record(run_fakes.record(kind="gait_test", config={"task": task}), gait)
    table = preset_pages.candidate_table(tmp_path)
    assert set(table.index[table["trained"]]) == {"walker", "walker_turning_axes"}
    assert table.loc["walker", "yaw-rate std (rad/s)"] == round(tuning.WALKER.ang_vel_std_rad_s, 2)


def test_candidate_table_shows_what_each_candidate_sharpens(tmp_path):
    table = preset_pages.candidate_table(tmp_path)
    sharpened = table.loc["walker_sharpened"]
    assert sharpened["narrowed from iteration"] == 300
    assert sharpened["narrowed tracking std (m/s)"] == 0.15
    assert sharpened["narrowed yaw-rate std (rad/s)"] == 0.3
    assert table.loc["walker_turning_sharp", "narrowed yaw-rate std (rad/s)"] == 0.71
    fine = table.loc["walker_turning_axes_straight_start_fine_yaw"]
    assert (fine["narrow yaw-rate term std (rad/s)"], fine["narrow yaw-rate term weight"]) == (
        0.15, 2.0)  # fmt: skip
    assert (fine["narrow planar term std (m/s)"], fine["narrow planar term weight"]) == (0.1, 2.0)
    assert fine["yaw-rate std (rad/s)"] == 0.71  # the wide term stays beside the narrow one
    narrow = table.loc["walker_narrow"]  # narrow from the start, nothing added
    assert narrow["tracking std (m/s)"] == 0.15 and pd.isna(narrow["narrowed from iteration"])
    assert narrow[["narrow yaw-rate term std (rad/s)", "narrow planar term std (m/s)"]].isna().all()
    # every sharpening a candidate has is in the table: at most one kernel stage each
    assert all(len(p.kernel_stages) <= 1 for p in tuning.CANDIDATE_PRESETS)


def test_every_table_preset_says_what_it_changed():
    for preset in preset_pages.TABLE_PRESETS:
        assert preset_pages.changes(preset)
    assert preset_pages.changes(tuning.WALKER_TURNING_AXES_MORE_UPDATES) == (
        "PPO mini-batches per epoch 4 → 8")
    assert preset_pages.changes(tuning.WALKER_TURNING_AXES_WIDE_KL) == (
        "PPO KL target per update 0.01 → 0.02")
    assert preset_pages.changes(tuning.WALKER_TURNING_AXES_FINE_YAW) == (
        "a narrow yaw-rate term beside the wide one: std 0.15 rad/s, weight 2")
    # the levers registered for the next runs read the same way
    assert preset_pages.changes(tuning.WALKER_TURNING_AXES_FINE_TRACKING) == (
        "a narrow planar-velocity term beside the wide one: std 0.1 m/s, weight 2")
    assert preset_pages.changes(tuning.WALKER_TURNING_AXES_FAST_START) == (
        "fast starts: 50% of the commands drawn at a reset walk straight forward at least "
        "0.3 m/s, heading held")
    assert preset_pages.changes(tuning.WALKER_TURNING_AXES_FAST_START_STANDING) == (
        "fast starts drawn only among the draws that do not stand")
    assert preset_pages.changes(tuning.WALKER_TURNING_AXES_FAST_START_FINE_PLANAR) == (
        "a narrow planar-velocity term beside the wide one: std 0.1 m/s, weight 2")
    assert preset_pages.changes(tuning.WALKER_TURNING_AXES_STRAIGHT_START) == (
        "starts from 0.1 m/s up instead of 0.3")
    assert preset_pages.changes(tuning.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW) == (
        "a narrow yaw-rate term beside the wide one: std 0.15 rad/s, weight 2")
