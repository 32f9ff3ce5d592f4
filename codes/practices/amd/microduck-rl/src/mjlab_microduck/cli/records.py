"""``microduck records``: validate, verify or publish run records, or print their schema.

``validate`` checks record files against the schema; ``verify`` also checks every artifact's
SHA-256; ``publish`` copies a finished training or bench run into the book (``book/results``);
``schema`` prints (or writes) the JSON schema of a record; ``chapter-times`` records how long
each chapter took in the last book build (``make chapter-times``); ``ci-run`` times a cold
``bash .ci/run`` in a fresh clone, stage by stage (``make ci-times``); ``map`` rewrites the
"which chapter reads which runs" section of ``book/results/README.md`` from the records.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Union

import tyro
from tyro.conf import Positional

from mjlab_microduck.cli._common import Refused, parse, refuse

if TYPE_CHECKING:
    from mjlab_microduck.jobs.ci_run import CiRunRequest


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
    """Copy a finished training or bench run into the book (the destination must not exist)."""

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

    return Union[  # noqa: UP007  (tyro reads the Union's members as subcommands)
        Annotated[Schema, tyro.conf.subcommand("schema")],
        Annotated[Validate, tyro.conf.subcommand("validate")],
        Annotated[Verify, tyro.conf.subcommand("verify")],
        Annotated[Publish, tyro.conf.subcommand("publish")],
        Annotated[ChapterTimes, tyro.conf.subcommand("chapter-times")],
        Annotated[CiRunRequest, tyro.conf.subcommand("ci-run")],
        Annotated[Map, tyro.conf.subcommand("map")],
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
    from mjlab_microduck.jobs.ci_run import CiRunRequest

    if isinstance(command, CiRunRequest):
        return _ci_run(command, prog)
    if isinstance(command, Map):
        return _map(command, prog)
    return _check(command.paths, verify=isinstance(command, Verify))
