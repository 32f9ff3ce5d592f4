"""Run records: one validated JSON file per run, written atomically, read back into tables.

Problem it solves: the book's claims ("nan_state stayed 0", "model_750 walks best") must come
from files that say exactly what ran, where, with which versions, and whether it finished.
A reward curve without that context is how the original chapter's discarded experiment fooled
its author. Every training, replay, benchmark, probe, contact check, doctor run and experiment
therefore writes a :class:`RunRecord`:

* ``record.json`` validated by pydantic (unknown or mistyped fields are rejected, and
  :func:`load_record` names the offending field),
* optional ``scalars.csv`` (one row per iteration) and artifacts (slim checkpoints, MP4s)
  listed with their SHA-256 so a published result can be checked byte for byte.

A record says how its run ended: ``ok`` (a training stopped at its goal says why in its
summary, :mod:`~mjlab_microduck.runs.stop_request`), ``failed`` (with the error),
``interrupted`` (stopped by a signal, or found dead by ``microduck records verify --fix``; with
the reason), or still ``running``. A running record names its host and process and carries a
heartbeat (:class:`RunProcess`), so a run whose process is gone can be told from one in progress
(:mod:`mjlab_microduck.runs.liveness`).

All writes go through a temporary file in the target directory followed by ``os.replace``, so
a crash leaves either the old file or the new one, never half a file.

No-op cases: nothing here runs on import; pandas is imported only by :func:`load_scalars`.
Tables and plots of records are in :mod:`mjlab_microduck.book.tables` and ``book.plots``;
the command line is ``microduck records``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    field_validator,
    model_validator,
)

from mjlab_microduck.runs import names

if TYPE_CHECKING:  # heavy imports only for type checkers
    import pandas as pd

SCHEMA_VERSION = 1
RECORD_FILENAME = "record.json"
SCALARS_FILENAME = "scalars.csv"
FILE_MODE = 0o644  # records and artifacts: world-readable, like any file of the book

RunKind = Literal[
    "train",
    "replay",
    "bench",
    "probe",
    "contact_check",
    "doctor",
    "experiment",
    "gait_test",
    "book_build",
    "export",
    "ci_run",
    "summary",
]
RunStatus = Literal["ok", "failed", "running", "interrupted"]
Backend = Literal["cpu", "cuda", "hip"]

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


class RecordError(ValueError):
    """A record file is missing, is not JSON, or does not match the schema.

    The message is one line that starts with the file and names the offending field, e.g.
    ``logs/x/record.json: field 'provenance.backend': Input should be 'cpu', 'cuda' or 'hip'``.
    """


def _check_iso8601(value: str) -> str:
    try:
        _dt.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"not an ISO 8601 date-time: {value!r}") from None
    return value


# Dates stay strings in the JSON (readable, diff-friendly) but must parse as ISO 8601.
IsoDateTime = Annotated[str, AfterValidator(_check_iso8601)]


def _check_summary_value(value: Any) -> float | int | str | bool | None:
    # numpy scalars (np.float64, np.int64, np.bool_) are what metrics code usually produces;
    # store them as the plain Python value instead of rejecting them.
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"must be a number, string, boolean or null, not {type(value).__name__}")


# One scalar per summary key. A plain union would report one error per member type; this
# gives a single line, and keeps bool as bool and int as int.
SummaryValue = Annotated[
    float | int | str | bool | None,
    PlainValidator(_check_summary_value, json_schema_input_type=float | int | str | bool | None),
]


class _Strict(BaseModel):
    # extra="forbid": a typo in a field name is an error, not a silently dropped value.
    # validate_assignment: a record mutated after construction is still checked.
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Provenance(_Strict):
    """Where and with what a run happened; vendor neutral (CPU, CUDA and HIP alike)."""

    backend: Backend
    device_name: str
    driver_version: str | None = None
    runtime_version: str | None = Field(
        default=None, description="CUDA or HIP runtime version torch was built with"
    )
    arch: str | None = Field(default=None, description="e.g. gfx1201, sm_90, x86_64")
    versions: dict[str, str | None] = Field(
        default_factory=dict,
        description="torch, warp, mujoco_warp, mujoco, mjlab, rsl_rl, python; None = absent",
    )
    git_commit: str = "unknown"
    hostname: str
    date: IsoDateTime = Field(description="ISO 8601 date-time of collection")
    profile: str | None = Field(default=None, description="ci or full (see profiles.py)")
    machine_label: str | None = Field(
        default=None, description='human label, e.g. "one NVIDIA H200, driver 580"'
    )
    notes: list[str] = Field(
        default_factory=list,
        description="caveats met while collecting (a tool missing, timed out, ...)",
    )
    cuda_mps: bool | None = Field(
        default=None,
        description="whether CUDA's MPS control daemon was running when the run began (the "
        "kernels of several processes then share the GPU at once); None: not a CUDA run, or "
        "a record from before this was kept",
    )


class Artifact(_Strict):
    """A file that belongs to a run, relative to the directory holding ``record.json``."""

    path: str
    sha256: str
    bytes: int = Field(ge=0)
    kind: str = Field(description="checkpoint, video, scalars, tensorboard, log, config, ...")

    @field_validator("path")
    @classmethod
    def _relative_inside(cls, value: str) -> str:
        p = PurePosixPath(value)
        if value == "" or p.is_absolute() or ".." in p.parts or "\\" in value:
            raise ValueError(f"must be a relative POSIX path inside the record dir: {value!r}")
        return value

    @field_validator("sha256")
    @classmethod
    def _hex_digest(cls, value: str) -> str:
        if not _SHA256_RE.match(value):
            raise ValueError("must be 64 lowercase hex digits")
        return value


class RunProcess(_Strict):
    """The process that writes a run's record, and when it last said it was alive."""

    host: str = Field(min_length=1)
    pid: int = Field(ge=1)
    heartbeat_at: IsoDateTime = Field(
        description="last sign of life: the start, each heartbeat (a minute apart), the end"
    )


