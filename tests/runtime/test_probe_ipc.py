"""IPC-event reuse probe (the ROCm 7.2 32-slot bug) and its fail-closed gate.

No AMD GPU exists here. The bug is reproduced with ``EmulatedClrBackend``, a model of ROCm
CLR's emulated IPC event (hip_event_ipc.cpp: a shared-memory block of IPC_SIGNALS_PER_EVENT=32
slots; record takes ``write_index % 32``; streamWait used ``read_index`` without the modulo
before a44f100faaa9). The tests check that the *model's arithmetic* produces the failing tick
(32 for one event, 32 x K for a ring of K, and the same law for other slot counts), and that
the probe protocol, time limit and reaping work with real spawned child processes.
"""

from __future__ import annotations

import json
import os
import signal
import time
from types import SimpleNamespace

import pytest

from mjlab_microduck.cli.probe import main as probe_cli
from mjlab_microduck.runs import records
from mjlab_microduck.runtime import ipc_probe as ipc_event
from mjlab_microduck.runtime.ipc_probe import (
    EmulatedClrBackend,
    IpcEventsUnsupported,
    IpcProbeResult,
    UnsupportedRuntimeError,
    require_ipc_event_reuse,
    run_probe,
)


@pytest.fixture
def model_dir(tmp_path):
    d = tmp_path / "shm"
    d.mkdir()
    return d


def emulated(model_dir, **kw) -> EmulatedClrBackend:
    return EmulatedClrBackend(root=str(model_dir), **kw)


# ------------------------------------------------------------------ the model's arithmetic


def test_one_event_fails_at_tick_32_with_invalid_argument(model_dir):
    result = run_probe(reuses=100, ring_size=1, backend=emulated(model_dir), isolation="thread")
    assert result.status == "failed"
    assert result.failed_at == 32
    assert result.reuses_done == 32
    assert "invalid argument" in result.error
    assert result.handle_prefix.startswith("/hip_")
    assert result.handle_prefix == f"/hip_{os.getpid()}_{result.handle_prefix.split('_')[-1]}"
    assert result.emulated_handle
    assert result.backend == "hip"


@pytest.mark.parametrize("ring", [1, 2, 3, 16])
def test_ring_of_k_events_fails_at_32_times_k(model_dir, ring):
    reuses = 32 * ring + 5
    result = run_probe(reuses=reuses, ring_size=ring, backend=emulated(model_dir),
                       isolation="thread")
    assert result.status == "failed"
    assert result.failed_at == 32 * ring
    assert result.failed_at == ipc_event.predicted_failure_tick(ring)


def test_model_is_not_hard_coded_other_slot_counts(model_dir):
    # Same law with 4 slots: ring of 3 fails at 12. A hard-coded 32 would not give this.
    result = run_probe(reuses=50, ring_size=3, backend=emulated(model_dir, slots=4),
                       isolation="thread")
    assert result.failed_at == 12
    assert "outside the 4 slots" in result.error


def test_fixed_runtime_survives_long_runs(model_dir):
    result = run_probe(reuses=1000, ring_size=1, backend=emulated(model_dir, fixed=True),
                       isolation="thread")
    assert result.status == "ok"
    assert result.reuses_done == 1000
    assert result.failed_at is None and result.error is None
    assert result.conclusive
    require_ipc_event_reuse(result, workload="w")  # does not raise


def test_shared_memory_files_are_removed(model_dir):
    run_probe(reuses=40, ring_size=2, backend=emulated(model_dir), isolation="thread")
    assert list(model_dir.iterdir()) == []


def test_invalid_arguments_are_rejected(model_dir):
    with pytest.raises(ValueError, match="reuses"):
        run_probe(reuses=0, backend=emulated(model_dir))
    with pytest.raises(ValueError, match="ring"):
        run_probe(reuses=1, ring_size=0, backend=emulated(model_dir))


# ------------------------------------------------------------------ real spawned processes


def test_spawned_child_reproduces_tick_32_and_exits_cleanly(model_dir):
    t0 = time.monotonic()
    result = run_probe(reuses=100, ring_size=1, timeout_s=30, backend=emulated(model_dir),
                       isolation="process")
    assert result.status == "failed"
    assert result.failed_at == 32
    assert result.child_exitcode == 0  # it stopped by itself after the parent closed the pipe
    assert result.handle_prefix.startswith(f"/hip_{os.getpid()}_")
    assert time.monotonic() - t0 < 30


def test_spawned_ring_of_16_fails_at_512(model_dir):
    result = run_probe(reuses=600, ring_size=16, timeout_s=30, backend=emulated(model_dir),
                       isolation="process")
    assert (result.status, result.failed_at, result.reuses_done) == ("failed", 512, 512)


