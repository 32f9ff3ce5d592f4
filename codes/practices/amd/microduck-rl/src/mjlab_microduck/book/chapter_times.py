"""The front page's table of chapters: what each runs and how long it takes, from run records.

Problem it solves: a reader choosing between the ``ci`` and the ``full`` profile wants to
know what a chapter costs in each, and the book promises that no number on a page is typed.
So the table's times come from run records in ``book/results/``, and each row names them.

Where each column comes from:

* **ci on a small CPU**: the ``book_build`` run record :data:`CI_BUILD_RECORD`. ``make
  chapter-times`` clears the execution cache, builds the book in the ``ci`` profile and runs
  ``microduck records chapter-times`` (:mod:`mjlab_microduck.jobs.book_build`), which stores
  each chapter's execution seconds as myst-nb measured them, with the machine, its cores, the
  date and the commit the chapters printed in their banners.
* **ci budget**: the chapter's share of the ``ci`` execution time (:mod:`.budgets`); a chapter
  over twice its budget fails ``tests/book/test_chapter_budgets.py``.
* **full on one GPU**: the sum of ``wall_seconds`` over the published GPU run records of the
  work the chapter does in the ``full`` profile. :data:`CHAPTERS` says, chapter by chapter,
  what that work is and which published run did the same work: in a cell of the chapter, or
  made by ``make results`` before the build (chapters 4 and 5 read those runs rather than
  train for minutes in a cell). GPU work that no published record times is named in the
  table, and the time is then a lower bound ("at least"). The rest of a chapter (its kernel's
  start, imports, reading records, plots) is in none of these sums.

A run named in :data:`CHAPTERS` that is missing, failed, lacks a wall time or was not a
``full`` GPU run is an error, never a silent gap. ``tests/book/test_chapter_times.py`` also
ties the named runs to the sizes of ``profiles.FULL`` and to what the chapters select.

No-op cases: importing reads no file; pandas and IPython are imported inside the functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mjlab_microduck.book import budgets, results
from mjlab_microduck.runs import folds, records
from mjlab_microduck.runtime import profiles

if TYPE_CHECKING:  # heavy imports only for type checkers
    import pandas as pd

CI_BUILD_RECORD = "cpu_ci_book_build"
"""The published ``book_build`` record of the ``ci`` profile (``make chapter-times``)."""
CI_SECONDS_PREFIX = "seconds."  # as jobs.book_build writes them (a test ties the two)
BEFORE_BUILD = "before the build (`make results`)"

COLUMNS = ("chapter", "what it runs", "ci", "ci budget", "full", "source records")


@dataclass(frozen=True)
class GpuWork:
    """Work a chapter's ``full`` profile does on the GPU, and the published runs that timed it.

    ``runs`` are folder names under ``book/results`` (glob patterns allowed, e.g. a checkpoint
    series); none means no published record times this work. ``before_build`` marks work
    that ``make results`` does before the book is built, which the chapter then reads.
    """

    what: str
    runs: tuple[str, ...] = ()
    before_build: bool = False


@dataclass(frozen=True)
class Chapter:
    """One chapter: its page, what it runs, and its GPU work in the ``full`` profile.

    ``runs`` may name the ``full`` sizes as ``{smoke}``, ``{main}``, ``{resume_from}`` and
    ``{resume_to}``; they are filled in from ``profiles.FULL``. No ``full`` work means the
    chapter runs on the CPU in both profiles.
    """

    doc: str
    runs: str
    full: tuple[GpuWork, ...] = ()

    @property
    def stem(self) -> str:
        return self.doc.rsplit("/", 1)[-1]

    @property
    def number(self) -> int:
        return int(self.stem.split("_", 1)[0])


CHAPTERS: tuple[Chapter, ...] = (
    Chapter(
        "notebooks/01_setup",
        "the version check, the ROCm set-up script (dry run), the doctor, the contact check",
        (GpuWork("the doctor and the contact check"),),
    ),
    Chapter(
        "notebooks/02_compat_fixes",
        "the compatibility hooks, a dropped sphere with and without the broadphase fix "
        "(on the CPU in both profiles)",
    ),
    Chapter(
        "notebooks/03_smoke_training",
        "two smoke trainings ({smoke} in `full`)",
        (GpuWork("the smoke trainings", ("h200_smoke_64x5", "h200_smoke_256x5")),),
    ),
    Chapter(
        "notebooks/04_train_500",
        "the recipe's first stage ({main}; in `full` read from `make results`), the walker "
        "recipe's recorded runs",
        (GpuWork("the recipe's first stage", (results.RECIPE_RUN_500,), before_build=True),),
    ),
    Chapter(
        "notebooks/05_resume_1500",
        "the resume from iteration {resume_from} to {resume_to} updates (in `full` read from "
        "`make results`)",
        (GpuWork("the resume", (results.RECIPE_RUN_1500,), before_build=True),),
    ),
    Chapter(
        "notebooks/06_replay",
        "the gait test, replays of the published checkpoints, a video, a command sweep",
        (
            GpuWork("the gait test", (results.WALKER_GAIT_TEST,)),
            GpuWork("the replays", (results.RECIPE_REPLAYS,)),
            GpuWork("the video replay"),
            GpuWork("the command sweep"),
        ),
    ),
    Chapter(
        "notebooks/07_discarded_experiment",
        "two short trainings and two replays with the broadphase bug injected",
        (
            GpuWork("the two trainings"),
            GpuWork("the replays", ("h200_replay_discarded_frozen", "h200_replay_discarded_stock")),
        ),
    ),
    Chapter(
        "notebooks/08_runtime_pitfalls",
        "the interprocess-event probe, a model of the ROCm bug, provenance",
        (GpuWork("the probe", ("h200_ipc_probe_ring1",)),),
    ),
    Chapter(
        "notebooks/09_performance",
        "the benchmark harness at its quick size",
        (GpuWork("the quick benchmark"),),
    ),
    Chapter(
        "notebooks/10_multi_gpu",
        "a short training on every visible GPU (one process on a CPU)",
        (GpuWork("the short training"),),
    ),
    Chapter(
        "notebooks/11_time_to_walk",
        "nothing live: the recorded runs of the walker recipe and its levers",
    ),
)


# --------------------------------------------------------------------------- numbers


@dataclass(frozen=True)
class FullTime:
    """A chapter's recorded GPU time in the ``full`` profile.

    ``in_chapter_s`` / ``before_build_s`` are None when no record times that part. ``runs``
    maps each pattern of :attr:`GpuWork.runs` to the folders it matched; ``untimed`` lists the
    work no record times; ``devices`` the GPUs the records name.
    """

    in_chapter_s: float | None
    before_build_s: float | None
    runs: tuple[tuple[str, tuple[str, ...]], ...]
    untimed: tuple[str, ...]
    devices: tuple[str, ...]
    has_gpu_work: bool

    @property
    def total_s(self) -> float | None:
        parts = [s for s in (self.in_chapter_s, self.before_build_s) if s is not None]
        return sum(parts) if parts else None

    @property
    def lower_bound(self) -> bool:
        """True when some GPU work has no record: the recorded time is then at least this."""
        return bool(self.untimed)


def _is_pattern(name: str) -> bool:
    return any(c in name for c in "*?[")


def _results_root(results_root: str | Path | None) -> Path:
    return Path(results_root) if results_root is not None else results.results_root()


def _matches(root: Path, pattern: str) -> list[tuple[str, records.RunRecord]]:
    """The runs ``pattern`` names, by folder name: run folders, or else the runs a summary
    record folds under those names."""
    if _is_pattern(pattern):
        found = sorted(p.parent for p in root.glob(f"{pattern}/{records.RECORD_FILENAME}"))
    else:
        found = [root / pattern] if (root / pattern / records.RECORD_FILENAME).is_file() else []
    runs = [(where.name, records.load_record(where)) for where in found]
    if not runs:
        runs = [(run.name, run.record) for run in folds.folded_runs(root, pattern)]
    if not runs:
        raise FileNotFoundError(f"{root}: no run record matches {pattern!r}")
    return runs


def _gpu_record(name: str, record: records.RunRecord) -> records.RunRecord:
    problem = None
    if record.status != "ok":
        problem = f"status {record.status}"
    elif record.wall_seconds is None:
        problem = "no wall time"
    elif record.provenance.profile != "full":
        problem = f"profile {record.provenance.profile}, not full"
    elif record.provenance.backend == "cpu":
        problem = "a CPU run"
    if problem is not None:
        raise ValueError(f"{name}: cannot time a full-profile GPU run: {problem}")
    return record


def full_time(chapter: Chapter, results_root: str | Path | None = None) -> FullTime:
    """Sum the wall times of the published runs of ``chapter``'s ``full`` GPU work."""
    root = _results_root(results_root)
    sums: dict[bool, float] = {}
    matched: list[tuple[str, tuple[str, ...]]] = []
    untimed: list[str] = []
    devices: set[str] = set()
    for work in chapter.full:
        if not work.runs:
            untimed.append(work.what)
            continue
        for pattern in work.runs:
            runs = _matches(root, pattern)
            matched.append((pattern, tuple(name for name, _ in runs)))
            for name, found in runs:
                record = _gpu_record(name, found)
                sums[work.before_build] = sums.get(work.before_build, 0.0) + float(
                    record.wall_seconds or 0.0
                )
                devices.add(record.provenance.device_name)
    return FullTime(
        in_chapter_s=sums.get(False),
        before_build_s=sums.get(True),
        runs=tuple(matched),
        untimed=tuple(untimed),
        devices=tuple(sorted(devices)),
        has_gpu_work=bool(chapter.full),
    )