class RunRecord(_Strict):
    """One run: what was asked, where it ran, how it ended, what it produced."""

    schema_version: Literal[1] = SCHEMA_VERSION
    run_id: str = Field(min_length=1)
    kind: RunKind
    status: RunStatus = Field(
        description="ok, failed, interrupted, or running (a running record whose process is "
        "gone, or whose heartbeat is too old, is reported stale by `microduck records verify`)"
    )
    error: str | None = Field(
        default=None, description="one line: why a run failed or was interrupted"
    )
    signal: str | None = Field(
        default=None, description="the signal that interrupted the run (SIGINT, SIGTERM)"
    )
    process: RunProcess | None = Field(
        default=None, description="host, pid and heartbeat of the process that ran it"
    )
    command: list[str] = Field(default_factory=list)
    config: dict[str, Any] = Field(
        default_factory=dict, description="task, num_envs, iterations, seeds, ..."
    )
    provenance: Provenance
    started_at: IsoDateTime
    finished_at: IsoDateTime | None = None
    wall_seconds: float | None = Field(default=None, ge=0)
    summary: dict[str, SummaryValue] = Field(default_factory=dict)
    scalars_csv: str | None = None
    artifacts: list[Artifact] = Field(default_factory=list)
    notes: str | None = None

    @field_validator("scalars_csv")
    @classmethod
    def _scalars_relative(cls, value: str | None) -> str | None:
        if value is None:
            return None
        p = PurePosixPath(value)
        if value == "" or p.is_absolute() or ".." in p.parts:
            raise ValueError(f"must be a relative path inside the record dir: {value!r}")
        return value

    @model_validator(mode="after")
    def _status_consistent(self) -> RunRecord:
        # A failed run that does not say why, or a finished run without an end time, is the
        # kind of record that later reads as a success; refuse both.
        if self.status in ("failed", "interrupted") and not self.error:
            raise ValueError(f"status {self.status!r} needs a non-empty 'error'")
        if self.signal is not None and self.status != "interrupted":
            raise ValueError(f"a 'signal' belongs to an interrupted run, not a {self.status} one")
        if self.status != "running" and self.finished_at is None:
            raise ValueError(f"status {self.status!r} needs 'finished_at'")
        return self


# --------------------------------------------------------------------------- atomic writes


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; not every filesystem allows opening a directory.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _atomic_replace(path: str | os.PathLike[str], write: Callable[[BinaryIO], None]) -> Path:
    """Have ``write`` fill a temporary file beside ``path``, fsync it, then rename it over
    ``path``: readers see the old file or the whole new one, never a part.

    The temporary file lives in the same directory (``os.replace`` is atomic only within one
    filesystem) and is removed if anything fails before the rename.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        # mkstemp creates the file 0600; records and artifacts are served with the book, so
        # anyone who can read the folder must be able to read them.
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)
    return target


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`_atomic_replace`)."""
    return _atomic_replace(path, lambda fh: fh.write(data))


def atomic_write_text(path: str | os.PathLike[str], text: str, encoding: str = "utf-8") -> Path:
    """Text version of :func:`atomic_write_bytes`."""
    return atomic_write_bytes(path, text.encode(encoding))


