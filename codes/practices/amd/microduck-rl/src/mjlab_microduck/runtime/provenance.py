"""Vendor-neutral provenance: what hardware, runtime and software a run used.

Problem it solves: every number in the book must say where it came from, on an AMD GPU, an
NVIDIA GPU or a CPU alike. The public ROCm IPC-event report shows the classic way to get this
wrong: a benchmark called ``nvidia-smi`` for its provenance on a ROCm machine, the call failed,
and a *finished* measurement exited 1 without writing its JSON. Here:

* the backend comes from torch (``torch.version.hip`` -> ``hip``; ``torch.version.cuda`` with a
  visible GPU -> ``cuda``; else ``cpu``), cross-checked with Warp's device
  (``is_hip`` exists only in the ROCm fork, where ``is_cuda`` is also true);
* vendor tools are called only for their own vendor: ``rocm-smi``/``rocminfo`` only on
  ``hip``, ``nvidia-smi`` only on ``cuda``, never on ``cpu``;
* every tool call has a short timeout, and a missing tool, a non-zero exit or a timeout
  becomes ``"unknown"`` plus a note. :func:`collect` never raises for a tool and never
  touches the measurement it describes;
* on ``cuda``, ``cuda_mps`` says whether CUDA's MPS daemon runs (read from ``/proc``, no tool):
  under it several processes' kernels share the GPU at once, which changes what a timing
  beside another process means.

No-op cases: on a CPU-only machine no external tool is run at all (only ``git``).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import hashlib
import importlib.metadata
import io
import os
import platform
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mjlab_microduck.runs import records
from mjlab_microduck.runtime import backend
from mjlab_microduck.runtime.capture import held_output

TOOL_TIMEOUT_S = 5.0
UNKNOWN = "unknown"

# key in Provenance.versions -> distribution names to try (first found wins) and module
# fallback for a source checkout without metadata.
_PACKAGES: dict[str, tuple[tuple[str, ...], str]] = {
    "torch": (("torch",), "torch"),
    "warp": (("warp-lang", "warp"), "warp"),
    "mujoco_warp": (("mujoco-warp", "mujoco_warp"), "mujoco_warp"),
    "mujoco": (("mujoco",), "mujoco"),
    "mjlab": (("mjlab",), "mjlab"),
    "rsl_rl": (("rsl-rl-lib", "rsl_rl"), "rsl_rl"),
}


# --------------------------------------------------------------------------------------------
# External tools
# --------------------------------------------------------------------------------------------


@dataclass
class ToolResult:
    """Outcome of one external tool call: ``stdout`` is ``None`` when it did not succeed."""

    command: list[str]
    stdout: str | None
    note: str | None = None


def run_tool(command: Sequence[str], timeout_s: float = TOOL_TIMEOUT_S) -> ToolResult:
    """Run a diagnostic tool; never raises, never waits longer than about ``timeout_s``.

    The tool runs in its own session so that on timeout the whole process group is killed: a
    wrapper script whose child keeps the output pipe open would otherwise block the read.
    """
    cmd = [str(c) for c in command]
    name = cmd[0]
    try:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
    except FileNotFoundError:
        return ToolResult(cmd, None, f"{name}: not found on PATH")
    except OSError as exc:
        return ToolResult(cmd, None, f"{name}: could not start ({exc.strerror or exc})")
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return ToolResult(cmd, None, f"{name}: no answer within {timeout_s:g} s (killed)")
    except Exception as exc:  # decoding problems and the like: still only a note
        _kill_group(proc)
        return ToolResult(cmd, None, f"{name}: failed ({type(exc).__name__}: {exc})")
    if proc.returncode != 0:
        detail = (err or out or "").strip().splitlines()
        tail = f": {detail[0][:200]}" if detail else ""
        return ToolResult(cmd, None, f"{name}: exit status {proc.returncode}{tail}")
    return ToolResult(cmd, out, None)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    try:
        proc.communicate(timeout=1.0)
    except Exception:
        pass


def parse_rocm_smi_driver(text: str) -> str | None:
    """``Driver version: 6.10.5`` line of ``rocm-smi --showdriverversion``."""
    m = re.search(r"Driver version:\s*(\S+)", text, re.IGNORECASE)
    return m.group(1) if m else None


def parse_rocminfo(text: str) -> tuple[str | None, str | None]:
    """First GPU agent's ``(gfx target, marketing name)`` from ``rocminfo``."""
    arch = None
    m = re.search(r"^\s*Name:\s*(gfx[0-9a-z]+)", text, re.MULTILINE)
    if m:
        arch = m.group(1)
    marketing = None
    if m:
        # The marketing name of the same agent follows its Name: line.
        tail = text[m.end() :]
        n = re.search(r"^\s*Marketing Name:\s*(.+?)\s*$", tail, re.MULTILINE)
        if n:
            marketing = n.group(1)
    return arch, marketing


