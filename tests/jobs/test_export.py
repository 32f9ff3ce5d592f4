"""``microduck export`` (jobs/export.py, jobs/drive_spec.py): a portable scene, a spec that
rebuilds mjlab's observation, an ONNX actor that acts like the torch one, a run record; bad
input refused before anything is created."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import pytest
import torch

from mjlab_microduck.jobs import drive_spec, export
from mjlab_microduck.runs import records

REPO = Path(__file__).resolve().parents[2]
CHECKPOINT = REPO / "book" / "results" / "h200_walker_heading_main_s42" / "model_999.pt"
PUBLISHED = REPO / "book" / "results" / "cpu_export_walker_heading_s42_model_999"


def test_empty_defaults_are_dropped_and_used_ones_kept():
    root = ET.fromstring(
        "<mujoco><default><default/><default class='robot/main'/>"
        "<default class='used'/><default class='set'><joint damping='1'/></default></default>"
        "<worldbody><body childclass='used'/></worldbody></mujoco>"
    )
    assert drive_spec._drop_empty_defaults(root) == 2
    kept = [d.get("class") for d in root.find("default")]
    assert kept == ["used", "set"]
    alone = ET.fromstring("<mujoco><default><default/></default><worldbody/></mujoco>")
    assert drive_spec._drop_empty_defaults(alone) == 2 and alone.find("default") is None


def test_model_differences_sees_a_changed_joint_limit():
    xml = ("<mujoco><compiler angle='radian'/><worldbody><body>"
           "<joint name='j' range='0 {}'/><geom size='0.1'/>"
           "</body></worldbody></mujoco>")  # fmt: skip
    a = mujoco.MjModel.from_xml_string(xml.format(1.5707963))
    assert drive_spec.model_differences(a, mujoco.MjModel.from_xml_string(xml.format(1.5708))) == {}
    moved = drive_spec.model_differences(a, mujoco.MjModel.from_xml_string(xml.format(1.6)))
    assert moved["jnt_range"] == pytest.approx(1.6 - 1.5707963)


def test_published_export_is_small_and_verifies():
    record = records.load_record(PUBLISHED)
    assert record.kind == "export" and record.status == "ok"
    records.verify_artifacts(record, PUBLISHED)
    sizes = {a.path: a.bytes for a in record.artifacts}
    assert set(sizes) == {"policy.onnx", "scene.xml", "spec.json"}
    assert sizes["policy.onnx"] < 1_500_000 and sizes["scene.xml"] < 100_000
    assert record.config["checkpoint_sha256"] == records.sha256_file(CHECKPOINT)
    assert record.summary["max_abs_obs_diff"] < export.OBS_TOLERANCE
    assert record.summary["max_abs_action_diff"] < export.ACTION_TOLERANCE


def test_published_spec_says_what_the_task_does():
    spec = json.loads((PUBLISHED / "spec.json").read_text())
    terms = {t["name"]: t for t in spec["observation"]["terms"]}
    assert terms["base_ang_vel"]["kind"] == "sensor"
    assert terms["base_ang_vel"]["sensor"] == "robot/imu_ang_vel"
    # The task's delays, not the self-check env's: IMU 0-1 steps, joint velocities 1, motors 0-3.
    assert terms["base_ang_vel"]["delay_steps"] == [0, 1]
    assert terms["joint_vel"]["delay_steps"] == [1, 1]
    assert spec["actions"]["delay_physics_steps"] == [0, 3]
    assert spec["sim"] == {"timestep_s": 0.005, "decimation": 4, "control_dt_s": 0.02}
    assert spec["command"]["heading"] == {"stiffness": 0.5, "clip": [-1.0, 1.0]}
    assert spec["command"]["ranges"]["lin_vel_x"] == [-0.4, 0.4]
    assert [t["kind"] for t in spec["terminations"]] == [
        "time_out", "tilt", "nan", "trunk_above_feet", "trunk_below"]  # fmt: skip
    model = mujoco.MjModel.from_xml_path(str(PUBLISHED / "scene.xml"))
    assert model.opt.timestep == 0.005 and model.opt.iterations == 10
    assert model.nu == spec["actions"]["size"] == 14
    for joint in spec["joints"]:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint["name"])
        assert model.jnt_qposadr[jid] == joint["qpos"]


def test_bad_input_is_refused_before_anything_exists(tmp_path):
    out = tmp_path / "exports"
    with pytest.raises(export.ExportError, match="run name"):
        export.run(export.ExportRequest(CHECKPOINT), out, name="bad name")
    with pytest.raises(export.replay.ReplayError, match="no such file"):
        export.run(export.ExportRequest(tmp_path / "missing.pt"), out)
    with pytest.raises(export.ExportError, match="unknown task"):
        export.run(export.ExportRequest(CHECKPOINT, task="No-Such-Task"), out)
    assert not out.exists()


@pytest.mark.slow
def test_export_writes_files_that_reproduce_mjlab(tmp_path):
    import onnx

    run_dir, record = export.run(export.ExportRequest(CHECKPOINT), tmp_path, name="e")
    assert record.status == "ok" and record.kind == "export"
    assert record.config["task"] == "Mjlab-Velocity-Flat-MicroDuck-WalkerHeadingTuning"
    records.verify_artifacts(records.load_record(run_dir), run_dir)
    assert record.summary["max_abs_obs_diff"] < 1e-5
    assert record.summary["max_abs_action_diff"] < 1e-5
    assert record.summary["empty_defaults_dropped"] >= 1
    model = onnx.load(str(run_dir / "policy.onnx"))
    meta = {p.key: p.value for p in model.metadata_props}
    assert meta["observation_names"].split(",")[:2] == ["base_ang_vel", "projected_gravity"]
    # The spec and scene are the same as the published ones (same checkpoint, same task).
    assert (run_dir / "scene.xml").read_text() == (PUBLISHED / "scene.xml").read_text()
    assert json.loads((run_dir / "spec.json").read_text()) == json.loads(
        (PUBLISHED / "spec.json").read_text())  # fmt: skip


@pytest.mark.slow
def test_a_checkpoint_that_does_not_fit_is_refused(tmp_path):
    data = torch.load(CHECKPOINT, map_location="cpu", weights_only=False)
    actor = data["actor_state_dict"]
    actor["mlp.0.weight"] = torch.zeros(512, 60)  # a network of another observation size
    bad = tmp_path / "model_1.pt"
    torch.save(data, bad)
    with pytest.raises(export.ExportError, match="does not fit task"):
        export.run(export.ExportRequest(bad), tmp_path / "exports")
    assert not (tmp_path / "exports").exists()
