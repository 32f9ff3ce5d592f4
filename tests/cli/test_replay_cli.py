"""``microduck replay``: its options (a tyro dataclass), the request they make, and refusals.

What this proves, without building an environment:

* a sample command line gives exactly the expected :class:`ReplayCli` fields, replay request
  and run name, and the defaults are the ones the argparse version had;
* bad input (a missing checkpoint argument, a non-number, an unknown schedule or camera, a
  fixed command next to a schedule, frames < 1, a bad run name, device or video size, an
  unknown option) is one line on stderr and exit status 2, before the replay runs and before
  anything is created, also through the ``microduck-replay`` alias;
* ``--help`` lists every option the argparse version had.
"""

from __future__ import annotations

import re
import sys
import typing
from pathlib import Path

import pytest

from mjlab_microduck.cli import _common, aliases
from mjlab_microduck.cli import main as microduck
from mjlab_microduck.cli import replay as replay_cli
from mjlab_microduck.jobs import replay
from mjlab_microduck.jobs.replay import ReplayCli, ReplayRequest

# Every option of the argparse version (its --help), and the flags tyro adds for the booleans.
ARGPARSE_OPTIONS = [
    "--task", "--frames", "--seed", "--lin-vel-x", "--lin-vel-y", "--ang-vel-z", "--schedule",
    "--camera", "--device", "--no-video", "--gif", "--width", "--height", "--shadows",
    "--no-shadows", "--frozen-broadphase", "--out", "--name",
]  # fmt: skip


def _parse(*argv: str) -> ReplayCli:
    return _common.parse(ReplayCli, list(argv), replay_cli.PROG)


@pytest.fixture
def no_replay(monkeypatch):
    """The replay itself may not run: every test here is about what happens before it."""

    def refuse_to_run(*args, **kwargs):
        raise AssertionError("the replay ran")

    monkeypatch.setattr(replay, "run", refuse_to_run)


def test_a_sample_command_line_gives_these_fields_request_and_name():
    args = _parse(
        "ckpts/model 7.pt", "--task", "Mjlab-Velocity-Flat-MicroDuck", "--frames", "50",
        "--seed", "3", "--lin-vel-x", "0.3", "--ang-vel-z", "-0.2", "--camera", "fixed",
        "--device", "cpu", "--no-video", "--gif", "--width", "320", "--height", "240",
        "--no-shadows", "--frozen-broadphase", "--out", "somewhere", "--name", "r1",
    )  # fmt: skip
    assert args == ReplayCli(
        checkpoint=Path("ckpts/model 7.pt"), task="Mjlab-Velocity-Flat-MicroDuck", frames=50,
        seed=3, lin_vel_x=0.3, lin_vel_y=None, ang_vel_z=-0.2, schedule=None, camera="fixed",
        device="cpu", video=False, gif=True, width=320, height=240, shadows=False,
        frozen_broadphase=True, out=Path("somewhere"), name="r1",
    )  # fmt: skip
    request, name = replay.request_from_cli(args)
    assert request == ReplayRequest(
        checkpoint=Path("ckpts/model 7.pt"), task="Mjlab-Velocity-Flat-MicroDuck", frames=50,
        seed=3, lin_vel_x=0.3, lin_vel_y=0.0, ang_vel_z=-0.2, device="cpu", video=False,
        gif=True, width=320, height=240, frozen_broadphase=True, shadows=False, schedule=None,
        camera="fixed",
    )  # fmt: skip
    assert name == "r1"


def test_the_defaults_are_the_argparse_versions():
    args = _parse("model 7.pt")
    assert (args.frames, args.lin_vel_x, args.lin_vel_y, args.ang_vel_z) == (None,) * 4
    assert (args.schedule, args.shadows, args.name) == (None, None, None)
    assert (args.out, args.video, args.gif, args.frozen_broadphase) == (
        Path("logs/replays"), True, False, False,
    )  # fmt: skip
    request, name = replay.request_from_cli(args)
    assert request == ReplayRequest(checkpoint=Path("model 7.pt"))
    assert (request.task, request.frames, request.seed) == (
        "Mjlab-Velocity-Flat-MicroDuck", 200, 42,
    )  # fmt: skip
    assert (request.lin_vel_x, request.lin_vel_y, request.ang_vel_z) == (0.15, 0.0, 0.0)
    assert (request.device, request.camera, request.width, request.height) == (
        "cpu", "follow", 480, 360,
    )  # fmt: skip
    assert request.shadows is None  # on with EGL, off with OSMesa
    assert name == "replay_model_7"  # from the file name, any odd character made '_'


