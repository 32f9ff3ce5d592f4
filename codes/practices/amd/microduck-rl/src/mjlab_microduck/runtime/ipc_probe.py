"""Probe: can this GPU runtime reuse an interprocess event more than 32 times?

Problem it solves: on ROCm 7.2 a HIP interprocess event (``torch.cuda.Event(interprocess=True)``
exported to a second process, recorded there, waited on here) fails on its 33rd reuse.
ROCm CLR *emulates* IPC events with a shared-memory block of ``IPC_SIGNALS_PER_EVENT = 32``
signal slots. Record, query and synchronize take the slot index modulo 32; ``streamWait``
(``hipStreamWaitEvent``) did not, so the 33rd wait reads one slot past the array and returns
``hipErrorInvalidValue`` ("invalid argument"). The failure is deterministic: one event fails at
reuse 32 (0-based), a ring of K events at reuse 32 x K, so a bigger ring only delays it. Fixed
upstream in ROCm CLR commit ``a44f100faaa9``; the HIP runtime bundled with the PyTorch
2.14.0+rocm7.2 wheel (HIP 7.2.53211) predates the fix.

A workload that depends on this must find out *before* it starts, not at tick 32 of a long run.
:func:`run_probe` reproduces the exact pattern with two processes and a bounded number of
reuses, under a hard time limit; :func:`require_ipc_event_reuse` turns the result into a
fail-closed gate that raises :class:`UnsupportedRuntimeError` with one explicit line.

Design: the probe talks to the GPU only through a small :class:`EventBackend` protocol.
:class:`TorchEventBackend` is the real one (torch.cuda events, works on CUDA and ROCm builds);
:class:`EmulatedClrBackend` is a software model of CLR's emulated IPC event (a shared-memory
block of 32 slots, with or without the missing modulo) used by the tests and by the book on
machines without a GPU. It models the slot arithmetic; it does not hard-code the failing tick.

No-op cases: on a CPU-only torch, without a visible GPU, or when the runtime refuses to create
interprocess events, the probe returns ``status="skipped"`` with the reason and starts nothing.

CLI (writes a run record of kind ``"probe"`` into a new directory under ``--out``)::

    microduck probe --reuses 100 --ring 1 --out book/results
"""

from __future__ import annotations

import datetime as _dt
import math
import mmap
import multiprocessing
import os
import runpy
import signal
import struct
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

# ROCm CLR's hip_event.hpp: number of signal slots in one emulated IPC event.
IPC_SIGNALS_PER_EVENT = 32
# CUDA and HIP both export a 64-byte opaque IPC event handle.
IPC_HANDLE_SIZE = 64
# CLR names the shared-memory block of an emulated IPC event "/hip_<pid>_<counter>" and copies
# that name into the handle, so a handle starting with these bytes is the emulated implementation.
EMULATED_HANDLE_PREFIX = "/hip_"
UPSTREAM_FIX_COMMIT = "a44f100faaa9"

PROBE_NAME = "ipc_event"
"""``config["probe"]`` of the records this probe writes (:func:`write_probe_record`)."""
DEFAULT_REUSES = 100
DEFAULT_RING = 1
DEFAULT_TIMEOUT_S = 60.0
DEFAULT_REAP_GRACE_S = 3.0

Status = Literal["ok", "failed", "skipped"]
Isolation = Literal["process", "thread"]


class UnsupportedRuntimeError(RuntimeError):
    """The runtime cannot do what a workload needs; the message is one explicit line."""


class IpcEventsUnsupported(RuntimeError):
    """Raised by a backend when the runtime refuses to create or export interprocess events."""


class ProbeTimeout(RuntimeError):
    """The probe's hard time limit ran out while waiting on the GPU or on the child."""


