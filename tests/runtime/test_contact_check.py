"""Sphere-drop contact check: passes on CPU, fails with the frozen-broadphase fault, clean CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
import suite_memo

from mjlab_microduck.cli import contact_check as contact_check_cli
from mjlab_microduck.compat import faults
from mjlab_microduck.runtime import contact_check
from mjlab_microduck.runtime.contact_check import ContactCheckResult, run_contact_check

SCRIPT = (
    Path(__file__).resolve().parents[2]
    / "codes/practices/amd/microduck-rl/scripts/check_rocm_contacts.py"
)


@pytest.fixture(autouse=True)
def fault_off():
    faults.disable()
    yield
    faults.disable()


@pytest.mark.slow
def test_sphere_lands_on_cpu():
    result = run_contact_check(device="cpu")
    assert isinstance(result, ContactCheckResult)
    assert result.passed is True
    assert 0.045 <= result.final_z <= 0.055
    assert result.max_contacts >= 1
    assert (result.device, result.is_hip, result.steps, result.timestep) == (
        "cpu",
        False,
        200,
        0.005,
    )
    assert result.frozen_broadphase is False
    # Upstream mujoco_warp on a CPU: the broadphase hook reports no cache (and stays out).
    assert result.broadphase == "none"
    assert "broadphase=" not in result.line()  # the hook's state is printed on HIP only


def test_line_names_the_broadphase_hook_state_on_hip():
    result = ContactCheckResult(False, -0.81, 0, "cuda:0", True, 200, 0.005,
                                broadphase="unrecognised")  # fmt: skip
    assert result.line() == (
        "FAIL final_z=-0.810000 max_contacts=0 device=cuda:0 is_hip=True steps=200 "
        "broadphase=unrecognised"
    )


@pytest.mark.slow
def test_sphere_falls_through_with_the_fault():
    result = run_contact_check(device="cpu", frozen_broadphase=True)
    assert result.passed is False
    assert result.max_contacts == 0
    assert result.final_z < -1.0  # ~1 s of free fall from 0.2 m
    assert result.frozen_broadphase is True
    assert not faults.is_enabled()  # the check switched its own fault off again


def test_too_few_steps_cannot_pass():
    # 20 steps (0.1 s): the sphere is still in the air, no contact yet.
    result = run_contact_check(device="cpu", steps=20)
    assert result.passed is False and result.max_contacts == 0 and result.final_z > 0.1


@pytest.mark.parametrize(
    ("final_z", "contacts", "passed"),
    [(0.0496, 1, True), (0.0496, 0, False), (0.044, 1, False), (0.056, 1, False), (0.045, 1, True)],
)
def test_verdict(final_z, contacts, passed):
    assert contact_check.verdict(final_z, contacts) is passed


def test_invalid_steps_raise():
    with pytest.raises(ValueError, match="steps"):
        run_contact_check(steps=0)


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, MJLAB_WARP_QUIET="1")
    env.pop(faults.ENV_VAR, None)
    # Made once per build (tests/suite_memo.py): a fresh process importing mjlab.
    return suite_memo.run("contact_check_cli", [sys.executable, str(SCRIPT), *args], env=env)


@pytest.mark.slow
def test_cli_json_pass_and_exit_zero():
    proc = _cli("--device", "cpu", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["passed"] is True and result["max_contacts"] >= 1
    expected_keys = asdict(ContactCheckResult(True, 0.05, 1, "cpu", False, 200, 0.005))
    assert set(result) == set(expected_keys)


@pytest.mark.slow
def test_cli_fault_prints_values_and_exits_one():
    proc = _cli("--frozen-broadphase")
    assert proc.returncode == 1
    line = proc.stdout.strip().splitlines()[-1]
    assert line.startswith("FAIL final_z=-") and "max_contacts=0" in line


def test_main_require_hip_refuses_cpu_with_one_line(capsys):
    assert contact_check_cli.main(["--device", "cpu", "--require-hip"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "not a HIP device" in lines[0]
    assert lines[0].startswith("microduck contact-check: --require-hip but Warp device cpu")
    assert captured.out == ""


def test_main_unknown_device_is_one_clear_line(capsys):
    assert contact_check_cli.main(["--device", "cuda:7"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("microduck contact-check: Warp device 'cuda:7' is not available")


def test_main_malformed_device_is_the_same_line_as_everywhere(capsys):
    assert contact_check_cli.main(["--device", "gpu0"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        "microduck contact-check: device 'gpu0': expected cpu, cuda or cuda:N (ROCm torch also "
        "says cuda)"
    ]


def test_main_rejects_nonpositive_steps(capsys):
    assert contact_check_cli.main(["--steps", "0"]) == 2
    assert capsys.readouterr().err.startswith("microduck contact-check: --steps must be >= 1")


def test_main_prints_the_verdict_line(capsys):
    assert contact_check_cli.main(["--device", "cpu"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("PASS final_z=0.04") and "max_contacts=1" in line


def test_trace_shows_free_fall_then_rest():
    trace = contact_check.simulate_drop(device="cpu")
    assert len(trace.z) == len(trace.contacts) == contact_check.DEFAULT_STEPS
    first_contact = next(i for i, n in enumerate(trace.contacts) if n > 0)
    # Free fall over 0.15 m takes sqrt(2 * 0.15 / 9.81) = 0.175 s, i.e. about 35 steps.
    assert 30 <= first_contact <= 40
    falling = trace.z[:first_contact]
    assert all(a > b for a, b in zip(falling[:-1], falling[1:], strict=True))
    assert abs(trace.z[-1] - contact_check.SPHERE_RADIUS_M) < 0.005
