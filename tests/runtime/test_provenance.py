"""Vendor-neutral provenance: the right vendor's tools only, and never a lost measurement.

Each vendor is simulated: torch attributes are monkeypatched (``torch.version.hip``/``cuda``,
``torch.cuda.is_available``, device name and properties), Warp is replaced by a fake module
shaped like the real ones (the ROCm fork's HIP device is a ``cuda:N`` device with ``is_hip``
True and ``arch_str`` like ``gfx1201``; upstream devices have no ``is_hip``), and
``nvidia-smi``/``rocm-smi``/``rocminfo`` are stub executables on PATH that log every call.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from mjlab_microduck.runs import records
from mjlab_microduck.runtime import provenance

ROCM_SMI_OUT = """\
============================ ROCm System Management Interface ============================
================================ Version of System Component =============================
Driver version: 6.10.5
==========================================================================================
============================= End of ROCm SMI Log ========================================
"""

ROCMINFO_OUT = """\
*******
Agent 1
*******
  Name:                    AMD Ryzen 9 7950X
  Marketing Name:          AMD Ryzen 9 7950X
*******
Agent 2
*******
  Name:                    gfx1201
  Marketing Name:          AMD Radeon AI PRO R9700
"""


class Tools:
    """Stub vendor tools in a directory put first on PATH; each call is appended to a log."""

    def __init__(self, root: Path, monkeypatch) -> None:
        self.bin = root / "bin"
        self.bin.mkdir()
        self.log = root / "calls.log"
        self.log.write_text("")
        monkeypatch.setenv("PATH", f"{self.bin}{os.pathsep}{os.environ['PATH']}")

    def add(self, name: str, stdout: str = "", status: int = 0, hang: bool = False) -> None:
        data = self.bin / f"{name}.out"
        data.write_text(stdout)
        # `sleep` is a child of sh and keeps stdout open: the runner must kill the whole group.
        body = "sleep 30\n" if hang else f'cat "{data}"\nexit {status}\n'
        script = self.bin / name
        script.write_text(f'#!/bin/sh\necho "{name} $*" >> "{self.log}"\n{body}')
        script.chmod(0o755)

    def calls(self) -> list[str]:
        return [ln.split()[0] for ln in self.log.read_text().splitlines() if ln.strip()]


@pytest.fixture
def tools(tmp_path, monkeypatch):
    return Tools(tmp_path, monkeypatch)


def fake_warp(device, version="1.13.0", driver=None) -> ModuleType:
    wp = ModuleType("warp")
    wp.__version__ = version
    wp.init = lambda: None
    wp.get_cuda_device_count = lambda: 0 if device.alias == "cpu" else 1
    wp.get_device = lambda alias=None: device
    wp.get_cuda_driver_version = lambda: driver
    return wp


HIP_DEVICE = SimpleNamespace(alias="cuda:0", is_cuda=True, is_hip=True, arch=0,
                             arch_str="gfx1201", name="AMD Radeon AI PRO R9700")
# Upstream Warp: no is_hip attribute at all.
CUDA_DEVICE = SimpleNamespace(alias="cuda:0", is_cuda=True, arch=90, name="NVIDIA H200")
CPU_DEVICE = SimpleNamespace(alias="cpu", is_cuda=False, arch=0, name="CPU")


@pytest.fixture
def fake_hip(monkeypatch):
    import torch

    monkeypatch.setattr(torch.version, "hip", "7.2.53211", raising=False)
    monkeypatch.setattr(torch.version, "cuda", None, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "AMD Radeon AI PRO R9700")
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda i=0: SimpleNamespace(gcnArchName="gfx1201:sramecc-:xnack-"))
    monkeypatch.setitem(sys.modules, "warp", fake_warp(HIP_DEVICE, "1.13.0+rocm.0"))


@pytest.fixture
def fake_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    monkeypatch.setattr(torch.version, "cuda", "12.8", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda i=0: SimpleNamespace(major=9, minor=0))
    monkeypatch.setitem(sys.modules, "warp", fake_warp(CUDA_DEVICE, "1.13.0", driver=(12, 9)))


@pytest.fixture
def fake_cpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    monkeypatch.setattr(torch.version, "cuda", None, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setitem(sys.modules, "warp", fake_warp(CPU_DEVICE))


def all_tools(tools: Tools) -> None:
    tools.add("nvidia-smi", "NVIDIA H200, 580.159.03\n")
    tools.add("rocm-smi", ROCM_SMI_OUT)
    tools.add("rocminfo", ROCMINFO_OUT)


def test_warp_banner_is_no_note_but_its_driver_warning_is(fake_cpu, tools, monkeypatch):
    warp = sys.modules["warp"]

    def init():  # what wp.init() prints on a CPU machine: a native warning, then the banner
        os.write(2, b"Warp CUDA warning: Could not find or load the NVIDIA CUDA driver.\n")
        if not warp.config.quiet:
            print("Warp 1.13.0 initialized:\n   Devices:\n     \"cpu\"      : \"x86_64\"\n"
                  "   Kernel cache:\n     /root/.cache/warp/1.13.0")

    monkeypatch.setattr(warp, "init", init)
    monkeypatch.setattr(warp, "config", SimpleNamespace(quiet=False), raising=False)
    facts = provenance.runtime_facts()
    assert facts.notes == ["warp: no NVIDIA CUDA driver found (CPU only)"]
    assert warp.config.quiet is False  # Warp's own setting is left as it was


# ------------------------------------------------------------------ per vendor


def test_hip_uses_rocm_tools_and_never_nvidia_smi(fake_hip, tools):
    all_tools(tools)
    report = provenance.collect_report(profile="full")
    prov = report.provenance
    assert isinstance(prov, records.Provenance)
    assert prov.backend == "hip"
    assert prov.arch == "gfx1201"
    assert prov.runtime_version == "7.2.53211"
    assert prov.driver_version == "6.10.5"
    assert prov.device_name == "AMD Radeon AI PRO R9700"
    assert "nvidia-smi" not in tools.calls()
    assert tools.calls() == ["rocm-smi"]  # rocminfo only needed when torch lacks arch/name
    assert report.facts.warp_backend == "hip" and report.facts.warp_is_rocm_fork


def test_hip_falls_back_to_rocminfo_for_the_gfx_target(fake_hip, tools, monkeypatch):
    import torch

    all_tools(tools)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i=0: SimpleNamespace())
    monkeypatch.setitem(sys.modules, "warp", fake_warp(
        SimpleNamespace(alias="cuda:0", is_cuda=True, is_hip=True, arch=0, arch_str="",
                        name="x"), "1.13.0+rocm.0"))
    prov = provenance.collect(profile="full")
    assert prov.arch == "gfx1201"
    assert sorted(tools.calls()) == ["rocm-smi", "rocminfo"]


def test_cuda_uses_nvidia_smi_and_never_rocm_tools(fake_cuda, tools):
    all_tools(tools)
    prov = provenance.collect(profile="full")
    assert prov.backend == "cuda"
    assert prov.arch == "sm_90"
    assert prov.runtime_version == "12.8"
    assert prov.driver_version == "580.159.03"
    assert prov.device_name == "NVIDIA H200"
    assert tools.calls() == ["nvidia-smi"]


def _process(proc_root, pid, *argv: str):
    where = proc_root / str(pid)
    where.mkdir(parents=True)
    (where / "cmdline").write_bytes(b"\0".join(arg.encode() for arg in argv) + b"\0")


def test_the_mps_daemon_is_found_by_its_process_name(tmp_path):
    _process(tmp_path, 1, "/sbin/init")
    _process(tmp_path, 20, "python3", "-m", "nvidia-cuda-mps-control")  # an argument only
    (tmp_path / "self").mkdir()  # not a process number
    assert provenance.cuda_mps_running(tmp_path) is False
    _process(tmp_path, 31, "/usr/bin/nvidia-cuda-mps-control", "-d")
    assert provenance.cuda_mps_running(tmp_path) is True
    assert provenance.cuda_mps_running(tmp_path / "missing") is False


def test_a_cuda_run_says_whether_mps_shares_its_gpu_and_another_run_does_not(
    fake_cuda, tools, monkeypatch
):
    all_tools(tools)
    for running in (True, False):
        monkeypatch.setattr(provenance, "cuda_mps_running", lambda running=running: running)
        assert provenance.collect(profile="full").cuda_mps is running
    monkeypatch.setattr(provenance, "cuda_mps_running", lambda: True)
    assert provenance.collect(profile="ci", device="cpu").cuda_mps is None


def test_cpu_calls_no_vendor_tool(fake_cpu, tools):
    all_tools(tools)
    prov = provenance.collect(profile="ci")
    assert prov.backend == "cpu"
    assert prov.cuda_mps is None
    assert prov.driver_version is None and prov.runtime_version is None
    assert prov.arch == (platform.machine() or None)
    assert tools.calls() == []


def test_explicit_cpu_device_on_a_gpu_machine_is_cpu(fake_cuda, tools):
    all_tools(tools)
    prov = provenance.collect(profile="ci", device="cpu")
    assert prov.backend == "cpu"
    assert tools.calls() == []


def test_cpu_torch_with_rocm_warp_device_is_hip(fake_cpu, tools, monkeypatch):
    # torch cannot drive the GPU but the simulator can: the run is on HIP, ROCm tools apply.
    all_tools(tools)
    monkeypatch.setitem(sys.modules, "warp", fake_warp(HIP_DEVICE, "1.13.0+rocm.0"))
    report = provenance.collect_report(profile="full")
    assert report.provenance.backend == "hip"
    assert "nvidia-smi" not in tools.calls()
    assert any("taken from Warp" in n for n in report.notes)


# ------------------------------------------------------------------ failing tools


def test_missing_tools_give_unknown_and_a_note(fake_hip, tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    report = provenance.collect_report(profile="full")
    assert report.provenance.driver_version == "unknown"
    assert any("rocm-smi: not found" in n for n in report.notes)
    assert report.provenance.notes == report.notes  # the caveats travel with the block
    assert report.provenance.git_commit == "unknown"  # git is not on this PATH either


def test_a_copied_tree_names_its_commit_through_the_environment(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no git: as in a package copied to a GPU machine
    monkeypatch.setenv(provenance.GIT_COMMIT_ENV, "447de99" + "0" * 33)
    assert provenance.git_commit() == "447de99" + "0" * 33
    monkeypatch.setenv(provenance.GIT_COMMIT_ENV, "not-a-commit")
    assert provenance.git_commit() == "unknown"


def test_tool_exiting_1_gives_unknown(fake_hip, tools):
    tools.add("rocm-smi", "ERROR: no GPU\n", status=1)
    report = provenance.collect_report(profile="full")
    assert report.provenance.driver_version == "unknown"
    assert any(n.startswith("rocm-smi: exit status 1") for n in report.notes)


def test_hanging_tool_is_killed_within_the_timeout(fake_cuda, tools, monkeypatch):
    monkeypatch.setitem(sys.modules, "warp", fake_warp(CUDA_DEVICE, driver=None))
    tools.add("nvidia-smi", hang=True)
    t0 = time.monotonic()
    report = provenance.collect_report(profile="full", tool_timeout_s=0.5)
    assert time.monotonic() - t0 < 5.0
    assert report.provenance.driver_version == "unknown"
    assert any("nvidia-smi: no answer within 0.5 s" in n for n in report.provenance.notes)


def test_cuda_driver_falls_back_to_warp_when_nvidia_smi_fails(fake_cuda, tools):
    tools.add("nvidia-smi", status=9)
    prov = provenance.collect(profile="full")
    assert prov.driver_version == "CUDA driver API 12.9"


def test_run_tool_never_raises(tmp_path):
    not_exec = tmp_path / "tool"
    not_exec.write_text("#!/bin/sh\necho hi\n")  # not executable
    res = provenance.run_tool([str(not_exec)])
    assert res.stdout is None and "could not start" in res.note
    res = provenance.run_tool(["definitely-not-a-tool-xyz"])
    assert res.stdout is None and "not found" in res.note
    res = provenance.run_tool(["sh", "-c", "echo out; echo bad >&2; exit 4"])
    assert res.stdout is None and res.note == "sh: exit status 4: bad"
    res = provenance.run_tool(["sh", "-c", "echo fine"])
    assert res.stdout == "fine\n" and res.note is None


# ------------------------------------------------------------------ parsers


def test_parsers():
    assert provenance.parse_rocm_smi_driver(ROCM_SMI_OUT) == "6.10.5"
    assert provenance.parse_rocm_smi_driver("nothing here") is None
    assert provenance.parse_rocminfo(ROCMINFO_OUT) == ("gfx1201", "AMD Radeon AI PRO R9700")
    assert provenance.parse_rocminfo("no agents") == (None, None)
    assert provenance.parse_nvidia_smi("NVIDIA H200, 580.159.03\n") == ("NVIDIA H200",
                                                                        "580.159.03")
    assert provenance.parse_nvidia_smi("") == (None, None)


# ------------------------------------------------------------------ the rest of the block


def test_versions_git_host_date_and_profile(fake_cpu, monkeypatch):
    monkeypatch.setenv("MICRODUCK_PROFILE", "full")
    prov = provenance.collect()
    assert prov.profile == "full"
    assert set(prov.versions) == {"torch", "warp", "mujoco_warp", "mujoco", "mjlab", "rsl_rl",
                                  "python"}
    assert prov.versions["rsl_rl"] == importlib.metadata.version("rsl-rl-lib")
    assert prov.versions["mjlab"] == importlib.metadata.version("mjlab")
    assert prov.versions["python"] == platform.python_version()
    assert prov.hostname
    assert abs(dt.datetime.fromisoformat(prov.date) - dt.datetime.now(dt.timezone.utc)) < \
        dt.timedelta(minutes=5)
    pkg = Path(provenance.__file__).parent
    git = subprocess.run(["git", "-C", str(pkg), "rev-parse", "HEAD"], capture_output=True,
                         text=True)
    expected = git.stdout.strip() if git.returncode == 0 else "unknown"
    assert prov.git_commit == expected
    assert prov.git_commit == "unknown" or re.fullmatch(r"[0-9a-f]{40}", prov.git_commit)


def test_bad_profile_env_does_not_raise(fake_cpu, monkeypatch):
    monkeypatch.setenv("MICRODUCK_PROFILE", "huge")
    report = provenance.collect_report()
    assert report.provenance.profile is None
    assert any("profile unknown" in n and "huge" in n for n in report.notes)


def test_provenance_embeds_in_a_run_record(fake_cpu, tmp_path):
    prov = provenance.collect(profile="ci", machine_label="CI runner")
    now = records.utc_now_iso()
    rec = records.RunRecord(run_id="x", kind="doctor", status="ok", provenance=prov,
                            started_at=now, finished_at=now)
    back = records.load_record(records.write_record(rec, tmp_path / "record.json"))
    assert back.provenance == prov
    assert back.provenance.machine_label == "CI runner"


def test_real_machine_collect_is_consistent_with_torch():
    """No fakes: the block of whatever runs the tests agrees with torch."""
    import torch

    report = provenance.collect_report()
    prov = report.provenance
    if torch.version.hip and torch.cuda.is_available():
        assert prov.backend == "hip" and prov.arch.startswith("gfx")
    elif torch.version.cuda and torch.cuda.is_available():
        assert prov.backend == "cuda" and prov.arch.startswith("sm_")
    else:
        assert prov.backend == "cpu"
        assert report.tools_called == []


@pytest.mark.gpu
def test_real_gpu_provenance():
    """CPU sibling: test_real_machine_collect_is_consistent_with_torch."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU visible to torch")
    prov = provenance.collect()
    assert prov.backend in ("cuda", "hip")
    assert prov.driver_version and prov.runtime_version
    assert prov.device_name != "unknown"