@dataclass
class IpcProbeResult:
    """Outcome of one probe run.

    Attributes:
        status: ``ok`` (every reuse waited fine), ``failed`` (a reuse failed, the child died or
            the time limit ran out) or ``skipped`` (nothing to probe here, see ``reason``).
        reuses_requested: reuses the caller asked for.
        reuses_done: reuses that completed (record in the child, wait + synchronize here).
        failed_at: 0-based reuse that failed, ``None`` unless a reuse failed or hung.
        ring_size: number of events used round-robin (reuse ``i`` uses event ``i % ring_size``).
        error: first line of the error when ``failed``.
        reason: why the probe was ``skipped``.
        handle_prefix: readable start of the first exported handle (``/hip_<pid>_<n>`` for
            CLR's emulated events) or its first bytes in hex for an opaque handle.
        backend: ``hip``, ``cuda`` or ``cpu``.
        runtime_version: ``torch.version.hip`` / ``torch.version.cuda`` (or the model's label).
        elapsed_s: wall time of the probe, child start-up included.
        child_exitcode: exit status of the reaped child (negative: killed by that signal).
    """

    status: Status
    reuses_requested: int
    reuses_done: int
    failed_at: int | None
    ring_size: int
    error: str | None = None
    reason: str | None = None
    handle_prefix: str | None = None
    backend: str = "cpu"
    runtime_version: str | None = None
    elapsed_s: float = 0.0
    child_exitcode: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def emulated_handle(self) -> bool:
        """True when the exported handle is CLR's emulated (shared-memory) IPC event."""
        return bool(self.handle_prefix and self.handle_prefix.startswith(EMULATED_HANDLE_PREFIX))

    @property
    def conclusive(self) -> bool:
        """An ``ok`` only proves something if one event went past the 32-slot limit."""
        return self.reuses_done > IPC_SIGNALS_PER_EVENT * self.ring_size

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["emulated_handle"] = self.emulated_handle
        out["conclusive"] = self.conclusive
        return out


# --------------------------------------------------------------------------------------------
# Backend protocol
# --------------------------------------------------------------------------------------------


class ParentEvents(Protocol):
    """Waiting side (this process): owns the events and exports their handles."""

    def handles(self) -> list[bytes]: ...

    def wait(self, slot: int, timeout_s: float) -> None:
        """Make this process's stream wait on event ``slot``, then synchronize.

        Raises the runtime's error when the wait fails, :class:`ProbeTimeout` past ``timeout_s``.
        """

    def close(self) -> None: ...


class ChildEvents(Protocol):
    """Recording side (the child process): opens the handles and records the events."""

    def record(self, slot: int, tick: int) -> None: ...

    def close(self) -> None: ...


@runtime_checkable
class EventBackend(Protocol):
    """Everything the probe needs from a GPU runtime. Must be picklable (it crosses spawn)."""

    def unavailable_reason(self) -> str | None:
        """``None`` when the probe can run here, else one line saying why it cannot."""

    def runtime(self) -> tuple[str, str | None]:
        """``(backend, runtime_version)``, e.g. ``("hip", "7.2.53211")``."""

    def create(self, ring_size: int) -> ParentEvents:
        """Create ``ring_size`` interprocess events; :class:`IpcEventsUnsupported` if refused."""

    def open(self, handles: Sequence[bytes]) -> ChildEvents:
        """In the child: open the events from their exported handles."""


# --------------------------------------------------------------------------------------------
# Real backend: torch.cuda events (CUDA or ROCm build of torch)
# --------------------------------------------------------------------------------------------


def _first_line(text: object) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return lines[0] if lines else str(text).strip()


@dataclass
class TorchEventBackend:
    """``torch.cuda.Event(interprocess=True)``; on ROCm the waits are ``hipStreamWaitEvent``."""

    device_index: int = 0

    def unavailable_reason(self) -> str | None:
        try:
            import torch
        except ImportError:
            return "torch is not installed"
        if not getattr(torch.version, "hip", None) and not getattr(torch.version, "cuda", None):
            return f"CPU-only torch build ({torch.__version__}): no GPU runtime to probe"
        if not torch.cuda.is_available():
            return "torch sees no GPU (torch.cuda.is_available() is False)"
        if self.device_index >= torch.cuda.device_count():
            return f"no GPU with index {self.device_index}"
        return None

    def runtime(self) -> tuple[str, str | None]:
        try:
            import torch
        except ImportError:
            return "cpu", None
        hip = getattr(torch.version, "hip", None)
        if hip:
            return "hip", str(hip)
        cuda = getattr(torch.version, "cuda", None)
        if cuda and torch.cuda.is_available():
            return "cuda", str(cuda)
        return "cpu", None

    def create(self, ring_size: int) -> ParentEvents:
        return _TorchParentEvents(self.device_index, ring_size)

    def open(self, handles: Sequence[bytes]) -> ChildEvents:
        return _TorchChildEvents(self.device_index, handles)