@dataclass(frozen=True)
class CiBuild:
    """The ``ci`` build record: each chapter's execution seconds and where they were measured."""

    name: str
    record: records.RunRecord
    seconds: dict[str, float]

    @property
    def cores(self) -> int | None:
        cores = self.record.config.get("cpu_cores")
        return int(cores) if cores is not None else None


def ci_build(results_root: str | Path | None = None, name: str = CI_BUILD_RECORD) -> CiBuild | None:
    """The published ``book_build`` record ``name`` (None when there is none yet)."""
    where = _results_root(results_root) / name
    if not (where / records.RECORD_FILENAME).is_file():
        return None
    record = records.load_record(where)
    if record.kind != "book_build" or record.status != "ok":
        raise ValueError(f"{name}: a {record.status} {record.kind} record, not an ok book_build")
    if record.provenance.profile != "ci" or record.provenance.backend != "cpu":
        raise ValueError(f"{name}: a {record.provenance.profile} build on "
                         f"{record.provenance.backend}, not a ci build on a CPU")  # fmt: skip
    seconds = {
        key[len(CI_SECONDS_PREFIX) :]: float(value)
        for key, value in record.summary.items()
        if key.startswith(CI_SECONDS_PREFIX) and isinstance(value, (int, float))
    }
    return CiBuild(name=name, record=record, seconds=seconds)


