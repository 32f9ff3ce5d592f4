"""Summary records: many superseded runs folded into one folder, each kept as rows.

Problem it solves: a run that a later method superseded (a gait test of every 50th checkpoint
of a recipe that did not pass, a 4-s replay the gait test replaced) may still feed a table,
but a folder per run makes ``book/results`` hard to browse and heavy with files no page reads.
:func:`fold` writes one summary record (kind ``summary``) in place of such runs:

* ``sources.json``: every folded run's record exactly as it was published, under the folder
  name it was published as, with the artifacts the fold did not keep listed as ``retired``
  (path, size and SHA-256, so the file can still be identified in the history), and, for a gait
  test, its verdict without the per-case table;
* ``<kind>.csv``: the rows a reader browses, one per folded run (one per run and case for a
  gait test: seed, checkpoint, case, the verdict's numbers), each naming its source run, its
  backend, device, versions, commit, command and date;
* the artifacts kept (e.g. a replay's video) under ``<source folder>/<file>``.

Readers look a folded run up by its old folder name (:func:`folded_runs`, :func:`find_folded`);
its ``where`` is ``<fold>/<source folder>``, where its kept files lie, so code that reads a
run's files by name works on either form. :func:`gait_verdict` rebuilds a folded gait test's
verdict from its rows.

A run kept whole can also shed files no page reads (:func:`retire_artifacts`: a checkpoint
nobody replays): its record keeps everything it said, and its notes name each retired file
with its size and SHA-256.

Written all or nothing (a staging folder renamed last); a fold never replaces an existing
folder and never folds a fold; :func:`join` makes one summary of several, each run kept as
its fold has it. No-op cases: importing reads no file; pandas is imported by the
functions that build or read rows.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fnmatch
import functools
import json
import math
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mjlab_microduck.runs import names, records

if TYPE_CHECKING:  # heavy imports only for type checkers
    import pandas as pd

FOLD_KIND = "summary"
SOURCES_FILENAME = "sources.json"
VERDICT_FILENAME = "verdict.json"
ROBOTS_FILENAME = "robots.csv"
HEADING_LIMIT_KEY = "max_heading_change_rad"
NOTES_ARE_FAILURES = "notes_are_the_failures"
VERSION_ORDER = ("torch", "warp", "mujoco_warp", "mujoco", "mjlab", "rsl_rl", "python")
_MODEL_RE = r"_s(\d+)_model_(\d+)$"


class FoldError(ValueError):
    """Runs that cannot be folded (one line naming the run and why)."""


def rows_filename(kind: str) -> str:
    """The rows of a fold's runs of one kind: ``gait_test.csv``, ``replay.csv``, ..."""
    return f"{kind}.csv"


# --------------------------------------------------------------------------- rows


def provenance_row(record: records.RunRecord) -> dict[str, Any]:
    """The columns every row carries about its source run: backend, device, versions, commit,
    command and dates."""
    p = record.provenance
    versions = sorted(p.versions.items(), key=lambda kv: (
        VERSION_ORDER.index(kv[0]) if kv[0] in VERSION_ORDER else len(VERSION_ORDER), kv[0]))
    return {
        "backend": p.backend,
        "device": p.device_name,
        "driver": p.driver_version,
        "runtime": p.runtime_version,
        "versions": "; ".join(f"{k} {v}" for k, v in versions if v is not None),
        "git_commit": p.git_commit,
        "profile": p.profile,
        "command": " ".join(record.command),
        "started_at": record.started_at,
        "finished_at": record.finished_at,
        "wall_seconds": record.wall_seconds,
    }  # fmt: skip


