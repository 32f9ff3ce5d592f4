"""Chapter 8's table of the published interprocess-event probe records."""

from __future__ import annotations

import json
import shutil

from mjlab_microduck.book import probe_pages, results


def test_the_published_probes_say_which_ok_is_conclusive():
    table = probe_pages.probe_records_table(results.results_root()).set_index("record")
    assert list(table.index) == ["h200_ipc_probe_ring1", "h200_ipc_probe_ring16"]
    assert list(table["probe status"]) == ["ok", "ok"]
    assert list(table["reuses done"]) == [100, 100]
    assert list(table["ring"]) == [1, 16]
    # 100 reuses over one event pass its 32nd use; over a ring of 16 no event gets that far.
    assert bool(table.loc["h200_ipc_probe_ring1", "conclusive"]) is True
    assert bool(table.loc["h200_ipc_probe_ring16", "conclusive"]) is False
    assert set(table["device"]) == {"NVIDIA H200"}


def test_only_records_of_the_interprocess_event_probe_are_read(tmp_path):
    assert probe_pages.probe_records_table(tmp_path) is None  # nothing published: no table
    source = results.results_root() / "h200_ipc_probe_ring16"
    shutil.copytree(source, tmp_path / "b_ipc_probe")
    other = tmp_path / "a_ipc_probe"
    shutil.copytree(source, other)
    data = json.loads((other / "record.json").read_text(encoding="utf-8"))
    data["config"]["probe"] = "another_probe"
    (other / "record.json").write_text(json.dumps(data), encoding="utf-8")
    not_a_probe = tmp_path / "c_ipc_probe_bench"
    shutil.copytree(source, not_a_probe)
    data = json.loads((not_a_probe / "record.json").read_text(encoding="utf-8"))
    data["kind"] = "bench"
    (not_a_probe / "record.json").write_text(json.dumps(data), encoding="utf-8")
    table = probe_pages.probe_records_table(tmp_path)
    assert list(table["record"]) == ["b_ipc_probe"]
    assert list(table["conclusive"]) == [False]
