"""``microduck doctor``: is this machine's GPU stack one the book supports, and if not, why?

Problem it solves: the ROCm port works only with a specific combination (a ROCm build of torch,
the ROCm Warp fork built for the local gfx target, one HIP runtime shared by both, the compat
fixes active, contacts that actually work). Each wrong combination fails *late* and
*misleadingly* (a robot that falls through the floor while training looks healthy, an IPC event
that dies at tick 32). The doctor checks the combination up front, prints one table, and fails
closed: an unsupported combination ends with one explicit line on stderr and a non-zero exit.

Checks (rows of the table):

* backend, device, architecture (gfx target or ``sm_XY``), torch and its HIP/CUDA version;
* Warp version, whether it is the ROCm fork (feature detection: ``+rocm`` in the version or a
  device with ``is_hip``) and which backend its device is;
* which compat fixes are active (``mjlab_microduck.compat.report()``); the broadphase row says
  whether this mujoco_warp has a broadphase cache and what the hook did about it (no cache,
  cache disabled, cache neutralised, or UNRECOGNISED: a loud warning on HIP, and the contact
  check decides);
* HIP runtime agreement: the ``libamdhip64.so`` files mapped into this process after torch and
  Warp both initialised; more than one distinct file means two HIP runtimes (``n/a`` off HIP);
* the dynamic contact check (``mjlab_microduck.runtime.contact_check``; ``--no-contact-check``
  skips);
* optionally the IPC-event reuse probe (``--ipc-probe``; see
  :mod:`mjlab_microduck.runtime.ipc_probe`).

Unsupported (exit 1, one line): torch is a ROCm build but Warp's device is not HIP (or the
reverse); two different HIP runtimes loaded; ``--require-hip`` on a non-HIP machine; a failed
contact check; ``--ipc-probe --require-ipc-events`` when reuse is not proven. ``--json`` prints
the provenance block (as run records embed it) plus the checks.

No-op cases: on a CPU-only machine every GPU check reads ``n/a`` and the exit status is 0.
"""

from __future__ import annotations

import importlib
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from mjlab_microduck.runtime import backend, provenance
from mjlab_microduck.runtime import ipc_probe as ipc_event

CheckStatus = Literal["ok", "info", "warn", "fail", "skip", "n/a"]

HIP_RUNTIME_LIB = "libamdhip64.so"


@dataclass
class Check:
    """One row of the doctor's table; ``unsupported`` is the fail-closed line when it fails."""

    name: str
    value: str
    status: CheckStatus = "info"
    detail: str = ""
    unsupported: str | None = None
    warning: str | None = None  # printed loudly (stdout and stderr) but not a failure


