"""Run records (mjlab_microduck.runs.records): schema, atomic writes, loading errors, tables."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from pathlib import Path

import pytest

from mjlab_microduck.book import plots, tables
from mjlab_microduck.cli import main as cli_main
from mjlab_microduck.runs import records

REPO = Path(__file__).resolve().parents[2]


def make_provenance(**overrides) -> records.Provenance:
    fields = dict(
        backend="cpu",
        device_name="Test CPU",
        driver_version=None,
        runtime_version=None,
        arch="x86_64",
        versions={"torch": "2.13.0", "warp": "1.13.0", "mujoco": "3.10.0", "rsl_rl": None},
        git_commit="0123456789abcdef0123456789abcdef01234567",
        hostname="testhost",
        date="2026-01-02T03:04:05+00:00",
        profile="ci",
        machine_label="unit test",
    )
    fields.update(overrides)
    return records.Provenance(**fields)


def make_record(**overrides) -> records.RunRecord:
    fields = dict(
        run_id="20260102T030405Z_smoke",
        kind="train",
        status="ok",
        command=["microduck-train", "--num-envs", "16"],
        config={"task": "Mjlab-Velocity-Flat-MicroDuck", "num_envs": 16, "iterations": 3,
                "seeds": {"env": 42, "agent": 42}},
        provenance=make_provenance(),
        started_at="2026-01-02T03:04:05+00:00",
        finished_at="2026-01-02T03:05:05+00:00",
        wall_seconds=60.0,
        summary={"nan_state": 0, "fell_over": 1.9583, "finite": True, "task": "x", "best": None},
        scalars_csv=None,
        artifacts=[],
        notes=None,
    )
    fields.update(overrides)
    return records.RunRecord(**fields)


def valid_dict() -> dict:
    return make_record().model_dump(mode="json")


# ----------------------------------------------------------------------------- round trip


def test_round_trip_preserves_every_field_and_type(tmp_path):
    rec = make_record()
    path = records.write_record(rec, tmp_path / "run" / "record.json")
    back = records.load_record(path)
    assert back == rec
    # bool stays bool, int stays int: the summary union must not coerce
    assert back.summary["finite"] is True
    assert type(back.summary["nan_state"]) is int
    assert back.summary["best"] is None
    assert back.provenance.versions["rsl_rl"] is None


def test_write_record_into_a_directory(tmp_path):
    written = records.write_record(make_record(), tmp_path)
    assert written == tmp_path / "record.json"
    assert records.load_record(tmp_path).run_id == "20260102T030405Z_smoke"


def test_written_file_is_plain_json(tmp_path):
    path = records.write_record(make_record(), tmp_path / "record.json")
    data = json.loads(path.read_text())
    assert data["schema_version"] == 1
    assert data["provenance"]["backend"] == "cpu"


# ----------------------------------------------------------------------------- atomic writes


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_atomic_write_replaces_and_leaves_no_temp(tmp_path):
    target = tmp_path / "out.txt"
    records.atomic_write_text(target, "first")
    records.atomic_write_text(target, "second")
    assert target.read_text() == "second"
    assert leftovers(tmp_path) == []


def test_failure_before_rename_keeps_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "record.json"
    records.atomic_write_text(target, "old content")

    def crash(*args, **kwargs):
        raise OSError("simulated crash before rename")

    monkeypatch.setattr(records.os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        records.atomic_write_text(target, "new content that must never be seen")
    assert target.read_text() == "old content"
    assert leftovers(tmp_path) == []


def test_failure_mid_write_never_leaves_a_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "record.json"
    real_fdopen = os.fdopen

    class HalfWriter:
        """Writes the first half of the data, then fails like a full disk."""

        def __init__(self, fh):
            self.fh = fh

        def write(self, data):
            self.fh.write(data[: len(data) // 2])
            self.fh.flush()
            raise OSError(28, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.fh.close()
            return False

    monkeypatch.setattr(records.os, "fdopen", lambda fd, mode: HalfWriter(real_fdopen(fd, mode)))
    with pytest.raises(OSError, match="No space left"):
        records.write_record(make_record(), target)
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_failure_at_fsync_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "data.bin"

    def bad_fsync(fd):
        raise OSError(5, "I/O error")

    monkeypatch.setattr(records.os, "fsync", bad_fsync)
    with pytest.raises(OSError, match="I/O error"):
        records.atomic_write_bytes(target, b"x" * 4096)
    assert list(tmp_path.iterdir()) == []


def test_atomic_copy(tmp_path):
    src = tmp_path / "src.pt"
    src.write_bytes(os.urandom(3 * (1 << 20) + 17))
    dst = records.atomic_copy(src, tmp_path / "out" / "model.pt")
    assert dst.read_bytes() == src.read_bytes()
    assert leftovers(dst.parent) == []


def test_atomic_copy_failure_leaves_no_partial(tmp_path, monkeypatch):
    src = tmp_path / "src.pt"
    src.write_bytes(b"y" * 10_000)
    out = tmp_path / "out"
    out.mkdir()

    def crash(*args, **kwargs):
        raise OSError("simulated crash")

    monkeypatch.setattr(records.os, "replace", crash)
    with pytest.raises(OSError):
        records.atomic_copy(src, out / "model.pt")
    assert list(out.iterdir()) == []


# ----------------------------------------------------------------------------- rejection


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_bad_backend_names_the_field(tmp_path):
    data = valid_dict()
    data["provenance"]["backend"] = "rocm"
    path = write_json(tmp_path / "record.json", data)
    with pytest.raises(records.RecordError) as info:
        records.load_record(path)
    assert str(info.value) == (
        f"{path}: field 'provenance.backend': Input should be 'cpu', 'cuda' or 'hip'"
    )


@pytest.mark.parametrize(
    "mutate,field",
    [
        (lambda d: d.pop("run_id"), "run_id"),
        (lambda d: d.update(kind="training"), "kind"),
        (lambda d: d.update(status="done"), "status"),
        (lambda d: d.update(schema_version=2), "schema_version"),
        (lambda d: d.update(unexpected=1), "unexpected"),
        (lambda d: d["provenance"].update(extra_field="x"), "provenance.extra_field"),
        (lambda d: d.update(started_at="yesterday"), "started_at"),
        (lambda d: d.update(wall_seconds=-1.0), "wall_seconds"),
        (lambda d: d["summary"].update(curve=[1, 2, 3]), "summary.curve"),
        (lambda d: d.update(artifacts=[{"path": "../x.pt", "sha256": "0" * 64, "bytes": 1,
                                        "kind": "checkpoint"}]), "artifacts.0.path"),
        (lambda d: d.update(artifacts=[{"path": "x.pt", "sha256": "abc", "bytes": 1,
                                        "kind": "checkpoint"}]), "artifacts.0.sha256"),
    ],
)
def test_malformed_records_name_the_field(tmp_path, mutate, field):
    data = valid_dict()
    mutate(data)
    path = write_json(tmp_path / "record.json", data)
    with pytest.raises(records.RecordError) as info:
        records.load_record(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert f"field '{field}':" in message
    assert "\n" not in message


def test_failed_without_error_is_rejected():
    with pytest.raises(ValueError, match="needs a non-empty 'error'"):
        make_record(status="failed", error=None)
    rec = make_record(status="failed", error="nan_state > 0 at iteration 3")
    assert rec.status == "failed"


def test_interrupted_needs_its_reason_and_only_it_carries_a_signal(tmp_path):
    with pytest.raises(ValueError, match="status 'interrupted' needs a non-empty 'error'"):
        make_record(status="interrupted", signal="SIGTERM")
    with pytest.raises(ValueError, match="a 'signal' belongs to an interrupted run"):
        make_record(signal="SIGTERM")
    rec = records.mark_interrupted(make_record(), "interrupted by SIGTERM\n at iteration 6",
                                   signal="SIGTERM")  # fmt: skip
    back = records.load_record(records.write_record(rec, tmp_path))
    assert (back.status, back.signal) == ("interrupted", "SIGTERM")
    assert back.error == "interrupted by SIGTERM at iteration 6"  # one line


def test_finalize_stamps_the_end_into_the_heartbeat_too(tmp_path):
    import time

    process = records.RunProcess(host="h", pid=1, heartbeat_at="2026-01-02T03:04:05+00:00")
    rec = make_record(status="running", finished_at=None, wall_seconds=None, process=process)
    done = records.finalize(rec.model_copy(update={"status": "ok"}), tmp_path, time.monotonic())
    assert done.process.heartbeat_at == done.finished_at != process.heartbeat_at
    assert records.load_record(tmp_path) == done


def test_a_publish_that_fails_midway_leaves_no_staging_folder(tmp_path):
    records.write_record(make_record(), tmp_path / "run")

    def copy_files(record, staging):
        (staging / "half.csv").write_text("x")
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        records.publish_run(tmp_path / "run", tmp_path / "book" / "pub", copy_files)
    assert sorted(p.name for p in (tmp_path / "book").iterdir()) == []


def test_finished_status_needs_finished_at():
    with pytest.raises(ValueError, match="needs 'finished_at'"):
        make_record(status="ok", finished_at=None)
    assert make_record(status="running", finished_at=None).finished_at is None


def test_not_json_and_missing_file(tmp_path):
    bad = tmp_path / "record.json"
    bad.write_text("{not json")
    with pytest.raises(records.RecordError, match="not valid JSON"):
        records.load_record(bad)
    with pytest.raises(records.RecordError, match="no such record file"):
        records.load_record(tmp_path / "missing" / "record.json")
    write_json(bad, [1, 2])
    with pytest.raises(records.RecordError, match="must be a JSON object"):
        records.load_record(bad)


def test_a_record_is_validated_once_per_text_and_read_again_when_rewritten(tmp_path, monkeypatch):
    path = records.write_record(make_record(run_id="20260102T030405Z_cache_a"), tmp_path)
    validated = []
    real_parse = records.parse_record
    monkeypatch.setattr(records, "parse_record",
                        lambda data, source: validated.append(source) or real_parse(data, source))
    first = records.load_record(path)
    assert records.load_record(path) is first and validated == [str(path)]
    # rewritten in place, same size, same inode: the new text is what the reader gets
    path.write_text(path.read_text().replace("cache_a", "cache_b"))
    assert records.load_record(path).run_id == "20260102T030405Z_cache_b"
    assert len(validated) == 2


def test_write_record_revalidates_mutated_nested_values(tmp_path):
    rec = make_record()
    rec.summary["curve"] = [1, 2]  # nested mutation: validate_assignment cannot see it
    with pytest.raises(records.RecordError, match="field 'summary.curve'"):
        records.write_record(rec, tmp_path / "record.json")
    assert not (tmp_path / "record.json").exists()


def test_assignment_is_validated():
    rec = make_record()
    with pytest.raises(ValueError):
        rec.kind = "nonsense"  # type: ignore[assignment]


# ----------------------------------------------------------------------------- run dirs


def test_new_run_dir_never_reuses(tmp_path):
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    first = records.new_run_dir(tmp_path, "smoke", now=when)
    second = records.new_run_dir(tmp_path, "smoke", now=when)
    third = records.new_run_dir(tmp_path, "smoke", now=when)
    assert first.name == "20260102T030405Z_smoke"
    assert second.name == "20260102T030405Z_smoke-1"
    assert third.name == "20260102T030405Z_smoke-2"
    assert len({first, second, third}) == 3
    assert all(p.is_dir() and not any(p.iterdir()) for p in (first, second, third))


def test_new_run_dir_skips_a_taken_name(tmp_path):
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    taken = tmp_path / "20260102T030405Z_train"
    taken.mkdir()
    (taken / "record.json").write_text("precious")
    new = records.new_run_dir(tmp_path, "train", now=when)
    assert new != taken
    assert (taken / "record.json").read_text() == "precious"


@pytest.mark.parametrize("name", ["", "../escape", "a/b", " space"])
def test_new_run_dir_rejects_bad_names(tmp_path, name):
    with pytest.raises(ValueError, match="run name"):
        records.new_run_dir(tmp_path, name)


# ----------------------------------------------------------------------------- artifacts


def test_artifact_and_verify(tmp_path):
    ckpt = tmp_path / "model_2.pt"
    payload = os.urandom(5000)
    ckpt.write_bytes(payload)
    art = records.artifact(ckpt, tmp_path, "checkpoint")
    assert art.path == "model_2.pt"
    assert art.bytes == 5000
    assert art.sha256 == hashlib.sha256(payload).hexdigest()
    assert records.sha256_file(ckpt) == art.sha256
    rec = make_record(artifacts=[art])
    assert records.verify_artifacts(rec, tmp_path) == [ckpt]

    ckpt.write_bytes(payload[:-1] + bytes([payload[-1] ^ 0xFF]))  # same size, one byte flipped
    with pytest.raises(records.RecordError, match="model_2.pt: sha256"):
        records.verify_artifacts(rec, tmp_path)
    ckpt.write_bytes(b"short")
    with pytest.raises(records.RecordError, match="5 bytes, record says 5000"):
        records.verify_artifacts(rec, tmp_path)
    ckpt.unlink()
    with pytest.raises(records.RecordError, match="model_2.pt: missing"):
        records.verify_artifacts(rec, tmp_path)


def test_artifact_outside_record_dir_is_refused(tmp_path):
    outside = tmp_path / "elsewhere.pt"
    outside.write_bytes(b"x")
    (tmp_path / "run").mkdir()
    with pytest.raises(records.RecordError, match="not inside"):
        records.artifact(outside, tmp_path / "run", "checkpoint")


# ----------------------------------------------------------------------------- tables, plots


def test_records_table_one_row_per_record():
    a = make_record(run_id="a", summary={"nan_state": 0, "throughput": 1000.0})
    b = make_record(run_id="b", kind="replay", provenance=make_provenance(backend="hip",
                    device_name="AMD Radeon AI PRO R9700", profile="full"),
                    summary={"done_count": 0})
    table = tables.records_table([a, b])
    assert list(table["run_id"]) == ["a", "b"]
    assert list(table.columns[:8]) == ["run_id", "kind", "status", "profile", "backend",
                                       "device", "date", "wall_seconds"]
    assert list(table.columns[8:]) == ["nan_state", "throughput", "done_count"]
    assert table.loc[1, "device"] == "AMD Radeon AI PRO R9700"
    assert table.loc[1, "profile"] == "full"
    # a missing summary key is missing, never 0
    assert table["throughput"].isna().tolist() == [False, True]
    only = tables.records_table([a, b], summary_keys=["done_count"])
    assert list(only.columns[8:]) == ["done_count"]


def test_scalars_and_curves(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    (tmp_path / "scalars.csv").write_text(
        "iteration,mean_reward,mean_episode_length\n0,0.1,20\n1,0.5,25\n2,1.2,31\n"
    )
    rec = make_record(scalars_csv="scalars.csv")
    df = records.load_scalars(rec, tmp_path)
    assert list(df["mean_reward"]) == [0.1, 0.5, 1.2]
    fig = plots.plot_curves(df, ["mean_reward", "mean_episode_length"], title="t")
    axes = fig.get_axes()
    assert len(axes) == 2
    assert list(axes[0].lines[0].get_ydata()) == [0.1, 0.5, 1.2]
    assert list(axes[1].lines[0].get_xdata()) == [0, 1, 2]
    assert axes[1].get_xlabel() == "iteration"
    with pytest.raises(ValueError, match="not_a_column"):
        plots.plot_curves(df, ["not_a_column"])
    with pytest.raises(records.RecordError, match="no scalars_csv"):
        records.load_scalars(make_record(), tmp_path)


def test_records_and_artifacts_are_world_readable(tmp_path):
    """mkstemp makes 0600 files; whoever serves the book must be able to read what we write."""
    old_umask = os.umask(0o022)
    try:
        written = [
            records.write_record(make_record(), tmp_path / "run" / "record.json"),
            records.atomic_write_text(tmp_path / "run" / "scalars.csv", "iteration\n0\n"),
            records.atomic_copy(tmp_path / "run" / "scalars.csv", tmp_path / "copy.csv"),
        ]
    finally:
        os.umask(old_umask)
    assert [oct(p.stat().st_mode & 0o777) for p in written] == ["0o644"] * 3


def test_find_records(tmp_path):
    for name in ("b_run", "a_run"):
        records.write_record(make_record(run_id=name), tmp_path / name / "record.json")
    (tmp_path / "not_a_run").mkdir()
    found = records.find_records(tmp_path)
    assert [rec.run_id for _, rec in found] == ["a_run", "b_run"]
    assert found[0][0] == tmp_path / "a_run"


# ----------------------------------------------------------------------------- schema, CLI


def test_published_schema_matches_the_model():
    published = REPO / "book" / "results" / "record.schema.json"
    assert published.read_text() == records.schema_text(), (
        "book/results/record.schema.json is stale: run "
        "`microduck records schema --output book/results/record.schema.json`"
    )
    schema = json.loads(published.read_text())
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]["kind"]["enum"]) == {
        "train", "replay", "bench", "probe", "contact_check", "doctor", "experiment",
        "gait_test", "book_build", "export", "ci_run", "summary"}
    assert set(schema["properties"]["status"]["enum"]) == {"ok", "failed", "running",
                                                           "interrupted"}  # fmt: skip
    assert "stale" in schema["properties"]["status"]["description"]
    assert set(schema["$defs"]["RunProcess"]["required"]) == {"host", "pid", "heartbeat_at"}


def test_cli_validate_and_verify(tmp_path, capsys):
    good = tmp_path / "good"
    records.write_record(make_record(), good / "record.json")
    bad = tmp_path / "bad"
    bad.mkdir()
    data = valid_dict()
    data["provenance"]["backend"] = "gpu"
    write_json(bad / "record.json", data)
    assert cli_main(["records", "validate", str(good)]) == 0
    assert cli_main(["records", "verify", str(good)]) == 0
    assert cli_main(["records", "validate", str(good), str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "field 'provenance.backend'" in err[0]


def test_published_records_are_valid_and_intact():
    """Every record under book/results validates and its artifacts match their hashes."""
    results = REPO / "book" / "results"
    for record_dir, rec in records.find_records(results):
        records.verify_artifacts(rec, record_dir)
        if rec.scalars_csv is not None:
            assert (record_dir / rec.scalars_csv).is_file()


def test_numpy_summary_values_become_plain_python(tmp_path):
    np = pytest.importorskip("numpy")
    rec = make_record(summary={"a": np.float64(1.5), "b": np.int64(3), "c": np.bool_(True)})
    assert rec.summary == {"a": 1.5, "b": 3, "c": True}
    assert type(rec.summary["b"]) is int and type(rec.summary["c"]) is bool
    back = records.load_record(records.write_record(rec, tmp_path))
    assert back.summary == {"a": 1.5, "b": 3, "c": True}