def _assert_gone(pid):
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.slow
def test_hung_child_is_killed_within_the_time_limit(model_dir):
    # The child hangs at reuse 3 and ignores SIGTERM: only SIGKILL can reap it.
    backend = emulated(model_dir, hang_at=3, hang_ignores_sigterm=True)
    t0 = time.monotonic()
    result = run_probe(reuses=10, timeout_s=3.0, backend=backend, isolation="process",
                       reap_grace_s=0.3)
    elapsed = time.monotonic() - t0
    assert result.status == "failed"
    assert result.failed_at == 3
    assert result.reuses_done == 3
    assert "time limit" in result.error
    assert result.child_exitcode == -signal.SIGKILL
    assert elapsed < 3.0 + 3 * 0.3 + 1.5
    _assert_gone(result.extra["child_pid"])


@pytest.mark.slow
def test_hung_child_that_obeys_sigterm_is_terminated(model_dir):
    backend = emulated(model_dir, hang_at=0)
    result = run_probe(reuses=5, timeout_s=3.0, backend=backend, isolation="process",
                       reap_grace_s=0.3)
    assert (result.status, result.failed_at) == ("failed", 0)
    assert result.child_exitcode == -signal.SIGTERM
    _assert_gone(result.extra["child_pid"])


def test_child_that_dies_is_reported_not_waited_for(model_dir):
    backend = emulated(model_dir, crash_at=5)
    t0 = time.monotonic()
    result = run_probe(reuses=10, timeout_s=20.0, backend=backend, isolation="process")
    assert result.status == "failed"
    assert result.failed_at == 5
    assert "exited" in result.error or "EOFError" in result.error
    assert result.child_exitcode == 3
    assert time.monotonic() - t0 < 15  # noticed the death, did not sit out the time limit


def test_thread_worker_hang_respects_time_limit(model_dir):
    t0 = time.monotonic()
    result = run_probe(reuses=5, timeout_s=0.5, backend=emulated(model_dir, hang_at=1),
                       isolation="thread", reap_grace_s=0.1)
    assert (result.status, result.failed_at) == ("failed", 1)
    assert time.monotonic() - t0 < 2.0


# ------------------------------------------------------------------ skipping


class _RefusingBackend(EmulatedClrBackend):
    def create(self, ring_size):
        raise IpcEventsUnsupported("hipIpcGetEventHandle: operation not supported")


def test_ipc_unsupported_at_creation_is_skipped(model_dir):
    result = run_probe(reuses=10, backend=_RefusingBackend(root=str(model_dir)))
    assert result.status == "skipped"
    assert "interprocess events unsupported" in result.reason
    assert "not supported" in result.reason
    assert result.reuses_done == 0 and result.child_exitcode is None


class _BrokenBackend(EmulatedClrBackend):
    def create(self, ring_size):
        raise MemoryError("out of device memory")


def test_other_creation_failure_is_a_failed_result_not_an_exception(model_dir):
    result = run_probe(reuses=10, backend=_BrokenBackend(root=str(model_dir)))
    assert (result.status, result.failed_at) == ("failed", None)
    assert result.error == "creating the events failed: MemoryError: out of device memory"
    with pytest.raises(UnsupportedRuntimeError, match="failed before the first reuse"):
        require_ipc_event_reuse(result)


def test_cpu_only_torch_is_skipped_with_reason():
    import torch

    if torch.version.cuda or torch.version.hip:
        pytest.skip("this torch has a GPU runtime")
    result = run_probe()
    assert result.status == "skipped"
    assert "CPU-only torch build" in result.reason
    assert result.backend == "cpu"


def test_gpu_build_without_visible_gpu_is_skipped(monkeypatch):
    import torch

    monkeypatch.setattr(torch.version, "cuda", "12.8", raising=False)
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    result = run_probe(backend=ipc_event.TorchEventBackend())
    assert result.status == "skipped"
    assert "sees no GPU" in result.reason


