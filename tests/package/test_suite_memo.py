"""The suite's memo (tests/suite_memo.py): work a test makes is kept in the build's memo folder
and handed back only for identical inputs, environment and package."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import suite_memo

from mjlab_microduck.jobs import replay_memo


@pytest.fixture
def memo(tmp_path, monkeypatch):
    where = tmp_path / "memo"
    monkeypatch.setenv(replay_memo.ENV_VAR, str(where))
    return where


def _counting():
    made = []

    def make(folder: Path) -> None:
        made.append(folder)
        (folder / "out.txt").write_text(f"made {len(made)}")

    return made, make


def test_identical_work_is_made_once_and_handed_back_from_the_memo(memo):
    made, make = _counting()
    first = suite_memo.kept_folder("work", {"n": 1}, make)
    again = suite_memo.kept_folder("work", {"n": 1}, make)
    assert first == again and first.parent == memo / "tests" and len(made) == 1
    assert (again / "out.txt").read_text() == "made 1"
    other = suite_memo.kept_folder("work", {"n": 2}, make)
    assert other != first and len(made) == 2


def test_the_key_follows_the_inputs_the_environment_and_the_package(memo, monkeypatch):
    base = suite_memo.key("work", {"n": 1})
    assert suite_memo.key("work", {"n": 1}) == base
    assert suite_memo.key("work", {"n": 2}) != base
    assert suite_memo.key("other", {"n": 1}) != base
    assert suite_memo.key("work", {"n": 1}, env=dict(os.environ)) == base
    assert suite_memo.key("work", {"n": 1}, env=dict(os.environ, MICRODUCK_PROFILE="full")) != base
    # Variables nothing reads (pytest's own, the memo's folder) do not count.
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "somewhere")
    monkeypatch.setenv(replay_memo.ENV_VAR, str(memo / "elsewhere"))
    assert suite_memo.key("work", {"n": 1}) == base
    # Nor the hash seed mjlab's seed_rng leaves behind, which says which test seeded last.
    monkeypatch.setenv("PYTHONHASHSEED", "4")
    assert suite_memo.key("work", {"n": 1}) == base
    monkeypatch.setenv("PYTHONHASHSEED", "42")
    assert suite_memo.key("work", {"n": 1}) == base
    monkeypatch.setattr(suite_memo, "_package_digest", lambda: "changed")
    assert suite_memo.key("work", {"n": 1}) != base


def test_an_incomplete_folder_is_made_again(memo):
    made, make = _counting()
    folder = memo / "tests" / f"work-{suite_memo.key('work', {'n': 1})[:32]}"
    folder.mkdir(parents=True)
    (folder / "out.txt").write_text("a run that was killed")
    assert suite_memo.kept_folder("work", {"n": 1}, make) == folder
    assert (folder / "out.txt").read_text() == "made 1" and len(made) == 1


def test_without_the_memo_every_call_makes_the_work(monkeypatch):
    monkeypatch.delenv(replay_memo.ENV_VAR, raising=False)
    made, make = _counting()
    first = suite_memo.kept_folder("work", {"n": 1}, make)
    second = suite_memo.kept_folder("work", {"n": 1}, make)
    assert first != second and len(made) == 2


def test_a_command_runs_once_in_its_folder_and_a_changed_file_runs_it_again(memo, tmp_path):
    script = tmp_path / "script.py"
    script.write_text("import pathlib, random\npathlib.Path('left').write_text('x')\n"
                      "print(random.random())\n")  # fmt: skip
    given = tmp_path / "given.txt"
    given.write_text("one")
    argv = [sys.executable, str(script)]
    first = suite_memo.run("cmd", argv, files={"given.txt": given})
    again = suite_memo.run("cmd", argv, files={"given.txt": given})
    assert first.returncode == 0 and (first.cwd / "left").is_file()
    assert (first.cwd / "given.txt").read_text() == "one"
    assert again.stdout == first.stdout and again.cwd == first.cwd  # not run again
    given.write_text("two")
    assert suite_memo.run("cmd", argv, files={"given.txt": given}).stdout != first.stdout
    script.write_text(script.read_text() + "# changed\n")
    assert suite_memo.run("cmd", argv).stdout != first.stdout
