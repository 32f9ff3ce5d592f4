"""Timing a cold CI run (mjlab_microduck.jobs.ci_run, `microduck records ci-run`) on a tiny
synthetic repository: its `.ci/run` prints the Makefile's stage lines with fixed times, runs a
real pytest session of three tests and leaves an execution cache of two chapters, so every
number of the record can be checked against what the run did."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from book_fakes import MYST_FRONT_MATTER

from mjlab_microduck.cli import main
from mjlab_microduck.jobs import ci_run
from mjlab_microduck.runs import records

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="1" failures="1" skipped="2"
 tests="7" time="61.5" timestamp="2026-12-01T20:00:00" hostname="vm">
<testcase classname="tests.jobs.test_a" name="test_fast" time="0.012"/>
<testcase classname="tests.jobs.test_a" name="test_slow[x]" time="40.25"/>
<testcase classname="tests.book.test_b" name="test_mid" time="12.5"><failure message="no"/>
</testcase>
<testcase classname="tests.book.test_b" name="test_skip" time="0.001"><skipped/></testcase>
<testcase classname="tests.book.test_b" name="test_skip2" time="0.001"><skipped/></testcase>
<testcase classname="tests.book.test_b" name="test_err" time="3.0"><error message="e"/></testcase>
<testcase classname="tests.runs.test_c" name="test_ok" time="5.75"/>
</testsuite></testsuites>
"""

# What the fake repository's .ci/run runs: a pytest session of three tests (one sleeps, one
# is skipped) and, as the book build would, an execution cache of its two chapters.
FILL_CACHE = """
import sys
import nbformat as nbf
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn

BANNER = ("profile=ci | backend=cpu | device=Test CPU | date=2026-12-01 10:00 UTC | "
          "commit=abc1234\\n")
cache = get_cache("_build/.jupyter_cache")
for name, seconds in (("01_first", 12.5), ("02_second", 3.25)):
    path = f"notebooks/{name}.md"
    cache.add_nb_to_project(path, read_data={"name": "jupytext", "type": "plugin"})
    import jupytext
    nb = jupytext.read(path)
    code = next(c for c in nb.cells if c.cell_type == "code")
    code.outputs = [nbf.v4.new_output("stream", name="stdout", text=BANNER)]
    import os
    cache.cache_notebook_bundle(CacheBundleIn(nb, os.path.abspath(path),
        data={"execution_seconds": seconds, "execution_jobs": 2}),
        check_validity=False, overwrite=True)
"""
TESTS = """
import time
import pytest

def test_sleeps():
    time.sleep(0.3)

def test_quick():
    assert 1 + 1 == 2

@pytest.mark.skip(reason="shown as skipped")
def test_skipped():
    pass
"""
CHAPTER = MYST_FRONT_MATTER + """
# {name}

```{{code-cell}} ipython3
print("banner of {name}")
```
"""