class _TorchParentEvents:
    def __init__(self, device_index: int, ring_size: int) -> None:
        import torch

        self._torch = torch
        self.device = torch.device("cuda", device_index)
        torch.cuda.set_device(self.device)
        try:
            self.events = [torch.cuda.Event(interprocess=True) for _ in range(ring_size)]
            # Exporting creates the underlying event (and, on ROCm, its shared-memory block).
            self._handles = [bytes(ev.ipc_handle()) for ev in self.events]
        except RuntimeError as exc:  # e.g. a runtime or platform without IPC event support
            raise IpcEventsUnsupported(_first_line(exc)) from exc
        # Something for the waiting stream to do after the wait, so the wait has a consumer.
        self.sink = torch.zeros(1, device=self.device)

    def handles(self) -> list[bytes]:
        return list(self._handles)

    def wait(self, slot: int, timeout_s: float) -> None:
        stream = self._torch.cuda.current_stream(self.device)
        stream.wait_event(self.events[slot])  # hipStreamWaitEvent on ROCm: the failing call
        self.sink.add_(1)
        # Poll instead of a blocking synchronize so a wait that never resolves cannot hang us.
        deadline = time.monotonic() + max(timeout_s, 0.0)
        while not stream.query():
            if time.monotonic() >= deadline:
                raise ProbeTimeout(f"stream wait on event {slot} did not complete in time")
            time.sleep(0.0005)
        stream.synchronize()  # surfaces asynchronous errors of the wait

    def close(self) -> None:
        self.events = []


class _TorchChildEvents:
    def __init__(self, device_index: int, handles: Sequence[bytes]) -> None:
        import torch

        self._torch = torch
        self.device = torch.device("cuda", device_index)
        torch.cuda.set_device(self.device)
        # Opened once per event and reused: reusing the *same* event is what the bug is about.
        self.events = [torch.cuda.Event.from_ipc_handle(self.device, h) for h in handles]
        self.stream = torch.cuda.current_stream(self.device)
        self.work = torch.ones(1024, device=self.device)

    def record(self, slot: int, tick: int) -> None:
        self.work.mul_(1.0001)  # tiny GPU work the event marks the end of
        self.events[slot].record(self.stream)

    def close(self) -> None:
        self.stream.synchronize()
        self.events = []


# --------------------------------------------------------------------------------------------
# Software model of ROCm CLR's emulated IPC event (tests, and the book on CPU-only machines)
# --------------------------------------------------------------------------------------------

# Layout of CLR's ihipIpcEventShmem_t: owners, owners_device_id, owners_process_id, read_index,
# write_index (ints), then uint32 signal[IPC_SIGNALS_PER_EVENT].
_SHM_HEADER = struct.Struct("<5i")
_OWNERS, _DEVICE_ID, _PROCESS_ID, _READ_INDEX, _WRITE_INDEX = range(5)


class _ShmBlock:
    """One emulated event's shared state, a file mapped in both processes (like CLR's shm)."""

    def __init__(self, path: Path, slots: int, create: bool) -> None:
        self.slots = slots
        self.size = _SHM_HEADER.size + 4 * slots
        if create:
            path.write_bytes(b"\0" * self.size)
        self._file = open(path, "r+b")  # noqa: SIM115 - kept open for the mapping's lifetime
        self.mm = mmap.mmap(self._file.fileno(), self.size)

    def get(self, index: int) -> int:
        return struct.unpack_from("<i", self.mm, 4 * index)[0]

    def set(self, index: int, value: int) -> None:
        struct.pack_into("<i", self.mm, 4 * index, value)

    def signal_get(self, offset: int) -> int:
        return struct.unpack_from("<I", self.mm, _SHM_HEADER.size + 4 * offset)[0]

    def signal_set(self, offset: int, value: int) -> None:
        struct.pack_into("<I", self.mm, _SHM_HEADER.size + 4 * offset, value)

    def close(self) -> None:
        self.mm.close()
        self._file.close()


