"""The walker recipes' published runs, read for the chapters: per seed, its training stages,
its gait-tested checkpoints, the skills each one holds and when.

Problem it solves: chapters 4-6 and the front page all speak of the same training seeds of each
recipe at scale (4096 envs on one GPU) and their gait tests; this module finds those records
under ``book/results`` by name (``<machine>_<recipe>_<stage>_s<seed>``,
``<machine>_<recipe>_gait_s<seed>_model_<iteration>``, the machine ``h200`` or ``h100``) and
turns them into the tables the pages show, so no page repeats the lookup or types a number. A
missing record is an error.

The recipes and the names they are published under are
:mod:`mjlab_microduck.book.walker_recipes`'s. A recipe's gait tests are read in either form:
one folder per test, or folded into the recipe's gait history
(``<machine>_<recipe>_gait_history``, ``microduck records fold-gait``), one row per test and
case; a test published both ways is read from its own folder.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mjlab_microduck.analysis import gait, walker, watcher_cost
from mjlab_microduck.book import start_folds, tables
from mjlab_microduck.book import walker_recipes as recipes
from mjlab_microduck.runs import folds, records, warp_log
from mjlab_microduck.tasks import tuning

TIME_TO_WALK_TARGET_S = 600.0
"""The time to walk the book aims at: 10 minutes from launch on one GPU."""
_TARGET_MIN = f"{TIME_TO_WALK_TARGET_S / 60.0:g}"
COMPILE_KEYS = warp_log.COMPILED_KEYS
"""What a time to walk carries from its training record's summary."""
WALKER_FILENAME = "walker.json"
"""``book/results/walker.json``: the published walker, once a checkpoint passes the gait test."""


def _results_root(results_root: str | Path | None) -> Path:
    if results_root is not None:
        return Path(results_root)
    from mjlab_microduck.book import results

    return results.results_root()


@dataclass(frozen=True)
class SeedRun:
    """One training seed of the walker recipe: its stages and its gait-tested checkpoints.

    ``gait`` is ``(iteration, where, record)`` per tested checkpoint; ``where`` is the test's
    folder, or ``<gait history>/<its old folder name>`` for a folded one. ``verdicts`` holds
    each one's verdict by iteration.
    """

    seed: int
    recipe: recipes.Recipe
    stages: tuple[tuple[Path, records.RunRecord], ...]
    gait: tuple[tuple[int, Path, records.RunRecord], ...]
    verdicts: dict[int, dict]

    def _stage_scalars(self) -> list[tuple[str, pd.DataFrame]]:
        return [
            (rec.started_at, records.load_scalars(rec, where).set_index("iteration"))
            for where, rec in self.stages
        ]

    def scalars(self) -> pd.DataFrame:
        """Both stages' scalars, by iteration (the resume's repeat of iteration 499 dropped)."""
        frames = [frame for _, frame in self._stage_scalars()]
        joined = pd.concat(frames)
        return joined[~joined.index.duplicated(keep="first")]

    def clock(self) -> walker.TrainingClock:
        return walker.TrainingClock(tuple(self._stage_scalars()))

    def verdict(self, iteration: int) -> dict:
        if iteration not in self.verdicts:
            raise KeyError(f"seed {self.seed}: no gait test of model_{iteration}")
        return self.verdicts[iteration]

    def progress(self) -> pd.DataFrame:
        """Skills held per gait-tested checkpoint, with minutes of training (analysis.walker;
        NaN for a recipe published by its gait tests alone)."""
        verdicts = [(it, self.verdicts[it]) for it, _, _ in self.gait]
        return walker.progress_table(verdicts, self.clock() if self.stages else None)

    def failed_conditions(self) -> pd.Series:
        """The failed gait-test conditions of each tested checkpoint, by iteration."""
        return self.progress().set_index("iteration")["failed_conditions"]

    def heading_share(self, iteration: int, cases: tuple[str, ...]) -> float | None:
        """The share of robot runs of the verdict's mode, over the cases whose name starts with
        one of ``cases``, whose heading stayed within the gait test's limit; None where the test
        kept no robot-level numbers of that mode (its ``robots.csv``, or their per-case counts
        in a fold; a fold made before the counts kept to one mode has more robot runs per case
        than the test ran in one mode)."""
        where, record = next((w, rec) for it, w, rec in self.gait if it == iteration)
        verdict = self.verdict(iteration)
        limit = verdict["thresholds"][folds.HEADING_LIMIT_KEY]
        robots_csv = where / folds.ROBOTS_FILENAME
        if robots_csv.is_file():
            robots = pd.read_csv(robots_csv)
            if "mode" in robots.columns and verdict.get("mode"):
                robots = robots[robots["mode"] == verdict["mode"]]
            straight = robots[robots["case"].str.startswith(cases)]
            return float((straight["heading_change_rad"].abs() <= limit).mean())
        rows = [r for r in verdict["table"] if str(r["case"]).startswith(cases)]
        if not rows or any(r.get("robots") is None for r in rows):
            return None
        per_mode = record.config.get("robots_per_case")
        if per_mode and any(r["robots"] > r["seeds"] * per_mode for r in rows):
            return None
        return sum(r["robots_heading_within"] for r in rows) / sum(r["robots"] for r in rows)

    def checkpoint(self, iteration: int) -> Path:
        """The published slim checkpoint of ``model_<iteration>.pt``."""
        for where, _ in self.stages:
            path = where / f"model_{iteration}.pt"
            if path.is_file():
                return path
        raise FileNotFoundError(f"seed {self.seed}: model_{iteration}.pt is not published")


