"""The R9700 reference figures as chapter 9 shows and compares them."""

from __future__ import annotations

import pytest

from mjlab_microduck.book import reference


def test_throughput_table_labels_every_reported_run():
    table = reference.throughput_table()
    assert list(table["run"]) == [row["run"] for row in reference.FIGURES["throughput"]]
    assert set(table["source"]) == {reference.LABEL}
    assert list(table["final steps/s"]) == [1033, 3741, 3991, 5275]


def test_training_reference_is_the_end_of_the_500_iteration_run_at_256_envs():
    table = reference.throughput_table().set_index("run")
    row = table.loc[reference.TRAINING_REFERENCE_RUN]
    assert row["num_envs"] == 256
    assert reference.training_steps_per_s() == 3991.0
    assert reference.training_steps_per_s("resume, 1000 more iterations") == 5275.0
    with pytest.raises(KeyError, match="no reported throughput"):
        reference.training_steps_per_s("a run nobody made")