@dataclass
class EmulatedClrBackend:
    """A model of CLR's emulated IPC event, faithful to its slot arithmetic.

    ``record`` (child) takes ``write_index % slots`` like CLR, sets the slot, "completes" it and
    publishes ``read_index = write_index``. ``wait`` (parent) reads ``read_index`` and, like
    ``IPCEvent::streamWait`` before the fix, indexes ``signal[read_index]`` *without* the modulo
    unless ``fixed=True``; an index past the array is refused the way HIP refuses it, with
    ``hipErrorInvalidValue`` ("invalid argument"). Where the first failure lands is therefore
    computed from the model, not written down.

    Attributes:
        root: directory holding the shared-memory files (one per event).
        fixed: model the upstream fix (modulo in streamWait).
        slots: signal slots per event (CLR: 32).
        hang_at: reuse at which the child's record hangs forever (time-limit tests).
        hang_ignores_sigterm: the hung child also ignores SIGTERM, so only SIGKILL reaps it.
        crash_at: reuse at which the child process exits abruptly (status 3).
        runtime_version: label reported as the runtime version (default: names the model and
            whether it includes the fix).
    """

    root: str
    fixed: bool = False
    slots: int = IPC_SIGNALS_PER_EVENT
    hang_at: int | None = None
    hang_ignores_sigterm: bool = False
    crash_at: int | None = None
    runtime_version: str | None = None

    def unavailable_reason(self) -> str | None:
        return None if Path(self.root).is_dir() else f"model directory {self.root} is missing"

    def runtime(self) -> tuple[str, str | None]:
        if self.runtime_version is not None:
            return "hip", self.runtime_version
        state = "with" if self.fixed else "before"
        return "hip", f"CLR IPC-event model ({state} {UPSTREAM_FIX_COMMIT})"

    def create(self, ring_size: int) -> ParentEvents:
        return _EmulatedParentEvents(self, ring_size)

    def open(self, handles: Sequence[bytes]) -> ChildEvents:
        return _EmulatedChildEvents(self, handles)

    def _path(self, name: str) -> Path:
        return Path(self.root) / name.lstrip("/")


_emulated_counter = 0


class _EmulatedParentEvents:
    def __init__(self, model: EmulatedClrBackend, ring_size: int) -> None:
        global _emulated_counter
        self.model = model
        self.names: list[str] = []
        self.blocks: list[_ShmBlock] = []
        for _ in range(ring_size):
            name = f"{EMULATED_HANDLE_PREFIX}{os.getpid()}_{_emulated_counter}"
            _emulated_counter += 1
            block = _ShmBlock(model._path(name), model.slots, create=True)
            block.set(_OWNERS, 1)
            block.set(_READ_INDEX, -1)
            block.set(_WRITE_INDEX, 0)
            block.set(_PROCESS_ID, os.getpid())
            self.names.append(name)
            self.blocks.append(block)

    def handles(self) -> list[bytes]:
        return [n.encode("ascii").ljust(IPC_HANDLE_SIZE, b"\0") for n in self.names]

    def wait(self, slot: int, timeout_s: float) -> None:
        block = self.blocks[slot]
        read_index = block.get(_READ_INDEX)
        # The bug: before a44f100faaa9, streamWait used read_index itself as the slot offset.
        offset = read_index % block.slots if self.model.fixed else read_index
        if not 0 <= offset < block.slots:
            raise RuntimeError(
                f"HIP error: invalid argument (hipStreamWaitEvent -> hipErrorInvalidValue: "
                f"signal index {offset} is outside the {block.slots} slots)"
            )
        deadline = time.monotonic() + max(timeout_s, 0.0)
        while block.signal_get(offset) != 0:
            if time.monotonic() >= deadline:
                raise ProbeTimeout(f"slot {offset} of event {slot} was never released")
            time.sleep(0.0005)

    def close(self) -> None:
        for name, block in zip(self.names, self.blocks, strict=True):
            block.close()
            try:
                self.model._path(name).unlink()
            except OSError:
                pass
        self.blocks = []