def fake_repo(root: Path, exit_code: int = 0) -> Path:
    """A git repository whose .ci/run looks, to the job, like `make test` on a cold clone."""
    python = sys.executable
    run = f"""#!/usr/bin/env bash
    set -euo pipefail
    cd "$(dirname "${{BASH_SOURCE[0]}}")/.."
    echo "CI=$CI PYTHONPATH=${{PYTHONPATH:-unset}}"
    echo "HOME=$HOME holds $(ls -A "$HOME" | wc -l) entries; XDG_CACHE_HOME=${{XDG_CACHE_HOME:-no}}"
    touch "$HOME/.cache-of-a-pass"
    echo "[stage] venv begin 1000.0"
    echo "[stage] venv end 1100.5"
    echo "[stage] system-deps begin 1100.5"
    echo "[stage] system-deps end 1101.0"
    if [ -d _build ]; then echo "warm: the book is built"; else
    echo "[stage] execute begin 1101.0"
    {python} fill_cache.py
    echo "[stage] execute end 1341.25"
    echo "[stage] html begin 1341.25"
    echo "$PWD/notebooks/01_first.md: Using cached notebook: ID=1 [mystnb]"
    echo "$PWD/notebooks/02_second.md: Using cached notebook: ID=2 [mystnb]"
    echo "[stage] html end 1400.0"
    fi
    echo "[stage] test begin 1400.0"
    {python} -m pytest -q -p no:cacheprovider checks
    test {exit_code} = 0 || {{ echo "something broke"; exit {exit_code}; }}
    echo "[stage] test end 1500.0"
    """
    (root / ".ci").mkdir(parents=True)
    (root / ".ci" / "run").write_text(textwrap.dedent(run))
    (root / "fill_cache.py").write_text(FILL_CACHE)
    (root / "checks").mkdir()
    (root / "checks" / "test_checks.py").write_text(TESTS)
    (root / "notebooks").mkdir()
    for name in ("01_first", "02_second"):
        (root / "notebooks" / f"{name}.md").write_text(CHAPTER.format(name=name))
    (root / ".gitignore").write_text("_build/\n")
    git = ["git", "-C", str(root), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "fake"], check=True)
    return root


# ----------------------------------------------------------------------------- reading


def test_stages_are_read_from_the_makefiles_lines():
    lines = ["noise", "[stage] venv begin 10.0", "pip output", "[stage] venv end 15.25",
             "[stage] test end 99.0",  # an end without a begin: ignored
             "[stage] execute begin 20.0", "[stage] html begin 30.0", "[stage] html end 31.5",
             "[stage] html begin 40.0", "[stage] html end 41.0"]  # fmt: skip
    stages = ci_run.parse_stages(lines)
    assert [(s.name, s.began, s.seconds) for s in stages] == [
        ("venv", 10.0, 5.25),
        ("execute", 20.0, None),
        ("html", 30.0, 1.5),
        ("html", 40.0, 1.0),
    ]
    assert ci_run.stage_seconds(stages) == {"venv": 5.25, "html": 2.5}


def test_a_stage_the_run_stopped_in_lasts_until_the_run_ended():
    lines = ["[stage] execute begin 100.0", "[stage] execute end 400.0",
             "[stage] test begin 400.0", "5 failed, 1058 passed in 280.0s"]  # fmt: skip
    ran = ci_run.Pass(returncode=2, wall_seconds=700.0, lines=lines,
                      stages=ci_run.parse_stages(lines), junit=None, ended=682.5)  # fmt: skip
    summary = ci_run.pass_summary(ran)
    assert (summary["stage.execute"], summary["stage.test"]) == (300.0, 282.5)
    assert summary["stage.test.unfinished"] is True and "stage.execute.unfinished" not in summary
    unknown_end = ci_run.Pass(returncode=2, wall_seconds=700.0, lines=lines,
                              stages=ci_run.parse_stages(lines), junit=None)  # fmt: skip
    assert "stage.test" not in ci_run.pass_summary(unknown_end)


def test_junit_counts_and_the_slowest_tests(tmp_path):
    (tmp_path / "j.xml").write_text(JUNIT)
    junit = ci_run.read_junit(tmp_path / "j.xml", slowest=3)
    assert (junit.tests, junit.failures, junit.errors, junit.skipped, junit.passed) == (
        7,
        1,
        1,
        2,
        3,
    )
    assert junit.seconds == 61.5
    assert [(t.test, t.seconds) for t in junit.slowest] == [
        ("tests.jobs.test_a::test_slow[x]", 40.25), ("tests.book.test_b::test_mid", 12.5),
        ("tests.runs.test_c::test_ok", 5.75)]  # fmt: skip