def atomic_copy(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> Path:
    """Copy ``src`` to ``dst`` atomically (streamed, so large checkpoints are fine)."""

    def copy(fh: BinaryIO) -> None:
        with Path(src).open("rb") as inp:
            shutil.copyfileobj(inp, fh, length=1 << 20)

    return _atomic_replace(dst, copy)


def publish_run(
    run_dir: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    copy_files: Callable[[RunRecord, Path], list[Artifact]],
    kind: str | None = None,
) -> RunRecord:
    """Publish a finished run into ``dest`` (e.g. ``book/results/<name>``), all or nothing.

    Only an ``ok`` record (of ``kind`` when given) is published, never over an existing
    publication. ``copy_files(record, staging)`` copies what is published into a staging
    folder and returns its artifacts; the record is written there and the folder renamed to
    ``dest`` last, so a failure leaves no half-published run.
    """
    source, target = Path(run_dir), Path(dest)
    record = load_record(source)
    if kind is not None and record.kind != kind:
        raise ValueError(f"{source}: a {record.kind} record, not a {kind} run")
    if record.status != "ok":
        raise ValueError(f"{source}: run status is {record.status}, only ok runs are published")
    if target.exists():
        raise FileExistsError(f"{target}: already published; choose a new name")
    staging = target.with_name(target.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        published = record.model_copy(update={"artifacts": copy_files(record, staging)})
        write_record(published, staging)
        staging.rename(target)
    except BaseException:
        # All or nothing: a copy that fails (a missing checkpoint, a full disk, Ctrl-C)
        # leaves no staging folder behind for the next attempt to trip over.
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return published


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def artifact(path: str | os.PathLike[str], root: str | os.PathLike[str], kind: str) -> Artifact:
    """Describe ``path`` (which must lie under ``root``, the record's directory) as an Artifact."""
    file = Path(path).resolve()
    base = Path(root).resolve()
    try:
        rel = file.relative_to(base)
    except ValueError:
        raise RecordError(f"{file}: artifact is not inside the record directory {base}") from None
    if not file.is_file():
        raise RecordError(f"{file}: artifact file does not exist")
    return Artifact(
        path=rel.as_posix(), sha256=sha256_file(file), bytes=file.stat().st_size, kind=kind
    )


def new_run_dir(root: str | os.PathLike[str], name: str, now: _dt.datetime | None = None) -> Path:
    """Create and return ``root/<UTC timestamp>_<name>``; never returns an existing directory.

    ``mkdir(exist_ok=False)`` is the atomic claim: two runs started in the same second get
    ``..._name`` and ``..._name-1`` instead of writing into one directory.
    """
    stem = names.run_stem(name, now)
    base = Path(root)
    base.mkdir(parents=True, exist_ok=True)
    for n in range(10_000):
        candidate = base / (stem if n == 0 else f"{stem}-{n}")
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise RuntimeError(f"{base}: could not find a free run directory for {stem}")


def utc_now_iso() -> str:
    """Current UTC time as ISO 8601 with offset, the format every record date uses."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def error_line(err: BaseException, limit: int = 2000) -> str:
    """An exception as the one line a failed record (or a CLI) shows: type and message."""
    return " ".join(f"{type(err).__name__}: {err}".split())[:limit]


def mark_failed(record: RunRecord, err: BaseException, **updates: Any) -> RunRecord:
    """The record of a run that raised ``err`` (status failed, the error on one line)."""
    return record.model_copy(update={"status": "failed", "error": error_line(err), **updates})


def mark_interrupted(
    record: RunRecord, reason: str, signal: str | None = None, **updates: Any
) -> RunRecord:
    """The record of a run that was stopped (status interrupted, the reason on one line)."""
    return record.model_copy(
        update={"status": "interrupted", "error": " ".join(reason.split())[:2000],
                "signal": signal, **updates}
    )  # fmt: skip


def finalize(
    record: RunRecord, run_dir: str | os.PathLike[str], started_monotonic: float
) -> RunRecord:
    """Stamp the finish time and wall time, then write the record (atomically) to ``run_dir``.

    Called from a ``finally`` block so a run that fails still leaves its record behind. The
    end is the process's last sign of life, so its heartbeat says the same time.
    """
    import time

    now = utc_now_iso()
    update: dict[str, Any] = {
        "finished_at": now,
        "wall_seconds": round(time.monotonic() - started_monotonic, 3),
    }
    if record.process is not None:
        update["process"] = record.process.model_copy(update={"heartbeat_at": now})
    record = record.model_copy(update=update)
    write_record(record, run_dir)
    return record


# --------------------------------------------------------------------------- read and write


def _format_validation_error(source: str, err: ValidationError) -> str:
    parts = []
    for item in err.errors():
        loc = ".".join(str(x) for x in item["loc"]) or "<record>"
        parts.append(f"field '{loc}': {item['msg']}")
    return f"{source}: " + "; ".join(parts)


def record_path(path: str | os.PathLike[str]) -> Path:
    """``path`` itself if it names a file, else ``path/record.json``."""
    p = Path(path)
    return p / RECORD_FILENAME if p.is_dir() else p


def write_record(record: RunRecord, path: str | os.PathLike[str]) -> Path:
    """Validate and atomically write ``record`` to ``path`` (a file, or a directory)."""
    target = record_path(path)
    # Re-validate from a plain dump: catches values put in after construction through
    # nested containers, which validate_assignment does not see.
    try:
        checked = RunRecord.model_validate(record.model_dump(mode="python", warnings=False))
    except ValidationError as err:
        raise RecordError(_format_validation_error(str(target), err)) from None
    text = json.dumps(checked.model_dump(mode="json"), indent=2, sort_keys=False) + "\n"
    return atomic_write_text(target, text)


def parse_record(data: Any, source: str = "<record>") -> RunRecord:
    """Validate an already decoded JSON object; errors name ``source`` and the field."""
    if not isinstance(data, dict):
        raise RecordError(f"{source}: a record must be a JSON object, got {type(data).__name__}")
    try:
        return RunRecord.model_validate(data)
    except ValidationError as err:
        raise RecordError(_format_validation_error(source, err)) from None


def load_record(path: str | os.PathLike[str]) -> RunRecord:
    """Read and validate a record; any problem is a :class:`RecordError` naming file and field.

    The book's tables read the same records many times over, so a record's text is validated
    once and the result kept for the next read of the same text. The record returned is then
    shared between calls: read it, never change it.
    """
    target = record_path(path)
    try:
        text = target.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordError(f"{target}: no such record file") from None
    except OSError as err:
        raise RecordError(f"{target}: cannot read: {err.strerror}") from None
    return _parsed_record(text, str(target))


@functools.lru_cache(maxsize=1024)
def _parsed_record(text: str, shown: str) -> RunRecord:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise RecordError(f"{shown}: not valid JSON: {err.msg} (line {err.lineno})") from None
    return parse_record(data, shown)


def find_records(root: str | os.PathLike[str]) -> list[tuple[Path, RunRecord]]:
    """All ``<root>/*/record.json`` as ``(record_dir, record)``, sorted by directory name."""
    found = []
    for file in sorted(Path(root).glob(f"*/{RECORD_FILENAME}")):
        found.append((file.parent, load_record(file)))
    return found


def verify_artifacts(record: RunRecord, record_dir: str | os.PathLike[str]) -> list[Path]:
    """Check every artifact exists with the recorded size and SHA-256; return their paths.

    Raises :class:`RecordError` listing every missing or changed file.
    """
    base = Path(record_dir)
    problems: list[str] = []
    checked: list[Path] = []
    for art in record.artifacts:
        file = base / art.path
        if not file.is_file():
            problems.append(f"{art.path}: missing")
            continue
        size = file.stat().st_size
        if size != art.bytes:
            problems.append(f"{art.path}: {size} bytes, record says {art.bytes}")
            continue
        digest = sha256_file(file)
        if digest != art.sha256:
            problems.append(f"{art.path}: sha256 {digest[:12]}…, record says {art.sha256[:12]}…")
            continue
        checked.append(file)
    if problems:
        raise RecordError(f"{base / RECORD_FILENAME}: artifacts: " + "; ".join(problems))
    return checked


# --------------------------------------------------------------------------- scalars


def load_scalars(record: RunRecord, record_dir: str | os.PathLike[str]) -> pd.DataFrame:
    """The run's per-iteration scalars (``scalars.csv``) as a DataFrame."""
    import pandas as pd

    if record.scalars_csv is None:
        raise RecordError(f"{Path(record_dir) / RECORD_FILENAME}: run has no scalars_csv")
    file = Path(record_dir) / record.scalars_csv
    if not file.is_file():
        raise RecordError(f"{file}: scalars file named by the record does not exist")
    return pd.read_csv(file)


# --------------------------------------------------------------------------- schema


def json_schema() -> dict[str, Any]:
    """The JSON Schema of :class:`RunRecord` (what ``book/results/record.schema.json`` holds)."""
    return RunRecord.model_json_schema()


def schema_text() -> str:
    """:func:`json_schema` as the exact text stored in ``record.schema.json``."""
    return json.dumps(json_schema(), indent=2, sort_keys=True) + "\n"