class _EmulatedChildEvents:
    def __init__(self, model: EmulatedClrBackend, handles: Sequence[bytes]) -> None:
        self.model = model
        self.blocks = []
        for handle in handles:
            name = bytes(handle).split(b"\0", 1)[0].decode("ascii")
            block = _ShmBlock(model._path(name), model.slots, create=False)
            block.set(_OWNERS, block.get(_OWNERS) + 1)
            self.blocks.append(block)

    def record(self, slot: int, tick: int) -> None:
        if self.model.crash_at is not None and tick == self.model.crash_at:
            os._exit(3)
        if self.model.hang_at is not None and tick == self.model.hang_at:
            in_main_thread = threading.current_thread() is threading.main_thread()
            if self.model.hang_ignores_sigterm and in_main_thread:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
            while True:  # a child stuck in the runtime
                time.sleep(3600)
        block = self.blocks[slot]
        write_index = block.get(_WRITE_INDEX)
        block.set(_WRITE_INDEX, write_index + 1)
        offset = write_index % block.slots  # record always took the modulo
        block.signal_set(offset, 1)  # slot taken by this record
        block.signal_set(offset, 0)  # the "device" finished the work and released it
        block.set(_READ_INDEX, write_index)  # published for waiters

    def close(self) -> None:
        for block in self.blocks:
            block.close()
        self.blocks = []


def predicted_failure_tick(ring_size: int, slots: int = IPC_SIGNALS_PER_EVENT) -> int:
    """Closed form of the bug, for cross-checking the model: slots x ring size (0-based)."""
    return slots * ring_size


# --------------------------------------------------------------------------------------------
# The probe
# --------------------------------------------------------------------------------------------


def describe_handle(handle: bytes | None) -> str | None:
    """Readable start of an exported handle: ``/hip_<pid>_<n>`` text, else ``0x`` + 8 bytes."""
    if not handle:
        return None
    head = bytes(handle)[:IPC_HANDLE_SIZE].split(b"\0", 1)[0]
    if head and all(32 <= b < 127 for b in head):
        return head.decode("ascii")
    return "0x" + bytes(handle)[:8].hex()


def _child_main(backend: EventBackend, handles: list[bytes], conn: Connection) -> None:
    """Recording side. Protocol: parent sends ("record", tick, slot) or ("stop",)."""
    events = None
    try:
        events = backend.open(handles)
        conn.send(("ready",))
        while True:
            message = conn.recv()
            if message[0] == "stop":
                break
            _, tick, slot = message
            try:
                events.record(slot, tick)
            except Exception as exc:  # reported to the parent, which owns the verdict
                conn.send(("error", tick, f"{type(exc).__name__}: {_first_line(exc)}"))
                break
            conn.send(("recorded", tick))
    except (EOFError, OSError):
        pass  # the parent went away or closed the pipe: nothing left to report to
    except Exception as exc:
        try:
            conn.send(("error", None, f"child could not open the events: {_first_line(exc)}"))
        except (OSError, ValueError):
            pass
    finally:
        if events is not None:
            try:
                events.close()
            except Exception:
                pass
        conn.close()


# The spawned child runs this file with runpy under its own name instead of importing
# ``mjlab_microduck.runtime.ipc_probe``: importing the package would also import mjlab and install
# the compat hooks (seconds of start-up, and side effects), none of which the child needs. The
# child needs only the standard library plus, for the real backend, torch.
_CHILD_RUN_NAME = "__microduck_ipc_probe_child__"
_CHILD_ARGS_NAME = "_MICRODUCK_IPC_PROBE_CHILD_ARGS"


def _spawn_target(backend: EventBackend, handles: list[bytes], conn: Connection):
    """``(target, args)`` for a spawned child that runs :func:`_child_main`."""
    here = Path(__file__)
    local = type(backend).__module__ == __name__ and type(backend).__name__ in (
        "TorchEventBackend",
        "EmulatedClrBackend",
    )
    if not (local and here.is_file()):
        return _child_main, (backend, handles, conn)  # e.g. a test's own backend class
    spec = (type(backend).__name__, asdict(backend))  # rebuilt from this file in the child
    init_globals = {_CHILD_ARGS_NAME: (spec, handles, conn)}
    return runpy.run_path, (str(here), init_globals, _CHILD_RUN_NAME)


