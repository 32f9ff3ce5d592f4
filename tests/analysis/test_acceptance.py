"""The 4-s rule counted per machine (analysis.acceptance.rule_counts), on hand-made replays."""

from __future__ import annotations

import math

from mjlab_microduck.analysis import acceptance


def replay(velocity, displacement, done=0, fell=0.0):
    return {"mean_forward_velocity_mps": velocity, "forward_displacement_m": displacement,
            "done_count": done, "fell_like_fraction": fell}  # fmt: skip


def test_rule_counts_count_stable_and_walking_checkpoints_per_machine():
    live = {
        "model_499.pt": replay(0.01, 0.02),  # stands
        "model_998.pt": replay(0.09, 0.31),  # walks: 0.09 >= 0.075
        "model_1498.pt": replay(0.12, -0.4, done=1),  # fast, but it fell
    }
    recorded = {"model_499.pt": replay(0.08, 0.3), "model_998.pt": replay(0.07, 0.25)}
    table = acceptance.rule_counts({"this build": live, "H200": recorded})
    assert table.loc["this build", ["checkpoints", "stable", "walk"]].tolist() == [3, 2, 1]
    assert table.loc["this build", "walking checkpoints"] == "model_998.pt"
    assert table.loc["this build", "largest |4 s displacement| (m)"] == 0.4
    assert table.loc["H200", ["checkpoints", "stable", "walk"]].tolist() == [2, 2, 1]
    empty = acceptance.rule_counts({"nowhere": {}})
    assert empty.loc["nowhere", "walking checkpoints"] == "none"
    assert math.isnan(empty.loc["nowhere", "largest |4 s displacement| (m)"])


def test_recorded_summaries_are_those_of_the_published_checkpoints_replays():
    from mjlab_microduck.book import results

    root = results.results_root()
    published = acceptance.published_checkpoints(root)
    summaries = acceptance.recorded_summaries(published, root)
    assert summaries and set(summaries) <= {c.name for c in published}
    replays = acceptance.recorded_replays(root)
    for checkpoint in published:
        rep = acceptance.recorded_protocol_replay(checkpoint, replays)
        if rep is not None:
            assert summaries[checkpoint.name] == dict(rep.record.summary)
