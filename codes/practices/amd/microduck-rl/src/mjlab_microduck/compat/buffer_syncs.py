"""Delay buffers that never stop the CPU to read a value back from the GPU.

Problem: mjlab 1.3's ``CircularBuffer`` (``mjlab/utils/buffers/circular_buffer.py``), under every
``DelayBuffer``, branches on a tensor twice per call: ``append`` asks
``if torch.any(is_first_push):`` and ``__getitem__`` asks ``if torch.all(valid == 0):``. On a GPU
each question is a host sync: the CPU stops queueing work until the GPU has finished everything
queued before it. The MicroDuck's actuators delay their commands (``robot/constants.py``), so
the buffer runs inside the physics loop, four times per env step: every physics substep waits for
the one before it, and the CPU cannot queue the next substep's work while the GPU computes. The
actor's delayed observations add two questions per delayed term per step.

Fix: the same values without the questions. ``append`` backfills the rows of a first push with
``torch.where`` over the whole buffer (a handful of values per env), and ``__getitem__`` always
gathers each row's lag (the original's shortcut for "every lag is 0" returns the same values).
``append`` also keeps the newest frame in slot 0 and rolls the older ones down, instead of moving
a Python write position: the Python state then stays the same from call to call, so the
actuators' and observations' calls can be replayed from graphs (``manager_graphs``); under a
replay the hook's own ``appends`` and ``reads`` counts stop, as Python does not run.
Before replacing anything, :func:`install` runs mjlab's own methods and the replacements side by
side on a small CPU buffer, with appends, resets and lags, and replaces nothing unless every
read agrees exactly.

No-op: when mjlab's buffer reads nothing back to the host (a release that fixed it), when the
check finds the buffer's internals changed, or with ``MICRODUCK_SYNC_FREE_BUFFERS=0`` (to measure
mjlab's own buffer, as ``microduck bench``'s ``buffer_syncs`` case does). On a CPU the questions
cost nothing and so does the fix; it is installed there too, so every backend runs the same code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mjlab_microduck.compat import _hook
from mjlab_microduck.compat._hook import HookStatus
from mjlab_microduck.runtime.dispatch_count import DispatchCounter

FIX = "buffer_syncs"
ENV_VAR = "MICRODUCK_SYNC_FREE_BUFFERS"

_state = _hook.HookState(FIX, {"appends": 0, "reads": 0})
_patches = _state.patches
_counts = _state.counts


def append(self: Any, data: Any) -> None:
    """``CircularBuffer.append`` without the host sync (same state afterwards)."""
    import torch

    _counts["appends"] += 1
    if data.shape[0] != self._batch_size:
        raise ValueError(f"Expected batch size {self._batch_size}, got {data.shape[0]}")
    data = data.to(self._device)
    if self._buffer is None:
        self._pointer = -1
        self._buffer = torch.empty(
            (self._max_len, *data.shape), dtype=data.dtype, device=self._device
        )
    # The newest frame always goes to slot 0 and the older ones move one slot down (slot -k
    # holds the frame k appends ago, as mjlab reads it from its pointer): the same reads, with
    # a write position that stays put, which a captured graph can replay (``manager_graphs``).
    self._pointer = 0
    self._buffer.copy_(self._buffer.roll(-1, 0))
    self._buffer[0] = data
    # Rows pushed for the first time since a reset get the frame in every slot (backfill).
    first_push = (self._num_pushes == 0).view(1, -1, *([1] * (data.dim() - 1)))
    torch.where(first_push, data.to(self._buffer.dtype).unsqueeze(0), self._buffer,
                out=self._buffer)  # fmt: skip
    self._num_pushes += 1


def read(self: Any, key: Any) -> Any:
    """``CircularBuffer.__getitem__`` without the host sync: always the per-row gather."""
    import torch

    _counts["reads"] += 1
    if self._buffer is None:
        raise RuntimeError("Buffer not initialized. Call append() first.")
    if isinstance(key, int):
        key = torch.full((self._batch_size,), key, dtype=torch.long, device=self._device)
    else:
        if key.ndim == 0:
            key = key.expand(self._batch_size)
        key = key.to(device=self._device, dtype=torch.long)
    if key.numel() != self._batch_size:
        raise ValueError(f"Expected {self._batch_size} lags, got {key.numel()}")
    valid = torch.minimum(key, self._num_pushes.clamp_min(1) - 1).clamp_min(0)
    return self._buffer[torch.remainder(self._pointer - valid, self._max_len), self._all_indices]


def _exercise(buffer_cls: type, append_fn: Callable, read_fn: Callable) -> list[Any]:
    """A fixed sequence of appends, resets and reads on a small CPU buffer; every read's value
    and the whole buffer after every step."""
    import torch

    generator = torch.Generator().manual_seed(0)
    buffer = buffer_cls(max_len=4, batch_size=5, device="cpu")
    reads = []  # clones: mjlab's shortcut returns a view into the buffer, changed by later appends
    for step in range(9):
        append_fn(buffer, torch.randn(5, 3, generator=generator))
        if step in (2, 5):
            buffer.reset(batch_ids=[1, 3])
            append_fn(buffer, torch.randn(5, 3, generator=generator))
        for lag in (0, torch.randint(0, 4, (5,), generator=generator), torch.tensor(step % 4)):
            reads.append(read_fn(buffer, lag).clone())
        reads.append(buffer.buffer.clone())  # histories read the backfill through this
    return reads


def check(buffer_cls: type) -> tuple[bool, str, dict[str, Any]]:
    """Whether the replacements may stand in for ``buffer_cls``'s methods, why, and the counts:
    mjlab's methods must read values back to the host and give exactly what ours give."""
    import torch

    original_append, original_read = buffer_cls.append, buffer_cls.__getitem__
    details: dict[str, Any] = {}
    counts_before = dict(_counts)  # the check's own calls are not the hook's work
    try:
        with DispatchCounter() as counted_theirs:
            theirs = _exercise(buffer_cls, original_append, original_read)
        with DispatchCounter() as counted_ours:
            ours = _exercise(buffer_cls, append, read)
        details["host_reads_before"] = sum(counted_theirs.reads.values())
        details["host_reads_after"] = sum(counted_ours.reads.values())
    except (AttributeError, TypeError, ValueError, RuntimeError, IndexError) as error:
        return False, f"mjlab's CircularBuffer has other internals ({error}); left as is", details
    finally:
        _counts.update(counts_before)
    if details["host_reads_before"] == 0:
        why = "mjlab's CircularBuffer reads no value back to the host; nothing to fix"
        return False, why, details
    if len(theirs) != len(ours) or not all(
        torch.equal(a, b) for a, b in zip(theirs, ours, strict=True)
    ):
        why = "the sync-free buffer disagrees with mjlab's on the check; left as is"
        return False, why, details
    return True, "", details