def _child_from_run_path() -> None:
    spec, handles, conn = globals()[_CHILD_ARGS_NAME]
    class_name, fields = spec
    backend = globals()[class_name](**fields)
    _child_main(backend, handles, conn)
    # Everything is reported and the pipe is closed: skip interpreter teardown (with a GPU
    # runtime loaded it can take seconds), so the parent's join returns at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class _Worker:
    """The recording side, in a spawned process (real probe) or a thread (fast model tests)."""

    def __init__(self, isolation: Isolation, target, args) -> None:
        self.isolation = isolation
        if isolation == "process":
            ctx = multiprocessing.get_context("spawn")
            self.proc: Any = ctx.Process(target=target, args=args, daemon=True)
        elif isolation == "thread":
            self.proc = threading.Thread(target=target, args=args, daemon=True)
        else:
            raise ValueError(f"isolation must be 'process' or 'thread', not {isolation!r}")

    def start(self) -> None:
        self.proc.start()

    def alive(self) -> bool:
        return self.proc.is_alive()

    def exitcode(self) -> int | None:
        return getattr(self.proc, "exitcode", None)

    def reap(self, grace_s: float, hung: bool = False) -> int | None:
        """Join; if still alive terminate, then kill. Returns the exit code (process only).

        ``hung``: the child is known to be stuck (time limit), so it gets no grace period to
        exit by itself and is terminated at once.
        """
        if self.isolation == "thread":
            if self.proc.ident is not None:
                self.proc.join(0 if hung else grace_s)  # a hung thread cannot be killed
            return None
        if self.proc.pid is None:  # never started
            return None
        if not hung:
            self.proc.join(grace_s)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(grace_s)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(grace_s)
        code = self.proc.exitcode
        try:
            self.proc.close()
        except ValueError:
            pass  # still running after SIGKILL (uninterruptible sleep); do not block forever
        return code