def seed_run(
    seed: int, results_root: str | Path | None = None, recipe: recipes.Recipe = recipes.WALKER
) -> SeedRun:
    root = _results_root(results_root)
    stages = []
    for stage in recipe.stages:
        where = root / recipes.stage_folder(recipe, stage, seed)
        stages.append((where, records.load_record(where)))
    gait: dict[int, tuple[Path, records.RunRecord]] = {}
    verdicts: dict[int, dict] = {}
    folded = folds.folded_runs(root, recipes.gait_pattern(recipe, seed))
    folded_verdicts = folds.gait_verdicts(folded)
    for run in folded:
        it = _iteration(run.name)
        gait[it], verdicts[it] = (run.where, run.record), folded_verdicts[run.name]
    for where in sorted(root.glob(recipes.gait_pattern(recipe, seed))):  # a folder kept whole wins
        if (where / records.RECORD_FILENAME).is_file():
            it = _iteration(where.name)
            gait[it] = (where, records.load_record(where))
            verdicts[it] = json.loads((where / folds.VERDICT_FILENAME).read_text())
    if not gait:
        raise FileNotFoundError(f"{root}: no gait test of {recipe.name} seed {seed}")
    points = tuple((it, *gait[it]) for it in sorted(gait))
    return SeedRun(seed, recipe, tuple(stages), points, {it: verdicts[it] for it in sorted(gait)})


def _iteration(name: str) -> int:
    return int(name.rsplit("_", 1)[1])


def seed_runs(
    results_root: str | Path | None = None, recipe: recipes.Recipe = recipes.WALKER
) -> list[SeedRun]:
    return [seed_run(seed, results_root, recipe) for seed in recipes.SEEDS]


LEVER_RECIPES = (
    recipes.WALKER_TURNING, recipes.WALKER_TURNING_SHORT, recipes.WALKER_TURNING_AXES,
    recipes.WALKER_TURNING_AXES_8192, recipes.WALKER_TURNING_AXES_MORE_UPDATES,
    recipes.WALKER_TURNING_AXES_WIDE_KL, recipes.WALKER_TURNING_AXES_FINE_YAW,
    recipes.WALKER_TURNING_AXES_FAST_START, recipes.WALKER_TURNING_AXES_FAST_START_STANDING,
    recipes.WALKER_TURNING_AXES_FAST_START_FINE_PLANAR, recipes.WALKER_TURNING_AXES_STRAIGHT_START,
    recipes.WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW,
)  # fmt: skip
"""The levers tried on the heading recipe (``WALKER_HEADING``), each trained on the three seeds
side by side: the rows of chapter 4's preset table that chapter 11 tells."""
LEVER_SEEDS_ALONE = {
    recipes.WALKER_TURNING.name: ((recipes.WALKER_TURNING_ALONE, 43),),
    recipes.WALKER_TURNING_AXES.name: ((recipes.WALKER_TURNING_AXES_ALONE, 43),),
}  # fmt: skip
"""A lever's seeds trained again alone on one GPU: lever name -> ``(recipe, seed)`` pairs. Each
is the lever's one seed that passed side by side; its row reports both clocks."""


def lever_runs(
    results_root: str | Path | None = None,
) -> dict[str, tuple[list[SeedRun], list[SeedRun]]]:
    """Each lever of :data:`LEVER_RECIPES`, by its preset name: its seeds side by side and its
    seeds trained again alone (:data:`LEVER_SEEDS_ALONE`, none for most), as
    ``preset_pages.preset_table`` takes them (``levers``)."""
    return {
        recipe.name: (
            seed_runs(results_root, recipe),
            [seed_run(seed, results_root, again)
             for again, seed in LEVER_SEEDS_ALONE.get(recipe.name, ())],
        )
        for recipe in LEVER_RECIPES
    }  # fmt: skip


def training_curves(runs: list[SeedRun]) -> dict[int, pd.DataFrame]:
    """Per seed: both stages' scalars by iteration with a ``minutes`` column of training time
    (the resumed stage continuing where the first ended, as :meth:`SeedRun.clock` counts)."""
    curves = {}
    for run in runs:
        scalars = run.scalars()
        scalars["minutes"] = run.clock().minutes_by_iteration()
        curves[run.seed] = scalars
    return curves


def first_held_table(runs: list[SeedRun]) -> pd.DataFrame:
    """Per seed and skill: the first gait-tested checkpoint holding it ("-" if none did) and
    the minutes of training to it."""
    rows = {}
    for run in runs:
        progress = run.progress()
        row = {}
        for skill in (*walker.SKILLS, "walker"):
            hit = walker.first_held(progress, skill)
            row[skill] = (
                "never"
                if hit is None
                else (f"model_{int(hit['iteration'])} ({hit['minutes']:.1f} min)")
            )
        rows[f"seed {run.seed}"] = row
    return pd.DataFrame(rows)


def candidate(runs: list[SeedRun]) -> tuple[SeedRun, int]:
    """The checkpoint closest to a walker: fewest failed conditions among those with no
    termination (ties: the earlier one). It is a candidate, not a walker, unless it passes."""
    best = None
    for run in runs:
        progress = run.progress()
        for _, row in progress[progress["never falls"]].iterrows():
            key = (row["failed_conditions"], row["minutes"])
            if best is None or key < best[0]:
                best = (key, run, int(row["iteration"]))
    if best is None:
        raise ValueError("no gait-tested walker checkpoint is free of terminations")
    return best[1], best[2]


def case_table(verdict: dict) -> pd.DataFrame:
    """A gait verdict's per-case table (worst seed per column), for display: every figure the
    rule judges a case by, ``heading_speed_ratio`` among them (the walk-and-turn cases' speed
    along the robot's heading over the command, which their pass rests on)."""
    table = pd.DataFrame(verdict["table"]).set_index("label")
    keep = ["passed", "mean_progress_ratio", "min_progress_ratio", "heading_speed_ratio",
            "mean_yaw_ratio", "max_abs_heading_change_rad", "max_displacement_m",
            "terminations"]  # fmt: skip
    return table[keep]