def test_the_child_gets_cis_environment_without_the_callers_venv(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    env = ci_run.child_env(tmp_path / "j.xml", {
        "PATH": f"{venv / 'bin'}:/usr/bin:/bin", "PYTHONPATH": "/src", "VIRTUAL_ENV": str(venv),
        "PYTEST_ADDOPTS": "-x", "HOME": "/root", "MICRODUCK_REPLAY_MEMO": "/x/memo"})  # fmt: skip
    assert env == {"PATH": "/usr/bin:/bin", "CI": "true", "HOME": "/root",
                   "PYTEST_ADDOPTS": f"-x --junitxml={tmp_path / 'j.xml'}"}  # fmt: skip


def test_the_junit_file_is_named_by_an_absolute_path(tmp_path, monkeypatch):
    # `make ci-times` passes book/results/cpu_ci_run.new: relative to the caller, not to the
    # clone the tests run in, where the file's folder would become a stray results folder.
    monkeypatch.chdir(tmp_path)
    env = ci_run.child_env(Path("book/results/x.partial/junit.xml"), {"PATH": "/bin"})
    assert env["PYTEST_ADDOPTS"] == f"--junitxml={tmp_path}/book/results/x.partial/junit.xml"


# ----------------------------------------------------------------------------- a whole run


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    base = tmp_path_factory.mktemp("ci")
    repo = fake_repo(base / "repo")
    lines: list[str] = []
    request = ci_run.CiRunRequest(out=base / "cpu_ci_run", repo=repo, warm=True, workdir=base,
                                  note=("pip's download cache was warm",))  # fmt: skip
    record = ci_run.run(request, show=lines.append)
    return base, repo, record, lines


@pytest.mark.slow
def test_the_record_has_every_stage_chapter_and_test_of_the_run(recorded):
    base, repo, record, _ = recorded
    assert record == records.load_record(base / "cpu_ci_run")
    assert record.kind == "ci_run" and record.status == "ok" and record.error is None
    s = record.summary
    assert (s["stage.venv"], s["stage.system-deps"], s["stage.execute"], s["stage.html"],
            s["stage.test"]) == (100.5, 0.5, 240.25, 58.75, 100.0)  # fmt: skip
    assert s["install_seconds"] == 101.0
    assert (s["chapter.01_first"], s["chapter.02_second"]) == (12.5, 3.25)
    assert s["chapters_seconds_total"] == 15.75 and s["execution_jobs"] == 2
    assert (s["tests.passed"], s["tests.failed"], s["tests.errors"], s["tests.skipped"]) == (
        2, 0, 0, 1)  # fmt: skip
    assert s["slowest.01"] == "checks.test_checks::test_sleeps"
    assert 0.3 <= s["slowest.01.seconds"] < 30
    assert {s["slowest.02"], s["slowest.03"]} == {"checks.test_checks::test_quick",
                                                  "checks.test_checks::test_skipped"}  # fmt: skip
    assert "slowest.04" not in s
    assert (s["html.cached_notebooks"], s["html.executed_notebooks"]) == (2, 0)
    assert s["returncode"] == 0 and 0 < s["ci_seconds"] == record.wall_seconds
    assert s["load.max"] >= s["load.first"] >= 0 and s["load.max"] >= s["load.mean"]
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    assert record.provenance.git_commit == head and record.provenance.profile == "ci"
    assert record.config["chapters"] == ["01_first", "02_second"]
    assert record.provenance.notes[0] == "pip's download cache was warm"


@pytest.mark.slow
def test_the_cold_pass_starts_in_an_empty_home_the_warm_pass_reuses(recorded):
    base, _, record, _ = recorded
    assert record.config["fresh_home"] is True
    homes = [next(line for line in (base / "cpu_ci_run" / log).read_text().splitlines()
                  if line.startswith("HOME="))
             for log in ("ci.log", "warm.log")]  # fmt: skip
    cold_home = homes[0].split()[0].removeprefix("HOME=")
    assert Path(cold_home).parent.name.startswith("microduck-ci-run-")  # beside the clone
    assert homes == [f"HOME={cold_home} holds 0 entries; XDG_CACHE_HOME=no",
                     f"HOME={cold_home} holds 1 entries; XDG_CACHE_HOME=no"]  # fmt: skip


def test_a_fresh_home_points_no_cache_elsewhere(tmp_path):
    base = {"PATH": "/bin", "HOME": "/root", "XDG_CACHE_HOME": "/var/cache/me",
            "WARP_CACHE_PATH": "/kernels", "MPLCONFIGDIR": "/mpl", "npm_config_cache": "/npm",
            "LANG": "C.UTF-8"}  # fmt: skip
    env = ci_run.child_env(tmp_path / "j.xml", base, home=tmp_path / "home")
    assert env == {"PATH": "/bin", "CI": "true", "HOME": str(tmp_path / "home"),
                   "LANG": "C.UTF-8", "PYTEST_ADDOPTS": f"--junitxml={tmp_path / 'j.xml'}"}
    assert ci_run.child_env(tmp_path / "j.xml", base)["WARP_CACHE_PATH"] == "/kernels"


@pytest.mark.slow
def test_the_warm_pass_is_recorded_beside_the_cold_one(recorded):
    _, _, record, _ = recorded
    s = record.summary
    assert record.config["warm_pass"] is True
    assert s["warm.stage.test"] == 100.0 and "warm.stage.execute" not in s
    assert s["warm.tests.passed"] == 2 and s["warm.returncode"] == 0
    assert s["warm.html.cached_notebooks"] == 0


@pytest.mark.slow
def test_the_logs_and_junit_files_are_artifacts_and_the_clone_is_gone(recorded):
    base, _, record, lines = recorded
    where = base / "cpu_ci_run"
    assert {a.path: a.kind for a in record.artifacts} == {
        "ci.log": "log",
        "junit.xml": "junit",
        "warm.log": "log",
        "warm_junit.xml": "junit",
    }
    records.verify_artifacts(record, where)
    log = (where / "ci.log").read_text()
    assert "CI=true PYTHONPATH=unset" in log  # the caller's PYTHONPATH does not leak in
    assert not list(base.glob("microduck-ci-run-*")), "the clone was not removed"
    assert not (base / "cpu_ci_run.partial").exists()
    assert any(line.startswith("[stage] execute begin") for line in lines)
    assert not any(line.startswith("CI=true") for line in lines)  # only the summaries shown
    assert any(line.startswith("2 passed, 1 skipped in ") for line in lines)


@pytest.mark.slow
def test_a_failing_run_leaves_a_failed_record_naming_its_stage(tmp_path, capsys):
    repo = fake_repo(tmp_path / "repo", exit_code=3)
    out = tmp_path / "run"
    assert main(["records", "ci-run", str(out), "--repo", str(repo), "--workdir",
                 str(tmp_path)]) == 1  # fmt: skip
    record = records.load_record(out)
    assert record.status == "failed"
    assert record.error == "bash .ci/run exited 3 in stage test; last line: something broke"
    assert record.summary["stage.test.unfinished"] is True  # up to when the run ended
    err = capsys.readouterr().err
    assert err.strip().endswith(record.error)


@pytest.mark.parametrize("case", ["out exists", "no .ci/run", "not a repository"])
def test_bad_input_is_one_line_exit_2_and_creates_nothing(tmp_path, capsys, case):
    repo = tmp_path / "repo"
    out = tmp_path / "out"
    if case == "out exists":
        fake_repo(repo)
        out.mkdir()
        message = f"{out}: already exists; a run is never written over another"
    elif case == "no .ci/run":
        repo.mkdir()
        message = f"{repo}: no .ci/run"
    else:
        (repo / ".ci").mkdir(parents=True)
        (repo / ".ci" / "run").write_text("exit 0\n")
        message = f"{repo}: git rev-parse --verify HEAD^{{commit}} failed:"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["records", "ci-run", str(out), "--repo", str(repo)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"microduck records: {message}") and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before