def _recv(conn: Connection, worker: _Worker, deadline: float, what: str) -> tuple:
    """Next message from the child, or ProbeTimeout / EOFError when it hangs or dies."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise ProbeTimeout(f"time limit reached while waiting for the child to {what}")
        if conn.poll(min(remaining, 0.25)):
            return conn.recv()  # raises EOFError if the child closed the pipe
        if not worker.alive():
            if conn.poll(0):
                return conn.recv()
            raise EOFError(f"child exited (status {worker.exitcode()}) before it could {what}")


def run_probe(
    reuses: int = DEFAULT_REUSES,
    ring_size: int = DEFAULT_RING,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    backend: EventBackend | None = None,
    isolation: Isolation = "process",
    reap_grace_s: float = DEFAULT_REAP_GRACE_S,
) -> IpcProbeResult:
    """Reuse ``ring_size`` interprocess events ``reuses`` times between two processes.

    Reuse ``i``: the child records event ``i % ring_size`` after a tiny piece of GPU work and
    says so; this process makes its stream wait on that event and synchronizes. Stops at the
    first failure. Never raises for a runtime problem and never outlives ``timeout_s`` (plus
    the child's reaping: a stuck child is terminated at once, then killed after
    ``reap_grace_s``); the child is always reaped, whatever happened.
    """
    if reuses < 1:
        raise ValueError(f"reuses must be >= 1, got {reuses}")
    if ring_size < 1:
        raise ValueError(f"ring size must be >= 1, got {ring_size}")
    backend = backend if backend is not None else TorchEventBackend()
    start = time.monotonic()
    deadline = start + timeout_s
    kind, version = backend.runtime()
    result = IpcProbeResult(
        status="skipped",
        reuses_requested=reuses,
        reuses_done=0,
        failed_at=None,
        ring_size=ring_size,
        backend=kind,
        runtime_version=version,
    )
    reason = backend.unavailable_reason()
    if reason is not None:
        result.reason = reason
        return result
    try:
        parent_events = backend.create(ring_size)
    except IpcEventsUnsupported as exc:
        result.reason = f"interprocess events unsupported: {_first_line(exc)}"
        return result
    except Exception as exc:  # any other creation failure is a failed probe, not a crash
        result.status = "failed"
        result.error = f"creating the events failed: {type(exc).__name__}: {_first_line(exc)}"
        result.elapsed_s = round(time.monotonic() - start, 4)
        return result
    worker = None
    parent_conn = child_conn = None
    tick: int | None = None
    timed_out = False
    try:
        handles = parent_events.handles()
        result.handle_prefix = describe_handle(handles[0] if handles else None)
        parent_conn, child_conn = multiprocessing.Pipe(duplex=True)
        if isolation == "process":
            target, target_args = _spawn_target(backend, handles, child_conn)
        else:
            target, target_args = _child_main, (backend, handles, child_conn)
        worker = _Worker(isolation, target, target_args)
        worker.start()
        if isolation == "process":
            result.extra["child_pid"] = worker.proc.pid
            child_conn.close()  # the child holds its own copy; ours would hide its EOF
        message = _recv(parent_conn, worker, deadline, "open the events")
        if message[0] != "ready":
            raise RuntimeError(message[2] if len(message) > 2 else str(message))
        for tick in range(reuses):
            slot = tick % ring_size
            parent_conn.send(("record", tick, slot))
            message = _recv(parent_conn, worker, deadline, f"record reuse {tick}")
            if message[0] == "error":
                raise RuntimeError(f"record failed in the child: {message[2]}")
            parent_events.wait(slot, max(deadline - time.monotonic(), 0.0))
            result.reuses_done = tick + 1
        tick = None
        result.status = "ok"
    except Exception as exc:  # every runtime failure becomes a result, never an exception
        result.status = "failed"
        result.failed_at = tick
        result.error = f"{type(exc).__name__}: {_first_line(exc)}"
        timed_out = isinstance(exc, ProbeTimeout)
    finally:
        # Tell the child to stop and close our end first: a child blocked in recv() then sees
        # EOF and exits by itself, so reaping rarely needs terminate/kill.
        if parent_conn is not None:
            try:
                parent_conn.send(("stop",))
            except (OSError, ValueError):
                pass
            parent_conn.close()
        if worker is not None:
            result.child_exitcode = worker.reap(reap_grace_s, hung=timed_out)
        for conn in (parent_conn, child_conn):
            if conn is not None:
                try:
                    conn.close()
                except OSError:
                    pass
        try:
            parent_events.close()
        except Exception:
            pass
        result.elapsed_s = round(time.monotonic() - start, 4)
    return result


def require_ipc_event_reuse(result: IpcProbeResult, workload: str = "this workload") -> None:
    """Fail closed: return only if the probe proved that event reuse survives the slot limit.

    Raises :class:`UnsupportedRuntimeError` with one line when the probe failed, was skipped,
    or passed without reusing any event more than 32 times (an ``ok`` that proves nothing).
    """
    runtime = f"{result.backend} {result.runtime_version or 'unknown'}"
    limit = IPC_SIGNALS_PER_EVENT
    if result.status == "failed":
        where = (
            f"failed at reuse {result.failed_at} (0-based) of {result.reuses_requested}"
            if result.failed_at is not None
            else "failed before the first reuse"
        )
        ring = f"ring of {result.ring_size} event{'s' if result.ring_size != 1 else ''}"
        emulated = ", emulated /hip_ IPC events" if result.emulated_handle else ""
        if result.backend == "hip" or result.emulated_handle:
            fix = (
                f"fix: use a ROCm runtime that includes the upstream CLR fix {UPSTREAM_FIX_COMMIT} "
                f"(modulo in streamWait); enlarging the event ring only delays the failure "
                f"({limit} x ring size reuses) and is not a workaround"
            )
        else:
            fix = "this is not the known ROCm 32-slot bug; check the driver and runtime"
        line = (
            f"unsupported runtime: {workload} needs interprocess GPU event reuse, which "
            f"{where} on {runtime} ({ring}{emulated}: {result.error}); {fix}"
        )
    elif result.status == "skipped":
        line = (
            f"unsupported runtime: {workload} needs interprocess GPU event reuse, which could "
            f"not be verified on {runtime} ({result.reason}); run the probe on the target GPU"
        )
    elif not result.conclusive:
        needed = limit * result.ring_size + 1
        line = (
            f"unsupported runtime: {workload} needs interprocess GPU event reuse, but the probe "
            f"stopped after {result.reuses_done} reuses of a {result.ring_size}-event ring, "
            f"before any event passed the {limit}-slot limit; rerun with --reuses {needed} or more"
        )
    else:
        return
    raise UnsupportedRuntimeError(" ".join(line.split()))


# --------------------------------------------------------------------------------------------
# CLI: run the probe and write a run record
# --------------------------------------------------------------------------------------------


def write_probe_record(
    result: IpcProbeResult,
    out_root: Path,
    command: list[str],
    started_at: str | None = None,
) -> Path:
    """Write ``result`` as a run record (kind ``probe``) into a new directory under out_root.

    Record status: ``failed`` when the probe failed (``error`` = its error), else ``ok``; a
    skipped probe is an ``ok`` run whose ``summary.probe_status`` is ``skipped``.
    """
    from mjlab_microduck.runs import records
    from mjlab_microduck.runtime import provenance

    run_dir = records.new_run_dir(out_root, "ipc_probe")
    summary: dict[str, records.SummaryValue] = {
        "probe_status": result.status,
        "reuses_requested": result.reuses_requested,
        "reuses_done": result.reuses_done,
        "ring_size": result.ring_size,
        "failed_at": result.failed_at,
        "conclusive": result.conclusive,
        "handle_prefix": result.handle_prefix,
        "emulated_handle": result.emulated_handle,
        "backend": result.backend,
        "runtime_version": result.runtime_version,
        "child_exitcode": result.child_exitcode,
        "elapsed_s": result.elapsed_s,
        "reason": result.reason,
        "error": result.error,
        "signals_per_event": IPC_SIGNALS_PER_EVENT,
    }
    record = records.RunRecord(
        run_id=run_dir.name,
        kind="probe",
        status="failed" if result.status == "failed" else "ok",
        error=result.error if result.status == "failed" else None,
        command=list(command),
        config={"probe": PROBE_NAME, "reuses": result.reuses_requested, "ring": result.ring_size},
        provenance=provenance.collect(command=command),
        started_at=started_at or records.utc_now_iso(),
        finished_at=records.utc_now_iso(),
        wall_seconds=result.elapsed_s,
        summary=summary,
        notes=result.reason,
    )
    return records.write_record(record, run_dir / records.RECORD_FILENAME)


@dataclass(frozen=True)
class ProbeOptions:
    """How hard the probe pushes and how long it may take (shared with ``microduck doctor``)."""

    reuses: int = DEFAULT_REUSES
    """event reuses to attempt"""
    ring: int = DEFAULT_RING
    """events used round-robin"""
    timeout: float = DEFAULT_TIMEOUT_S
    """hard time limit in seconds"""
    require_ipc_events: bool = False
    """exit non-zero with one line unless event reuse is proven to work"""

    def check(self) -> None:
        """``ValueError`` (one line) for a count below 1 or a time limit that is not positive."""
        for flag, value in (("--reuses", self.reuses), ("--ring", self.ring)):
            if value < 1:
                raise ValueError(f"{flag} must be >= 1, got {value}")
        if not math.isfinite(self.timeout) or self.timeout <= 0:
            raise ValueError(f"--timeout must be a positive number, got {self.timeout:g}")


@dataclass(frozen=True)
class ProbeRequest(ProbeOptions):
    """``microduck probe``: the probe, printed, and optionally written as a run record."""

    out: Path | None = None
    """write a run record into a new folder under this one"""
    json: bool = False
    """print the result as JSON"""


def run_request(request: ProbeRequest, argv: Sequence[str] = ()) -> int:
    """Run the probe as asked; the exit status (1 when it failed or is required and unproven)."""
    request.check()
    started_at = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    result = run_probe(reuses=request.reuses, ring_size=request.ring, timeout_s=request.timeout)
    if request.json:
        import json

        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(summary_line(result))
    if request.out is not None:
        command = ["microduck", "probe", *argv]
        try:
            path = write_probe_record(result, request.out, command, started_at=started_at)
        except Exception as exc:  # the measurement is printed above even if the record fails
            print(
                f"error: could not write the probe record under {request.out}: {exc}",
                file=sys.stderr,
            )
            return 2
        print(f"record: {path}")
    if request.require_ipc_events:
        try:
            require_ipc_event_reuse(result, workload="the requested workload")
        except UnsupportedRuntimeError as exc:
            print(str(exc), file=sys.stderr)
            return 1
    return 1 if result.status == "failed" else 0


def summary_line(result: IpcProbeResult) -> str:
    """One human line for a result."""
    head = (
        f"ipc probe: {result.status} | backend={result.backend} "
        f"runtime={result.runtime_version or 'unknown'} | reuses {result.reuses_done}/"
        f"{result.reuses_requested} ring={result.ring_size}"
    )
    if result.status == "failed":
        head += f" | failed_at={result.failed_at} | {result.error}"
    elif result.status == "skipped":
        head += f" | {result.reason}"
    if result.handle_prefix:
        head += f" | handle={result.handle_prefix}"
    return head


if __name__ == _CHILD_RUN_NAME:  # the spawned child (see _spawn_target)
    _child_from_run_path()
