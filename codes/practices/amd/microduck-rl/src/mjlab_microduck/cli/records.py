"""``microduck records``: validate, verify or publish run records, or print their schema.

``validate`` checks record files against the schema; ``verify`` also checks every artifact's
SHA-256 and reports a ``running`` record whose process is gone (or whose heartbeat is too old)
as ``stale``, which ``verify --fix`` marks ``interrupted`` from what is on disk; ``publish``
copies a finished training, bench or export run into the book (``book/results``); ``schema``
prints (or writes) the JSON schema of a record; ``chapter-times`` records how long each chapter
took in the last book build (``make chapter-times``); ``map`` rewrites the "which chapter reads
which runs" section of ``book/results/README.md`` from the records; ``ci-run`` times a cold
``bash .ci/run`` in a fresh clone, stage by stage (``make ci-times``); ``drive-export`` puts the
export of the book's checkpoint where the drive page reads it; ``fold`` and ``fold-gait`` fold
superseded runs into one summary record (``mjlab_microduck.runs.folds``), a gait test's verdict
as one row per case, and with ``--retire`` remove the folders it replaces; ``join-folds`` joins
summary records into one; ``retire`` removes files no page reads from a published run, naming
them in its record's notes; ``collect`` copies the publishable part of a multi-seed GPU run
while it runs (``mjlab_microduck.jobs.collect``).

Exit status: 0 when everything checked is fine, 1 when a record is invalid, changed or stale,
2 for bad input (a path that names no record, a run that cannot be published, an output that
cannot be written), refused in one line before anything is created.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Union

import tyro
from tyro.conf import Positional, arg

from mjlab_microduck.cli._common import Refused, parse, refuse
from mjlab_microduck.runs.liveness import STALE_AFTER_S

if TYPE_CHECKING:
    from mjlab_microduck.jobs.ci_run import CiRunRequest


@dataclass(frozen=True)
class Schema:
    """Print the RunRecord JSON schema (or write it atomically to --output)."""

    output: Path | None = None


@dataclass(frozen=True)
class Validate:
    """Validate record files or run folders against the schema."""

    paths: Annotated[tuple[Path, ...], Positional, arg(metavar="RECORD [RECORD ...]")] = ()
    """record files, or run folders holding a record.json"""


@dataclass(frozen=True)
class Verify:
    """Validate run folders, check the SHA-256 of every artifact they list, and report a running
    record whose process is gone, or whose heartbeat is too old, as stale."""

    paths: Annotated[tuple[Path, ...], Positional, arg(metavar="RECORD [RECORD ...]")] = ()
    """record files, or run folders holding a record.json"""
    fix: bool = False
    """mark a stale run interrupted from what is on disk (a training's last checkpoint)"""
    stale_after: float = STALE_AFTER_S
    """seconds without a heartbeat after which a running record is stale"""


@dataclass(frozen=True)
class Publish:
    """Copy a finished training, bench or export run into the book (the destination must not
    exist)."""

    run: Annotated[Path, Positional, arg(metavar="RUN")]
    """the run folder to publish: a finished (ok) training or bench run"""
    dest: Annotated[Path, Positional, arg(metavar="DEST")]
    """the folder to publish it as, e.g. book/results/<name>; must not exist"""
    checkpoints: tuple[int, ...] = field(default=())
    """training runs: the checkpoint iterations to publish, slimmed (none unless listed)"""


@dataclass(frozen=True)
class ChapterTimes:
    """Record each chapter's execution time in the last book build as a run record."""

    out: Positional[Path]
    """the run folder to write record.json into (book/results/cpu_ci_book_build)"""
    cache: Path = Path("_build/.jupyter_cache")
    """myst-nb's execution cache of the build"""
    notebooks: Path = Path("notebooks")
    """the folder of the chapters (every *.md in it is one)"""
    profile: str = "ci"
    """the profile every chapter must have run with"""


@dataclass(frozen=True)
class DriveExport:
    """Put the export of the book's checkpoint (walker.json's, else the fallback) in a folder
    for the drive page, exporting it into logs/exports first if none is published."""

    dest: Positional[Path]
    """the page's export folder (book/_extra/drive/export)"""
    results: Path | None = None
    """the folder of published runs (default: book/results)"""


@dataclass(frozen=True)
class Fold:
    """Fold finished runs into one summary record: their records in sources.json, one CSV of
    rows per kind, the artifacts of the --keep-kind kinds; the others are retired."""

    sources: Annotated[tuple[Path, ...], Positional, arg(metavar="RUN [RUN ...] DEST")] = ()
    """the run folders to fold, then the folder to write (it must not exist)"""
    keep_kind: tuple[str, ...] = ()
    """artifact kinds to keep in the fold (e.g. video); the other artifacts are retired"""
    keep_file: tuple[str, ...] = ()
    """single artifacts to keep, as <run folder>/<path> (e.g. a checkpoint a test replays)"""
    retire: bool = False
    """remove the folded run folders once the fold is written (except those --keep names)"""
    keep: tuple[str, ...] = ()
    """with --retire: folder names to leave in place although folded (a run a page plots)"""


@dataclass(frozen=True)
class FoldGait(Fold):
    """Fold gait tests (e.g. a recipe's per-checkpoint tests, ..._gait_s<seed>_model_<it>) into
    one gait-history record: one row per run and case, with the verdict."""


@dataclass(frozen=True)
class JoinFolds:
    """Join summary records (e.g. the gait histories of one recipe's trainings, each folded on
    the machine that ran it) into one: every run kept as its fold has it."""

    folds: Annotated[tuple[Path, ...], Positional, arg(metavar="FOLD FOLD [FOLD ...] DEST")] = ()
    """the summary records to join, then the folder to write (it must not exist)"""
    retire: bool = False
    """remove the joined summary folders once the new one is written"""


@dataclass(frozen=True)
class Retire:
    """Remove files no page reads (e.g. a checkpoint nobody replays) from a published run: its
    record stops listing them and its notes name each one, with its size and SHA-256."""

    run: Annotated[Path, Positional, arg(metavar="RUN")]
    """the published run folder"""
    paths: Annotated[tuple[str, ...], Positional, arg(metavar="FILE [FILE ...]")] = ()
    """the artifacts to retire, as the record lists them (e.g. model_748.pt)"""
    why: str = ""
    """the reason, kept in the record's notes"""


@dataclass(frozen=True)
class Map:
    """Rewrite the README's "which chapter reads which runs" section from the run records."""

    readme: Path = Path("book/results/README.md")
    """the README holding the section between its two results-map markers"""
    results: Path | None = None
    """the folder of published runs (default: the README's folder)"""
    check: bool = False
    """write nothing; exit 1 if the section differs from what the records say"""


def _subcommands():
    from mjlab_microduck.jobs.ci_run import CiRunRequest
    from mjlab_microduck.jobs.collect import CollectRequest

    return Union[  # noqa: UP007  (tyro reads the Union's members as subcommands)
        Annotated[Schema, tyro.conf.subcommand("schema")],
        Annotated[Validate, tyro.conf.subcommand("validate")],
        Annotated[Verify, tyro.conf.subcommand("verify")],
        Annotated[Publish, tyro.conf.subcommand("publish")],
        Annotated[ChapterTimes, tyro.conf.subcommand("chapter-times")],
        Annotated[CiRunRequest, tyro.conf.subcommand("ci-run")],
        Annotated[Map, tyro.conf.subcommand("map")],
        Annotated[DriveExport, tyro.conf.subcommand("drive-export")],
        Annotated[Fold, tyro.conf.subcommand("fold")],
        Annotated[FoldGait, tyro.conf.subcommand("fold-gait")],
        Annotated[JoinFolds, tyro.conf.subcommand("join-folds")],
        Annotated[Retire, tyro.conf.subcommand("retire")],
        Annotated[CollectRequest, tyro.conf.subcommand("collect")],
    ]


def _missing(paths: tuple[Path, ...]) -> Path | None:
    """The first path that names no record file (a record.json, or a folder holding one)."""
    from mjlab_microduck.runs import records

    return next((p for p in paths if not records.record_path(p).is_file()), None)


def _check(paths: tuple[Path, ...], verify: Verify | None = None) -> int:
    from mjlab_microduck.runs import liveness, records

    bad = 0
    for target in paths:
        try:
            record = records.load_record(target)
            run_dir = records.record_path(target).parent
            if verify is not None:
                records.verify_artifacts(record, run_dir)
        except records.RecordError as err:
            print(err, file=sys.stderr)
            bad += 1
            continue
        where = records.record_path(target)
        stale = verify is not None and liveness.stale_reason(record, verify.stale_after)
        if stale and verify.fix:
            from mjlab_microduck.jobs import recovery

            try:
                record = recovery.mark_stale_interrupted(run_dir, record, verify.stale_after)
            except (OSError, records.RecordError) as err:  # a read-only folder, a full disk
                print(f"{where}: stale, and cannot be fixed: {records.error_line(err)}",
                      file=sys.stderr)  # fmt: skip
                bad += 1
                continue
            print(f"{where}: fixed ({record.kind}, stale -> {record.status}): {record.error}")
        elif stale:
            hint = "`microduck records verify --fix` marks it interrupted"
            print(f"{where}: stale ({record.kind}, running): {stale}; {hint}", file=sys.stderr)
            bad += 1
        else:
            print(f"{where}: ok ({record.kind}, {record.status})")
    return 1 if bad else 0


def _not_publishable(record, run: Path) -> str | None:
    """Why ``record`` cannot be published (one line), or None."""
    from mjlab_microduck.runs import liveness

    if record.kind not in ("train", "bench", "export"):
        return (f"{run}: a {record.kind} run is not published this way (train, bench and export "
                "runs are)")  # fmt: skip
    if record.status == "ok":
        return None
    if record.status == "running":
        stale = liveness.stale_reason(record)
        then = (f"stale ({stale}); `microduck records verify --fix {run}` marks it interrupted"
                if stale else "wait for it to finish")  # fmt: skip
        return f"{run}: the run is still running, only finished (ok) runs are published; {then}"
    if record.status == "interrupted" and record.kind == "train":
        return (f"{run}: the run was interrupted, only finished (ok) runs are published; "
                f"`microduck train --resume-from {run}` continues it")  # fmt: skip
    return f"{run}: the run is {record.status}, only finished (ok) runs are published"


def _publish(request: Publish, prog: str) -> int:
    from mjlab_microduck.runs import records

    try:
        record = records.load_record(request.run)
    except records.RecordError as err:
        return refuse(prog, err)
    problem = _not_publishable(record, request.run)
    if problem:
        return refuse(prog, problem)
    if Path(request.dest).exists():
        return refuse(prog, f"{request.dest}: already exists; publishing never overwrites")
    if not Path(request.dest).parent.is_dir():
        return refuse(prog, f"{Path(request.dest).parent}: no such folder to publish into")
    try:
        if record.kind == "train":
            from mjlab_microduck.jobs import train

            wanted = {f"model_{it}.pt" for it in request.checkpoints}
            saved = str(record.summary.get("checkpoints", "")).split(",")
            if wanted - set(saved):
                return refuse(prog, f"{request.run}: no checkpoint "
                                    f"{', '.join(sorted(wanted - set(saved)))} in the run "
                                    f"(it saved {', '.join(saved)})")  # fmt: skip
            published = train.publish(request.run, request.dest, request.checkpoints)
        elif record.kind == "export":
            from mjlab_microduck.jobs import export

            published = export.publish(request.run, request.dest)
        else:
            from mjlab_microduck.jobs import bench

            published = bench.publish(request.run, request.dest)
    except (OSError, ValueError, RuntimeError) as err:  # publish_run leaves nothing behind
        return refuse(prog, records.error_line(err))
    print(f"published: {Path(request.dest) / records.RECORD_FILENAME} ({published.run_id})")
    return 0


def _drive_export(request: DriveExport, prog: str) -> int:
    # The book's drive page reads what this writes; like `map`, it reads records (and exports
    # only when no published export of the book's checkpoint exists).
    import json

    from mjlab_microduck.book import drive

    try:
        folder = drive.write_drive_files(request.dest, request.results)
    except (OSError, ValueError) as err:  # no checkpoint, a bad record, a failed export
        return refuse(prog, err)
    about = json.loads((Path(request.dest) / drive.ABOUT_FILENAME).read_text())
    print(f"{request.dest}: {about['label']}, from {folder}")
    return 0


def _schema(request: Schema, prog: str) -> int:
    from mjlab_microduck.runs import records

    if request.output is None:
        sys.stdout.write(records.schema_text())
        return 0
    out = Path(request.output)
    if out.is_dir():
        return refuse(prog, f"--output {out}: a folder; give the file to write")
    if not out.parent.is_dir():
        return refuse(prog, f"--output {out}: no such folder {out.parent}")
    try:
        records.atomic_write_text(out, records.schema_text())
    except OSError as err:
        return refuse(prog, f"--output {out}: cannot write: {err.strerror or err}")
    print(f"schema: {out}")
    return 0


def _chapter_times(request: ChapterTimes, prog: str) -> int:
    from mjlab_microduck.jobs import book_build

    chapters = sorted(Path(request.notebooks).glob("*.md"))
    if not chapters:
        return refuse(prog, f"{request.notebooks}: no chapter (*.md) in it")
    try:
        record = book_build.record_build(
            request.cache, chapters, request.out, profile=request.profile,
            repo=Path(request.notebooks).resolve().parent,
        )  # fmt: skip
    except book_build.BuildRecordError as err:
        return refuse(prog, err)
    for chapter in record.config["chapters"]:
        print(f"{chapter}: {record.summary[book_build.SECONDS_PREFIX + chapter]:.1f} s")
    print(
        f"recorded: {Path(request.out) / 'record.json'} ({record.provenance.machine_label}, "
        f"commit {record.provenance.git_commit[:12]})"
    )
    return 0


def _ci_run(request: CiRunRequest, prog: str) -> int:
    from mjlab_microduck.jobs import ci_run

    try:
        ci_run.check(request)
    except ci_run.CiRunError as err:
        return refuse(prog, err)
    record = ci_run.run(request, show=lambda line: print(line, flush=True))
    print(f"{ci_run.main_line(record)}; recorded: {Path(request.out) / 'record.json'}")
    if record.status != "ok":
        print(f"{prog}: {record.error}", file=sys.stderr)
        return 1
    return 0


def _collect(request, prog: str) -> int:
    from mjlab_microduck.jobs import collect

    try:
        added = collect.collect(request)  # parse() has run its check()
    except (OSError, ValueError) as err:  # a bad request, a record that does not load
        return refuse(prog, err)
    for line in added:
        print(line)
    print(f"{request.dest}: {len(added)} added")
    return 0


def _fold(request: Fold, prog: str) -> int:
    import shutil

    from mjlab_microduck.runs import folds
    from mjlab_microduck.runtime import provenance

    *sources, dest = request.sources
    kind = "gait_test" if isinstance(request, FoldGait) else None
    names = {Path(s).name for s in sources}
    unknown = sorted(set(request.keep) - names)
    if unknown:
        return refuse(prog, f"--keep {', '.join(unknown)}: not among the runs to fold")
    if request.keep and not request.retire:
        return refuse(prog, "--keep names folders to leave in place under --retire; add --retire")
    try:
        checked = folds.check_sources(sources, dest, kind)
        by_id = {s.record.run_id: s.name for s in checked}
        keep = folds.keep_any(folds.keep_kinds(*request.keep_kind),
                              folds.keep_files(by_id, request.keep_file))  # fmt: skip
        missing = sorted(set(request.keep_file) - {f"{s.name}/{a.path}" for s in checked
                                                   for a in s.record.artifacts})  # fmt: skip
        if missing:
            return refuse(prog, f"--keep-file {', '.join(missing)}: no such artifact in its "
                                "run's record")  # fmt: skip
        record = folds.fold(
            sources, dest, keep=keep, kind=kind,
            command=["microduck", "records", "fold-gait" if kind else "fold",
                     *(str(s) for s in request.sources)],
            fold_commit=provenance.git_commit(),
        )  # fmt: skip
    except (OSError, ValueError) as err:  # FoldError, a bad record, a full disk
        return refuse(prog, err)
    print(f"folded: {Path(dest) / 'record.json'} ({record.summary['runs']} runs)")
    if request.retire:
        for where in sources:
            if Path(where).name not in request.keep:
                shutil.rmtree(where)
        print(f"retired: {len(sources) - len(request.keep)} run folders"
              + (f"; kept {', '.join(request.keep)}" if request.keep else ""))  # fmt: skip
    return 0


def _join_folds(request: JoinFolds, prog: str) -> int:
    import shutil

    from mjlab_microduck.runs import folds
    from mjlab_microduck.runtime import provenance

    *summaries, dest = request.folds
    try:
        record = folds.join(summaries, dest, command=["microduck", "records", "join-folds",
                                                      *(str(f) for f in request.folds)],
                            fold_commit=provenance.git_commit())  # fmt: skip
    except (OSError, ValueError) as err:  # FoldError, a bad record, a full disk
        return refuse(prog, err)
    print(f"joined: {Path(dest) / 'record.json'} ({record.summary['runs']} runs from "
          f"{len(summaries)} summary records)")  # fmt: skip
    if request.retire:
        for where in summaries:
            shutil.rmtree(where)
        print(f"retired: {len(summaries)} summary folders")
    return 0


def _retire(request: Retire, prog: str) -> int:
    from mjlab_microduck.runs import folds

    try:
        folds.retire_artifacts(request.run, request.paths, request.why)
    except (OSError, ValueError) as err:
        return refuse(prog, err)
    print(f"{request.run}: retired {', '.join(request.paths)}")
    return 0


def _map(request: Map, prog: str) -> int:
    # The one book module the command line uses: the map of runs is the book's, and writing
    # its README section needs neither torch nor mjlab.
    from mjlab_microduck.book import results_map

    try:
        changed = results_map.update_readme(request.readme, request.results,
                                            write=not request.check)  # fmt: skip
    except (OSError, ValueError) as err:  # a missing file, an out-of-date map, a bad record
        return refuse(prog, err)
    if request.check:
        if changed:
            print(f"{request.readme}: the runs section differs from the records; "
                  "`microduck records map` rewrites it", file=sys.stderr)  # fmt: skip
            return 1
        print(f"{request.readme}: the runs section matches the records")
        return 0
    print(f"{request.readme}: " + ("runs section rewritten" if changed else
                                   "runs section already matches the records"))  # fmt: skip
    return 0


def main(argv: list[str] | None = None, prog: str = "microduck records") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        command = parse(_subcommands(), argv, prog, description=__doc__)
        if isinstance(command, (Validate, Verify)):
            if not command.paths:
                raise Refused("give at least one record file or run folder")
            missing = _missing(command.paths)
            if missing is not None:
                raise Refused(f"{missing}: no record there (a record.json, or a run folder "
                              "holding one)")  # fmt: skip
        if isinstance(command, Verify) and command.stale_after <= 0:
            raise Refused(f"--stale-after {command.stale_after}: must be more than 0 seconds")
        if isinstance(command, Fold) and len(command.sources) < 2:
            raise Refused("give the run folders to fold, then the folder to write")
        if isinstance(command, JoinFolds) and len(command.folds) < 3:
            raise Refused("give at least two summary records to join, then the folder to write")
    except (Refused, ValueError) as err:  # ValueError: a request's own check()
        return refuse(prog, err)
    from mjlab_microduck.jobs.ci_run import CiRunRequest
    from mjlab_microduck.jobs.collect import CollectRequest

    # FoldGait is a Fold
    handlers = {Fold: _fold, JoinFolds: _join_folds, Retire: _retire, Schema: _schema,
                Publish: _publish, ChapterTimes: _chapter_times, CiRunRequest: _ci_run,
                CollectRequest: _collect, Map: _map, DriveExport: _drive_export}  # fmt: skip
    for kind, handler in handlers.items():
        if isinstance(command, kind):
            return handler(command, prog)
    return _check(command.paths, command if isinstance(command, Verify) else None)
