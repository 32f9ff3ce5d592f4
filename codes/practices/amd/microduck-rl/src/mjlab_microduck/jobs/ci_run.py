"""Time a cold CI run as a new contributor meets it, and record where the time went.

Problem it solves: "the book builds and tests in 15 minutes on two cores" is a claim about
``bash .ci/run`` (``make test``) in a fresh clone, installs included; timing pieces by hand on
a warm checkout says nothing about it. :func:`run` clones the repository's current commit into
a new folder (``git clone``, then a detached checkout of ``HEAD``; uncommitted changes are not
part of it, and the record says when there were some), runs ``bash .ci/run`` there as CI does
(``CI=true``, without the caller's virtual environment or ``PYTHONPATH``, and by default with
a new, empty home folder, so that the download caches of pip, uv and npm, Warp's kernel cache
and matplotlib's font cache start empty as on a new CI machine) and reads back:

* the stages, from the ``[stage] NAME begin|end EPOCH`` lines the Makefile prints around each
  (``venv``, ``system-deps``, ``execute``, ``html``, ``test``);
* each chapter's execution seconds, from the clone's execution cache (``jobs.book_build``);
* the test counts and the ten slowest tests, from a JUnit XML file that pytest writes when
  ``PYTEST_ADDOPTS`` asks for it (a test's time there is setup, call and teardown, so a
  module fixture's cost lands on the first test that uses it);
* how many notebooks the HTML build executed itself (it should find them all cached);
* the 1-minute load average, sampled every 10 s: a busy machine shows in the record.

Nothing outside the clone reads ``../shared``, so none is laid beside it. With ``warm`` a second
``bash .ci/run`` follows in the same clone (environment, execution cache and HTML warm; also
when the first one's tests failed, not when it stopped before them) and is recorded under
``warm.``. The record (kind ``ci_run``) and its artifacts (the logs, the JUnit
files) are written into ``<out>.partial``, which is renamed to ``out`` last; the clone is
removed unless ``keep``.

Reading the log and the JUnit file is :mod:`mjlab_microduck.jobs.ci_log`'s.

No-op cases: importing does nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tyro.conf import Positional

from mjlab_microduck.jobs.ci_log import (  # noqa: F401  (the run's parts, named here too)
    INSTALL_STAGES,
    STAGES,
    Junit,
    Pass,
    Stage,
    TestTime,
    parse_stages,
    pass_summary,
    read_junit,
    stage_seconds,
)
from mjlab_microduck.runs import names, records

KIND = "ci_run"
COMMAND = ("bash", ".ci/run")
LOAD_EVERY_S = 10.0
# What is shown of a run (without verbose): the stage lines, execute-book's, pytest's last.
SHOWN_RE = re.compile(r"^(\[stage\] |execute: )|\b\d+ (passed|failed|errors?)\b.* in [\d.]+s")


class CiRunError(ValueError):
    """The run cannot be made as asked: not a git repository, no .ci/run, out exists."""


@dataclass(frozen=True)
class CiRunRequest:
    """Time ``bash .ci/run`` in a fresh clone of this repository and write a ci_run record."""

    out: Positional[Path]
    """the run folder to create (record.json, ci.log, junit.xml); must not exist"""
    repo: Path = Path(".")
    """the repository whose HEAD commit is cloned"""
    workdir: Path | None = None
    """where the clone is made (default: a new folder under the system's temporary folder)"""
    warm: bool = False
    """run bash .ci/run a second time in the same clone (everything warm) and record it too"""
    keep: bool = False
    """keep the clone afterwards (it holds a full environment: several GB)"""
    verbose: bool = False
    """print every line of the run (default: the stage lines, execute-book's, pytest's last)"""
    fresh_home: bool = True
    """run with a new, empty home folder beside the clone: every user-level cache (pip, uv,
    npm, Warp's kernels, matplotlib's fonts) starts empty, as on a new CI machine"""
    note: tuple[str, ...] = ()
    """what the record should say about the conditions (e.g. pip's download cache was warm)"""


# --------------------------------------------------------------------------- running


# Where a cache goes when it is not under the home folder; unset with a fresh home.
CACHE_VARS = ("XDG_CACHE_HOME", "WARP_CACHE_PATH", "MPLCONFIGDIR", "PIP_CACHE_DIR",
              "UV_CACHE_DIR", "npm_config_cache")  # fmt: skip


def child_env(junit: Path, base: dict[str, str] | None = None,
              home: Path | None = None) -> dict[str, str]:  # fmt: skip
    """The environment CI gives ``.ci/run``: this one with ``CI=true``, without the caller's
    virtual environment (``VIRTUAL_ENV``, its ``bin`` on ``PATH``), ``PYTHONPATH`` or replay
    memo, and with ``PYTEST_ADDOPTS`` asking pytest for a JUnit file. With ``home``, that is
    ``HOME`` and no variable of :data:`CACHE_VARS` points a cache elsewhere."""
    env = dict(os.environ if base is None else base)
    # MICRODUCK_REPLAY_MEMO: `make ci-times` runs with the checkout's memo set; a cold run
    # must not read the replays of another build.
    for key in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "MICRODUCK_REPLAY_MEMO"):
        env.pop(key, None)
    if home is not None:
        env["HOME"] = str(Path(home).absolute())
        for key in CACHE_VARS:
            env.pop(key, None)
    path = [p for p in env.get("PATH", "").split(os.pathsep)
            if p and not (Path(p).parent / "pyvenv.cfg").is_file()]  # fmt: skip
    env["PATH"] = os.pathsep.join(path)
    env["CI"] = "true"
    # Absolute: pytest runs in the clone, where a relative path would put the JUnit file (and
    # its folder) inside the clone's book/results, for the next pass's tests to find.
    junit_path = Path(junit).absolute()
    env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} --junitxml={junit_path}".strip()
    return env


