"""Every ``microduck`` command line quoted in a chapter's exercises parses as printed.

Each one is read from the Exercises section of every chapter (inline code starting with
``microduck``), its ``...`` placeholder replaced by a published checkpoint, and handed to the
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
INLINE_COMMAND = re.compile(r"`(microduck [^`]+)`")


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


def parser_of(subcommand: str):
    """The type a subcommand's tyro parse takes, as its ``cli`` module passes it."""
    from mjlab_microduck.jobs import bench, gait_test, gait_watch, recipe, replay, train
    from mjlab_microduck.runtime import contact_check, doctor, ipc_probe

    return {
        "train": train.TrainRequest,
        "bench": bench.BenchRequest,
        "doctor": doctor.DoctorRequest,
        "contact-check": contact_check.ContactCheckRequest,
        "gait-test": tyro.conf.OmitArgPrefixes[gait_test.GaitTestCli],
        "gait-watch": gait_watch.GaitWatchRequest,
        "probe": ipc_probe.ProbeRequest,
        "recipe": recipe.RecipeRequest,
        "replay": replay.ReplayCli,
    }[subcommand]


def test_the_exercises_quote_commands():
    quoted = {line.split()[1] for _, line in exercise_commands()}
    assert {"train", "gait-test", "bench", "contact-check", "doctor"} <= quoted


@pytest.mark.parametrize(("chapter", "line"), exercise_commands(), ids=lambda v: str(v)[:60])
def test_an_exercise_command_parses_as_printed(chapter, line):
    from mjlab_microduck.cli._common import Refused, parse
    from mjlab_microduck.jobs import train

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
