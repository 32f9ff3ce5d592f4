"""``microduck contact-check``: its options (a tyro dataclass), refusals and what it prints.

What this proves, without dropping a sphere (the drop itself is in tests/runtime):

* a sample command line gives exactly the expected request, and the defaults are the ones the
  argparse version had;
* bad input (steps < 1, a non-number, a malformed device, an unknown option) is one line on
  stderr and exit status 2 before Warp is asked for anything, also through the
  ``microduck-contact-check`` alias, and nothing is created;
* the request reaches the drop unchanged; the verdict line or JSON is printed and the exit
  status is 0 on a pass, 1 on a fail;
* ``--help`` lists every option the argparse version had.
"""

from __future__ import annotations

import json
import re
import sys

import pytest

from mjlab_microduck.cli import _common, aliases
from mjlab_microduck.cli import contact_check as contact_check_cli
from mjlab_microduck.cli import main as microduck
from mjlab_microduck.runtime import contact_check
from mjlab_microduck.runtime.contact_check import ContactCheckRequest, ContactCheckResult

ARGPARSE_OPTIONS = ["--device", "--steps", "--require-hip", "--frozen-broadphase", "--json",
                    "--verbose"]  # fmt: skip


def _parse(*argv: str) -> ContactCheckRequest:
    return _common.parse(ContactCheckRequest, list(argv), contact_check_cli.PROG)


@pytest.fixture
def no_drop(monkeypatch):
    """Neither Warp nor the drop may be reached: these tests are about what comes before."""

    def refuse(*args, **kwargs):
        raise AssertionError("Warp was asked")

    monkeypatch.setattr(contact_check, "resolve_device", refuse)
    monkeypatch.setattr(contact_check, "run_contact_check", refuse)


def test_a_sample_command_line_gives_this_request():
    request = _parse("--device", "cuda:1", "--steps", "50", "--require-hip",
                     "--frozen-broadphase", "--json", "--verbose")  # fmt: skip
    assert request == ContactCheckRequest(
        device="cuda:1", steps=50, require_hip=True, frozen_broadphase=True, json=True,
        verbose=True,
    )  # fmt: skip


def test_the_defaults_are_the_argparse_versions():
    assert _parse() == ContactCheckRequest(
        device="cpu", steps=200, require_hip=False, frozen_broadphase=False, json=False,
        verbose=False,
    )  # fmt: skip
    assert contact_check.DEFAULT_STEPS == 200


BAD = [
    (["--steps", "0"], "--steps must be >= 1, got 0"),
    (["--steps", "-3"], "--steps must be >= 1, got -3"),
    (["--steps", "x"], "Error parsing --steps: invalid literal for int() with base 10: 'x'"),
    (["--device", "gpu0"],
     "device 'gpu0': expected cpu, cuda or cuda:N (ROCm torch also says cuda)"),
    (["--require-hip=yes"], None),
    (["--bogus"], "Unrecognized options: --bogus"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "message"), BAD, ids=["steps-0", "steps-negative", "steps-x", "device", "flag-value",
                                   "unknown-option"]
)  # fmt: skip
def test_bad_input_is_one_line_exit_2_before_warp(
    argv, message, no_drop, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert contact_check_cli.main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("microduck contact-check: ")
    if message is not None:
        assert lines[0] == f"microduck contact-check: {message}"
    assert captured.out == ""
    assert list(tmp_path.iterdir()) == []


def test_the_microduck_command_and_the_old_alias_refuse_the_same_way(
    no_drop, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert microduck(["contact-check", "--steps", "0"]) == 2
    via_command = capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["microduck-contact-check", "--steps", "0"])
    with pytest.raises(SystemExit) as exit_:
        aliases.contact_check()
    assert exit_.value.code == 2
    assert via_command == "microduck contact-check: --steps must be >= 1, got 0\n"
    assert capsys.readouterr().err == via_command
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("passed", "status"), [(True, 0), (False, 1)], ids=["pass", "fail"])
@pytest.mark.parametrize("as_json", [False, True], ids=["line", "json"])
def test_the_request_reaches_the_drop_and_the_verdict_is_printed(
    passed, status, as_json, monkeypatch, capsys
):
    checked, dropped = [], []
    result = ContactCheckResult(passed, 0.05 if passed else -0.8, int(passed), "cpu", False, 120,
                                0.005, frozen_broadphase=True, broadphase="none")  # fmt: skip
    monkeypatch.setattr(contact_check, "check_request", checked.append)

    def fake_drop(device, steps, frozen_broadphase):
        dropped.append((device, steps, frozen_broadphase))
        return result

    monkeypatch.setattr(contact_check, "run_contact_check", fake_drop)
    argv = ["--steps", "120", "--frozen-broadphase", *(["--json"] if as_json else [])]
    assert contact_check_cli.main(argv) == status
    assert checked == [ContactCheckRequest(steps=120, frozen_broadphase=True, json=as_json)]
    assert dropped == [("cpu", 120, True)]
    out = capsys.readouterr().out
    if as_json:
        printed = json.loads(out)
        assert printed["passed"] is passed and printed["steps"] == 120
        assert set(printed) == {"passed", "final_z", "max_contacts", "device", "is_hip", "steps",
                                "timestep", "frozen_broadphase", "broadphase"}  # fmt: skip
    else:
        assert out == result.line() + "\n"
        assert out.startswith("PASS final_z=0.050000" if passed else "FAIL final_z=-0.800000")


def test_require_hip_is_refused_in_one_line_on_a_device_that_is_not_hip(monkeypatch):
    from mjlab_microduck.compat import _hook

    monkeypatch.setattr(contact_check, "resolve_device", lambda device: type(
        "Device", (), {"alias": device})())  # fmt: skip
    monkeypatch.setattr(_hook, "device_is_hip", lambda device: False)
    with pytest.raises(ValueError, match=re.escape(
        "--require-hip but Warp device cpu is not a HIP device (needs the ROCm Warp fork on an "
        "AMD GPU)"
    )):  # fmt: skip
        contact_check.check_request(ContactCheckRequest(require_hip=True))
    contact_check.check_request(ContactCheckRequest(require_hip=False))


def test_help_lists_every_option_and_its_defaults(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "200")
    with pytest.raises(SystemExit) as exit_:
        contact_check_cli.main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: microduck contact-check [-h] [OPTIONS]")
    assert "Drop a 5 cm sphere from 0.2 m onto a plane with MuJoCo Warp" in text
    assert [option for option in ARGPARSE_OPTIONS if option not in text] == []
    for line in ("Warp device, e.g. cpu or cuda:0 (default: cpu)",
                 "steps of 0.005 s (default: 200)",
                 "refuse (exit 2) unless the device is a HIP device of the ROCm Warp fork",
                 "print the result as JSON (default: False)"):  # fmt: skip
        assert line in text, line