@dataclass
class DoctorReport:
    checks: list[Check] = field(default_factory=list)
    provenance: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    ipc_probe: dict[str, Any] | None = None

    @property
    def unsupported(self) -> list[str]:
        return [c.unsupported for c in self.checks if c.unsupported]

    @property
    def warnings(self) -> list[str]:
        return [c.warning for c in self.checks if c.warning]

    @property
    def ok(self) -> bool:
        return not self.unsupported

    def frame(self):
        import pandas as pd

        return pd.DataFrame(
            [
                {"check": c.name, "value": c.value, "status": c.status, "detail": c.detail}
                for c in self.checks
            ],
            columns=["check", "value", "status", "detail"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "unsupported": self.unsupported,
            "warnings": self.warnings,
            "provenance": self.provenance,
            "checks": [asdict(c) for c in self.checks],
            "notes": self.notes,
            "ipc_probe": self.ipc_probe,
        }


# --------------------------------------------------------------------------------------------
# Individual checks (each one a plain function so tests can feed it fakes)
# --------------------------------------------------------------------------------------------


def stack_checks(facts: provenance.RuntimeFacts, require_hip: bool = False) -> list[Check]:
    """Backend, device, arch, torch and Warp rows, with the torch/Warp pairing verdict."""
    checks = [
        Check("backend", facts.backend),
        Check(
            "device",
            facts.device_name or (provenance.cpu_model() if facts.backend == "cpu" else "unknown"),
        ),
        Check("architecture", facts.arch or "n/a"),
    ]
    if facts.torch_version is None:
        torch_value = "not installed"
    elif facts.torch_backend == "hip":
        torch_value = f"{facts.torch_version} (HIP {facts.torch_runtime})"
    elif facts.torch_backend == "cuda":
        torch_value = f"{facts.torch_version} (CUDA {facts.torch_runtime})"
    else:
        torch_value = f"{facts.torch_version} (no GPU runtime in use)"
    checks.append(Check("torch", torch_value))

    if facts.warp_version is None:
        warp_value, warp_kind = "not installed", ""
    else:
        warp_kind = "ROCm fork" if facts.warp_is_rocm_fork else "upstream"
        warp_value = f"{facts.warp_version} ({warp_kind})"
    warp_check = Check(
        "warp",
        warp_value,
        detail=f"device {facts.warp_device or 'n/a'} is {facts.warp_backend or 'n/a'}",
    )
    checks.append(warp_check)

    # The torch/Warp pairing: both must drive the same kind of GPU, or neither.
    if facts.torch_backend == "hip" and facts.torch_gpu_visible and facts.warp_backend != "hip":
        warp_check.status = "fail"
        warp_check.unsupported = (
            f"unsupported: torch {facts.torch_version} is a ROCm build (HIP {facts.torch_runtime}) "
            f"but Warp {facts.warp_version or '(not installed)'} has no HIP device "
            f"(device {facts.warp_device or 'n/a'} is {facts.warp_backend or 'n/a'}); "
            f"install the ROCm Warp fork built for {facts.arch or 'this gfx target'} "
            f"(scripts/setup_rocm.sh)"
        )
    elif facts.warp_backend == "hip" and facts.torch_backend != "hip":
        warp_check.status = "fail"
        warp_check.unsupported = (
            f"unsupported: Warp {facts.warp_version} runs on HIP but torch "
            f"{facts.torch_version or '(not installed)'} is not a ROCm build; install a ROCm "
            f"build of torch so both share one HIP runtime"
        )
    elif facts.warp_backend is not None:
        warp_check.status = "ok"

    if require_hip and facts.backend != "hip":
        checks[0].status = "fail"
        checks[0].unsupported = (
            f"unsupported: --require-hip but this machine's backend is {facts.backend} "
            f"(torch {facts.torch_version or 'absent'}, Warp device "
            f"{facts.warp_backend or 'absent'}); run on an AMD GPU with the ROCm stack"
        )
    elif facts.backend != "cpu":
        checks[0].status = "ok"
    return checks


def hip_runtime_paths(maps_text: str) -> list[str]:
    """Distinct ``libamdhip64.so*`` files mapped in a ``/proc/<pid>/maps`` text, sorted."""
    paths = set()
    for line in maps_text.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6:
            path = parts[5].strip()
            if path.endswith(" (deleted)"):
                path = path[: -len(" (deleted)")]
            if os.path.basename(path).startswith(HIP_RUNTIME_LIB):
                paths.add(path)
    return sorted(paths)


def read_self_maps() -> str:
    try:
        return Path("/proc/self/maps").read_text()
    except OSError:
        return ""


def initialise_gpu_runtimes(facts: provenance.RuntimeFacts) -> list[str]:
    """Make torch and Warp load their GPU runtime, so /proc/self/maps shows both. Never raises."""
    notes = []
    if facts.torch_backend != "cpu" and facts.torch_gpu_visible:
        try:
            import torch

            torch.zeros(1, device=f"cuda:{facts.device_index}")
        except Exception as exc:
            notes.append(f"torch GPU init failed: {provenance._one_line(exc)}")
    if facts.warp_backend in ("hip", "cuda") and facts.warp_device:
        try:
            import warp as wp

            wp.zeros(1, device=facts.warp_device)
        except Exception as exc:
            notes.append(f"Warp GPU init failed: {provenance._one_line(exc)}")
    return notes


def hip_runtime_check(facts: provenance.RuntimeFacts, maps_text: str | None = None) -> Check:
    """One HIP runtime shared by torch and Warp (``n/a`` off HIP)."""
    if facts.backend != "hip":
        return Check("HIP runtime agreement", "n/a", "n/a", "not a HIP machine")
    text = read_self_maps() if maps_text is None else maps_text
    paths = hip_runtime_paths(text)
    if not paths:
        return Check(
            "HIP runtime agreement",
            "unknown",
            "warn",
            f"no {HIP_RUNTIME_LIB}* mapped in this process (or /proc/self/maps unreadable)",
        )
    if len(paths) == 1:
        return Check("HIP runtime agreement", "one runtime", "ok", paths[0])
    return Check(
        "HIP runtime agreement",
        f"{len(paths)} runtimes",
        "fail",
        "; ".join(paths),
        unsupported=(
            f"unsupported: torch and Warp loaded {len(paths)} different HIP runtimes "
            f"({', '.join(paths)}); build the Warp fork against the ROCm that torch uses so "
            f"only one {HIP_RUNTIME_LIB} is loaded"
        ),
    )


# Short table values for the broadphase hook's cache states (compat.broadphase.STATE_LABELS
# gives the long ones, which go into the detail column).
BROADPHASE_VALUES = {
    "none": "no cache",
    "disabled": "cache disabled",
    "neutralised": "cache neutralised",
    "unrecognised": "UNRECOGNISED",
}


def broadphase_check(status: Any, hip: bool, device: str = "cuda:0") -> Check:
    """The broadphase hook's row: which cache this mujoco_warp has and what the hook did.

    An unrecognised shape on a HIP machine is a warning naming the contact check, which decides;
    off HIP the fork never caches, so the same state is only information.
    """
    details = getattr(status, "details", None) or {}
    state = details.get("cache_state")
    value = BROADPHASE_VALUES.get(
        state, "active" if getattr(status, "active", False) else "inactive"
    )
    detail = str(getattr(status, "reason", ""))
    if state != "unrecognised" or not (hip or details.get("hip_calls")):
        return Check("compat: broadphase", value, "info", detail)
    return Check(
        "compat: broadphase",
        value,
        "warn",
        detail,
        warning=(
            "the broadphase hook does not recognise this mujoco_warp's broadphase cache "
            f"({details.get('verdict', detail)}); contacts may silently stop working. The "
            f"contact check decides: microduck contact-check --device {device} --require-hip"
        ),
    )


def compat_checks(hip: bool = False, device: str = "cuda:0") -> list[Check]:
    """One row per compat fix from ``mjlab_microduck.compat.report()``; degrades if absent.

    ``hip``: this machine's backend is HIP (the broadphase row then warns on a cache shape the
    hook does not recognise, naming the contact check on ``device``).
    """
    try:
        compat = importlib.import_module("mjlab_microduck.compat")
        statuses = compat.report()
    except Exception as exc:
        return [Check("compat fixes", "unavailable", "skip", provenance._one_line(exc))]
    rows = []
    for status in statuses:
        fix = getattr(status, "fix", "?")
        if fix == "broadphase":
            rows.append(broadphase_check(status, hip, device))
            continue
        active = bool(getattr(status, "active", False))
        rows.append(
            Check(
                f"compat: {fix}",
                "active" if active else "inactive",
                "info",
                str(getattr(status, "reason", "")),
            )
        )
    return rows or [Check("compat fixes", "none reported", "info")]


def graph_capture_check(device: str, wp_device: Any | None = None) -> Check:
    """Would mjlab capture CUDA graphs of the physics step on ``device``?

    Asks mjlab's own ``Simulation._should_use_cuda_graph`` (with this package's vetoes, e.g.
    eager stepping on HIP) for a stand-in simulation on that device, without building one.
    On NVIDIA it must say "on": the fixes must not change NVIDIA behaviour.
    """
    import contextlib
    import io
    from types import SimpleNamespace

    try:
        from mjlab.sim.sim import Simulation

        if wp_device is None:
            import warp as wp

            wp_device = wp.get_device(device)
        probe = SimpleNamespace(wp_device=wp_device)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            decision = Simulation._should_use_cuda_graph(probe)
    except Exception as exc:
        return Check("mjlab graph capture", "unknown", "warn", provenance._one_line(exc))
    veto = getattr(probe, "_microduck_graph_veto", "")
    detail = (
        veto
        or printed.getvalue().strip()
        or ("mjlab's decision" if decision else "not a CUDA device")
    )
    return Check("mjlab graph capture", "on" if decision else "off", "info", detail)


def _field(result: Any, *names: str) -> Any:
    for name in names:
        if isinstance(result, dict) and name in result:
            return result[name]
        if hasattr(result, name):
            return getattr(result, name)
    return None


def contact_check(device: str) -> Check:
    """The sphere-drop contact check (compat helper's ``run_contact_check``)."""
    try:
        module = importlib.import_module("mjlab_microduck.runtime.contact_check")
        run = module.run_contact_check
    except Exception as exc:
        return Check("contact check", "unavailable", "skip", provenance._one_line(exc))
    try:
        result = run(device)
    except Exception as exc:
        return Check(
            "contact check",
            "error",
            "fail",
            provenance._one_line(exc),
            unsupported=f"unsupported: the contact check could not run on {device} "
            f"({provenance._one_line(exc)})",
        )
    passed = _field(result, "passed", "ok")
    final_z = _field(result, "final_z", "final_z_m")
    contacts = _field(result, "max_contacts")
    hook_state = _field(result, "broadphase")
    parts = []
    if final_z is not None:
        parts.append(f"final_z={float(final_z):.6f}")
    if contacts is not None:
        parts.append(f"max_contacts={contacts}")
    if hook_state:
        parts.append(f"broadphase hook: {hook_state}")
    detail = ", ".join(parts) or str(result)
    if passed is None:
        return Check("contact check", "unknown", "warn", detail)
    if passed:
        return Check("contact check", "pass", "ok", detail)
    return Check(
        "contact check",
        "FAIL",
        "fail",
        detail,
        unsupported=(
            f"unsupported: contacts do not work on {device} ({detail}); a robot would fall "
            f"through the floor, check the broadphase fix (mjlab_microduck.compat)"
        ),
    )


def ipc_check(result: ipc_event.IpcProbeResult, require: bool) -> Check:
    """Row for the IPC probe; fail closed only when the workload requires it."""
    value = result.status
    if result.status == "failed":
        value = f"failed at reuse {result.failed_at}"
    detail = ipc_event.summary_line(result)
    status: CheckStatus = {"ok": "ok", "failed": "fail", "skipped": "skip"}[result.status]
    line = None
    if require:
        try:
            ipc_event.require_ipc_event_reuse(
                result, workload="this workload (--require-ipc-events)"
            )
        except ipc_event.UnsupportedRuntimeError as exc:
            line = str(exc)
            status = "fail"
    elif result.status == "failed":
        status = "warn"  # reported, but nothing here depends on it
    return Check("IPC event reuse", value, status, detail, unsupported=line)


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DoctorRequest(ipc_event.ProbeOptions):
    """``microduck doctor``: what to check (the probe options apply with ``ipc_probe``)."""

    device: str | None = None
    """device to check (default: the first GPU, else the CPU)"""
    json: bool = False
    """print the provenance block and the checks as JSON"""
    require_hip: bool = False
    """fail unless the backend is HIP (an AMD GPU with the ROCm stack)"""
    no_contact_check: bool = False
    """skip the sphere-drop contact check"""
    ipc_probe: bool = False
    """run the interprocess-event reuse probe (ROCm 7.2 32-slot bug)"""

    def check(self) -> None:
        super().check()
        if self.device is not None:
            backend.parse_device(self.device)


def gather(args: DoctorRequest) -> DoctorReport:
    report = DoctorReport()
    facts = provenance.runtime_facts(args.device)
    report.notes.extend(facts.notes)
    report.checks.extend(stack_checks(facts, require_hip=args.require_hip))
    report.notes.extend(initialise_gpu_runtimes(facts))
    report.checks.append(hip_runtime_check(facts))
    default_device = "cpu" if facts.backend == "cpu" else f"cuda:{facts.device_index}"
    # The contact check runs before the compat rows are read: its drop is a HIP collision step,
    # so the broadphase row then reports what the hook saw, not only what the source says.
    if args.no_contact_check:
        contact = Check("contact check", "skipped", "skip", "--no-contact-check")
    else:
        contact = contact_check(args.device or default_device)
    report.checks.extend(
        compat_checks(hip=facts.backend == "hip", device=args.device or default_device)
    )
    report.checks.append(graph_capture_check(args.device or default_device))
    report.checks.append(contact)
    if args.ipc_probe:
        result = ipc_event.run_probe(
            reuses=args.reuses,
            ring_size=args.ring,
            timeout_s=args.timeout,
            backend=ipc_event.TorchEventBackend(device_index=facts.device_index),
        )
        report.ipc_probe = result.to_dict()
        report.checks.append(ipc_check(result, require=args.require_ipc_events))
    elif args.require_ipc_events:
        report.checks.append(
            ipc_check(
                ipc_event.IpcProbeResult(
                    "skipped", 0, 0, None, args.ring, reason="--ipc-probe was not given"
                ),
                require=True,
            )
        )
    if args.json:
        prov = provenance.collect_report(device=args.device)
        report.provenance = prov.provenance.model_dump(mode="json")
        report.notes.extend(n for n in prov.notes if n not in report.notes)
    return report


def render_text(report: DoctorReport) -> str:
    """The checks as a plain table (rich: no borders, no colour, never wrapped), then the
    warnings and the notes."""
    import io

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_edge=False)
    for column in ("check", "value", "status", "detail"):
        table.add_column(column, no_wrap=True)
    for c in report.checks:
        # Text, not str: a value such as "[0, 1]" is data, not rich markup.
        table.add_row(*(Text(str(v)) for v in (c.name, c.value, c.status, c.detail)))
    buffer = io.StringIO()
    Console(file=buffer, width=10_000, color_system=None, highlight=False).print(table)
    lines = [line.rstrip() for line in buffer.getvalue().splitlines()]
    for warning in report.warnings:
        lines.append(f"WARNING: {warning}")
    for note in report.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)