def test_runtime_error_creating_torch_ipc_event_is_skipped(monkeypatch):
    """The real backend turns the RuntimeError of event creation into 'skipped'."""
    import torch

    def refuse(*args, **kwargs):
        raise RuntimeError("HIP error: operation not supported\nmore text")

    monkeypatch.setattr(torch.version, "hip", "7.2.53211", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_device", lambda d: None)
    monkeypatch.setattr(torch.cuda, "Event", refuse)
    result = run_probe(reuses=5, backend=ipc_event.TorchEventBackend())
    assert result.status == "skipped"
    assert result.reason == "interprocess events unsupported: HIP error: operation not supported"
    assert (result.backend, result.runtime_version) == ("hip", "7.2.53211")


# ------------------------------------------------------------------ handles


def test_describe_handle():
    assert ipc_event.describe_handle(b"/hip_4242_7".ljust(64, b"\0")) == "/hip_4242_7"
    opaque = bytes([0x9F, 0x00, 0x12, 0xAB]) + b"\x01" * 60
    assert ipc_event.describe_handle(opaque) == "0x9f0012ab01010101"
    assert ipc_event.describe_handle(b"") is None


# ------------------------------------------------------------------ fail closed


def _failed(ring=1, backend="hip", prefix="/hip_1_0"):
    return IpcProbeResult(
        status="failed", reuses_requested=100 * ring, reuses_done=32 * ring,
        failed_at=32 * ring, ring_size=ring,
        error="RuntimeError: HIP error: invalid argument\nstack...",
        handle_prefix=prefix, backend=backend, runtime_version="7.2.53211",
    )


def test_require_raises_one_explicit_line_on_failure():
    with pytest.raises(UnsupportedRuntimeError) as info:
        require_ipc_event_reuse(_failed(), workload="multi-process rollout")
    line = str(info.value)
    assert "\n" not in line
    assert line.startswith("unsupported runtime: multi-process rollout")
    assert "7.2.53211" in line
    assert "failed at reuse 32" in line
    assert "a44f100faaa9" in line and "streamWait" in line
    assert "32 x ring size" in line and "not a workaround" in line


def test_require_with_a_bigger_ring_still_fails_and_says_so():
    with pytest.raises(UnsupportedRuntimeError, match="failed at reuse 512"):
        require_ipc_event_reuse(_failed(ring=16))


def test_require_fails_closed_when_skipped():
    skipped = IpcProbeResult("skipped", 100, 0, None, 1, reason="torch sees no GPU")
    with pytest.raises(UnsupportedRuntimeError, match="could not be verified.*torch sees no GPU"):
        require_ipc_event_reuse(skipped)


def test_require_rejects_an_ok_that_never_passed_the_slot_limit():
    short = IpcProbeResult("ok", 100, 100, None, 16, backend="hip", runtime_version="7.2")
    assert not short.conclusive
    with pytest.raises(UnsupportedRuntimeError, match="--reuses 513"):
        require_ipc_event_reuse(short)
    enough = IpcProbeResult("ok", 513, 513, None, 16, backend="hip", runtime_version="7.2")
    assert enough.conclusive
    require_ipc_event_reuse(enough)


def test_cuda_failure_does_not_blame_the_rocm_bug():
    with pytest.raises(UnsupportedRuntimeError) as info:
        require_ipc_event_reuse(_failed(backend="cuda", prefix="0x0011"))
    assert "not the known ROCm 32-slot bug" in str(info.value)


# ------------------------------------------------------------------ CLI and record


def test_cli_writes_a_valid_probe_record(tmp_path, capsys):
    rc = probe_cli(["--reuses", "5", "--ring", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    dirs = sorted(tmp_path.glob("*_ipc_probe"))
    assert len(dirs) == 1
    record = records.load_record(dirs[0])
    assert record.kind == "probe"
    assert record.config == {"probe": "ipc_event", "reuses": 5, "ring": 1}
    assert record.summary["reuses_requested"] == 5
    assert record.provenance.backend in ("cpu", "cuda", "hip")
    assert f"record: {dirs[0] / 'record.json'}" in out
    if record.summary["probe_status"] == "skipped":
        assert rc == 0 and record.status == "ok" and record.notes


def test_failed_probe_record_keeps_the_measurement(model_dir, tmp_path):
    result = run_probe(reuses=40, backend=emulated(model_dir), isolation="thread")
    path = ipc_event.write_probe_record(result, tmp_path, ["probe"])
    record = records.load_record(path)
    assert record.status == "failed"
    assert "invalid argument" in record.error
    assert record.summary["failed_at"] == 32
    assert record.summary["emulated_handle"] is True
    raw = json.loads(path.read_text())
    assert raw["summary"]["signals_per_event"] == 32


def test_cli_require_flag_fails_closed_with_one_line(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the probe would run for real")
    rc = probe_cli(["--reuses", "3", "--require-ipc-events"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1
    assert len(err) == 1 and err[0].startswith("unsupported runtime:")


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--reuses", "0"], "--reuses must be >= 1, got 0"),
     (["--timeout", "-1"], "--timeout must be a positive number, got -1"),
     (["--ring", "x"], "--ring")],
)  # fmt: skip
def test_cli_rejects_bad_numbers_in_one_line(argv, message, capsys):
    assert probe_cli(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("microduck probe: ") and message in err


# ------------------------------------------------------------------ real GPU


@pytest.mark.gpu
def test_real_gpu_probe():
    """On a GPU the real torch events run; CUDA must pass, HIP reports honestly either way.

    CPU sibling: test_spawned_child_reproduces_tick_32_and_exits_cleanly (same protocol, model).
    """
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU visible to torch")
    result = run_probe(reuses=100, ring_size=1, timeout_s=120)
    assert result.status in ("ok", "failed"), result
    assert result.child_exitcode is not None
    if result.backend == "cuda":
        assert result.status == "ok", result.error
        assert result.conclusive and not result.emulated_handle
    if result.status == "failed" and result.emulated_handle:
        assert result.failed_at == 32


def test_result_serialises(model_dir):
    result = run_probe(reuses=3, backend=emulated(model_dir), isolation="thread")
    data = result.to_dict()
    assert data["status"] == "ok" and data["conclusive"] is False
    assert json.loads(json.dumps(data))["ring_size"] == 1
    assert SimpleNamespace(**data).emulated_handle is True
