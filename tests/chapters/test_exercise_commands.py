"""Every ``microduck`` command line quoted in a chapter's exercises, or shown in a chapter's
``bash`` block, parses as printed.

Each one is read from the Exercises section of every chapter (inline code starting with
``microduck``) or from a fenced ``bash`` block (continuation lines joined), its ``...``
placeholder replaced by a published checkpoint and a ``logs/<timestamp>_<name>`` run folder by
a published run, and handed to the
same tyro parser and ``check()`` its subcommand uses, without running it: a flag that does not
exist, a value of the wrong type or a size the command refuses fails here (``--help`` cannot
tell: tyro prints the help whatever else is on the line).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import tyro

REPO = Path(__file__).resolve().parents[2]
CHECKPOINT = REPO / "book/results/h200_walker_heading_main_s42/model_999.pt"
RUN_FOLDER = REPO / "book/results/h200_walker_heading_main_s42"
INLINE_COMMAND = re.compile(r"`(microduck [^`]+)`")
FENCED_BASH = re.compile(r"```bash\n(.*?)```", re.S)
RUN_PLACEHOLDER = re.compile(r"logs/<timestamp>_\S+")


def exercise_commands() -> list[tuple[str, str]]:
    found = []
    for path in sorted((REPO / "notebooks").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        start = text.find("## Exercises")
        if start < 0:
            continue
        exercises = re.sub(r"\n\s+", " ", text[start:])  # a command may wrap across lines
        found += [(path.name, m.group(1)) for m in INLINE_COMMAND.finditer(exercises)]
    return found


def fenced_commands() -> list[tuple[str, str]]:
    """The ``microduck`` lines of every chapter's and appendix's ``bash`` blocks whose subcommand
    :func:`parser_of` knows (``microduck records ...`` has subcommands of its own)."""
    found = []
    pages = sorted((REPO / "notebooks").glob("*.md")) + sorted((REPO / "book").glob("*.md"))
    for path in pages:
        for block in FENCED_BASH.findall(path.read_text(encoding="utf-8")):
            for line in block.replace("\\\n", " ").splitlines():
                words = line.split()
                if words[:1] == ["microduck"] and words[1] != "records":
                    found.append((path.name, " ".join(words)))
    return found


def parser_of(subcommand: str):
    """The type a subcommand's tyro parse takes, as its ``cli`` module passes it."""
    from mjlab_microduck.jobs import (
        bench,
        gait_test,
        gait_watch,
        graph_check,
        recipe,
        replay,
        train,
    )
    from mjlab_microduck.runtime import contact_check, doctor, ipc_probe

    return {
        "train": train.TrainRequest,
        "bench": bench.BenchRequest,
        "doctor": doctor.DoctorRequest,
        "contact-check": contact_check.ContactCheckRequest,
        "graph-check": graph_check.GraphCheckRequest,
        "gait-test": tyro.conf.OmitArgPrefixes[gait_test.GaitTestCli],
        "gait-watch": gait_watch.GaitWatchRequest,
        "probe": ipc_probe.ProbeRequest,
        "recipe": recipe.RecipeRequest,
        "replay": replay.ReplayCli,
    }[subcommand]


def test_the_exercises_quote_commands():
    quoted = {line.split()[1] for _, line in exercise_commands()}
    assert {"train", "gait-test", "bench", "contact-check", "doctor"} <= quoted


def test_the_chapters_show_the_walker_recipe_as_shell_commands():
    shown = {line.split()[1] for chapter, line in fenced_commands() if chapter.startswith("04")}
    assert {"train", "gait-watch"} <= shown


@pytest.mark.parametrize(
    ("chapter", "line"), exercise_commands() + fenced_commands(), ids=lambda v: str(v)[:60]
)
def test_an_exercise_command_parses_as_printed(chapter, line):
    from mjlab_microduck.cli._common import Refused, parse
    from mjlab_microduck.jobs import train

    line = RUN_PLACEHOLDER.sub(str(RUN_FOLDER), line)
    words = shlex.split(line.replace("...", str(CHECKPOINT)))
    subcommand, argv = words[1], words[2:]
    # `microduck train` parses over a default request (run name "train"), as here.
    default = train.TrainRequest(name="train") if subcommand == "train" else None
    try:
        parse(parser_of(subcommand), argv, f"microduck {subcommand}", default=default)
    except (Refused, ValueError) as err:
        pytest.fail(f"{chapter}: `{line}` is refused: {err}")


def test_a_wrong_command_is_caught():
    from mjlab_microduck.cli._common import Refused, parse

    with pytest.raises(Refused, match="breakdown-envs"):
        parse(parser_of("bench"), ["--breakdown-envs", "64,1024"], "microduck bench")