def _sample_load(stop: threading.Event, loads: list[float]) -> None:
    while True:
        loads.append(round(os.getloadavg()[0], 2))
        if stop.wait(LOAD_EVERY_S):
            return


def run_pass(clone: Path, log_path: Path, junit: Path, show: Callable[[str], None] = print,
             verbose: bool = False, home: Path | None = None) -> Pass:  # fmt: skip
    """Run ``bash .ci/run`` in ``clone`` once (as :func:`child_env` says, with ``home``);
    every line goes to ``log_path``."""
    env = child_env(junit, home=home)
    loads: list[float] = []
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_load, args=(stop, loads), daemon=True)
    lines: list[str] = []
    t0 = time.monotonic()
    sampler.start()
    with log_path.open("w", encoding="utf8") as log:
        proc = subprocess.Popen(list(COMMAND), cwd=clone, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace", bufsize=1)  # fmt: skip
        assert proc.stdout is not None
        for line in proc.stdout:
            log.write(line)
            lines.append(line.rstrip("\n"))
            if verbose or SHOWN_RE.match(line):
                show(line.rstrip("\n"))
        returncode = proc.wait()
    wall = time.monotonic() - t0
    ended = time.time()
    stop.set()
    sampler.join()
    return Pass(returncode=returncode, wall_seconds=round(wall, 3), lines=lines, ended=ended,
                stages=parse_stages(lines), loads=loads,
                junit=read_junit(junit) if junit.is_file() else None)  # fmt: skip


def _git(repo: Path, *args: str) -> str:
    result = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise CiRunError(f"{repo}: git {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout.strip()


def check(request: CiRunRequest) -> None:
    """Refuse a request that cannot be run, before anything is created."""
    if Path(request.out).exists():
        raise CiRunError(f"{request.out}: already exists; a run is never written over another")
    if not (Path(request.repo) / ".ci" / "run").is_file():
        raise CiRunError(f"{request.repo}: no .ci/run")
    _git(Path(request.repo), "rev-parse", "--verify", "HEAD^{commit}")
    if request.workdir is not None and not Path(request.workdir).is_dir():
        raise CiRunError(f"{request.workdir}: no such folder for the clone")


def clone(repo: Path, where: Path) -> tuple[Path, str, bool]:
    """Clone ``repo``'s HEAD commit into ``where/repo``; return (clone, commit, dirty)."""
    commit = _git(repo, "rev-parse", "HEAD")
    dirty = bool(_git(repo, "status", "--porcelain", "--untracked-files=no"))
    target = where / "repo"
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(repo.resolve()), str(target)],
                   check=True)  # fmt: skip
    subprocess.run(["git", "-C", str(target), "checkout", "--quiet", "--detach", commit],
                   check=True)  # fmt: skip
    return target, commit, dirty


