"""Reading a CI run's log and JUnit file: its stages, its tests, what the HTML build executed.

The Makefile prints ``[stage] NAME begin|end EPOCH`` around each stage of a build (``venv``,
``system-deps``, ``execute``, ``html``, ``test``); pytest writes a JUnit XML file when
``PYTEST_ADDOPTS`` asks for one (a test's time there is setup, call and teardown, so a module
fixture's cost lands on the first test that uses it); myst-nb logs, per notebook, whether the
HTML build executed it or found it in the cache. :func:`pass_summary` turns one run
(:class:`Pass`) into the summary entries of a ``ci_run`` record (``jobs.ci_run``).

No-op cases: importing does nothing; the functions read only what they are given.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

STAGES = ("venv", "system-deps", "execute", "html", "test")
INSTALL_STAGES = ("venv", "system-deps")
SLOWEST = 10
STAGE_RE = re.compile(r"^\[stage\] (?P<name>[\w-]+) (?P<edge>begin|end) (?P<t>\d+(?:\.\d+)?)\s*$")
# myst-nb's log lines in the HTML build: a notebook executed there, or found in the cache.
EXECUTED_RE = re.compile(r": Executing notebook using ")
CACHED_RE = re.compile(r": Using cached notebook: ")


@dataclass(frozen=True)
class Stage:
    """One stage of a run: its name, when it began (epoch s) and how long it took."""

    name: str
    began: float
    seconds: float | None  # None: it began and never ended (the run failed in it)


@dataclass(frozen=True)
class TestTime:
    """One test of a JUnit file: ``classname::name`` and its seconds."""

    test: str
    seconds: float


@dataclass(frozen=True)
class Junit:
    """A JUnit file's counts, total seconds and tests by time (slowest first)."""

    tests: int
    failures: int
    errors: int
    skipped: int
    seconds: float
    slowest: tuple[TestTime, ...]

    @property
    def passed(self) -> int:
        return self.tests - self.failures - self.errors - self.skipped


@dataclass
class Pass:
    """One ``bash .ci/run``: exit status, wall time, the log's lines and what they tell."""

    returncode: int
    wall_seconds: float
    lines: list[str]
    stages: list[Stage]
    junit: Junit | None
    loads: list[float] = field(default_factory=list)
    ended: float | None = None  # epoch seconds when the pass ended

    @property
    def executed_in_html(self) -> int:
        return sum(1 for line in self.lines if EXECUTED_RE.search(line))

    @property
    def cached_in_html(self) -> int:
        return sum(1 for line in self.lines if CACHED_RE.search(line))


def parse_stages(lines: Iterable[str]) -> list[Stage]:
    """The stages of a log, in the order they began; an ``end`` without a ``begin`` is ignored,
    a ``begin`` without an ``end`` has no seconds. A stage that ran twice appears twice."""
    stages: list[Stage] = []
    open_: dict[str, int] = {}
    for line in lines:
        match = STAGE_RE.match(line.strip())
        if match is None:
            continue
        name, edge, t = match["name"], match["edge"], float(match["t"])
        if edge == "begin":
            open_[name] = len(stages)
            stages.append(Stage(name, t, None))
        elif name in open_:
            i = open_.pop(name)
            stages[i] = Stage(name, stages[i].began, round(t - stages[i].began, 3))
    return stages


def stage_seconds(stages: Sequence[Stage]) -> dict[str, float]:
    """Seconds per stage name (a stage that ran more than once: the sum); unfinished ones out."""
    out: dict[str, float] = {}
    for stage in stages:
        if stage.seconds is not None:
            out[stage.name] = round(out.get(stage.name, 0.0) + stage.seconds, 3)
    return out


def read_junit(path: Path, slowest: int = SLOWEST) -> Junit:
    """Counts and the ``slowest`` tests of a pytest JUnit XML file (one or more suites)."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    counts = {k: sum(int(s.get(k, 0)) for s in suites)
              for k in ("tests", "failures", "errors", "skipped")}  # fmt: skip
    seconds = sum(float(s.get("time", 0.0)) for s in suites)
    times = [TestTime(f"{c.get('classname', '')}::{c.get('name', '')}",
                      float(c.get("time", 0.0)))
             for s in suites for c in s.iter("testcase")]  # fmt: skip
    times.sort(key=lambda t: (-t.seconds, t.test))
    return Junit(seconds=round(seconds, 3), slowest=tuple(times[:slowest]), **counts)


def pass_summary(ran: Pass, prefix: str = "") -> dict[str, float | int | str | None]:
    """The summary entries of one pass (``prefix`` ``warm.`` for the second one)."""
    stages = stage_seconds(ran.stages)
    out: dict[str, float | int | str | None] = {"ci_seconds": ran.wall_seconds,
                                                "returncode": ran.returncode}  # fmt: skip
    # A stage the run stopped in (make stops at failing tests) lasted until the pass ended.
    unfinished = [st for st in ran.stages if st.seconds is None]
    if unfinished and ran.ended is not None:
        last = unfinished[-1]
        stages[last.name] = round(stages.get(last.name, 0.0) + ran.ended - last.began, 3)
        out[f"stage.{last.name}.unfinished"] = True
    for name in STAGES:
        if name in stages:
            out[f"stage.{name}"] = stages[name]
    out["install_seconds"] = round(sum(stages.get(n, 0.0) for n in INSTALL_STAGES), 3)
    out["html.executed_notebooks"] = ran.executed_in_html
    out["html.cached_notebooks"] = ran.cached_in_html
    if ran.junit is not None:
        j = ran.junit
        out.update({"tests.passed": j.passed, "tests.failed": j.failures,
                    "tests.errors": j.errors, "tests.skipped": j.skipped,
                    "tests.seconds": j.seconds})  # fmt: skip
        for i, t in enumerate(j.slowest, start=1):
            out[f"slowest.{i:02d}"] = t.test
            out[f"slowest.{i:02d}.seconds"] = round(t.seconds, 2)
    if ran.loads:
        out["load.first"] = ran.loads[0]
        out["load.max"] = max(ran.loads)
        out["load.mean"] = round(sum(ran.loads) / len(ran.loads), 2)
    return {f"{prefix}{k}": v for k, v in out.items()}