def parse_nvidia_smi(text: str) -> tuple[str | None, str | None]:
    """First line of ``nvidia-smi --query-gpu=name,driver_version --format=csv,noheader``."""
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0]:
            return parts[0], parts[1] or None
    return None, None


# --------------------------------------------------------------------------------------------
# Runtime facts (torch + Warp), shared with the doctor
# --------------------------------------------------------------------------------------------


@dataclass
class RuntimeFacts:
    """What torch and Warp say about the GPU runtime, before any vendor tool is asked."""

    backend: str = "cpu"  # decided backend: hip, cuda or cpu
    torch_backend: str = "cpu"  # what the torch build can drive here
    torch_version: str | None = None
    torch_runtime: str | None = None  # torch.version.hip / torch.version.cuda
    torch_gpu_visible: bool = False
    device_index: int = 0
    device_name: str | None = None
    arch: str | None = None
    warp_version: str | None = None
    warp_device: str | None = None  # alias of the Warp device asked about
    warp_backend: str | None = None  # hip, cuda, cpu, or None when Warp is absent
    warp_is_rocm_fork: bool = False
    warp_driver: str | None = None  # Warp's CUDA driver API version on CUDA
    notes: list[str] = field(default_factory=list)


def _device_index(device: str | None) -> int:
    if device and ":" in device:
        try:
            return int(device.split(":", 1)[1])
        except ValueError:
            return 0
    return 0


def torch_facts(facts: RuntimeFacts, device: str | None = None) -> None:
    """Fill the torch part of ``facts``. Never raises."""
    try:
        import torch
    except Exception as exc:
        facts.notes.append(f"torch not importable ({type(exc).__name__})")
        return
    facts.torch_version = str(getattr(torch, "__version__", None))
    hip = getattr(torch.version, "hip", None)
    cuda = getattr(torch.version, "cuda", None)
    try:
        visible = bool(torch.cuda.is_available())
    except Exception as exc:
        visible = False
        facts.notes.append(f"torch.cuda.is_available() failed ({type(exc).__name__})")
    facts.torch_gpu_visible = visible
    if hip:
        facts.torch_backend, facts.torch_runtime = "hip", str(hip)
    elif cuda and visible:
        facts.torch_backend, facts.torch_runtime = "cuda", str(cuda)
    else:
        facts.torch_backend, facts.torch_runtime = "cpu", (str(cuda) if cuda else None)
    if not visible or device == "cpu":
        return
    index = _device_index(device)
    facts.device_index = index
    try:
        facts.device_name = str(torch.cuda.get_device_name(index))
    except Exception as exc:
        facts.notes.append(f"torch.cuda.get_device_name failed ({type(exc).__name__})")
    try:
        props = torch.cuda.get_device_properties(index)
    except Exception as exc:
        facts.notes.append(f"torch.cuda.get_device_properties failed ({type(exc).__name__})")
        return
    if hip:
        gcn = getattr(props, "gcnArchName", None)
        if gcn:
            # "gfx90a:sramecc+:xnack-" -> the target is the part before the feature flags.
            facts.arch = str(gcn).split(":", 1)[0]
    else:
        major, minor = getattr(props, "major", None), getattr(props, "minor", None)
        if major is not None and minor is not None:
            facts.arch = f"sm_{major}{minor}"


