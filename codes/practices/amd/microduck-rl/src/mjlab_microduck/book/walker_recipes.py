"""The walker recipes trained at scale and the names their records are published under.

Problem it solves: the book's recipes at scale (chapters 4-6 and 11) are trained on a GPU,
sometimes again and again, and published under ``book/results`` by name
(``<machine>_<recipe>_<stage>_s<seed>``, ``<machine>_<recipe>_gait_s<seed>_model_<iteration>``,
``<machine>_<recipe>_gait_history``). This module is the catalogue: each recipe's run-name prefix,
task, stages, env count and machine, the published names of its benches and ci-size gait tests,
and which checkpoint is the book's walker. :mod:`mjlab_microduck.book.walker_results` reads the
records these names point at. Importing it reads nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

SEEDS = (42, 43, 44)
"""The training seeds of every recipe at scale."""


@dataclass(frozen=True)
class Recipe:
    """A recipe trained at scale: its run-name prefix, its task and its stages in chain order.

    A recipe with no stages is published by its gait tests alone (each names the checkpoint it
    tested and its SHA-256): what its checkpoints can do is known, how long training took is
    not, so its minutes read NaN."""

    name: str
    task: str
    stages: tuple[str, ...]
    num_envs: int = 4096
    """Envs per training (its stages' records say the same; a test checks)."""
    machine: str = "h200"
    """The GPU its runs were made on, the first word of every published name (``h200`` for one
    NVIDIA H200, ``h100`` for one H100); the records' provenance names the same card."""


# WALKER: 500 iterations, resumed for 250. WALKER_NARROW: 500 iterations.
WALKER = Recipe("walker", "Mjlab-Velocity-Flat-MicroDuck-WalkerTuning", ("main", "resume"))
WALKER_NARROW = Recipe(
    "walker_narrow", "Mjlab-Velocity-Flat-MicroDuck-WalkerNarrowTuning", ("main",)
)
# WALKER_HEADING: trained with mjlab's heading command in half the envs (tasks/tuning.py).
WALKER_HEADING = Recipe(
    "walker_heading", "Mjlab-Velocity-Flat-MicroDuck-WalkerHeadingTuning", ("main",)
)
# WALKER_TURNING: WALKER_HEADING plus turn-in-place envs (tasks/turning_command.py).
WALKER_TURNING = Recipe(
    "walker_turning", "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningTuning", ("main",)
)
WALKER_HEADING_ALONE = Recipe("walker_heading_alone", WALKER_HEADING.task, ("main",))
"""WALKER_HEADING's first seed to pass side by side (42) trained again alone on one GPU, for its
time to walk without sharing the GPU with the other seeds
(``h200_walker_heading_alone_main_s42``)."""
WALKER_TURNING_ALONE = Recipe("walker_turning_alone", WALKER_TURNING.task, ("main",))
"""WALKER_TURNING's seed 43, the one seed of three to pass by iteration 800 side by side, trained
again alone on one GPU for its time to walk (``h200_walker_turning_alone_main_s43``)."""
# WALKER_TURNING_SHORT: WALKER_TURNING with half the rollout, trained at 8192 envs.
WALKER_TURNING_SHORT = Recipe(
    "walker_turning_short",
    "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningShortTuning",
    ("main",),
    num_envs=8192,
)
# WALKER_TURNING_AXES: WALKER_TURNING plus single-axis envs (tasks/axis_command.py). Published by
# its gait tests alone: its three trainings (4096 envs each, side by side on one H200) ended ok,
# but their records and checkpoints stayed on the machine; each gait test names the checkpoint
# it tested by path and SHA-256.
WALKER_TURNING_AXES = Recipe(
    "walker_turning_axes", "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesTuning", ()
)
WALKER_TURNING_AXES_ALONE = Recipe("walker_turning_axes_alone", WALKER_TURNING_AXES.task, ("main",))
"""WALKER_TURNING_AXES's seed 43, which passed at model_500 side by side, trained again alone on
one GPU for its time to walk: Warp's kernel cache warm, the managers replayed from graphs, the
gait watcher every 25th checkpoint from 450, stopping it at its first pass
(``h200_walker_turning_axes_alone_main_s43``)."""
WALKER_TURNING_AXES_8192 = Recipe("walker_turning_axes_8192", WALKER_TURNING_AXES.task, (), 8192)
"""WALKER_TURNING_AXES with twice the envs per training (three side by side on one H200, 400
iterations), published by its gait tests alone: two of its three trainings' final records were
not collected."""
# WALKER_TURNING_AXES_MORE_UPDATES: WALKER_TURNING_AXES with 8 PPO mini-batches per epoch instead
# of 4 (twice the gradient steps per iteration), trained at 4096 envs like WALKER_TURNING_AXES.
WALKER_TURNING_AXES_MORE_UPDATES = Recipe(
    "walker_turning_axes_more_updates",
    "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesMoreUpdatesTuning",
    ("main",),
)
# WALKER_TURNING_AXES_WIDE_KL: WALKER_TURNING_AXES with twice the PPO KL target (0.02), trained at
# 4096 envs like WALKER_TURNING_AXES.
WALKER_TURNING_AXES_WIDE_KL = Recipe(
    "walker_turning_axes_wide_kl",
    "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesWideKlTuning",
    ("main",),
)
# WALKER_TURNING_AXES_FINE_YAW: WALKER_TURNING_AXES plus a narrow yaw-rate term beside the wide
# one (tasks/tuning.FineYawTracking), trained at 4096 envs like WALKER_TURNING_AXES.
WALKER_TURNING_AXES_FINE_YAW = Recipe(
    "walker_turning_axes_fine_yaw",
    "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesFineYawTuning",
    ("main",),
)
# WALKER_TURNING_AXES_FAST_START: WALKER_TURNING_AXES with half the commands drawn at a reset a
# straight forward walk at 0.3-0.4 m/s (tasks/start_command.py), trained at 4096 envs like it.
WALKER_TURNING_AXES_FAST_START = Recipe(
    "walker_turning_axes_fast_start",
    "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesFastStartTuning",
    ("main",),
)
# WALKER_TURNING_AXES_FAST_START_STANDING: the fast starts drawn only among the draws that do
# not stand, trained at 4096 envs like it.
WALKER_TURNING_AXES_FAST_START_STANDING = Recipe(
    "walker_turning_axes_fast_start_standing",
    "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesFastStartStandingTuning",
    ("main",),
)
# WALKER_TURNING_AXES_FAST_START_FINE_PLANAR: FAST_START_STANDING plus a narrow planar-velocity
# term beside the wide one (tasks/tuning.FinePlanarTracking). Trained side by side on one H100
# (4096 envs each, 615 iterations), then each seed resumed for 200 more.
WALKER_TURNING_AXES_FAST_START_FINE_PLANAR = Recipe(
    "walker_turning_axes_fast_start_fine_planar",
    "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesFastStartFinePlanarTuning",
    ("main", "resume"),
    machine="h100",
)
# WALKER_TURNING_AXES_STRAIGHT_START: FAST_START_FINE_PLANAR with its straight starts drawn from
# 0.1 m/s up instead of 0.3 (tasks/tuning.py). Trained side by side on one H200 (4096 envs each,
# 700 iterations).
WALKER_TURNING_AXES_STRAIGHT_START = Recipe(
    "walker_turning_axes_straight_start",
    "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesStraightStartTuning",
    ("main",),
)
# WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW: STRAIGHT_START plus FINE_YAW's narrow yaw-rate
# term beside the wide one (tasks/tuning.py). Trained side by side on one H100 (4096 envs each,
# up to 600 iterations), the watcher stopping each seed at its first pass.
WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW = Recipe(
    "walker_turning_axes_straight_start_fine_yaw",
    "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesStraightStartFineYawTuning",
    ("main",),
    machine="h100",
)


def _walker_recipe_again(suffix: str, stages: tuple[str, ...] = ("main",),
                         machine: str = "h100") -> Recipe:
    """WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW trained again alone: its task, under its name
    with ``suffix``, on ``machine``."""
    base = WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW
    return Recipe(f"{base.name}_{suffix}", base.task, stages, machine=machine)


WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE = _walker_recipe_again("alone", stages=())
"""WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW's seed 43, which passed at model_450 side by side,
trained again alone on one H100 for its time to walk (warm kernel cache, managers from graphs,
the gait watcher every 25th checkpoint from 350). Published by its gait tests alone: the
training was stopped (SIGTERM) after model_525, so its record ends ``interrupted``, and only
finished trainings are published."""
WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_NO_MPS = _walker_recipe_again("alone_no_mps")
"""WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW's passing seeds (43 and 44) each trained again alone
on one H100 with CUDA MPS left off (``MPS=0``), for the recipe's time to walk: one after the
other on the same machine, seed 44 first (watcher every 25th checkpoint from 400, kernel cache
warmed first) and then seed 43 (watcher from 450), each stopped at its first pass."""
WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS = _walker_recipe_again("alone_mps")
"""WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW trained again alone on one H100 under CUDA MPS,
after a lone iteration was benched with MPS off and on on that machine
(:data:`H100_MPS_BENCHES`): seed 43 (kernel cache warmed first), then seed 42, the seed that
passed nothing side by side, one after the other, each with the gait watcher every 25th
checkpoint from 350 and stopped at its first pass."""
WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_700 = _walker_recipe_again("alone_mps_700")
"""WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW's seed 44 trained again alone under CUDA MPS on a
fourth H100, with the gait watcher every 25th checkpoint from 350: no checkpoint passed, so it
ran its whole budget of 700 iterations."""
WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_EVERY_50 = _walker_recipe_again(
    "alone_mps_every_50"
)
"""WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW's seed 42 trained a second time alone under CUDA
MPS on a fifth H100 (kernel cache warmed first), saving a checkpoint every 50th iteration
instead of every 25th, so the gait watcher from 350 tested every 50th; stopped at its first
pass."""
WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_700_AGAIN = _walker_recipe_again(
    "alone_mps_700_again"
)
"""WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW's seed 44 trained a third time alone under CUDA
MPS on a sixth H100 (kernel cache warmed first), with the gait watcher every 25th checkpoint
from 350: no checkpoint passed, so it ran its whole budget of 700 iterations. The per-step
paths of two of its 15 tests (model_450, model_699) were lost on the way from the machine;
their records say so."""
WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_H200 = _walker_recipe_again(
    "alone_h200", machine="h200"
)
"""WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW's seed 43 trained alone under CUDA MPS on one
H200 (kernel cache warmed first), with the gait watcher every 25th checkpoint from 350: no
checkpoint passed, so it ran its whole budget of 650 iterations."""
WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_AGAIN = _walker_recipe_again(
    "alone_mps_again"
)
"""WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW's seeds 42 (its third training alone) and 43 (its
fifth alone, its sixth training) trained under CUDA MPS on a seventh H100, one after the other
(kernel cache warmed first), with the gait watcher every 25th checkpoint from 350, each stopped
at its first pass. Each seed's gait tests were folded on the machine after its training; the
two folds are joined into the recipe's one history (``microduck records join-folds``)."""
WALKER_TASK = WALKER.task
CANDIDATE_GAIT_TEST = "h200_walker_gait_s42_model_550"
"""The gait test of the walker recipe's candidate, kept whole beside the recipe's gait history:
pages plot its robots (``robots.csv``) and the drive page compares with them."""
ENVS_BENCH = "h200_walker_envs_bench"
"""The walker task's PPO iteration alone on one H200 at 2048, 4096 and 8192 envs (a
``microduck bench`` run of its training section)."""
GRAPHS_BENCHES = ("h200_walker_training_graphs0", "h200_walker_training_graphs1")
"""The walker task's PPO iteration alone at 4096 envs on one H200, measured twice in one session:
with the termination and reward managers launched operator by operator, and replayed from CUDA
graphs (``MICRODUCK_MANAGER_GRAPHS`` 0 and 1, chapter 2)."""
H100_FINE_YAW_BENCH = "h100_walker_training_scope_managers"
"""The PPO iteration of WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW's task alone at 4096 envs on
one H100, the managers replayed from graphs (``MICRODUCK_GRAPH_SCOPE=managers``), measured on
the machine that trained its seeds, before them."""
H100_MPS_BENCHES = ("h100_walker_training_mps0", "h100_walker_training_mps1")
"""The PPO iteration of WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW's task alone at 4096 envs on
one H100, CUDA MPS off and then on (the same machine, minutes apart), measured before the
trainings of :data:`WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS`."""
FINE_YAW_CI_GAIT_TESTS = {
    "seed 43, model_450": "cpu_walker_turning_axes_straight_start_fine_yaw_gait_s43_model_450",
    "seed 44, model_500": "cpu_walker_turning_axes_straight_start_fine_yaw_gait_s44_model_500",
}
"""WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW's passing checkpoints that are published (slim),
gait-tested again at ci size on a CPU, the size the book build tests its walker at."""
ALONE_CI_GAIT_TESTS = {
    f"seed {seed}, model_{iteration}" + (" (time to walk)" if time_to_walk else ""):
        f"cpu_{recipe.name}_gait_s{seed}_model_{iteration}"
    for recipe, seed, iteration, time_to_walk in (
        (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_AGAIN, 42, 400, True),
        (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS, 43, 350, False),
        (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS, 42, 500, False))
}  # fmt: skip
"""Passing checkpoints of the walker's recipe trained alone, gait-tested again at ci size on a
CPU: the time to walk's (seed 42's third training alone), and those of
:data:`WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS`, the first of them the time to
walk's before it."""


def stage_folder(recipe: Recipe, stage: str, seed: int) -> str:
    """One seed's published training stage: ``<machine>_<recipe>_<stage>_s<seed>``."""
    return f"{recipe.machine}_{recipe.name}_{stage}_s{seed}"


def gait_pattern(recipe: Recipe, seed: int) -> str:
    """The glob of one seed's gait tests: ``<machine>_<recipe>_gait_s<seed>_model_*``."""
    return f"{recipe.machine}_{recipe.name}_gait_s{seed}_model_*"


def gait_history_folder(recipe: Recipe) -> str:
    """The summary record folding a recipe's gait tests: ``<machine>_<recipe>_gait_history``."""
    return f"{recipe.machine}_{recipe.name}_gait_history"


HEADING_WALKER_AT = (42, 999)
"""The checkpoint of WALKER_HEADING that chapter 4 shows as its walker: seed 42's model_999,
the first passing seed's checkpoint that also passes the ci-size test on a CPU
(:data:`HEADING_CI_GAIT_TEST`), where its first pass, model_900, does not."""
HEADING_CI_GAIT_TEST = "cpu_walker_heading_gait_s42_model_999"

WALKER_RECIPE = WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW
"""The recipe of the book's walker (``walker.json``)."""
WALKER_AT = (43, 450)
"""The book's walker: seed 43's model_450, its recipe's first pass side by side, which also
passes the ci-size test on a CPU (:data:`WALKER_CI_GAIT_TEST`)."""
WALKER_CI_GAIT_TEST = FINE_YAW_CI_GAIT_TESTS[f"seed {WALKER_AT[0]}, model_{WALKER_AT[1]}"]
WALKER_TIMED_ALONE = (
    (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE, 43),
    (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_NO_MPS, 44),
    (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_NO_MPS, 43),
    (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS, 43),
    (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS, 42),
    (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_700, 44),
    (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_EVERY_50, 42),
    (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_700_AGAIN, 44),
    (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_H200, 43),
    (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_AGAIN, 42),
    (WALKER_TURNING_AXES_STRAIGHT_START_FINE_YAW_ALONE_MPS_AGAIN, 43),
)
"""The walker recipe's seeds trained again alone on one GPU for its time to walk, in the order
they ran: on H100s, seed 43 under CUDA MPS, then seeds 44 and 43 with MPS left off, then seeds
43 and 42 under MPS on another machine, then seed 44 under MPS on a fourth, then seed 42 under
MPS on a fifth, then seed 44 under MPS on a sixth; then seed 43 under MPS on an H200; then
seeds 42 and 43 under MPS on a seventh H100."""
