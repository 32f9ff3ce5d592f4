"""microduck doctor: the table, and fail-closed exits for every unsupported combination.

The GPU stacks are simulated with ``provenance.RuntimeFacts`` values shaped like what torch
and Warp report on each vendor (a ROCm torch has ``torch.version.hip``; the ROCm Warp fork's
HIP devices have ``is_hip``), a fake ``/proc/self/maps`` text for the HIP-runtime agreement
check, and fake ``compat``/``contact_check`` modules for their degradation paths.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest
import suite_memo

from mjlab_microduck.cli.doctor import main as doctor_cli
from mjlab_microduck.runtime import doctor, provenance
from mjlab_microduck.runtime import ipc_probe as ipc_event

TORCH_LIB_HIP = "/venv/lib/python3.12/site-packages/torch/lib/libamdhip64.so"
SYSTEM_HIP = "/opt/rocm-7.2.4/lib/libamdhip64.so.7.2.70204"


def maps_line(path: str, addr: str = "7f0000000000-7f0000100000") -> str:
    return f"{addr} r-xp 00000000 08:01 1234 {path}"


def hip_facts(**kw) -> provenance.RuntimeFacts:
    base = dict(
        backend="hip", torch_backend="hip", torch_version="2.9.1+rocm7.2.1",
        torch_runtime="7.2.53211", torch_gpu_visible=True, device_name="AMD Radeon AI PRO R9700",
        arch="gfx1201", warp_version="1.13.0+rocm.0", warp_device="cuda:0", warp_backend="hip",
        warp_is_rocm_fork=True,
    )
    base.update(kw)
    return provenance.RuntimeFacts(**base)


def cuda_facts(**kw) -> provenance.RuntimeFacts:
    base = dict(
        backend="cuda", torch_backend="cuda", torch_version="2.11.0+cu130", torch_runtime="13.0",
        torch_gpu_visible=True, device_name="NVIDIA H200", arch="sm_90", warp_version="1.13.0",
        warp_device="cuda:0", warp_backend="cuda",
    )
    base.update(kw)
    return provenance.RuntimeFacts(**base)


def by_name(checks, name):
    return next(c for c in checks if c.name == name)


# ------------------------------------------------------------------ pure checks


def test_hip_runtime_paths_dedupes_and_ignores_other_libs():
    text = "\n".join([
        maps_line(SYSTEM_HIP),
        maps_line(SYSTEM_HIP, "7f0000100000-7f0000200000"),
        maps_line("/usr/lib/x86_64-linux-gnu/libc.so.6"),
        "7fff0000-7fff1000 rw-p 00000000 00:00 0",
        maps_line(TORCH_LIB_HIP + " (deleted)"),
    ])
    assert doctor.hip_runtime_paths(text) == sorted([SYSTEM_HIP, TORCH_LIB_HIP])


def test_one_hip_runtime_is_ok():
    check = doctor.hip_runtime_check(hip_facts(), maps_text=maps_line(SYSTEM_HIP))
    assert (check.value, check.status, check.unsupported) == ("one runtime", "ok", None)


def test_two_hip_runtimes_fail_closed():
    text = "\n".join([maps_line(TORCH_LIB_HIP), maps_line(SYSTEM_HIP)])
    check = doctor.hip_runtime_check(hip_facts(), maps_text=text)
    assert check.status == "fail"
    assert check.unsupported.startswith("unsupported: torch and Warp loaded 2 different HIP")
    assert TORCH_LIB_HIP in check.unsupported and SYSTEM_HIP in check.unsupported


def test_hip_runtime_agreement_is_na_off_hip():
    check = doctor.hip_runtime_check(cuda_facts(), maps_text=maps_line(SYSTEM_HIP))
    assert (check.value, check.status) == ("n/a", "n/a")


def test_supported_hip_stack_rows():
    checks = doctor.stack_checks(hip_facts(), require_hip=True)
    assert by_name(checks, "backend").value == "hip"
    assert by_name(checks, "architecture").value == "gfx1201"
    assert by_name(checks, "torch").value == "2.9.1+rocm7.2.1 (HIP 7.2.53211)"
    assert by_name(checks, "warp").value == "1.13.0+rocm.0 (ROCm fork)"
    assert by_name(checks, "warp").status == "ok"
    assert not [c for c in checks if c.unsupported]


def test_cuda_stack_rows():
    checks = doctor.stack_checks(cuda_facts())
    assert by_name(checks, "torch").value == "2.11.0+cu130 (CUDA 13.0)"
    assert by_name(checks, "warp").value == "1.13.0 (upstream)"
    assert by_name(checks, "architecture").value == "sm_90"
    assert not [c for c in checks if c.unsupported]


def test_rocm_torch_with_upstream_warp_is_unsupported():
    # Upstream Warp on an AMD machine finds no CUDA driver and falls back to the CPU.
    facts = hip_facts(warp_version="1.13.0", warp_backend="cpu", warp_device="cpu",
                      warp_is_rocm_fork=False)
    warp = by_name(doctor.stack_checks(facts), "warp")
    assert warp.status == "fail"
    assert warp.unsupported.startswith("unsupported: torch 2.9.1+rocm7.2.1 is a ROCm build")
    assert "no HIP device" in warp.unsupported and "gfx1201" in warp.unsupported


def test_cpu_torch_with_rocm_warp_is_unsupported():
    facts = hip_facts(torch_backend="cpu", torch_version="2.13.0+cpu", torch_runtime=None,
                      torch_gpu_visible=False)
    warp = by_name(doctor.stack_checks(facts), "warp")
    assert warp.unsupported.startswith("unsupported: Warp 1.13.0+rocm.0 runs on HIP but torch")


def test_require_hip_on_cuda_is_unsupported():
    backend = by_name(doctor.stack_checks(cuda_facts(), require_hip=True), "backend")
    assert backend.unsupported.startswith("unsupported: --require-hip but this machine's "
                                          "backend is cuda")


def test_compat_rows_and_degradation(monkeypatch):
    fake = ModuleType("mjlab_microduck.compat")
    fake.report = lambda: [SimpleNamespace(fix="broadphase", active=True, reason="HIP device"),
                           SimpleNamespace(fix="warp_alias", active=False, reason="present")]
    monkeypatch.setitem(sys.modules, "mjlab_microduck.compat", fake)
    rows = doctor.compat_checks()
    assert [(r.name, r.value) for r in rows] == [("compat: broadphase", "active"),
                                                 ("compat: warp_alias", "inactive")]
    monkeypatch.setitem(sys.modules, "mjlab_microduck.compat", None)  # "not installed"
    rows = doctor.compat_checks()
    assert len(rows) == 1 and rows[0].status == "skip" and rows[0].unsupported is None


def test_contact_check_variants(monkeypatch):
    fake = ModuleType("mjlab_microduck.runtime.contact_check")
    monkeypatch.setitem(sys.modules, "mjlab_microduck.runtime.contact_check", fake)
    fake.run_contact_check = lambda device: SimpleNamespace(passed=True, final_z=0.049633,
                                                            max_contacts=1)
    ok = doctor.contact_check("cuda:0")
    assert (ok.value, ok.status, ok.detail) == ("pass", "ok", "final_z=0.049633, max_contacts=1")
    fake.run_contact_check = lambda device: SimpleNamespace(
        passed=True, final_z=0.049633, max_contacts=1, broadphase="neutralised")
    hooked = doctor.contact_check("cuda:0")
    assert hooked.detail == "final_z=0.049633, max_contacts=1, broadphase hook: neutralised"
    fake.run_contact_check = lambda device: {"passed": False, "final_z": -1.2,
                                             "max_contacts": 0}
    bad = doctor.contact_check("cuda:0")
    assert bad.status == "fail" and "fall through the floor" in bad.unsupported

    def boom(device):
        raise RuntimeError("hipErrorNoBinaryForGpu\ntrace")

    fake.run_contact_check = boom
    err = doctor.contact_check("cuda:0")
    assert err.status == "fail" and "hipErrorNoBinaryForGpu" in err.unsupported
    monkeypatch.setitem(sys.modules, "mjlab_microduck.runtime.contact_check", None)
    missing = doctor.contact_check("cpu")
    assert missing.status == "skip" and missing.unsupported is None


# ------------------------------------------------------------------ broadphase hook row


@pytest.mark.parametrize(("state", "value"), [
    ("none", "no cache"), ("disabled", "cache disabled"), ("neutralised", "cache neutralised"),
    ("unrecognised", "UNRECOGNISED"),
])
def test_broadphase_row_names_the_cache_state(state, value):
    status = SimpleNamespace(fix="broadphase", active=True, reason="why",
                             details={"cache_state": state, "verdict": "what it saw"})
    row = doctor.broadphase_check(status, hip=True, device="cuda:1")
    assert (row.name, row.value, row.detail) == ("compat: broadphase", value, "why")
    if state == "unrecognised":
        assert row.status == "warn" and row.unsupported is None
        assert "what it saw" in row.warning
        assert "microduck contact-check --device cuda:1 --require-hip" in row.warning
    else:
        assert row.status == "info" and row.warning is None


def test_unrecognised_off_hip_is_information_only():
    status = SimpleNamespace(fix="broadphase", active=False, reason="r",
                             details={"cache_state": "unrecognised", "hip_calls": 0})
    row = doctor.broadphase_check(status, hip=False)
    assert (row.value, row.status, row.warning) == ("UNRECOGNISED", "info", None)


@pytest.fixture
def fork_machine(monkeypatch, tmp_path):
    """A fake HIP machine whose mujoco_warp is one of the fake fork drivers of ``fakes``: the
    broadphase hook is installed on it and the doctor runs the real contact check, with the
    sphere drop simulated through that driver."""
    from fakes import HIP, fake_simulate_drop, load_fork

    from mjlab_microduck import compat
    from mjlab_microduck.compat import _hook, broadphase
    from mjlab_microduck.runtime import contact_check

    compat.uninstall_all()
    current = {"device": HIP}
    monkeypatch.setattr(_hook, "current_warp_device", lambda: current["device"])
    monkeypatch.setattr(doctor.provenance, "runtime_facts", lambda device=None: hip_facts())
    monkeypatch.setattr(doctor, "initialise_gpu_runtimes", lambda f: [])
    monkeypatch.setattr(doctor, "read_self_maps", lambda: maps_line(SYSTEM_HIP))

    def use(variant, **kwargs):
        module, package = load_fork(variant, current, tmp_path, **kwargs)
        broadphase.install(hip_platform=True, collision_module=module, package_module=package)
        monkeypatch.setattr(contact_check, "simulate_drop", fake_simulate_drop(module))
        return module

    yield use
    compat.uninstall_all()
    compat.install_all()


def table_row(out, name):
    return " ".join(next(line for line in out.splitlines() if line.startswith(name)).split())


@pytest.mark.parametrize(("variant", "kwargs", "value", "hook"), [
    ("static_ctx", {}, "cache neutralised", "neutralised"),
    ("helper", {}, "cache neutralised", "neutralised"),
    ("opt_in", {"cache_enabled": False}, "cache disabled", "disabled"),
    ("upstream", {}, "no cache", "none"),
])
def test_doctor_on_fork_shapes_the_hook_handles(fork_machine, capsys, variant, kwargs, value,
                                                hook):
    fork_machine(variant, **kwargs)
    rc, out, err = run_main(capsys)
    assert rc == 0 and err == []
    assert table_row(out, "compat: broadphase").startswith(f"compat: broadphase {value} info")
    contact = table_row(out, "contact check")
    assert contact.startswith("contact check pass ok") and f"broadphase hook: {hook}" in contact
    assert "WARNING" not in out


def test_doctor_on_an_unknown_fork_shape_warns_and_the_contact_check_decides(fork_machine,
                                                                            capsys):
    fork_machine("hidden")
    with pytest.warns(RuntimeWarning, match="ran no broadphase"):
        rc, out, err = run_main(capsys)
    assert rc == 1
    assert table_row(out, "compat: broadphase").startswith("compat: broadphase UNRECOGNISED warn")
    assert table_row(out, "contact check").startswith("contact check FAIL fail")
    assert "WARNING: the broadphase hook does not recognise" in out
    assert err[0].startswith("warning: the broadphase hook does not recognise")
    assert err[-1].startswith("unsupported: contacts do not work on cuda:0")


def test_unknown_fork_shape_is_a_warning_even_without_the_contact_check(fork_machine, capsys):
    fork_machine("module_cache")
    rc, out, err = run_main(capsys, "--no-contact-check")
    assert rc == 0  # nothing decided yet: the warning says what decides
    assert len(err) == 1 and err[0].startswith("warning:") and "_PAIR_CACHE" in err[0]
    assert "microduck contact-check --device cuda:0 --require-hip" in err[0]
    assert table_row(out, "contact check").startswith("contact check skipped skip")


# ------------------------------------------------------------------ main() with fakes


@pytest.fixture
def fake_machine(monkeypatch):
    """Route main() through given facts and maps; no GPU init, no real contact check."""

    def install(facts, maps_text="", contact=None):
        monkeypatch.setattr(doctor.provenance, "runtime_facts", lambda device=None: facts)
        monkeypatch.setattr(doctor, "initialise_gpu_runtimes", lambda f: [])
        monkeypatch.setattr(doctor, "read_self_maps", lambda: maps_text)
        fake = ModuleType("mjlab_microduck.runtime.contact_check")
        fake.run_contact_check = lambda device: contact or {"passed": True, "final_z": 0.0496,
                                                            "max_contacts": 1}
        monkeypatch.setitem(sys.modules, "mjlab_microduck.runtime.contact_check", fake)

    return install


def run_main(capsys, *argv):
    rc = doctor_cli(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err.strip().splitlines()


def test_main_supported_hip_machine_exits_0(fake_machine, capsys):
    fake_machine(hip_facts(), maps_text=maps_line(SYSTEM_HIP))
    rc, out, err = run_main(capsys, "--require-hip")
    assert rc == 0 and err == []
    assert "gfx1201" in out and "1.13.0+rocm.0 (ROCm fork)" in out and "one runtime" in out


def test_main_two_runtimes_exit_1_with_one_line(fake_machine, capsys):
    fake_machine(hip_facts(), maps_text="\n".join([maps_line(TORCH_LIB_HIP),
                                                   maps_line(SYSTEM_HIP)]))
    rc, out, err = run_main(capsys)
    assert rc == 1
    assert len(err) == 1 and err[0].startswith("unsupported: torch and Warp loaded 2")


def test_main_upstream_warp_on_rocm_torch_exit_1(fake_machine, capsys):
    fake_machine(hip_facts(warp_version="1.13.0", warp_backend="cpu", warp_device="cpu",
                           warp_is_rocm_fork=False), maps_text=maps_line(TORCH_LIB_HIP))
    rc, _, err = run_main(capsys, "--no-contact-check")
    assert rc == 1 and len(err) == 1 and "is a ROCm build" in err[0]


def test_main_failed_contact_check_exit_1(fake_machine, capsys):
    fake_machine(hip_facts(), maps_text=maps_line(SYSTEM_HIP),
                 contact={"passed": False, "final_z": -3.0, "max_contacts": 0})
    rc, out, err = run_main(capsys)
    assert rc == 1 and len(err) == 1 and err[0].startswith("unsupported: contacts do not work")
    assert "FAIL" in out


def test_main_several_problems_still_one_line(fake_machine, capsys):
    fake_machine(cuda_facts(), contact={"passed": False, "final_z": -3.0, "max_contacts": 0})
    rc, _, err = run_main(capsys, "--require-hip")
    assert rc == 1 and len(err) == 1
    assert err[0].startswith("unsupported: --require-hip") and err[0].endswith(
        "(+1 more in the table)")


def test_main_ipc_probe_failure_required_exit_1(fake_machine, capsys, monkeypatch, tmp_path):
    fake_machine(hip_facts(), maps_text=maps_line(SYSTEM_HIP))
    seen = {}
    real_probe = ipc_event.run_probe

    def fake_probe(reuses, ring_size, timeout_s, backend):
        seen.update(reuses=reuses, ring=ring_size)
        return real_probe(reuses=reuses, ring_size=ring_size, timeout_s=timeout_s,
                                   backend=ipc_event.EmulatedClrBackend(str(tmp_path)),
                                   isolation="thread")

    monkeypatch.setattr(doctor.ipc_event, "run_probe", fake_probe)
    rc, out, err = run_main(capsys, "--no-contact-check", "--ipc-probe", "--reuses", "600",
                            "--ring", "16", "--require-ipc-events")
    assert seen == {"reuses": 600, "ring": 16}
    assert rc == 1 and len(err) == 1
    assert "failed at reuse 512" in err[0] and "a44f100faaa9" in err[0]
    assert "failed at reuse 512" in out


def test_main_ipc_probe_failure_not_required_is_a_warning(fake_machine, capsys, monkeypatch,
                                                          tmp_path):
    fake_machine(hip_facts(), maps_text=maps_line(SYSTEM_HIP))
    real_probe = ipc_event.run_probe
    monkeypatch.setattr(
        doctor.ipc_event, "run_probe",
        lambda reuses, ring_size, timeout_s, backend: real_probe(
            reuses=reuses, ring_size=ring_size,
            backend=ipc_event.EmulatedClrBackend(str(tmp_path)), isolation="thread"))
    rc, out, err = run_main(capsys, "--no-contact-check", "--ipc-probe")
    assert rc == 0 and err == []
    assert "failed at reuse 32" in out and "warn" in out


def test_require_ipc_events_without_probe_fails_closed(fake_machine, capsys):
    fake_machine(cuda_facts())
    rc, _, err = run_main(capsys, "--no-contact-check", "--require-ipc-events")
    assert rc == 1 and len(err) == 1 and "could not be verified" in err[0]


# ------------------------------------------------------------------ this machine, for real


def test_real_machine_table(capsys):
    import torch

    rc, out, err = run_main(capsys, "--no-contact-check")
    if not torch.cuda.is_available():
        assert rc == 0 and err == []
        first = out.splitlines()[1]
        assert first.split()[:2] == ["backend", "cpu"]
        assert "HIP runtime agreement n/a" in " ".join(out.split())


def test_real_machine_json(capsys):
    rc, out, _ = run_main(capsys, "--json", "--no-contact-check")
    data = json.loads(out)
    assert data["ok"] is (rc == 0)
    assert data["provenance"]["backend"] in ("cpu", "cuda", "hip")
    assert set(data["provenance"]["versions"]) >= {"torch", "warp", "rsl_rl", "python"}
    names = [c["name"] for c in data["checks"]]
    assert names[:5] == ["backend", "device", "architecture", "torch", "warp"]
    assert "HIP runtime agreement" in names and "contact check" in names


def test_require_hip_on_this_cpu_machine(capsys):
    import torch

    if torch.version.hip and torch.cuda.is_available():
        pytest.skip("this machine is HIP")
    rc, _, err = run_main(capsys, "--require-hip", "--no-contact-check")
    assert rc == 1 and len(err) == 1 and err[0].startswith("unsupported: --require-hip")


@pytest.mark.slow
def test_console_script_is_wired():
    """The installed `microduck-doctor` entry point runs and fails closed (one stderr line)."""
    exe = Path(sys.executable).with_name("microduck-doctor")
    if not exe.exists():
        pytest.skip("console script not installed in this environment")
    import torch

    if torch.version.hip and torch.cuda.is_available():
        pytest.skip("this machine is HIP")
    proc = suite_memo.run("doctor_console_script", [str(exe), "--require-hip",
                                                    "--no-contact-check"], timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1].startswith("unsupported: --require-hip")
    assert "backend" in proc.stdout


@pytest.mark.gpu
def test_real_gpu_doctor(capsys):
    """CPU sibling: test_real_machine_table."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU visible to torch")
    rc, out, err = run_main(capsys, "--no-contact-check")
    backend = "hip" if torch.version.hip else "cuda"
    assert out.splitlines()[1].split()[:2] == ["backend", backend]
    if backend == "cuda":
        assert rc == 0, err