def clone_versions(clone_dir: Path) -> dict[str, str | None] | None:
    """The package versions of the clone's environment (what the run used), or None."""
    python = clone_dir / ".venv" / "bin" / "python"
    if not python.is_file():
        return None
    code = ("import json; from mjlab_microduck.runtime import provenance; "
            "print(json.dumps(provenance.package_versions()))")  # fmt: skip
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                            env=child_env(clone_dir / "unused.xml"), timeout=300)  # fmt: skip
    if result.returncode != 0:
        return None
    import json

    return json.loads(result.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- the record


def chapter_runs(clone_dir: Path) -> tuple[list, str | None]:
    """Each chapter's cached execution in the clone (``book_build.read_build``), or none and
    why (the run failed before every chapter had executed)."""
    from mjlab_microduck.jobs import book_build

    chapters = sorted((clone_dir / "notebooks").glob("*.md"))
    try:
        return book_build.read_build(clone_dir / "_build" / ".jupyter_cache", chapters), None
    except book_build.BuildRecordError as err:
        return [], f"no chapter times: {err}"


def _failure(ran: Pass) -> str | None:
    if ran.returncode == 0:
        return None
    unfinished = [s.name for s in ran.stages if s.seconds is None]
    where = f" in stage {unfinished[-1]}" if unfinished else ""
    last = next((line for line in reversed(ran.lines) if line.strip()), "")
    return f"bash .ci/run exited {ran.returncode}{where}; last line: {last.strip()[:300]}"


def _backend(runs: Sequence) -> records.Backend:
    kinds = {("hip" if "hip" in r.backend.lower() else "cuda" if "cuda" in r.backend.lower()
              else "cpu") for r in runs}  # fmt: skip
    return kinds.pop() if len(kinds) == 1 else "cpu"


def build_record(
    run_id: str,
    cold: Pass,
    warm: Pass | None,
    runs: Sequence,
    commit: str,
    started_iso: str,
    artifacts: list[records.Artifact],
    notes: Sequence[str] = (),
    versions: dict[str, str | None] | None = None,
    cores: int | None = None,
    fresh_home: bool = False,
) -> records.RunRecord:
    """The ``ci_run`` record of a cold pass (and a warm one); no file is written."""
    from mjlab_microduck.jobs import book_build
    from mjlab_microduck.runtime import provenance

    cores = book_build.usable_cores() if cores is None else cores
    summary = pass_summary(cold)
    for r in runs:
        summary[f"chapter.{r.chapter}"] = round(r.seconds, 2)
    if runs:
        summary["chapters_seconds_total"] = round(sum(r.seconds for r in runs), 2)
        summary["execution_jobs"] = max(r.jobs for r in runs)
    if warm is not None:
        summary.update(pass_summary(warm, "warm."))
    error = _failure(cold) or (_failure(warm) if warm is not None else None)
    device = provenance.cpu_model()
    profiles = sorted({r.profile for r in runs})
    prov = records.Provenance(
        backend=_backend(runs), device_name=device, arch=_machine(),
        versions=versions if versions is not None else provenance.package_versions(),
        git_commit=commit, hostname=socket.gethostname() or provenance.UNKNOWN,
        date=records.utc_now_iso(), profile=profiles[0] if len(profiles) == 1 else None,
        machine_label=f"{cores}-core {device}, CPU only", notes=list(notes),
    )  # fmt: skip
    return records.RunRecord(
        run_id=run_id, kind=KIND, status="failed" if error else "ok", error=error,
        command=list(COMMAND),
        config={"cpu_cores": cores, "fresh_clone": True, "fresh_home": fresh_home,
                "warm_pass": warm is not None,
                "stages": list(STAGES), "load_every_s": LOAD_EVERY_S,
                "chapters": [r.chapter for r in runs]},
        provenance=prov, started_at=started_iso, finished_at=records.utc_now_iso(),
        wall_seconds=cold.wall_seconds, summary=summary, artifacts=artifacts,
        notes="wall_seconds is the cold bash .ci/run alone (clone and reading back excluded); "
        "stage.* come from the Makefile's [stage] lines, chapter.* from the execution cache, "
        "tests.* and slowest.* from pytest's JUnit file, load.* from the 1-minute load average",
    )  # fmt: skip


def _machine() -> str | None:
    import platform

    return platform.machine() or None


def run(request: CiRunRequest, show: Callable[[str], None] = print) -> records.RunRecord:
    """Clone, run ``bash .ci/run`` (twice with ``warm``), write the record (module docstring)."""
    check(request)
    out = Path(request.out).absolute()  # the passes run in the clone, not here
    staging = out.with_name(out.name + ".partial")
    if staging.exists():
        shutil.rmtree(staging)
    work = Path(tempfile.mkdtemp(prefix="microduck-ci-run-", dir=request.workdir))
    staging.mkdir(parents=True)
    started_iso = records.utc_now_iso()
    notes: list[str] = list(request.note)
    warm = None
    try:
        clone_dir, commit, dirty = clone(Path(request.repo), work)
        show(f"ci-run: commit {commit[:12]} cloned into {clone_dir}")
        home = None
        if request.fresh_home:  # beside the clone, so it goes with it
            home = work / "home"
            home.mkdir()
        if dirty:
            notes.append("the work tree had uncommitted changes; the run is of the commit alone")
        cold = run_pass(clone_dir, staging / "ci.log", staging / "junit.xml", show,
                        request.verbose, home)  # fmt: skip
        show(f"ci-run: cold run {cold.wall_seconds:.0f} s, exit {cold.returncode}")
        # The warm pass also after failing tests (the build is then warm all the same); not
        # after a run that stopped before its test stage.
        if request.warm and any(st.name == "test" for st in cold.stages):
            warm = run_pass(clone_dir, staging / "warm.log", staging / "warm_junit.xml", show,
                            request.verbose, home)  # fmt: skip
            show(f"ci-run: warm run {warm.wall_seconds:.0f} s, exit {warm.returncode}")
        runs, why = chapter_runs(clone_dir)
        if why:
            notes.append(why)
        versions = clone_versions(clone_dir)
        if versions is None:
            notes.append("versions are the recording environment's: the clone's could not be read")
    finally:
        if request.keep:
            notes.append(f"clone kept at {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    kinds = {"ci.log": "log", "junit.xml": "junit", "warm.log": "log", "warm_junit.xml": "junit"}
    artifacts = [records.artifact(staging / n, staging, kind) for n, kind in kinds.items()
                 if (staging / n).is_file()]  # fmt: skip
    record = build_record(names.run_stem("ci_run"), cold, warm, runs, commit, started_iso,
                          artifacts, notes, versions, fresh_home=request.fresh_home)  # fmt: skip
    records.write_record(record, staging)
    staging.rename(out)
    return record


def main_line(record: records.RunRecord) -> str:
    """One line saying what a run took (printed at its end)."""
    s = record.summary
    parts = [f"cold {record.wall_seconds:.0f} s"]
    for name in STAGES:
        if f"stage.{name}" in s:
            parts.append(f"{name} {float(s[f'stage.{name}']):.0f} s")
    if "warm.ci_seconds" in s:
        parts.append(f"warm {float(s['warm.ci_seconds']):.0f} s")
    return f"{record.status}: " + ", ".join(parts)