# --------------------------------------------------------------------------- text


def duration_text(seconds: float) -> str:
    """``64 s`` under a minute and a half, else minutes with one decimal (``7.9 min``)."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def budget_text(stem: str) -> str:
    """The budget cell: the chapter's ``ci`` budget (:mod:`~mjlab_microduck.book.budgets`)."""
    budget = budgets.BUDGETS_S.get(stem)
    return "none" if budget is None else duration_text(budget)


def full_text(time: FullTime) -> str:
    """The ``full`` cell: the recorded time, marked as a lower bound or as made beforehand."""
    if not time.has_gpu_work:
        return "no GPU run"
    parts = []
    if time.in_chapter_s is not None:
        parts.append(("at least " if time.lower_bound else "") + duration_text(time.in_chapter_s))
    if time.before_build_s is not None:
        parts.append(f"{duration_text(time.before_build_s)} {BEFORE_BUILD}")
    return " + ".join(parts) if parts else "not recorded"


def sources_text(time: FullTime) -> str:
    """The record folders behind the ``full`` cell (a series as its pattern and count)."""
    named = []
    for pattern, folders in time.runs:
        named.append(f"`{pattern}` ({len(folders)})" if _is_pattern(pattern) else f"`{pattern}`")
    text = ", ".join(named)
    if time.untimed:
        untimed = "not timed: " + ", ".join(time.untimed)
        text = f"{text}; {untimed}" if text else untimed
    return text or "none"