def drift_table(verdict: dict) -> pd.DataFrame:
    """A gait verdict's open-loop drift per case (median and worst robot's |heading change| in
    rad, each against its limit), for display; empty for a test run without that mode."""
    rows = (verdict.get("open_loop_drift") or {}).get("table") or []
    columns = ["median_abs_heading_change_rad", "max_abs_heading_change_rad",
               "median_within", "worst_within"]  # fmt: skip
    if not rows:
        return pd.DataFrame(columns=columns)
    return pd.DataFrame(rows).set_index("label")[columns]


def progress_frame(runs: list[SeedRun]) -> pd.DataFrame:
    """Every gait-tested checkpoint of ``runs`` in one frame: recipe, seed, then the columns of
    :meth:`SeedRun.progress` (iteration, minutes, one per skill, walker, failed conditions)."""
    frames = [run.progress().assign(recipe=run.recipe.name, seed=run.seed) for run in runs]
    frame = pd.concat(frames, ignore_index=True)
    return frame[["recipe", "seed", *frames[0].columns.drop(["recipe", "seed"])]]


def skill_summary(runs: list[SeedRun]) -> pd.DataFrame:
    """Per recipe and skill: in how many seeds the skill held at some tested checkpoint, and
    the fewest minutes of training to it (NaN where it never held)."""
    frame = progress_frame(runs)
    rows = []
    for recipe, group in frame.groupby("recipe", sort=False):
        seeds = group["seed"].nunique()
        for skill in (*walker.SKILLS, "walker"):
            held = group[group[skill]]
            rows.append({
                "recipe": recipe.upper(),
                "skill": skill,
                "seeds holding it": f"{held['seed'].nunique()} of {seeds}",
                "first at (min)": round(float(held["minutes"].min()), 1) if not held.empty
                else float("nan"),
            })  # fmt: skip
    table = pd.DataFrame(rows).pivot(index="skill", columns="recipe")
    table = table.swaplevel(axis=1).sort_index(axis=1, level=0, sort_remaining=False)
    return table.reindex([*walker.SKILLS, "walker"])


def stage_table(runs: list[SeedRun]) -> pd.DataFrame:
    """One row per training stage of ``runs``: machine, date, size, wall time (the cells of
    :mod:`mjlab_microduck.book.tables`) and the median wall seconds per iteration (from the
    stage's own scalars)."""
    rows = []
    for run in runs:
        for where, rec in run.stages:
            wall = records.load_scalars(rec, where).set_index("iteration")["wall_time"]
            rows.append({
                "run": where.name,
                "seed": run.seed,
                "machine": tables.record_machine_text(rec),
                "date": rec.started_at[:10],
                "size": tables.size_text(rec),
                "wall time": tables.wall_text(rec.wall_seconds),
                "s per iteration (median)": round(float(wall.diff().median()), 2),
            })  # fmt: skip
    return pd.DataFrame(rows).set_index("run")


def time_to_walk_table(groups: Mapping[str, Sequence[SeedRun]]) -> pd.DataFrame:
    """One row per group of runs that trained together on one GPU (label: its seeds): how many
    trainings shared the GPU, each one's envs and rollout (steps per env and iteration), their
    median wall seconds per iteration, and the passing checkpoint reached first with the
    minutes from launch to it ("none" and NaN where no checkpoint passes)."""
    rows = []
    for label, runs in groups.items():
        first = _time_to_walk(list(runs))
        record = runs[0].stages[0][1]
        per_iteration = stage_table(list(runs))["s per iteration (median)"].median()
        rows.append({
            "runs": label,
            "machine": tables.record_machine_text(record),
            "date": record.started_at[:10],
            "trainings on the GPU": len(runs),
            "envs": record.config["num_envs"],
            "steps per env": record.config["steps_per_env"],
            "s per iteration (median)": round(float(per_iteration), 2),
            "first passing": first["first_passing"] if first else "none",
            "minutes from launch": round(first["time_to_walk_s"] / 60.0, 1) if first
            else float("nan"),
        })  # fmt: skip
    return pd.DataFrame(rows).set_index("runs")


def gait_test_intervals(runs: Sequence[SeedRun]) -> list[watcher_cost.Interval]:
    """When each gait test of ``runs`` ran (its record's start and end, seconds since the
    epoch): the tests a watcher ran on the GPU those trainings shared."""
    return sorted({
        (walker.seconds_since_epoch(rec.started_at), walker.seconds_since_epoch(rec.finished_at))
        for run in runs for _, _, rec in run.gait if rec.finished_at is not None
    })  # fmt: skip


def watcher_cost_table(groups: Mapping[str, Sequence[SeedRun]]) -> pd.DataFrame:
    """One row per group of runs that trained together on one GPU (label: its seeds): the gait
    tests run beside them, the median seconds per iteration while a test ran and otherwise,
    the seconds a test added to a training (:mod:`~mjlab_microduck.analysis.watcher_cost`;
    medians over the group's trainings), what the tests had added to the
    clock of the passing checkpoint reached first (NaN where none passes) and whether CUDA's
    MPS daemon shared the GPU (its record's ``cuda_mps``; "not recorded" before it was kept)."""
    rows = []
    for label, runs in groups.items():
        tests = gait_test_intervals(runs)
        costs = pd.DataFrame([watcher_cost.watcher_cost(run.scalars(), tests) for run in runs])
        record = runs[0].stages[0][1]
        first = _time_to_walk(list(runs))
        added = float("nan")
        if first is not None:
            run = next(run for run in runs if run.seed == first["seed"])
            iteration, _ = first_passing(run)
            added = watcher_cost.watcher_cost(run.scalars(), tests, iteration)["added_s"]
        rows.append({
            "runs": label,
            "machine": tables.record_machine_text(record),
            "date": record.started_at[:10],
            "trainings on the GPU": len(runs),
            "gait tests beside": int(costs["tests"].max()),
            "s per iteration beside a test": round(float(costs["beside"].median()), 2),
            "s per iteration otherwise": round(float(costs["otherwise"].median()), 2),
            "s added per test": round(float(costs["added_s_per_test"].median()), 1),
            "s added before the first pass": round(added, 0),
            "CUDA MPS": _mps_text(record),
        })  # fmt: skip
    return pd.DataFrame(rows).set_index("runs")


