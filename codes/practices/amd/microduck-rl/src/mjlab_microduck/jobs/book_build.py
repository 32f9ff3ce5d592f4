"""Record how long each chapter took to execute in a book build, as a run record.

Problem it solves: the front page says how long every chapter takes in the ``ci`` profile on
a small CPU, and that time must come from a measurement, never be typed. ``jupyter-book
build`` executes each chapter through myst-nb, whose execution cache (jupyter-cache, in
``_build/.jupyter_cache``) keeps, for every notebook it executed successfully, the executed
notebook and the seconds its execution took. :func:`record_build` reads those back and writes
one :class:`~mjlab_microduck.runs.records.RunRecord` of kind ``book_build``:

* ``summary``: ``seconds.<chapter>`` per chapter (the file stem, e.g. ``03_smoke_training``),
  ``seconds_total`` and ``execution_jobs`` (how many chapters executed at once: 1 when myst-nb
  ran them, more when ``microduck execute-book`` did; a chapter's seconds then include the
  time it shared the CPU with another);
* ``config``: the profile, the chapters, and the CPU cores this process may use;
* ``provenance``: this machine (CPU model, cores in ``machine_label``, versions, host, date)
  and the commit, device and profile each chapter's first cell printed in its banner
  (``book.header``) when it ran, so a cached execution from another commit, another machine
  or the ``full`` profile is refused, not mixed in;
* ``started_at`` / ``finished_at``: when the first chapter started and the last one ended.

Every chapter must have a successful cached execution that matches its current code (the
check ``tests/chapters/test_book_structure.py`` makes), all with one commit, one device and
the asked profile. ``make chapter-times`` clears the cache, builds the book in the ``ci``
profile and calls this through ``microduck records chapter-times``.

No-op cases: importing does nothing; jupyter-cache is imported inside :func:`read_build`.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mjlab_microduck.runs import names, records

KIND = "book_build"
DEFAULT_COMMAND = ("jupyter-book", "build", ".", "-W", "-n", "--keep-going")
SECONDS_PREFIX = "seconds."

# The banner of book.header: "profile=ci | backend=cpu | device=... | date=... | commit=...".
BANNER_RE = re.compile(
    r"profile=(?P<profile>\S+) \| backend=(?P<backend>.+?) \| device=(?P<device>.+?) \| "
    r"date=(?P<date>.+?) \| commit=(?P<commit>\S+)"
)


class BuildRecordError(ValueError):
    """The execution cache cannot back a measurement; the message says which chapter and why."""


@dataclass(frozen=True)
class ChapterRun:
    """One chapter's cached execution: how long it took, when it ended, what its banner said."""

    chapter: str
    seconds: float
    finished: _dt.datetime
    profile: str
    backend: str
    device: str
    commit: str
    jobs: int = 1  # how many notebooks executed at once (``execute_book``); myst-nb runs one


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity), not the host's total."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def parse_banner(text: str) -> dict[str, str] | None:
    """The fields of a chapter banner found in ``text``, or None."""
    match = BANNER_RE.search(text)
    return None if match is None else {k: v.strip() for k, v in match.groupdict().items()}


def _first_stream_text(nb) -> str:
    first = next((c for c in nb.cells if c.cell_type == "code"), None)
    if first is None:
        return ""
    return "".join(
        o.get("text", "") for o in first.get("outputs", []) if o.get("output_type") == "stream"
    )


def read_build(cache_dir: str | Path, chapters: Sequence[str | Path]) -> list[ChapterRun]:
    """Each chapter's successful cached execution in ``cache_dir``, in the order given.

    Raises :class:`BuildRecordError` naming the first chapter the cache cannot vouch for: never
    executed, its last execution failed, no cached execution matches its current code, or its
    first cell printed no banner.
    """
    from jupyter_cache import get_cache

    cache_dir = Path(cache_dir)
    if not cache_dir.is_dir():
        raise BuildRecordError(f"{cache_dir}: no execution cache; build the book first")
    cache = get_cache(str(cache_dir))
    runs = []
    for chapter in chapters:
        path = Path(chapter).resolve()
        uri = str(path)
        try:
            project = cache.get_project_record(uri)
        except KeyError:
            raise BuildRecordError(f"{path.name}: the build never executed it") from None
        if project.traceback:
            raise BuildRecordError(f"{path.name}: its last execution failed")
        cached = cache.get_cached_project_nb(uri)
        if cached is None:
            raise BuildRecordError(
                f"{path.name}: no cached execution matches its current code; rebuild"
            )
        data = cached.data or {}
        seconds = data.get("execution_seconds")
        if not isinstance(seconds, (int, float)):
            raise BuildRecordError(f"{path.name}: the cache holds no execution time")
        banner = parse_banner(_first_stream_text(cache.get_cache_bundle(cached.pk).nb))
        if banner is None:
            raise BuildRecordError(f"{path.name}: its first cell printed no banner")
        finished = cached.created
        if finished.tzinfo is None:  # jupyter-cache stores naive UTC
            finished = finished.replace(tzinfo=_dt.timezone.utc)
        runs.append(
            ChapterRun(
                chapter=path.stem,
                seconds=float(seconds),
                finished=finished,
                profile=banner["profile"],
                backend=banner["backend"],
                device=banner["device"],
                commit=banner["commit"],
                jobs=int(data.get("execution_jobs") or 1),
            )  # fmt: skip
        )
    return runs


