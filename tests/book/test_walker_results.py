"""The walker recipe's published records, as the chapters read them."""

from __future__ import annotations

import pytest

from mjlab_microduck.analysis import walker
from mjlab_microduck.book import walker_results as wr


@pytest.fixture(scope="module")
def runs():
    return wr.seed_runs()


def test_three_seeds_of_the_recipe_at_scale_are_published(runs):
    assert [run.seed for run in runs] == list(wr.SEEDS)
    for run in runs:
        (main_dir, main), (resume_dir, resume) = run.stages
        assert main.config["task"] == resume.config["task"] == wr.WALKER_TASK
        assert main.config["num_envs"] == resume.config["num_envs"] == 4096
        assert (main.config["iterations"], resume.config["iterations"]) == (500, 250)
        assert resume.config["resume_from_iteration"] == 499
        assert main.provenance.backend == "cuda" and main.provenance.device_name == "NVIDIA H200"
        assert run.checkpoint(499).parent == main_dir
        assert run.checkpoint(748).parent == resume_dir
        assert [it for it, _, _ in run.gait] == [*range(100, 451, 50), 499, *range(550, 701, 50)]


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


def test_the_candidate_never_falls_and_fails_fewest_conditions(runs):
    run, iteration = wr.candidate(runs)
    progress = run.progress().set_index("iteration")
    assert progress.loc[iteration, "never falls"]
    best = min(int(r.progress().query("`never falls`")["failed_conditions"].min()) for r in runs)
    assert progress.loc[iteration, "failed_conditions"] == best
    table = wr.case_table(run.verdict(iteration))
    assert len(table) == 16 and table["terminations"].sum() == 0