def _mps_text(record: records.RunRecord) -> str:
    """Whether CUDA's MPS daemon ran beside ``record``'s run: "on", "off", or "not recorded"
    for a record from before provenance kept it."""
    return {True: "on", False: "off"}.get(record.provenance.cuda_mps, "not recorded")


def start_up_s(run: SeedRun) -> float:
    """Seconds from launching ``run``'s training to its first iteration: env creation, kernel
    compilation and graph capture (the clock at the first logged iteration, less a median
    iteration)."""
    wall = run.scalars()["wall_time"].dropna()
    return run.clock().seconds_at(int(wall.index.min())) - float(wall.diff().median())


def start_up_table(groups: Mapping[str, Sequence[SeedRun]]) -> pd.DataFrame:
    """One row per group of runs that started together on one GPU (label: its seeds): the
    trainings that shared the GPU, the Warp modules their start-ups compiled (summed; "not
    counted" for a record from before the count was kept) and their start-up
    (:func:`start_up_s`), median and longest."""
    rows = []
    for label, runs in groups.items():
        compiled = [run.stages[0][1].summary.get("warp_modules_compiled") for run in runs]
        start_ups = pd.Series([start_up_s(run) for run in runs])
        rows.append({
            "runs": label,
            "trainings on the GPU": len(runs),
            "Warp modules compiled": "not counted" if None in compiled else int(sum(compiled)),
            "start-up s (median)": round(float(start_ups.median()), 1),
            "start-up s (longest)": round(float(start_ups.max()), 1),
        })  # fmt: skip
    return pd.DataFrame(rows).set_index("runs")