def install(buffer_cls: type | None = None) -> HookStatus:
    """Replace ``CircularBuffer.append`` and ``__getitem__`` when :func:`check` allows. Idempotent.

    Test seam: ``buffer_cls`` (default ``mjlab.utils.buffers.CircularBuffer``).
    """
    if _state.active():
        return _state.active()
    if buffer_cls is None:
        from mjlab.utils.buffers.circular_buffer import CircularBuffer as buffer_cls
    details: dict[str, Any] = {"class": f"{buffer_cls.__module__}.{buffer_cls.__qualname__}"}
    off = "mjlab's own buffer, two host syncs per call"
    refused = _state.gate(ENV_VAR, off, lambda: check(buffer_cls), details)
    if refused:
        return refused
    _patches.replace(buffer_cls, "append", _hook.stand_in(append, FIX, buffer_cls.append))
    _patches.replace(
        buffer_cls, "__getitem__", _hook.stand_in(read, FIX, buffer_cls.__getitem__)
    )
    return _state.set(
        True,
        "delay buffers append and read without host syncs (same values; "
        f"{details['host_reads_before']} host reads on the check, {details['host_reads_after']} "
        "with the fix)",
        details,
    )


def uninstall() -> None:
    _state.reset()


def status() -> HookStatus:
    return _state.report()