def _one(runs: list[ChapterRun], field: str) -> str:
    values = sorted({getattr(r, field) for r in runs})
    if len(values) != 1:
        by = ", ".join(f"{r.chapter}: {getattr(r, field)}" for r in runs)
        raise BuildRecordError(
            f"the chapters ran with different {field}s ({by}); clear _build/.jupyter_cache "
            "and build again so that one build measures them all"
        )
    return values[0]


def _full_commit(commit: str, repo: Path | None) -> str:
    from mjlab_microduck.runtime import provenance

    if repo is None:
        return commit
    result = provenance.run_tool(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet",
                                  f"{commit}^{{commit}}"])  # fmt: skip
    full = (result.stdout or "").strip()
    return full if re.fullmatch(r"[0-9a-f]{40,64}", full) else commit


def build_record(
    runs: list[ChapterRun],
    profile: str = "ci",
    command: Sequence[str] = DEFAULT_COMMAND,
    cores: int | None = None,
    repo: Path | None = None,
    now: _dt.datetime | None = None,
) -> records.RunRecord:
    """The ``book_build`` record of ``runs`` (see the module docstring); no file is written.

    ``profile`` is the profile every chapter must have run with; a CPU build (``ci``) must also
    have run on the CPU, and on this machine's CPU model.
    """
    from mjlab_microduck.runtime import provenance

    if not runs:
        raise BuildRecordError("no chapter to record")
    ran_profile = _one(runs, "profile")
    if ran_profile != profile:
        raise BuildRecordError(f"the chapters ran in the {ran_profile} profile, not {profile}")
    backend = _one(runs, "backend")
    device = _one(runs, "device")
    commit = _one(runs, "commit")
    if backend != "cpu":
        raise BuildRecordError(f"the chapters ran on {backend}; only CPU builds are recorded")
    here = provenance.cpu_model()
    if device != here:
        raise BuildRecordError(
            f"the chapters ran on {device}, this machine is {here}: record on the build machine"
        )
    cores = usable_cores() if cores is None else cores
    now = now or _dt.datetime.now(_dt.timezone.utc)
    started = min(r.finished - _dt.timedelta(seconds=r.seconds) for r in runs)
    finished = max(r.finished for r in runs)
    total = sum(r.seconds for r in runs)
    head = provenance.git_commit(cwd=repo) if repo is not None else provenance.UNKNOWN
    full_commit = _full_commit(commit, repo)
    notes = []
    if head != provenance.UNKNOWN and not head.startswith(commit):
        notes.append(f"recorded at commit {head[:12]}; the chapters ran at {commit}")
    jobs = max(r.jobs for r in runs)
    if jobs > 1:
        notes.append(
            f"the chapters executed {jobs} at a time (microduck execute-book), so each "
            "shared the CPU with another; their sum is more than the build's wall time"
        )
    prov = records.Provenance(
        backend="cpu",
        device_name=device,
        arch=_machine(),
        versions=provenance.package_versions(),
        git_commit=full_commit,
        hostname=socket.gethostname() or provenance.UNKNOWN,
        date=now.isoformat(timespec="seconds"),
        profile=profile,
        machine_label=f"{cores}-core {device}, CPU only",
        notes=notes,
    )
    summary: dict[str, float | int | str | bool | None] = {
        f"{SECONDS_PREFIX}{r.chapter}": round(r.seconds, 2) for r in runs
    }
    summary["seconds_total"] = round(total, 2)
    summary["chapters"] = len(runs)
    summary["execution_jobs"] = jobs
    return records.RunRecord(
        run_id=names.run_stem(f"{profile}_book_build", finished),
        kind=KIND,
        status="ok",
        command=list(command),
        config={"profile": profile, "cpu_cores": cores, "execution_jobs": jobs,
                "chapters": [r.chapter for r in runs],
                "source": "myst-nb execution cache (_build/.jupyter_cache), execution_seconds"},
        provenance=prov,
        started_at=started.isoformat(timespec="seconds"),
        finished_at=finished.isoformat(timespec="seconds"),
        wall_seconds=round(total, 3),
        summary=summary,
        notes="wall_seconds is the sum of the chapters' execution times; the Sphinx build "
        "around them is not included",
    )  # fmt: skip


def _machine() -> str | None:
    import platform

    return platform.machine() or None


def record_build(
    cache_dir: str | Path,
    chapters: Sequence[str | Path],
    out: str | Path,
    profile: str = "ci",
    command: Sequence[str] = DEFAULT_COMMAND,
    repo: Path | None = None,
) -> records.RunRecord:
    """Read the build in ``cache_dir`` and write its record to ``out/record.json`` (atomic)."""
    record = build_record(read_build(cache_dir, chapters), profile, command, repo=repo)
    records.write_record(record, Path(out) / records.RECORD_FILENAME)
    return record
