"""The ``microduck`` command: a fast top-level help, one subcommand per job, one-line refusals."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mjlab_microduck.cli import COMMANDS, main

SRC = Path(__file__).resolve().parents[2] / "codes" / "practices" / "amd" / "microduck-rl" / "src"
EXPECTED = {"train", "replay", "gait-test", "gait-watch", "export", "recipe", "bench", "doctor",
            "contact-check", "graph-check", "probe", "execute-book", "records"}  # fmt: skip


def _microduck(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]))
    code = "from mjlab_microduck.cli import console_main; console_main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=60, env=env)  # fmt: skip


def test_help_lists_every_subcommand_and_answers_in_under_two_seconds():
    start = time.monotonic()
    proc = _microduck("--help")
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ")}
    assert listed == EXPECTED == set(COMMANDS)
    assert elapsed < 2.0, f"microduck --help took {elapsed:.2f} s"


def test_every_subcommand_names_a_function_that_exists():
    import ast
    import importlib.util

    for name, (target, _) in COMMANDS.items():
        module, function = target.split(":")
        spec = importlib.util.find_spec(module)
        # Read, not imported: most jobs load mjlab, which this test does not need.
        tree = ast.parse(Path(spec.origin).read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert function in defined, f"{target} (microduck {name})"


def test_an_old_console_script_name_runs_its_subcommand(monkeypatch, capsys, tmp_path):
    from mjlab_microduck.cli import aliases

    logs = tmp_path / "logs"
    argv = ["microduck-train", "--device", "gpu0", "--logs-root", str(logs)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as exit_:
        aliases.train()
    assert exit_.value.code == 2
    assert capsys.readouterr().err.startswith("microduck train: device 'gpu0'")
    assert not logs.exists()


def test_unknown_command_is_one_line_and_exit_2(capsys):
    assert main(["fly"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("microduck: unknown command 'fly'")


def test_no_command_prints_usage_and_exits_2(capsys):
    assert main([]) == 2
    assert capsys.readouterr().out.startswith("usage: microduck <command>")


def test_records_refuses_a_missing_run_folder_in_one_line(capsys, tmp_path):
    assert main(["records", "publish", str(tmp_path / "missing"), str(tmp_path / "dest")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("microduck records: ")
    assert not (tmp_path / "dest").exists()


def test_a_tyro_error_panel_becomes_its_message_line():
    from mjlab_microduck.cli._common import _first_error_line

    ascii_panel = (
        "+- Value error ------------------------+\n"
        "| Error parsing --num-envs: invalid literal for int() with base 10: 'x' |\n"
        "| ------------------------------------ |\n"
        "| Argument helptext:                   |\n"
        "+--------------------------------------+\n"
    )
    boxed = ascii_panel.replace("+", "\u256d").replace("|", "\u2502").replace("-", "\u2500")
    expected = "Error parsing --num-envs: invalid literal for int() with base 10: 'x'"
    assert _first_error_line(ascii_panel) == expected
    assert _first_error_line(boxed).startswith("Error parsing")


def test_a_wrapped_coloured_or_bare_panel_is_still_its_whole_message():
    from mjlab_microduck.cli._common import _first_error_line

    expected = (
        "invalid choice 'orbit' for argument '--camera'. Expected one of ('follow', 'fixed')."
    )
    framed = (
        "\u256d\u2500 Invalid choice \u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u256e\n"
        "\u2502 invalid choice 'orbit' for argument '--camera'. Expected one of ('follow', \u2502\n"
        "\u2502 'fixed').                                                                  \u2502\n"
        "\u2502 \u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500 \u2502\n"
        "\u2502 For full helptext, run microduck replay --help                             \u2502\n"
        "\u2570\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u2500\u256f\n"
    )
    coloured = framed.replace("invalid choice", "\x1b[1m\x1b[31minvalid choice\x1b[0m")
    coloured = "\x1b[31m" + coloured.replace("\u2502", "\x1b[31m\u2502\x1b[0m")
    bare = (
        " Invalid choice                                                              \n"
        " --------------------------------------------------------------------------- \n"
        "  invalid choice 'orbit' for argument '--camera'. Expected one of ('follow',  \n"
        "  'fixed').                                                                   \n"
        "  ---------------------------------------------------------------------------\n"
        "  For full helptext, run microduck replay --help                              \n"
        "                                                                              \n"
    )
    assert [_first_error_line(p) for p in (framed, coloured, bare)] == [expected] * 3


def test_a_missing_required_argument_is_named_without_its_help():
    from mjlab_microduck.cli._common import _first_error_line

    bare = (
        " Required options      \n"
        " --------------------- \n"
        "  Missing from microduck gait-test:         \n"
        "      --checkpoint PATH                     \n"
        "          Full or slim rsl_rl checkpoint.   \n"
        "          (required)                        \n"
        "  --------------------- \n"
        "  For full helptext, run:                   \n"
        "      microduck gait-test --help            \n"
    )
    assert _first_error_line(bare) == "missing required argument: --checkpoint PATH"


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("command", ["replay", "gait-test", "gait-watch"])
def test_a_job_without_a_running_record_stops_on_a_signal_in_one_line(
    command, signum, status, monkeypatch, capsys, tmp_path
):
    """Replay and gait test write their folder only when done, so a signal leaves none; the
    command says so in one line and exits as the shell reports the signal."""
    import run_fakes

    from mjlab_microduck.jobs import gait_test, gait_watch, replay

    def signalled(*args, **kwargs):
        os.kill(os.getpid(), signum)
        time.sleep(5)
        raise AssertionError("the signal did not stop the job")

    target = {"replay": (replay, "run"), "gait-test": (gait_test, "run_command"),
              "gait-watch": (gait_watch, "watch")}[command]  # fmt: skip
    monkeypatch.setattr(*target, signalled)
    run = run_fakes.train_run(tmp_path)
    argv = {"replay": [str(tmp_path / "model_1.pt"), "--out", str(tmp_path / "out")],
            "gait-test": ["--checkpoint", str(tmp_path / "model_1.pt")],
            "gait-watch": ["--runs", str(run)]}[command]  # fmt: skip
    assert main([command, *argv]) == status
    err = capsys.readouterr().err
    assert err == f"microduck {command}: interrupted by {signal.Signals(signum).name}\n"
    assert not (tmp_path / "out").exists()
