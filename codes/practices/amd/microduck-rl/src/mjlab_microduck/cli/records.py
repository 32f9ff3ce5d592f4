"""``microduck records``: validate, verify or publish run records, or print their schema.

``validate`` checks record files against the schema; ``verify`` also checks every artifact's
SHA-256; ``publish`` copies a finished training, bench or export run into the book
(``book/results``); ``schema`` prints (or writes) the JSON schema of a record;
``chapter-times`` records how long each chapter took in the last book build
(``make chapter-times``); ``map`` rewrites the "which chapter reads which runs" section of
``book/results/README.md`` from the records; ``drive-export`` puts the export of the book's
checkpoint where the drive page reads it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Union

import tyro
from tyro.conf import Positional

from mjlab_microduck.cli._common import Refused, parse, refuse


@dataclass(frozen=True)
class Schema:
    """Print the RunRecord JSON schema (or write it atomically to --output)."""

    output: Path | None = None


@dataclass(frozen=True)
class Validate:
    """Validate record files or run folders against the schema."""

    paths: Positional[tuple[Path, ...]] = ()


@dataclass(frozen=True)
class Verify:
    """Validate run folders and check the SHA-256 of every artifact they list."""

    paths: Positional[tuple[Path, ...]] = ()


@dataclass(frozen=True)
class Publish:
    """Copy a finished training, bench or export run into the book (the destination must not
    exist)."""

    run_dir: Positional[Path]
    dest: Positional[Path]
    checkpoints: tuple[int, ...] = field(default=())
    """training runs: the checkpoint iterations to publish (slimmed), besides the last one"""


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
class Map:
    """Rewrite the README's "which chapter reads which runs" section from the run records."""

    readme: Path = Path("book/results/README.md")
    """the README holding the section between its two results-map markers"""
    results: Path | None = None
    """the folder of published runs (default: the README's folder)"""
    check: bool = False
    """write nothing; exit 1 if the section differs from what the records say"""


def _subcommands():
    return Union[  # noqa: UP007  (tyro reads the Union's members as subcommands)
        Annotated[Schema, tyro.conf.subcommand("schema")],
        Annotated[Validate, tyro.conf.subcommand("validate")],
        Annotated[Verify, tyro.conf.subcommand("verify")],
        Annotated[Publish, tyro.conf.subcommand("publish")],
        Annotated[ChapterTimes, tyro.conf.subcommand("chapter-times")],
        Annotated[Map, tyro.conf.subcommand("map")],
        Annotated[DriveExport, tyro.conf.subcommand("drive-export")],
    ]


def _check(paths: tuple[Path, ...], verify: bool) -> int:
    from mjlab_microduck.runs import records

    bad = 0
    for target in paths:
        try:
            record = records.load_record(target)
            if verify:
                records.verify_artifacts(record, records.record_path(target).parent)
        except records.RecordError as err:
            print(err, file=sys.stderr)
            bad += 1
        else:
            print(f"{records.record_path(target)}: ok ({record.kind}, {record.status})")
    return 1 if bad else 0


def _publish(request: Publish, prog: str) -> int:
    from mjlab_microduck.runs import records

    try:
        record = records.load_record(request.run_dir)
    except records.RecordError as err:
        return refuse(prog, err)
    if Path(request.dest).exists():
        return refuse(prog, f"{request.dest}: already exists; publishing never overwrites")
    if record.kind == "train":
        from mjlab_microduck.jobs import train

        published = train.publish(request.run_dir, request.dest, request.checkpoints)
    elif record.kind == "bench":
        from mjlab_microduck.jobs import bench

        published = bench.publish(request.run_dir, request.dest)
    elif record.kind == "export":
        from mjlab_microduck.jobs import export

        published = export.publish(request.run_dir, request.dest)
    else:
        return refuse(prog, f"{request.run_dir}: a {record.kind} run is not published this way")
    print(f"published: {Path(request.dest) / records.RECORD_FILENAME} ({published.run_id})")
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


def _drive_export(request: DriveExport, prog: str) -> int:
    # The book's drive page reads what this writes; like `map`, it reads records (and exports
    # only when no published export of the book's checkpoint exists).
    from mjlab_microduck.book import drive

    try:
        folder = drive.write_drive_files(request.dest, request.results)
    except (OSError, ValueError) as err:  # no checkpoint, a bad record, a failed export
        return refuse(prog, err)
    about = json.loads((Path(request.dest) / drive.ABOUT_FILENAME).read_text())
    print(f"{request.dest}: {about['label']}, from {folder}")
    return 0


def main(argv: list[str] | None = None, prog: str = "microduck records") -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        command = parse(_subcommands(), argv, prog, description=__doc__)
        if isinstance(command, (Validate, Verify)) and not command.paths:
            raise Refused("give at least one record file or run folder")
    except Refused as err:
        return refuse(prog, err)
    if isinstance(command, Schema):
        from mjlab_microduck.runs import records

        if command.output is not None:
            records.atomic_write_text(command.output, records.schema_text())
        else:
            sys.stdout.write(records.schema_text())
        return 0
    if isinstance(command, Publish):
        return _publish(command, prog)
    if isinstance(command, ChapterTimes):
        return _chapter_times(command, prog)
    if isinstance(command, Map):
        return _map(command, prog)
    if isinstance(command, DriveExport):
        return _drive_export(command, prog)
    return _check(command.paths, verify=isinstance(command, Verify))