def _scalars(mapping: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    return {f"{prefix}{k}": v for k, v in mapping.items()
            if v is None or isinstance(v, (bool, int, float, str))}  # fmt: skip


def _identity(name: str, record: records.RunRecord) -> dict[str, Any]:
    return {"run": name, "run_id": record.run_id, "kind": record.kind, "status": record.status}


def run_rows(name: str, record: records.RunRecord, extra: Mapping[str, Any]) -> list[dict]:
    """The rows of one folded run: one per case for a gait test, else one with its config and
    summary scalars (``config.*``, ``summary.*``)."""
    if record.kind == "gait_test":
        return _gait_rows(name, record, extra)
    return [{**_identity(name, record), **_scalars(record.config, "config."),
             **_scalars(record.summary, "summary."), **provenance_row(record)}]  # fmt: skip


def training_seed_and_iteration(name: str) -> tuple[int | None, int | None]:
    """``(42, 550)`` from a gait test published as ``..._s42_model_550``; Nones otherwise."""
    import re

    match = re.search(_MODEL_RE, name)
    return (int(match.group(1)), int(match.group(2))) if match else (None, None)


def _gait_rows(name: str, record: records.RunRecord, extra: Mapping[str, Any]) -> list[dict]:
    verdict = extra["verdict"]
    seed, iteration = training_seed_and_iteration(name)
    checkpoint = record.config.get("checkpoint")
    head = {
        **_identity(name, record),
        "training_seed": seed,
        "iteration": iteration if iteration is not None else (
            names.checkpoint_iteration(checkpoint) if checkpoint and names.is_checkpoint_name(
                checkpoint) else None),
        "task": record.config.get("task"),
        "checkpoint_sha256": record.config.get("checkpoint_sha256"),
        "verdict_passed": verdict["passed"],
        "verdict_failed_conditions": len(verdict["failures"]),
    }  # fmt: skip
    counts = extra.get("robots_per_case") or {}
    rows = []
    for case in extra["table"]:
        row = {**head, **{f"case.{k}": v for k, v in case.items()}}
        if counts:
            row.update(counts.get(str(case["case"]), {"robots": None,
                                                      "robots_heading_within": None}))
        rows.append({**row, **provenance_row(record)})
    return rows


def robots_per_case(
    robots_csv: Path, limit: float, mode: str | None = None
) -> dict[str, dict[str, int]]:
    """Per case of a gait test's ``robots.csv``: how many robot runs, and how many kept their
    heading within ``limit`` rad (what chapter 5's share of robots holding a heading needs).
    With ``mode``, only that mode's rows count where the file says each row's mode: a test of
    both modes runs every straight case twice, once steered and once open-loop, and only the
    verdict's mode is the verdict's evidence."""
    import pandas as pd

    robots = pd.read_csv(robots_csv)
    if mode is not None and "mode" in robots.columns:
        robots = robots[robots["mode"] == mode]
    within = robots["heading_change_rad"].abs() <= limit
    out = {}
    for case, group in robots.groupby("case", sort=False):
        out[str(case)] = {"robots": int(len(group)),
                          "robots_heading_within": int(within[group.index].sum())}  # fmt: skip
    return out


# --------------------------------------------------------------------------- writing


@dataclass(frozen=True)
class Source:
    """A run folder to fold: its name, record and kind-specific extras (a gait verdict)."""

    where: Path
    record: records.RunRecord
    extra: dict[str, Any]

    @property
    def name(self) -> str:
        return self.where.name


KeepArtifact = Callable[[records.RunRecord, records.Artifact], bool]


def keep_none(record: records.RunRecord, artifact: records.Artifact) -> bool:
    return False


def keep_kinds(*kinds: str) -> KeepArtifact:
    """Keep the artifacts of these kinds (``video``), retire the rest."""

    def keep(record: records.RunRecord, artifact: records.Artifact) -> bool:
        return artifact.kind in kinds

    return keep


def keep_any(*rules: KeepArtifact) -> KeepArtifact:
    """Keep an artifact that any of ``rules`` keeps."""

    def keep(record: records.RunRecord, artifact: records.Artifact) -> bool:
        return any(rule(record, artifact) for rule in rules)

    return keep


def keep_files(sources: Mapping[str, Path], files: Iterable[str]) -> KeepArtifact:
    """Keep the artifacts named ``<run folder>/<path>`` (e.g. a checkpoint a test replays);
    ``sources`` maps each run id to its folder name. Raises :class:`FoldError` for a name
    whose run is not among the sources."""
    wanted = set(files)
    unknown = sorted(f for f in wanted if f.split("/", 1)[0] not in set(sources.values()))
    if unknown:
        raise FoldError(f"{', '.join(unknown)}: not a file of a run being folded "
                        "(give <run folder>/<path>)")  # fmt: skip

    def keep(record: records.RunRecord, artifact: records.Artifact) -> bool:
        return f"{sources.get(record.run_id)}/{artifact.path}" in wanted

    return keep


def read_source(where: str | Path, kind: str | None = None) -> Source:
    """Check one run folder for folding (an ok record whose files match it, not a fold, of
    ``kind`` when given) and read what the fold keeps of it."""
    where = Path(where)
    try:
        record = records.load_record(where)
        records.verify_artifacts(record, where)
    except records.RecordError as err:
        raise FoldError(str(err)) from None
    if record.kind == FOLD_KIND:
        raise FoldError(f"{where}: already a summary record; a fold is never folded again")
    if kind is not None and record.kind != kind:
        raise FoldError(f"{where}: a {record.kind} record, not a {kind} run")
    if record.status != "ok":
        raise FoldError(f"{where}: run status is {record.status}; only ok runs are folded")
    extra: dict[str, Any] = {}
    if record.kind == "gait_test":
        verdict_file = where / VERDICT_FILENAME
        if not verdict_file.is_file():
            raise FoldError(f"{where}: a gait test without its {VERDICT_FILENAME}")
        verdict = json.loads(verdict_file.read_text(encoding="utf-8"))
        extra["table"] = verdict.pop("table")
        extra["verdict"] = verdict
        robots = where / ROBOTS_FILENAME
        if robots.is_file() and HEADING_LIMIT_KEY in verdict.get("thresholds", {}):
            extra["robots_per_case"] = robots_per_case(
                robots, verdict["thresholds"][HEADING_LIMIT_KEY], verdict.get("mode"))
    return Source(where, record, extra)


def _check_dest(dest: Path) -> None:
    if dest.exists():
        raise FoldError(f"{dest}: already exists; a fold never replaces a folder")
    if not dest.parent.is_dir():
        raise FoldError(f"{dest.parent}: no such folder to write the fold into")
    names.check_run_name(dest.name)


def check_sources(
    sources: Sequence[str | Path], dest: str | Path, kind: str | None = None
) -> list[Source]:
    """Everything :func:`fold` refuses, checked before anything is written: no runs, a
    destination that exists or has no parent folder, two runs of one name, a run that is not
    an ok record of ``kind`` whose files match it."""
    dest = Path(dest)
    if not sources:
        raise FoldError("give at least one run folder to fold")
    _check_dest(dest)
    seen: set[str] = set()
    for where in sources:
        name = Path(where).name
        if name in seen:
            raise FoldError(f"{name}: given twice")
        if Path(where).resolve() == dest.resolve():
            raise FoldError(f"{where}: the destination cannot be folded into itself")
        seen.add(name)
    return [read_source(where, kind) for where in sources]


def _common_provenance(sources: Sequence[Source | FoldedRun], note: str) -> records.Provenance:
    first = sources[0].record.provenance
    stack = {(s.record.provenance.backend, s.record.provenance.device_name,
              s.record.provenance.driver_version, s.record.provenance.runtime_version,
              json.dumps(s.record.provenance.versions, sort_keys=True),
              s.record.provenance.profile) for s in sources}  # fmt: skip
    commits = sorted({s.record.provenance.git_commit for s in sources})
    notes = [note]
    if len(stack) > 1:
        notes.append("the folded runs ran on more than one machine or software stack; this "
                     "block is the first run's, and each row names its own")  # fmt: skip
    return first.model_copy(update={
        "git_commit": commits[0] if len(commits) == 1 else "several (each row names its own)",
        "date": min(s.record.provenance.date for s in sources),
        "notes": notes,
    })  # fmt: skip


def _summary(sources: Sequence[Source | FoldedRun]) -> dict[str, Any]:
    kinds: dict[str, int] = {}
    for s in sources:
        kinds[s.record.kind] = kinds.get(s.record.kind, 0) + 1
    summary: dict[str, Any] = {"runs": len(sources)}
    summary.update({f"{kind}_runs": n for kind, n in sorted(kinds.items())})
    gait = [s for s in sources if s.record.kind == "gait_test"]
    if gait:
        summary["gait_tests_passed"] = sum(bool(s.extra["verdict"]["passed"]) for s in gait)
        seeds = {training_seed_and_iteration(s.name)[0] for s in gait}
        summary["training_seeds"] = ", ".join(str(x) for x in sorted(x for x in seeds if x))
    return summary


def _write_rows(staging: Path, sources: Sequence[Source]) -> list[records.Artifact]:
    import pandas as pd

    by_kind: dict[str, list[dict]] = {}
    for s in sources:
        by_kind.setdefault(s.record.kind, []).extend(run_rows(s.name, s.record, s.extra))
    out = []
    for kind, rows in sorted(by_kind.items()):
        path = staging / rows_filename(kind)
        text = pd.DataFrame(rows).to_csv(index=False)
        records.atomic_write_text(path, text)
        out.append(records.artifact(path, staging, "rows"))
    return out


def fold(
    sources: Sequence[str | Path],
    dest: str | Path,
    *,
    keep: KeepArtifact = keep_none,
    kind: str | None = None,
    command: Sequence[str] = (),
    now: dt.datetime | None = None,
    fold_commit: str = "unknown",
) -> records.RunRecord:
    """Fold the run folders ``sources`` into one summary record at ``dest``, all or nothing.

    ``keep`` says which artifacts of a run stay (copied to ``<dest>/<run>/<path>``); the others
    are retired: listed with their SHA-256 in ``sources.json``, not copied. The sources are
    left as they are (the caller removes the folders the fold replaces). Raises
    :class:`FoldError` before writing anything when a source cannot be folded.
    """
    checked = check_sources(sources, dest, kind)
    dest = Path(dest)
    stamp = (now or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
    with _staged(dest) as staging:
        entries, kept_artifacts = [], []
        for s in checked:
            kept, retired = [], []
            for art in s.record.artifacts:
                if keep(s.record, art):
                    target = staging / s.name / art.path
                    records.atomic_copy(s.where / art.path, target)
                    kept.append(art)
                    kept_artifacts.append(records.artifact(target, staging, art.kind))
                else:
                    retired.append(art)
            record = s.record.model_copy(update={"artifacts": kept})
            extra = {k: v for k, v in s.extra.items() if k not in ("table", "robots_per_case")}
            failures = s.extra.get("verdict", {}).get("failures")
            if failures is not None and record.notes == "\n".join(failures):
                # A gait record's notes repeat its verdict's failures line for line: kept once.
                record = record.model_copy(update={"notes": None})
                extra[NOTES_ARE_FAILURES] = True
            if "table" in s.extra:
                extra["table_columns"] = list(s.extra["table"][0]) if s.extra["table"] else []
            entries.append({
                "folder": s.name,
                "record": record.model_dump(mode="json"),
                "retired": [a.model_dump(mode="json") for a in retired],
                **extra,
            })  # fmt: skip
        note = (f"a summary of {len(checked)} runs, folded on {stamp.date().isoformat()} at "
                f"commit {fold_commit[:12]} by `microduck records fold`; each row keeps its own "
                "run's provenance")  # fmt: skip
        artifacts = [_write_sources(staging, entries), *_write_rows(staging, checked),
                     *kept_artifacts]  # fmt: skip
        record = _summary_record(dest, checked, artifacts, command, stamp, note)
        records.write_record(record, staging)
    return record


@contextlib.contextmanager
def _staged(dest: Path) -> Iterator[Path]:
    """A staging folder beside ``dest``, renamed to it when the block ends and removed when the
    block fails: a summary is written all or nothing."""
    staging = dest.with_name(dest.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir()
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    staging.rename(dest)


def _write_sources(staging: Path, entries: list[dict]) -> records.Artifact:
    text = json.dumps({"sources": entries}, indent=1) + "\n"
    path = records.atomic_write_text(staging / SOURCES_FILENAME, text)
    return records.artifact(path, staging, "sources")


def _summary_record(
    dest: Path,
    runs: Sequence[Source | FoldedRun],
    artifacts: list[records.Artifact],
    command: Sequence[str],
    stamp: dt.datetime,
    note: str,
) -> records.RunRecord:
    walls = [s.record.wall_seconds for s in runs]
    return records.RunRecord(
        run_id=names.run_stem(dest.name, stamp),
        kind=FOLD_KIND,
        status="ok",
        command=list(command),
        config={"folded": sorted({s.record.kind for s in runs}),
                "sources": [s.name for s in runs]},
        provenance=_common_provenance(runs, note),
        started_at=min(s.record.started_at for s in runs),
        finished_at=max(s.record.finished_at or s.record.started_at for s in runs),
        wall_seconds=(round(sum(w for w in walls if w is not None), 3)
                      if all(w is not None for w in walls) else None),
        summary=_summary(runs),
        artifacts=artifacts,
        notes="The wall time is the sum of the folded runs' own wall times.",
    )  # fmt: skip


def join(
    summaries: Sequence[str | Path],
    dest: str | Path,
    *,
    command: Sequence[str] = (),
    now: dt.datetime | None = None,
    fold_commit: str = "unknown",
) -> records.RunRecord:
    """Join summary records into one at ``dest``, all or nothing: every run each of them folds
    kept as it is there (its entry in ``sources.json``, its rows, its kept files), so the
    trainings of one recipe, each folded on the machine that ran it (where its large files
    were), become the recipe's one history. Nothing is folded again. Raises :class:`FoldError`
    before writing anything for fewer than two folders, one that is not a summary record or
    whose files do not match its record, a run folded in two of them, or a ``dest`` that
    exists."""
    import pandas as pd

    dest = Path(dest)
    if len(summaries) < 2:
        raise FoldError("give at least two summary records to join")
    _check_dest(dest)
    joined: list[tuple[Path, records.RunRecord]] = []
    for where in map(Path, summaries):
        try:
            record = records.load_record(where)
            records.verify_artifacts(record, where)
        except records.RecordError as err:
            raise FoldError(str(err)) from None
        if not is_fold(record):
            raise FoldError(f"{where}: a {record.kind} record, not a summary record to join")
        joined.append((where, record))
    runs = [run for where, _ in joined for run in load_fold(where)]
    folded = [run.name for run in runs]
    twice = sorted({name for name in folded if folded.count(name) > 1})
    if twice:
        raise FoldError(f"{', '.join(twice)}: folded in more than one of them")
    stamp = (now or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc)
    with _staged(dest) as staging:
        entries, rows_files, artifacts = [], {}, []
        for where, record in joined:
            entries += json.loads((where / SOURCES_FILENAME).read_text(encoding="utf-8"))["sources"]
            for art in record.artifacts:
                if art.kind == "rows":
                    rows_files.setdefault(art.path, []).append(where / art.path)
                elif art.kind != "sources":  # a kept file, under its run's folder name
                    target = records.atomic_copy(where / art.path, staging / art.path)
                    artifacts.append(records.artifact(target, staging, art.kind))
        rows_artifacts = []
        for path, parts in sorted(rows_files.items()):
            # read as text: every value is written back exactly as its fold wrote it
            frames = [pd.read_csv(part, dtype=str, keep_default_na=False) for part in parts]
            text = pd.concat(frames, ignore_index=True).fillna("").to_csv(index=False)
            rows_artifacts.append(records.artifact(
                records.atomic_write_text(staging / path, text), staging, "rows"))  # fmt: skip
        note = (f"a summary of {len(runs)} runs, joined from {len(joined)} summary records on "
                f"{stamp.date().isoformat()} at commit {fold_commit[:12]} by `microduck records "
                "join-folds`; each row keeps its own run's provenance")  # fmt: skip
        artifacts = [_write_sources(staging, entries), *rows_artifacts, *artifacts]
        record = _summary_record(dest, runs, artifacts, command, stamp, note)
        records.write_record(record, staging)
    return record


def retire_artifacts(
    where: str | Path, paths: Sequence[str], why: str, today: dt.date | None = None
) -> records.RunRecord:
    """Remove the artifacts ``paths`` from a published run folder: the record (rewritten
    atomically) no longer lists them, its notes say which files were retired, when and why
    (size and SHA-256 each), then the files are deleted. Everything else the record says is
    kept. Refuses (:class:`FoldError`, before any change) a path the record does not list, a
    file that does not match its record, or an empty reason."""
    where = Path(where)
    if not why.strip():
        raise FoldError("say why the files are retired")
    try:
        record = records.load_record(where)
        records.verify_artifacts(record, where)
    except records.RecordError as err:
        raise FoldError(str(err)) from None
    listed = {a.path: a for a in record.artifacts}
    unknown = [p for p in paths if p not in listed]
    if unknown or not paths:
        raise FoldError(f"{where}: no artifact {', '.join(unknown) or '(none given)'} in its "
                        f"record (it lists {', '.join(listed) or 'none'})")  # fmt: skip
    day = (today or dt.datetime.now(dt.timezone.utc).date()).isoformat()
    lines = [f"Retired from the publication on {day} ({' '.join(why.split())}):"]
    lines += [f"{p} ({listed[p].bytes} bytes, sha256 {listed[p].sha256})" for p in paths]
    notes = "\n".join([record.notes, *lines] if record.notes else lines)
    kept = [a for a in record.artifacts if a.path not in paths]
    updated = record.model_copy(update={"artifacts": kept, "notes": notes})
    records.write_record(updated, where)
    for p in paths:
        (where / p).unlink()
    return updated


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class FoldedRun:
    """A run that lives on as part of a summary record.

    ``record`` is its record as published, its ``artifacts`` only those the fold kept;
    ``retired`` the others. ``where`` (``<fold>/<name>``) holds the kept files.
    """

    name: str
    fold: Path
    record: records.RunRecord
    retired: tuple[records.Artifact, ...]
    extra: dict[str, Any]

    @property
    def where(self) -> Path:
        return self.fold / self.name


def is_fold(record: records.RunRecord) -> bool:
    return record.kind == FOLD_KIND


def load_fold(where: str | Path) -> list[FoldedRun]:
    """The runs a summary record folds, in the order it lists them.

    A page's tables read the same folds many times over, so a ``sources.json`` text is parsed
    once and the result kept for the next read of the same text. The records returned are then
    shared between calls: read them, never change them.
    """
    where = Path(where)
    sources = where / SOURCES_FILENAME
    parsed = _parsed_sources(sources.read_text(encoding="utf-8"), str(sources))
    return [FoldedRun(name=name, fold=where, record=record, retired=retired, extra=extra)
            for name, record, retired, extra in parsed]  # fmt: skip


@functools.lru_cache(maxsize=256)
def _parsed_sources(
    text: str, shown: str
) -> tuple[tuple[str, records.RunRecord, tuple[records.Artifact, ...], dict[str, Any]], ...]:
    out = []
    for entry in json.loads(text)["sources"]:
        extra = {k: v for k, v in entry.items() if k not in ("folder", "record", "retired")}
        record = records.parse_record(entry["record"], shown)
        if extra.pop(NOTES_ARE_FAILURES, False):
            record = record.model_copy(update={"notes": "\n".join(extra["verdict"]["failures"])})
        retired = tuple(records.Artifact.model_validate(a) for a in entry["retired"])
        out.append((entry["folder"], record, retired, extra))
    return tuple(out)


def fold_folders(results_root: str | Path) -> list[Path]:
    """Every summary record's folder under ``results_root``, by name."""
    return [where for where, record in records.find_records(results_root) if is_fold(record)]


def folded_runs(results_root: str | Path, pattern: str = "*") -> list[FoldedRun]:
    """Every run folded under ``results_root`` whose old folder name matches ``pattern``."""
    found = []
    for where in fold_folders(results_root):
        found += [r for r in load_fold(where) if fnmatch.fnmatchcase(r.name, pattern)]
    return sorted(found, key=lambda r: r.name)


def find_folded(results_root: str | Path, name: str) -> FoldedRun | None:
    """The folded run once published as ``name``, or None."""
    found = folded_runs(results_root, name)
    return found[0] if found else None


def rows(fold: str | Path, kind: str) -> pd.DataFrame:
    """A fold's rows of one kind (empty when it folds none of that kind)."""
    import pandas as pd

    path = Path(fold) / rows_filename(kind)
    return pd.read_csv(path) if path.is_file() else pd.DataFrame()


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def gait_verdict(run: FoldedRun, table_rows: pd.DataFrame | None = None) -> dict[str, Any]:
    """A folded gait test's verdict: its fields as published, its per-case table from the rows
    (a missing value as None, and the robot counts where its ``robots.csv`` was reduced)."""
    frame = rows(run.fold, "gait_test") if table_rows is None else table_rows
    mine = frame[frame["run"] == run.name]
    columns = list(run.extra.get("table_columns") or [])
    extras = [c for c in ("robots", "robots_heading_within") if c in mine.columns]
    table = []
    for _, row in mine.iterrows():
        case = {c: _plain(row[f"case.{c}"]) for c in columns}
        case.update({c: _plain(row[c]) for c in extras})
        table.append(case)
    return {**run.extra["verdict"], "table": table}


def gait_verdicts(runs: Iterable[FoldedRun]) -> dict[str, dict[str, Any]]:
    """:func:`gait_verdict` of many folded gait tests (each fold's rows read once)."""
    cache: dict[Path, Any] = {}
    out = {}
    for run in runs:
        if run.fold not in cache:
            cache[run.fold] = rows(run.fold, "gait_test")
        out[run.name] = gait_verdict(run, cache[run.fold])
    return out
