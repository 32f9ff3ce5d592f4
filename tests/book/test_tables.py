"""The tables of run records: a run's values shown with their source."""

from __future__ import annotations

import math

import run_fakes

from mjlab_microduck.book import tables


def test_facts_table_names_the_run_machine_and_profile_above_each_column():
    cpu = run_fakes.record(run_id="cpu_run")
    gpu = run_fakes.record(
        run_id="gpu_run",
        provenance=run_fakes.provenance(backend="cuda", device_name="NVIDIA H200",
                                        driver_version="580.1", runtime_version="13.0",
                                        profile="full"),
    )  # fmt: skip
    frame = tables.facts_table({"live": (cpu, {"iterations": 5}),
                                "recorded": (gpu, {"iterations": 500, "walks": "no"})})
    assert list(frame.index[:3]) == ["run", "machine", "profile"]
    assert frame.loc["run", "recorded"] == "gpu_run"
    assert frame.loc["machine", "recorded"] == "one NVIDIA H200, driver 580, CUDA 13.0"
    assert frame.loc["profile", "live"] == "ci"
    assert frame.loc["iterations", "live"] == 5
    missing = frame.loc["walks", "live"]
    assert not isinstance(missing, str) and math.isnan(missing)


def test_run_facts_labels_its_one_column_with_the_run_id_unless_told():
    record = run_fakes.record(run_id="r7")
    assert list(tables.run_facts(record, {"a": 1}).columns) == ["r7"]
    assert list(tables.run_facts(record, {"a": 1}, label="live").columns) == ["live"]