def time_budget_table(
    start_up: float,
    budget_s: float = TIME_TO_WALK_TARGET_S,
    results_root: str | Path | None = None,
    benches: Sequence[str] = (recipes.ENVS_BENCH,),
    reference_envs: int = 4096,
) -> pd.DataFrame:
    """What ``budget_s`` from launch buys one training alone on the benchmarked GPU, per env
    count of each of ``benches``' training sections (a row): how its managers ran (``graphs``
    when the ``manager_graphs`` hook was on), its median seconds per iteration, the iterations
    that fit after ``start_up`` seconds, the transitions they collect and those transitions
    counted in iterations of ``reference_envs`` envs; and whether CUDA's MPS daemon ran
    (:func:`_mps_text`)."""
    minutes = f"{budget_s / 60.0:g} min"
    rows = []
    for bench in benches:
        where = _results_root(results_root) / bench
        record = records.load_record(where)
        frame = pd.read_csv(where / "bench.csv")
        steps = int(record.config["steps_per_env"])
        timed = frame.query("section == 'training' and metric == 'iteration_s'")
        hooks = str(record.summary.get("hooks_active", "")).split(",")
        for envs, seconds in zip(timed["num_envs"], timed["median"], strict=True):
            iterations = int((budget_s - start_up) // seconds)
            rows.append({
                "envs": int(envs),
                "run": bench,
                "machine": tables.record_machine_text(record),
                "managers": "graphs" if "manager_graphs" in hooks else "eager",
                "s per iteration alone (median)": round(float(seconds), 2),
                f"iterations in {minutes}": iterations,
                f"transitions in {minutes} (M)": round(iterations * envs * steps / 1e6, 1),
                f"as {reference_envs}-env iterations": round(iterations * envs / reference_envs),
                "CUDA MPS": _mps_text(record),
            })  # fmt: skip
    return pd.DataFrame(rows).set_index("envs")


def transitions_table(groups: Mapping[str, Sequence[SeedRun]]) -> pd.DataFrame:
    """Every gait-tested checkpoint of each group of runs (label: e.g. one recipe at one env
    count) against the experience its training had collected: group, seed, iteration, envs,
    transitions to it in millions (``(iteration + 1) x envs x rollout steps``, the rollout
    read from the recipe's preset) and its failed conditions."""
    rows = []
    for label, runs in groups.items():
        for run in runs:
            preset = tuning.preset_of_task(run.recipe.task)
            for iteration, row in run.progress().set_index("iteration").iterrows():
                rows.append({
                    "runs": label, "seed": run.seed, "iteration": int(iteration),
                    "envs": run.recipe.num_envs,
                    "transitions (M)": (iteration + 1) * run.recipe.num_envs
                    * preset.steps_per_env / 1e6,
                    "failed conditions": int(row["failed_conditions"]),
                })  # fmt: skip
    return pd.DataFrame(rows)


def update_table(
    groups: Mapping[str, Sequence[SeedRun]], from_iteration: int = 200
) -> pd.DataFrame:
    """What one PPO iteration's update was, per group of runs with training records (label: e.g.
    a recipe; a row): its gradient steps (epochs x the preset's mini-batches), the transitions
    each step learns from, the preset's KL target, and, over the iterations from
    ``from_iteration`` to the last that every run logged, the median learning rate rsl_rl's
    adaptive schedule settled on and the median seconds the update took."""
    from mjlab_microduck.tasks.rl_cfg import microduck_ppo_runner_cfg

    epochs = microduck_ppo_runner_cfg().algorithm.num_learning_epochs
    scalars = {label: [run.scalars() for run in runs] for label, runs in groups.items()}
    last = min(int(frame.index.max()) for frames in scalars.values() for frame in frames)
    span = f"iterations {from_iteration}–{last}"
    rows = []
    for label, runs in groups.items():
        preset = tuning.preset_of_task(runs[0].recipe.task)
        window = pd.concat([frame.loc[from_iteration:last] for frame in scalars[label]])
        rows.append({
            "runs": label,
            "gradient steps per iteration": epochs * preset.num_mini_batches,
            "transitions per step": runs[0].recipe.num_envs * preset.steps_per_env
            // preset.num_mini_batches,
            "KL target": preset.desired_kl,
            f"learning rate ({span}, median)":
                float(f"{window['Loss/learning_rate'].median():.2g}"),
            f"update s per iteration ({span}, median)":
                round(float(window["Perf/learning_time"].median()), 2),
        })  # fmt: skip
    return pd.DataFrame(rows).set_index("runs")


def lever_scoreboard(groups: Mapping[str, Sequence[SeedRun]]) -> pd.DataFrame:
    """One row per group of runs (label: a recipe or lever, in the order given): how many of
    its seeds pass the whole gait test at some tested checkpoint, its closest checkpoint (fewest
    failed conditions; the earliest of equals), and the passing checkpoint reached first with
    the minutes from launch to it ("none" and NaN where none passes)."""
    rows = []
    for label, runs in groups.items():
        tested = [(int(row["failed_conditions"]), int(row["iteration"]), run)
                  for run in runs for _, row in run.progress().iterrows()]  # fmt: skip
        failed, iteration, closest = min(tested, key=lambda hit: hit[:2])
        passes = [(run, *hit) for run in runs if (hit := first_passing(run)) is not None]
        # a recipe published by its gait tests alone has no clock (NaN minutes): earliest first
        first = min(passes, default=None,
                    key=lambda p: (p[2] if math.isfinite(p[2]) else math.inf, p[1]))  # fmt: skip
        rows.append({
            "lever": label,
            "seeds passing": f"{len(passes)} of {len(runs)}",
            "tested checkpoints": len(tested),
            "closest checkpoint": f"s{closest.seed} model_{iteration}",
            "its failed conditions": failed,
            "first passing": f"s{first[0].seed} model_{first[1]}" if first else "none",
            "minutes from launch": round(first[2], 1) if first else float("nan"),
        })  # fmt: skip
    return pd.DataFrame(rows).set_index("lever")


def failed_conditions_table(groups: Mapping[str, Sequence[SeedRun]]) -> pd.DataFrame:
    """The failed gait-test conditions of every tested checkpoint, one row per run (``label``,
    or ``label, s<seed>`` for a group of several seeds) and one column per iteration tested in
    any of them (``model_<N>``, in order; empty where a run did not test it): how two trainings
    of one seed, or several seeds, close on a pass."""
    rows = {}
    for label, runs in groups.items():
        for run in runs:
            rows[label if len(runs) == 1 else f"{label}, s{run.seed}"] = run.failed_conditions()
    frame = pd.DataFrame(rows).T.sort_index(axis=1)
    frame.columns = [f"model_{iteration}" for iteration in frame.columns]
    # whole numbers where tested, an empty cell where not (not NaN or <NA>)
    return frame.astype("Int64").astype(object).where(frame.notna(), "")


NEAR_PASS_MAX_FAILED = 15
"""A gait-tested checkpoint "nearly passes" with 1 to this many failed conditions (of 16 cases
× 5 evaluation seeds, each case with several conditions)."""


def near_pass_failures(
    groups: Mapping[str, Sequence[SeedRun]], max_failed: int = NEAR_PASS_MAX_FAILED
) -> pd.DataFrame:
    """What keeps nearly passing checkpoints from passing: per group of runs (a column) and
    gait-test case (a row, in the test's order), in how many of the group's checkpoints with 1
    to ``max_failed`` failed conditions that case failed; the first row counts those
    checkpoints. Cases that never fail there are left out."""
    counts: dict[str, dict[str, int]] = {}
    for label, runs in groups.items():
        column = counts.setdefault(label, {"checkpoints": 0})
        for run in runs:
            for iteration, _, _ in run.gait:
                table = run.verdict(iteration)["table"]
                failed = [row for row in table if not row["passed"]]
                if not 0 < sum(row["failed_conditions"] for row in failed) <= max_failed:
                    continue
                column["checkpoints"] += 1
                for row in failed:
                    column[row["case"]] = column.get(row["case"], 0) + 1
    frame = pd.DataFrame(counts).fillna(0).astype(int)
    order = ["checkpoints", *(c.name for c in gait.CASES if c.name in frame.index)]
    frame = frame.reindex(order)
    frame.index.name = "case"
    return frame


def last_failing_only(runs: Sequence[SeedRun], case: str) -> tuple[SeedRun, int]:
    """The run and iteration of the last gait-tested checkpoint of ``runs`` (in their order,
    then by iteration) that fails ``case`` and no other case: where that case's failures can be
    read alone. Raises ``LookupError`` when no checkpoint fails that case alone."""
    found = [(run, iteration) for run in runs for iteration, _, _ in run.gait
             if {row["case"] for row in run.verdict(iteration)["table"] if not row["passed"]}
             == {case}]  # fmt: skip
    if not found:
        raise LookupError(f"no gait-tested checkpoint fails {case} alone")
    return found[-1]


class NoWalkerError(ValueError):
    """No gait-tested checkpoint of the recipe passes the whole test."""


def first_passing(run: SeedRun) -> tuple[int, float] | None:
    """The iteration and minutes of ``run``'s first checkpoint passing the whole gait test."""
    progress = run.progress()
    passing = progress[progress["walker"] & (progress["failed_conditions"] == 0)]
    if passing.empty:
        return None
    return int(passing.iloc[0]["iteration"]), float(passing.iloc[0]["minutes"])


def _time_to_walk(runs: list[SeedRun]) -> dict | None:
    """The passing checkpoint of ``runs`` reached first: its seconds of training and folder,
    and, where its training record counted them, the Warp modules its start-up compiled and
    the seconds that took (0 on a machine that had run the task before)."""
    hits = [(hit[1], run, hit[0]) for run in runs if (hit := first_passing(run)) is not None]
    if not hits:
        return None
    minutes, run, iteration = min(hits, key=lambda hit: hit[0])
    first = f"{_stage_of(run, iteration)}/model_{iteration}"
    entry = {"time_to_walk_s": round(minutes * 60.0, 1), "first_passing": first, "seed": run.seed,
             "machine": run.recipe.machine}  # fmt: skip
    started = run.stages[0][1].summary
    entry.update({key: started[key] for key in COMPILE_KEYS if key in started})
    return entry


def walker_summary(
    runs: list[SeedRun],
    walker_at: tuple[int, int] | None = None,
    ci_gait_record: str | None = None,
    alone: Sequence[SeedRun] = (),
    walker_alone: bool = False,
) -> dict:
    """What ``walker.json`` holds: each seed's verdict (its first checkpoint passing the whole
    gait test, and the minutes of training to it), the time to walk and the walker itself.

    The walker is the passing checkpoint reached first, or ``walker_at`` = (seed, iteration), a
    passing checkpoint chosen because it also passes a second test (``ci_gait_record``, e.g.
    the ci-size test on a CPU the book build repeats). The time to walk is the minutes to the
    passing checkpoint reached first: ``side_by_side`` over ``runs`` (seeds sharing one GPU)
    and, given ``alone`` (the same recipe trained again alone on one GPU,
    :data:`walker_recipes.WALKER_HEADING_ALONE`), ``alone``, which also says how many of its
    checkpoints were gait-tested and the last of them (``tested``, ``last_tested``), and, for
    more than one training timed alone, each of them (``runs``) and each machine's soonest
    (``by_machine``); ``time_to_walk_s`` and ``first_passing``
    are the alone figure once one passes, else the side-by-side one. Each entry and each draw
    names its machine (the recipe's: ``h200``, ``h100``). With
    ``walker_alone``, the walker is a checkpoint of the ``alone`` runs instead (``walker_at``,
    else the first that passes there): the training timed for its walker, on the machine that
    timed it; the seeds' verdicts stay the side-by-side ones. Raises :class:`NoWalkerError`
    when no seed passes (or, with ``walker_alone``, no alone run), ValueError when
    ``walker_at`` does not."""
    seeds = {}
    for run in runs:
        hit, tested = first_passing(run), int(len(run.progress()))
        seeds[str(run.seed)] = (
            {"passed": True, "first_passing": f"model_{hit[0]}", "minutes": round(hit[1], 3),
             "tested": tested} if hit is not None
            else {"passed": False, "first_passing": None, "minutes": None, "tested": tested}
        )  # fmt: skip
    side_by_side = _time_to_walk(runs)
    if side_by_side is None:
        recipe = runs[0].recipe.name if runs else "?"
        raise NoWalkerError(f"no gait-tested checkpoint of {recipe} passes the whole gait test")
    side_by_side["seeds"] = len(runs)
    first = side_by_side
    if walker_alone:
        first = _time_to_walk(list(alone))
        if first is None:
            raise NoWalkerError("walker_alone: no gait-tested checkpoint of the alone runs "
                                "passes the whole gait test")  # fmt: skip
    seed, iteration = walker_at or (first["seed"], None)
    run = next((r for r in (alone if walker_alone else runs) if r.seed == seed), None)
    if iteration is None:
        iteration = int(first["first_passing"].rsplit("_", 1)[1])
    else:
        verdict = run.verdict(iteration) if run is not None else None
        if verdict is None or not verdict["passed"]:
            raise ValueError(f"seed {seed} model_{iteration}: not a passing checkpoint")
    gait_where = next(where for it, where, _ in run.gait if it == iteration)
    prov = run.stages[0][1].provenance
    headline = side_by_side
    summary = {
        # the recipe whose seeds the verdicts are (an alone run trains it again)
        "recipe": runs[0].recipe.name,
        "task": runs[0].recipe.task,
        "seed": run.seed,
        "iteration": iteration,
        "checkpoint": f"{_folder_of(run, iteration)}/model_{iteration}.pt",
        "gait_record": _gait_record(run, gait_where),
        "device": f"{prov.device_name} (driver {prov.driver_version})",
        "seeds_passing": sum(1 for v in seeds.values() if v["passed"]),
        "seeds": seeds,
        "side_by_side": side_by_side,
    }
    if alone:
        measured = _time_to_walk(list(alone))
        entry = measured or {"time_to_walk_s": None, "first_passing": None, "seed": alone[0].seed,
                             "machine": alone[0].recipe.machine}  # fmt: skip
        tested = [run.progress()["iteration"] for run in alone]
        entry["tested"] = sum(len(iterations) for iterations in tested)
        entry["last_tested"] = f"model_{max(int(iterations.max()) for iterations in tested)}"
        if len(alone) > 1:
            # each timed training is one draw: the headline is the soonest, so every draw
            # stands beside it
            entry["runs"] = [_alone_draw(run) for run in alone]
            # the soonest over all machines hides how another GPU fared: each machine's own
            entry["by_machine"] = _time_to_walk_by_machine(alone)
        summary["alone"] = entry
        headline = measured or side_by_side
    summary["time_to_walk_s"] = headline["time_to_walk_s"]
    summary["first_passing"] = headline["first_passing"]
    if ci_gait_record is not None:
        summary["ci_gait_record"] = ci_gait_record
    return summary


def _time_to_walk_by_machine(alone: Sequence[SeedRun]) -> dict[str, dict]:
    """For each machine the trainings timed alone ran on (in their order): how many ran there,
    the soonest passing checkpoint among them and its seconds of training (None where none of
    them passed), and the last checkpoint tested there."""
    machines = {}
    for machine in dict.fromkeys(run.recipe.machine for run in alone):
        there = [run for run in alone if run.recipe.machine == machine]
        soonest = _time_to_walk(there) or {}
        last = max(int(run.progress()["iteration"].max()) for run in there)
        machines[machine] = {"trainings": len(there),
                             "time_to_walk_s": soonest.get("time_to_walk_s"),
                             "first_passing": soonest.get("first_passing"),
                             "seed": soonest.get("seed"),
                             "last_tested": f"model_{last}"}  # fmt: skip
    return machines


def _alone_draw(run: SeedRun) -> dict:
    """One training timed alone: its recipe, seed and machine, its first passing checkpoint and the
    minutes of training to it (None where none passed, or where its records keep no clock),
    and how many of its checkpoints were gait-tested, to which."""
    hit, iterations = first_passing(run), run.progress()["iteration"]
    minutes = None if hit is None or not run.stages else round(hit[1], 3)
    return {"recipe": run.recipe.name, "seed": run.seed, "machine": run.recipe.machine,
            "first_passing": f"model_{hit[0]}" if hit is not None else None,
            "minutes": minutes, "tested": int(len(iterations)),
            "last_tested": f"model_{int(iterations.max())}"}  # fmt: skip


def _first_stage(run: SeedRun) -> str:
    return recipes.stage_folder(run.recipe, run.recipe.stages[0], run.seed)


def _stage_of(run: SeedRun, iteration: int) -> str:
    """The published folder of the stage that saved ``model_<iteration>``: the first whose
    iterations, from the one it resumed (0 from scratch) to its last, include it."""
    for stage, (_, record) in zip(run.recipe.stages, run.stages, strict=True):
        start = int(record.config.get("resume_from_iteration") or 0)
        if start <= iteration <= int(record.summary.get("last_iteration", start)):
            return recipes.stage_folder(run.recipe, stage, run.seed)
    return _first_stage(run)


def _gait_record(run: SeedRun, where: Path) -> str:
    """A gait test's folder under the results (``<gait history>/<its name>`` when folded)."""
    root = run.stages[0][0].parent
    return where.relative_to(root).as_posix() if where.is_relative_to(root) else where.name


def _folder_of(run: SeedRun, iteration: int) -> str:
    return run.checkpoint(iteration).parent.name


def write_walker(
    runs: list[SeedRun],
    results_root: str | Path | None = None,
    walker_at: tuple[int, int] | None = None,
    ci_gait_record: str | None = None,
    alone: Sequence[SeedRun] = (),
    walker_alone: bool = False,
) -> Path:
    """Write ``walker.json`` (:func:`walker_summary`) into the results folder, atomically; an
    existing one is kept: a published walker is replaced only by deleting it first."""
    path = _results_root(results_root) / WALKER_FILENAME
    if path.exists():
        raise FileExistsError(f"{path} exists: remove it first to publish another walker")
    summary = walker_summary(runs, walker_at, ci_gait_record, alone, walker_alone)
    text = json.dumps(summary, indent=2) + "\n"
    return records.atomic_write_text(path, text)


def walker_heading_summary(results_root: str | Path | None = None) -> dict:
    """:func:`walker_summary` of WALKER_HEADING, chapter 4's recipe at scale: its seeds'
    verdicts, its walker (:data:`walker_recipes.HEADING_WALKER_AT`) and its time to walk, side
    by side and with seed 42 trained again alone (:data:`walker_recipes.WALKER_HEADING_ALONE`)."""
    return walker_summary(
        seed_runs(results_root, recipes.WALKER_HEADING), recipes.HEADING_WALKER_AT,
        recipes.HEADING_CI_GAIT_TEST,
        [seed_run(recipes.HEADING_WALKER_AT[0], results_root, recipes.WALKER_HEADING_ALONE)],
    )  # fmt: skip


def walker_record_summary(results_root: str | Path | None = None) -> dict:
    """:func:`walker_summary` of the book's walker from its records: what ``walker.json``
    holds (:func:`write_walker` writes it; a test checks the two agree)."""
    return walker_summary(
        seed_runs(results_root, recipes.WALKER_RECIPE), recipes.WALKER_AT,
        recipes.WALKER_CI_GAIT_TEST,
        [seed_run(seed, results_root, recipe) for recipe, seed in recipes.WALKER_TIMED_ALONE],
    )  # fmt: skip


def published_walker(results_root: str | Path | None = None) -> dict | None:
    """The published walker (``walker.json``), or None while no checkpoint passes."""
    path = _results_root(results_root) / WALKER_FILENAME
    return json.loads(path.read_text()) if path.is_file() else None


def walker_checkpoint(walker_record: dict, results_root: str | Path | None = None) -> Path:
    """The published walker's slim checkpoint (``walker.json``'s ``checkpoint``), which must
    exist: a page replays and gait-tests it."""
    path = _results_root(results_root) / walker_record["checkpoint"]
    if not path.is_file():
        raise FileNotFoundError(f"{path}: walker.json names a checkpoint that is not published")
    return path


def published_gait(
    folder: str, results_root: str | Path | None = None
) -> tuple[dict, records.RunRecord]:
    """A published gait test (its folder under the results): its verdict and its run record."""
    where = _results_root(results_root) / folder
    return json.loads((where / "verdict.json").read_text()), records.load_record(where)


def walker_gait(
    walker_record: dict, results_root: str | Path | None = None
) -> tuple[dict, records.RunRecord]:
    """The walker's recorded full-size gait test: its verdict and its run record."""
    return published_gait(walker_record["gait_record"], results_root)


def walker_card(walker_record: dict, results_root: str | Path | None = None) -> pd.DataFrame:
    """One row naming the published walker: recipe and task, checkpoint, its gait-test record
    with machine, date and size, how many training seeds pass, and the time to walk: minutes of
    training to the recipe's first passing checkpoint (which may be an earlier one than the
    walker's) with the seeds side by side on one GPU, and alone on one GPU once measured (each
    column names the GPU that gave its figure; for several trainings alone, how many walked
    within the target, how many seeds passed in some training, side by side or alone, and the
    soonest on each other GPU they ran on); and,
    once a start test ran the walker's checkpoint, how many of its starts into 0.4 m/s fold."""
    verdict, gait_record = walker_gait(walker_record, results_root)
    summary = gait_record.summary
    side_by_side = walker_record["side_by_side"]
    row = {
        "recipe": walker_record["recipe"].upper(),
        "task": walker_record["task"],
        "checkpoint": walker_record["checkpoint"],
        "gait test": walker_record["gait_record"],
        "verdict": "passes" if verdict["passed"] else "fails",
        "robots": f"{summary['seeds']} seeds × {summary['robots_per_case']} per case",
        "machine": tables.record_machine_text(gait_record),
        "date": gait_record.started_at[:10],
        "seeds passing": f"{walker_record['seeds_passing']} of {len(walker_record['seeds'])}",
        f"time to walk, min ({side_by_side['seeds']} seeds side by side on one "
        f"{side_by_side['machine'].upper()})": round(
            side_by_side["time_to_walk_s"] / 60.0, 1
        ),
    }
    alone = walker_record.get("alone")
    if alone is not None:
        seconds = alone["time_to_walk_s"]
        # the alone run is the same seed trained again, another draw of the same recipe
        row[f"time to walk, min (seed {alone['seed']} trained again, alone on one "
            f"{alone['machine'].upper()})"] = (
            round(seconds / 60.0, 1) if seconds is not None
            else f"none: that training passes no checkpoint by {alone['last_tested']}"
        )  # fmt: skip
        if "runs" in alone:  # the soonest of several draws: say how many walked in time
            row[f"trainings timed alone that walk within {_TARGET_MIN} min"] = (
                f"{sum(1 for draw in alone['runs'] if _within_target(draw))} of "
                f"{len(alone['runs'])}")  # fmt: skip
            # a seed that failed side by side may pass in a draw of its own
            passed = {seed for seed, verdict in walker_record["seeds"].items() if verdict["passed"]}
            passed |= {str(draw["seed"]) for draw in alone["runs"] if draw["first_passing"]}
            row["seeds passing in some training (side by side or alone)"] = (
                f"{len(passed & set(walker_record['seeds']))} of {len(walker_record['seeds'])}")
            for machine, there in alone.get("by_machine", {}).items():
                if machine == alone["machine"]:
                    continue  # the headline column above is that machine's already
                row[f"time to walk, min (alone on one {machine.upper()}, soonest of "
                    f"{there['trainings']})"] = (
                    round(there["time_to_walk_s"] / 60.0, 1) if there["time_to_walk_s"] is not None
                    else f"none: no training there passes a checkpoint by {there['last_tested']}")
    folded = start_folds.folded_starts_text(walker_checkpoint(walker_record, results_root),
                                            results_root=results_root)  # fmt: skip
    if folded is not None:
        row["starts into 0.4 m/s that fold (start test)"] = folded
    return pd.DataFrame([row]).set_index("recipe")


def _within_target(draw: dict) -> bool:
    return draw["minutes"] is not None and draw["minutes"] * 60.0 <= TIME_TO_WALK_TARGET_S


def _draw_labels(draws: Sequence[tuple[str, int]]) -> list[str]:
    """How the trainings timed alone, ``(recipe name, seed)`` in the order they trained, are
    named in the tables: ``"10: seed 42, machine 8"``, their place among the draws, their seed
    and the machine they ran on. Each recipe of
    :data:`walker_recipes.WALKER_TIMED_ALONE` names the trainings of one machine."""
    machines = list(dict.fromkeys(name for name, _ in draws))
    return [f"{number}: seed {seed}, machine {machines.index(name) + 1}"
            for number, (name, seed) in enumerate(draws, start=1)]  # fmt: skip


def timed_alone_runs(
    results_root: str | Path | None = None, clocked_only: bool = False
) -> dict[str, list[SeedRun]]:
    """The walker recipe's trainings timed alone (:data:`walker_recipes.WALKER_TIMED_ALONE`),
    in the order they trained, each under its label (``"10: seed 42, machine 8"``) as a group
    of one for the tables above. With ``clocked_only``, only those whose training record is
    published, and so their clock (not a training stopped early and published by its gait tests
    alone)."""
    pairs = recipes.WALKER_TIMED_ALONE
    labels = _draw_labels([(recipe.name, seed) for recipe, seed in pairs])
    runs = {label: [seed_run(seed, results_root, recipe)]
            for label, (recipe, seed) in zip(labels, pairs, strict=True)}  # fmt: skip
    return {label: group for label, group in runs.items()
            if group[0].stages or not clocked_only}  # fmt: skip


def alone_draws(walker_record: dict) -> pd.DataFrame:
    """Each training of the walker's recipe timed alone on one GPU (``walker.json``'s
    ``alone.runs``), labelled as in :func:`timed_alone_runs`: its GPU, its first passing
    checkpoint and minutes from launch, how many checkpoints were tested, and whether it walked
    within the target. Raises KeyError when the walker record has fewer than two."""
    draws = walker_record["alone"]["runs"]
    labels = _draw_labels([(draw["recipe"], draw["seed"]) for draw in draws])
    rows = [
        {"training": label,
         "GPU": draw["machine"].upper(),
         "first passing checkpoint": draw["first_passing"] or "none",
         "minutes from launch": None if draw["minutes"] is None else round(draw["minutes"], 1),
         "checkpoints tested": f"{draw['tested']}, to {draw['last_tested']}",
         f"walks within {_TARGET_MIN} min": "yes" if _within_target(draw) else "no"}
        for label, draw in zip(labels, draws, strict=True)
    ]  # fmt: skip
    return pd.DataFrame(rows).set_index("training")


def seed_verdicts(walker_record: dict) -> pd.DataFrame:
    """Each training seed of the walker's recipe: whether a gait-tested checkpoint passes, the
    first that does, and the minutes of training to it."""
    rows = {
        f"seed {seed}": {
            "passes": "yes" if entry["passed"] else "no",
            "first passing checkpoint": entry["first_passing"] or "none",
            "minutes of training": entry["minutes"],
            "checkpoints tested": entry["tested"],
        }
        for seed, entry in walker_record["seeds"].items()
    }
    return pd.DataFrame(rows).T
