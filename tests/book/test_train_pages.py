"""Chapter 4's figures read off a training run, on a made-up run."""

from __future__ import annotations

import math

import pandas as pd

from mjlab_microduck.book import train_pages


def _scalars() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "Train/mean_episode_length": [20.0, 150.0, 600.0, 700.0, 650.0],
            "Episode_Termination/fell_over": [1.0, 4.0, 2.0, 0.5, 0.0],
            "Episode_Termination/legs_collapsed": [0.0, 1.0, 0.8, 0.6, 0.7],
            "Policy/mean_std": [0.5, 0.5, 0.45, 0.4, 0.41],
            "Perf/total_fps": [1000.0, 2000.0, 3000.0, 2500.0, 2200.0],
        },
        index=pd.Index([0, 1, 2, 3, 4], name="iteration"),
    )


def test_curve_facts_reads_the_levels_peaks_and_terms():
    summary = {"iterations": 5, "nan_state_nonzero_iterations": 0,
               "below_ground_nonzero_iterations": 1, "below_ground_max": 0.5,
               "below_ground_last": 0.0}  # fmt: skip
    facts = train_pages.curve_facts(_scalars(), summary)
    assert facts["mean episode length first > 100 steps"] == 1
    assert facts["mean episode length first > 500 steps"] == 2
    assert facts["fell_over per reset: peak → last"] == "4.00 → 0.00"
    assert facts["legs_collapsed per reset: median of the last 4/5 → last"] == "0.75 → 0.70"
    assert facts["Policy/mean_std: first → last"] == "0.50 → 0.41"
    assert facts["nan_state"] == "0 in all 5 iterations"
    assert facts["below_ground"].startswith("non-zero in 1 of 5 iterations")
    assert facts["env steps/s: last, best, median"] == "2,200, 3,000, 2,200"


def test_a_level_never_reached_has_no_iteration():
    assert train_pages.first_iteration_above(pd.Series([1.0, 2.0]), 5) is None


def test_standing_share_is_the_gaussian_kernel_at_the_command():
    assert math.isclose(train_pages.standing_share(0.15, 0.2), math.exp(-0.5625))
    assert train_pages.standing_share(0.0, 0.2) == 1.0