def _full_sizes() -> dict[str, Any]:
    full = profiles.FULL
    its = {i for _, i in full.smoke_sizes}
    if len(its) == 1:
        smoke = (" and ".join(f"{e:,}" for e, _ in full.smoke_sizes)
                 + f" environments × {its.pop():,} PPO iterations")  # fmt: skip
    else:
        smoke = " and ".join(f"{e:,} environments × {i:,} PPO iterations"
                             for e, i in full.smoke_sizes)  # fmt: skip
    return {
        "smoke": smoke,
        "main": f"{full.main_envs:,} environments × {full.main_iterations:,} PPO iterations",
        "resume_from": f"{full.main_last_iteration:,}",
        "resume_to": f"{full.main_iterations + full.resume_iterations:,}",
    }


def headers(ci: CiBuild | None, devices: Sequence[str]) -> dict[str, str]:
    """Column titles naming the machines the records name (cores of the CPU, the GPU model)."""
    cores = ci.cores if ci is not None else None
    ci_title = f"ci on {cores}-core CPU" if cores else "ci on a CPU"
    if len(set(devices)) == 1:
        full_title = f"full on one {devices[0]}"
    else:
        full_title = "full on one GPU"
    return {"ci": ci_title, "full": full_title}


def table(
    results_root: str | Path | None = None,
    chapters: Sequence[Chapter] = CHAPTERS,
    ci_record: str = CI_BUILD_RECORD,
) -> pd.DataFrame:
    """One row per chapter: what it runs, its ``ci`` and ``full`` times, the records used.

    Cells are MyST text (the chapter is a ``{doc}`` link); the time columns are titled with
    the machines the records name (:func:`headers`).
    """
    import pandas as pd

    root = _results_root(results_root)
    ci = ci_build(root, ci_record)
    sizes = _full_sizes()
    rows, devices = [], set()
    for chapter in chapters:
        time = full_time(chapter, root)
        devices.update(time.devices)
        seconds = None if ci is None else ci.seconds.get(chapter.stem)
        rows.append({
            "chapter": f"{chapter.number} {{doc}}`/{chapter.doc}`",
            "what it runs": chapter.runs.format(**sizes),
            "ci": "not recorded" if seconds is None else duration_text(seconds),
            "ci budget": budget_text(chapter.stem),
            "full": full_text(time),
            "source records": sources_text(time),
        })  # fmt: skip
    titles = headers(ci, sorted(devices))
    return pd.DataFrame(rows, columns=list(COLUMNS)).rename(columns=titles)


def caption(results_root: str | Path | None = None, ci_record: str = CI_BUILD_RECORD) -> str:
    """Where the ``ci`` column was measured, from its record (or how to measure it)."""
    ci = ci_build(results_root, ci_record)
    if ci is None:
        return (f"No `{ci_record}` record is published yet, so the ci column is empty: "
                "`make chapter-times` measures it.")  # fmt: skip
    rec, prov = ci.record, ci.record.provenance
    jobs = int(rec.config.get("execution_jobs") or 1)
    at_once = f", {jobs} at a time" if jobs > 1 else ""
    return (
        f"ci: one build of all {len(ci.seconds)} chapters{at_once}, "
        f"{duration_text(sum(ci.seconds.values()))} in all, on {rec.started_at[:10]} "
        f"({prov.machine_label}; commit {prov.git_commit[:7]}; run record `{ci.name}`). "
        "full: the sum of the wall times of the published GPU run records in the last column. "
        f"ci budget: each chapter's share of the {duration_text(budgets.TOTAL_S)} of chapter "
        f"execution that a cold CI run ({duration_text(budgets.TARGET_CI_S)} on two cores, "
        "installs, HTML and tests included) may spend; a chapter over "
        f"{budgets.FACTOR:g} times its budget fails the test suite."
    )


def markdown_table(frame: pd.DataFrame) -> str:
    """``frame`` as a MyST (GitHub-style) pipe table."""

    def cell(value: object) -> str:
        return " ".join(str(value).split()).replace("|", "\\|")

    lines = ["| " + " | ".join(cell(c) for c in frame.columns) + " |",
             "|" + "---|" * len(frame.columns)]  # fmt: skip
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(False)]
    return "\n".join(lines)


def front_page_table(results_root: str | Path | None = None):
    """The front page's table and its caption, as Markdown for the page to render as MyST."""
    from IPython.display import Markdown

    text = markdown_table(table(results_root)) + "\n\n" + caption(results_root)
    return Markdown(text)
