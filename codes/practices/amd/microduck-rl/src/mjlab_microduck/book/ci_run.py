"""The appendix's account of a cold CI run: where its time went, read from its run record.

Problem it solves: the book promises that a new contributor's ``bash .ci/run`` (installs,
every chapter, the HTML, the tests) takes at most :data:`~.budgets.TARGET_CI_S` on two cores,
and a second run at most :data:`~.budgets.TARGET_WARM_CI_S`. The appendix on tests shows the
published ``ci_run`` record :data:`CI_RUN_RECORD` (``make ci-times``, which runs
:mod:`mjlab_microduck.jobs.ci_run`): one table of the stages against those targets, one of the
chapters against their budgets, one of the ten slowest tests, and the machine, its load and
the commit. Without a published record the section says how to make one.

No-op cases: importing reads no file; pandas and IPython are imported inside the functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mjlab_microduck.book import budgets, results
from mjlab_microduck.book.chapter_times import duration_text, markdown_table
from mjlab_microduck.runs import records

if TYPE_CHECKING:  # heavy imports only for type checkers
    import pandas as pd

CI_RUN_RECORD = "cpu_ci_run"
"""The published ``ci_run`` record (``make ci-times``)."""
CHAPTER_PREFIX = "chapter."  # as jobs.ci_run writes a chapter's seconds
STAGE_ROWS = (
    ("environment install (`make venv`, `make system-deps`)", ("venv", "system-deps")),
    ("chapters executed (`microduck execute-book`)", ("execute",)),
    ("HTML build (`jupyter-book build`)", ("html",)),
    ("test suite (`pytest`)", ("test",)),
)


def ci_run(results_root: str | Path | None = None, name: str = CI_RUN_RECORD):
    """The published ``ci_run`` record ``name`` (None when there is none yet)."""
    root = Path(results_root) if results_root is not None else results.results_root()
    where = root / name
    if not (where / records.RECORD_FILENAME).is_file():
        return None
    record = records.load_record(where)
    if record.kind != "ci_run":
        raise ValueError(f"{name}: a {record.kind} record, not a ci_run")
    return record


def _seconds(summary, key: str) -> float | None:
    value = summary.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _verdict(seconds: float | None, target: float) -> str:
    if seconds is None:
        return "not measured"
    return "within" if seconds <= target else f"over by {duration_text(seconds - target)}"


def stage_table(record: records.RunRecord) -> pd.DataFrame:
    """One row per stage of the cold run (seconds, share), then the whole run and the warm one
    against their targets, then the stages the warm one ran."""
    import pandas as pd

    s = record.summary
    total = float(record.wall_seconds or 0.0)
    rows = []
    for label, names in STAGE_ROWS:
        parts = [_seconds(s, f"stage.{n}") for n in names]
        seconds = sum(p for p in parts if p is not None) if any(p is not None for p in parts) \
            else None  # fmt: skip
        share = f"{seconds / total:.0%}" if seconds is not None and total else ""
        time = "not run" if seconds is None else duration_text(seconds)
        if any(s.get(f"stage.{n}.unfinished") for n in names):
            time += " (the run stopped in it)"
        rows.append({"stage": label, "time": time, "share": share, "target": ""})
    rows.append({"stage": "**cold `bash .ci/run`, in all**", "time": duration_text(total),
                 "share": "100%", "target": f"{duration_text(budgets.TARGET_CI_S)}: "
                 f"{_verdict(total, budgets.TARGET_CI_S)}"})  # fmt: skip
    warm = _seconds(s, "warm.ci_seconds")
    if warm is not None:
        rows.append({"stage": "**second run, everything warm**", "time": duration_text(warm),
                     "share": "100%", "target": f"{duration_text(budgets.TARGET_WARM_CI_S)}: "
                     f"{_verdict(warm, budgets.TARGET_WARM_CI_S)}"})  # fmt: skip
        # Its stages, those it ran (a warm run installs nothing and executes no chapter).
        for label, names in STAGE_ROWS:
            parts = [p for p in (_seconds(s, f"warm.stage.{n}") for n in names) if p is not None]
            if parts:
                rows.append({"stage": f"second run: {label}", "time": duration_text(sum(parts)),
                             "share": f"{sum(parts) / warm:.0%}" if warm else "",
                             "target": ""})  # fmt: skip
    return pd.DataFrame(rows, columns=["stage", "time", "share", "target"])


def chapter_table(record: records.RunRecord) -> pd.DataFrame:
    """One row per chapter: its execution seconds in the run against its budget."""
    import pandas as pd

    s = record.summary
    rows = []
    for chapter, budget in budgets.BUDGETS_S.items():
        seconds = _seconds(s, f"{CHAPTER_PREFIX}{chapter}")
        if seconds is None:
            verdict = "not measured"
        else:
            (v,) = budgets.verdicts({chapter: seconds})
            verdict = ("within" if v.within_budget else
                       f"{v.ratio:.1f} × budget" + (" (fails)" if v.fails else ""))  # fmt: skip
        rows.append({"chapter": f"{{doc}}`/notebooks/{chapter}`",
                     "time": "not measured" if seconds is None else duration_text(seconds),
                     "budget": duration_text(budget), "against its budget": verdict})  # fmt: skip
    return pd.DataFrame(rows, columns=["chapter", "time", "budget", "against its budget"])


def slowest_table(record: records.RunRecord) -> pd.DataFrame:
    """The slowest tests of the run (setup, call and teardown), slowest first."""
    import pandas as pd

    s = record.summary
    rows = []
    for i in range(1, 100):
        test = s.get(f"slowest.{i:02d}")
        if test is None:
            break
        seconds = _seconds(s, f"slowest.{i:02d}.seconds")
        rows.append({"test": f"`{test}`",
                     "time": "" if seconds is None else duration_text(seconds)})  # fmt: skip
    return pd.DataFrame(rows, columns=["test", "time"])


def caption(record: records.RunRecord) -> str:
    """Where and when the run was measured, how busy the machine was, what the tests counted."""
    s, prov = record.summary, record.provenance
    jobs = s.get("execution_jobs")
    # Records made before the option existed ran in the caller's home folder, caches and all.
    home = (" with an empty home folder (no download or compiled-kernel cache)"
            if record.config.get("fresh_home")
            else " with the machine's own home folder (its download and compiled-kernel caches)")
    parts = [f"Run record `{CI_RUN_RECORD}`: a fresh clone of commit {prov.git_commit[:7]}{home} "
             f"on {record.started_at[:10]} ({prov.machine_label})"]  # fmt: skip
    if isinstance(jobs, int):
        chapters = _seconds(s, "chapters_seconds_total")
        parts.append(f"chapters executed {jobs} at a time, "
                     f"{duration_text(chapters or 0.0)} of execution in all")  # fmt: skip
    if "tests.passed" in s:
        parts.append(f"tests: {s['tests.passed']} passed, {s['tests.failed']} failed, "
                     f"{s['tests.skipped']} skipped")  # fmt: skip
    cores = record.config.get("cpu_cores", "?")
    for prefix, run in (("", "run"), ("warm.", "second run")):
        if f"{prefix}load.max" in s:
            parts.append(f"1-minute load average during the {run} {s[f'{prefix}load.first']} at "
                         f"the start, at most {s[f'{prefix}load.max']} (mean "
                         f"{s[f'{prefix}load.mean']}) on {cores} cores")  # fmt: skip
    parts += list(record.provenance.notes)
    if record.status != "ok":
        parts.append(f"the run FAILED: {record.error}")
    return "; ".join(parts) + "."


def appendix_section(results_root: str | Path | None = None):
    """The appendix's section as Markdown for the page to render as MyST."""
    from IPython.display import Markdown

    record = ci_run(results_root)
    if record is None:
        return Markdown(
            f"No `{CI_RUN_RECORD}` record is published yet: `make ci-times` times a cold "
            "`bash .ci/run` in a fresh clone, stage by stage, and publishes it here."
        )
    text = "\n\n".join([
        markdown_table(stage_table(record)),
        caption(record),
        markdown_table(chapter_table(record)),
        "The ten slowest tests of the run:",
        markdown_table(slowest_table(record)),
    ])  # fmt: skip
    return Markdown(text)