@pytest.mark.parametrize(
    ("extra", "frames"), [([], 500), (["--frames", "50"], 50)], ids=["own-frames", "--frames"]
)
def test_a_named_schedule_sets_the_command_and_its_frames(extra, frames):
    request, _ = replay.request_from_cli(_parse("m.pt", "--schedule", "walk_then_turn", *extra))
    assert (request.schedule, request.frames) == (replay.WALK_THEN_TURN, frames)
    assert request.segments() == replay.WALK_THEN_TURN


def test_shadows_is_on_off_or_left_to_the_renderer():
    assert [_parse("m.pt", *flag).shadows for flag in ([], ["--shadows"], ["--no-shadows"])] == [
        None, True, False,
    ]  # fmt: skip


def test_the_schedule_choices_are_the_named_schedules():
    assert set(typing.get_args(replay.ScheduleName)) == set(replay.SCHEDULES)


BAD = [
    ([], r"missing required argument: CHECKPOINT"),
    (["m.pt", "--frames", "abc"], r"Error parsing --frames: .*'abc'"),
    (["m.pt", "--seed"], r"Missing value for argument '--seed'"),
    (["m.pt", "--schedule", "zigzag"], r"invalid choice 'zigzag' for argument '--schedule'"),
    (["m.pt", "--camera", "orbit"],
     r"invalid choice 'orbit' for argument '--camera'\. Expected one of \('follow', 'fixed'\)\."),
    (["m.pt", "--schedule", "walk_then_turn", "--lin-vel-y", "0"],
     r"--schedule sets the command; leave out --lin-vel-x, --lin-vel-y and --ang-vel-z$"),
    (["m.pt", "--frames", "0"], r"frames must be at least 1 \(got 0\)"),
    (["m.pt", "--name", "bad name"], r"run name 'bad name'"),
    (["m.pt", "--device", "gpu0"], r"device 'gpu0': expected cpu, cuda or cuda:N"),
    (["m.pt", "--width", "8"], r"video size 8x360: at least 16x16"),
    (["m.pt", "--bogus"], r"Unrecognized options: --bogus"),
]  # fmt: skip
BAD_IDS = [
    "no-checkpoint", "frames-abc", "seed-no-value", "schedule", "camera", "schedule-and-command",
    "frames-0", "name", "device", "width", "unknown-option",
]  # fmt: skip


@pytest.mark.parametrize(("argv", "message"), BAD, ids=BAD_IDS)
def test_bad_input_is_one_line_exit_2_and_nothing_created(
    argv, message, no_replay, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # the default --out, logs/replays, would be made here
    out = tmp_path / "out"
    assert replay_cli.main([*argv, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("microduck replay: ")
    assert re.search(message, lines[0]), lines[0]
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_the_microduck_command_and_the_old_alias_refuse_the_same_way(
    no_replay, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    argv = ["m.pt", "--frames", "0", "--out", str(tmp_path / "out")]
    assert microduck(["replay", *argv]) == 2
    via_command = capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["microduck-replay", *argv])
    with pytest.raises(SystemExit) as exit_:
        aliases.replay()
    assert exit_.value.code == 2
    assert via_command == "microduck replay: frames must be at least 1 (got 0)\n"
    assert capsys.readouterr().err == via_command
    assert list(tmp_path.iterdir()) == []


def test_help_lists_every_option_and_its_defaults(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")  # one line per option
    with pytest.raises(SystemExit) as exit_:
        replay_cli.main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: microduck replay [-h] [OPTIONS] CHECKPOINT")
    assert "Replay a checkpoint: metrics, MP4 and a run record." in text
    missing = [option for option in ARGPARSE_OPTIONS if option not in text]
    assert missing == []
    for default in (
        "(default: Mjlab-Velocity-Flat-MicroDuck)", "(default: 200, or the schedule's own)",
        "(default: 42)", "(default: 0.15)", "(default: one fixed command)",
        "(default: follow)", "(default: cpu)", "(default: 480)", "(default: 360)",
        "(default: on with EGL, off with OSMesa)", "(default: logs/replays)",
        "(default: replay_<checkpoint stem>)", "{walk_then_turn,tour}", "{follow,fixed}",
    ):  # fmt: skip
        assert default in text, default