def warp_facts(facts: RuntimeFacts, device: str | None = None) -> None:
    """Fill the Warp part of ``facts`` (initialising Warp quietly if needed). Never raises."""
    try:
        import warp as wp
    except Exception as exc:
        facts.notes.append(f"warp not importable ({type(exc).__name__})")
        return
    facts.warp_version = str(getattr(wp, "__version__", None))
    try:
        # Warp's banner reports a normal start, no caveat: wp.config.quiet keeps it unprinted.
        # Without a driver, native code still warns; provenance must not write that into a
        # notebook, a log or a --json document, so it is held.
        config = getattr(wp, "config", None)
        quiet = getattr(config, "quiet", None)
        if config is not None:
            config.quiet = True
        try:
            with held_output((1, 2)) as native:
                wp.init()
        finally:
            if config is not None:
                config.quiet = quiet
        # "Warp CUDA warning: Could not find or load the NVIDIA CUDA driver" on a CPU machine
        # is a fact about the machine, kept in plain words; anything else as is.
        facts.notes.extend(
            "warp: no NVIDIA CUDA driver found (CPU only)"
            if "Could not find or load the NVIDIA CUDA driver" in line
            else f"warp: {line}"
            for line in native.lines()
        )
        with contextlib.redirect_stdout(io.StringIO()):
            alias = device if device and device != "cpu" else None
            if alias is None and facts.torch_backend != "cpu":
                alias = f"cuda:{facts.device_index}"
            if alias is None:
                try:
                    if wp.get_cuda_device_count() > 0:
                        alias = "cuda:0"
                except Exception:
                    alias = None
            dev = wp.get_device(alias or "cpu")
    except Exception as exc:
        facts.notes.append(f"warp device query failed ({type(exc).__name__}: {exc})")
        facts.warp_is_rocm_fork = backend.is_rocm_warp_version(facts.warp_version)
        return
    facts.warp_device = str(getattr(dev, "alias", alias or "cpu"))
    # is_hip exists only in the ROCm fork (there is_cuda is true as well: HIP poses as CUDA).
    is_hip, is_cuda = backend.device_is_hip(dev), backend.device_is_cuda(dev)
    facts.warp_backend = backend.device_kind(dev)
    facts.warp_is_rocm_fork = is_hip or backend.is_rocm_warp_version(facts.warp_version)
    if is_cuda and not facts.arch:
        arch_str = getattr(dev, "arch_str", None)
        arch = getattr(dev, "arch", None)
        if arch_str:
            facts.arch = str(arch_str)
        elif isinstance(arch, int) and arch > 0:
            facts.arch = f"sm_{arch}"
    if is_cuda and not facts.device_name:
        facts.device_name = str(getattr(dev, "name", "")) or None
    if facts.warp_backend == "cuda":
        try:
            drv = wp.get_cuda_driver_version()
        except Exception:
            drv = None
        if isinstance(drv, tuple):
            facts.warp_driver = ".".join(str(x) for x in drv)
        elif drv:
            facts.warp_driver = str(drv)


def runtime_facts(device: str | None = None, use_warp: bool = True) -> RuntimeFacts:
    """torch and Warp facts, plus the decided backend. Never raises."""
    facts = RuntimeFacts()
    torch_facts(facts, device)
    if use_warp:
        warp_facts(facts, device)
    if device == "cpu":
        facts.backend = "cpu"
    elif facts.torch_backend == "hip" and facts.torch_gpu_visible:
        facts.backend = "hip"
    elif facts.torch_backend == "cuda":
        facts.backend = "cuda"
    elif facts.warp_backend in ("hip", "cuda"):
        # torch cannot drive the GPU (CPU build) but the simulator can: the run uses the GPU.
        facts.backend = facts.warp_backend
        facts.notes.append(f"backend {facts.backend} taken from Warp (torch sees no GPU)")
    else:
        facts.backend = "cpu"
    return facts


# --------------------------------------------------------------------------------------------
# Provenance
# --------------------------------------------------------------------------------------------


@dataclass
class ProvenanceReport:
    """:func:`collect`'s Provenance plus what could not be determined and why."""

    provenance: records.Provenance
    notes: list[str] = field(default_factory=list)
    facts: RuntimeFacts | None = None
    tools_called: list[str] = field(default_factory=list)


def package_versions() -> dict[str, str | None]:
    """Versions of the stack (None = not installed) and the Python version."""
    out: dict[str, str | None] = {}
    for key, (dists, module) in _PACKAGES.items():
        version = None
        for dist in dists:
            try:
                version = importlib.metadata.version(dist)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
            except Exception:
                continue
        if version is None and module in sys.modules:
            version = getattr(sys.modules[module], "__version__", None)
        out[key] = str(version) if version is not None else None
    out["python"] = platform.python_version()
    return out


GIT_COMMIT_ENV = "MICRODUCK_GIT_COMMIT"


def git_commit(short: bool = False, cwd: str | os.PathLike[str] | None = None) -> str:
    """HEAD of the repository holding ``cwd`` (default: this package), or ``"unknown"``.

    A copy of the package outside any checkout (a tree copied to a GPU machine) can name
    the commit it was copied from in ``MICRODUCK_GIT_COMMIT``. Never raises: provenance must
    not make a finished run fail.
    """
    where = Path(cwd) if cwd is not None else Path(__file__).resolve().parent
    command = ["git", "-C", str(where), "rev-parse", *(["--short"] if short else []), "HEAD"]
    result = run_tool(command, timeout_s=TOOL_TIMEOUT_S)
    candidates = [(result.stdout or "").strip()]
    if cwd is None:
        candidates.append(os.environ.get(GIT_COMMIT_ENV, "").strip())
    for commit in candidates:
        if re.fullmatch(r"[0-9a-f]{7,64}", commit):
            return commit
    return UNKNOWN


@functools.lru_cache(maxsize=1)
def package_source_digest() -> str:
    """SHA-256 over this package's ``.py`` files (relative path and content), once per process:
    what tells two runs of the same commit apart when one had uncommitted changes."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


MPS_CONTROL = "nvidia-cuda-mps-control"


def cuda_mps_running(proc_root: Path = Path("/proc")) -> bool:
    """Whether CUDA's MPS control daemon runs on this machine (a process of that name in
    ``proc_root``); a CUDA process started meanwhile shares the GPU through it. Reads process
    command lines only, calls no tool; never raises (an unreadable process is skipped)."""
    try:
        entries = [entry for entry in proc_root.iterdir() if entry.name.isdigit()]
    except OSError:
        return False
    for entry in entries:
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if Path(argv0.decode(errors="replace")).name == MPS_CONTROL:
            return True
    return False


def _profile_name(notes: list[str]) -> str | None:
    try:
        from mjlab_microduck.runtime import profiles

        return profiles.current().name
    except Exception as exc:  # a bad MICRODUCK_PROFILE must not lose a finished measurement
        notes.append(f"profile unknown ({_one_line(exc)})")
        return None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def collect_report(
    profile: str | None = None,
    command: list[str] | None = None,
    device: str | None = None,
    machine_label: str | None = None,
    tool_timeout_s: float = TOOL_TIMEOUT_S,
    use_warp: bool = True,
) -> ProvenanceReport:
    """Like :func:`collect`, also returning the notes (tool failures) and the raw facts."""
    del command  # the command belongs to the run record (RunRecord.command), not here
    facts = runtime_facts(device, use_warp=use_warp)
    notes = list(facts.notes)
    tools: list[str] = []
    driver: str | None = None
    device_name = facts.device_name
    arch = facts.arch

    def call(cmd: list[str]) -> str | None:
        tools.append(cmd[0])
        res = run_tool(cmd, timeout_s=tool_timeout_s)
        if res.note:
            notes.append(res.note)
        return res.stdout

    if facts.backend == "hip":
        out = call(["rocm-smi", "--showdriverversion"])
        driver = (parse_rocm_smi_driver(out) if out is not None else None) or UNKNOWN
        if out is not None and driver == UNKNOWN:
            notes.append("rocm-smi: no 'Driver version' line in its output")
        if not arch or not device_name:
            info = call(["rocminfo"])
            if info is not None:
                gfx, marketing = parse_rocminfo(info)
                arch = arch or gfx
                device_name = device_name or marketing
    elif facts.backend == "cuda":
        out = call(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
        name, smi_driver = parse_nvidia_smi(out) if out is not None else (None, None)
        device_name = device_name or name
        if smi_driver:
            driver = smi_driver
        elif facts.warp_driver:
            driver = f"CUDA driver API {facts.warp_driver}"
        else:
            driver = UNKNOWN
    else:
        device_name = cpu_model()
        arch = platform.machine() or None

    prov_fields: dict[str, Any] = dict(
        backend=facts.backend,
        device_name=device_name or UNKNOWN,
        driver_version=driver,
        runtime_version=facts.torch_runtime if facts.backend != "cpu" else None,
        arch=arch or (UNKNOWN if facts.backend != "cpu" else None),
        versions=package_versions(),
        git_commit=git_commit(),
        hostname=socket.gethostname() or UNKNOWN,
        date=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        profile=profile if profile is not None else _profile_name(notes),
        machine_label=machine_label,
        notes=list(notes),
        cuda_mps=cuda_mps_running() if facts.backend == "cuda" else None,
    )
    provenance = records.Provenance(**prov_fields)
    return ProvenanceReport(provenance=provenance, notes=notes, facts=facts, tools_called=tools)


def collect(
    profile: str | None = None,
    command: list[str] | None = None,
    device: str | None = None,
    machine_label: str | None = None,
) -> records.Provenance:
    """The provenance block of this machine (see the module docstring). Never raises for a tool.

    Args:
        profile: profile name; default :func:`mjlab_microduck.runtime.profiles.current`'s.
        command: accepted for interface symmetry; the command line is stored in the run record.
        device: the device the run used (``"cpu"``, ``"cuda:0"``); default the first GPU if
            torch sees one.
        machine_label: optional human label, e.g. ``"one NVIDIA H200, driver 580"``.
    """
    return collect_report(
        profile=profile, command=command, device=device, machine_label=machine_label
    ).provenance
