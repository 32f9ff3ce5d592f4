"""buffer_syncs: mjlab's delay buffers append and read the same values without host syncs."""

from __future__ import annotations

import os

import pytest
import torch
from command_envs import assert_same_steps_fewer_reads
from mjlab.utils.buffers import DelayBuffer
from mjlab.utils.buffers.circular_buffer import CircularBuffer

from mjlab_microduck.compat import _hook, buffer_syncs
from mjlab_microduck.runtime.dispatch_count import host_reads

# mjlab's own methods, under the hook if importing the tasks installed it.
MJLAB_APPEND = _hook.unwrap_ours(CircularBuffer.__dict__["append"])
MJLAB_READ = _hook.unwrap_ours(CircularBuffer.__dict__["__getitem__"])
WALKER = "Mjlab-Velocity-Flat-MicroDuck-WalkerTurningAxesTuning"


@pytest.fixture
def mjlab_buffer():
    """mjlab's own CircularBuffer for the test, the hook's state put back afterwards."""
    was_active = buffer_syncs.status().active
    buffer_syncs.uninstall()
    assert CircularBuffer.__dict__["append"] is MJLAB_APPEND
    yield CircularBuffer
    buffer_syncs.uninstall()
    if was_active:
        buffer_syncs.install()


def _history(seed: int, shape: tuple[int, ...], dtype: torch.dtype) -> list[torch.Tensor]:
    """Every read, and the whole buffer after every step, of one sequence with resets."""
    generator = torch.Generator().manual_seed(seed)
    batch, max_len = shape[0], 1 + seed % 4
    buffer = CircularBuffer(max_len=max_len, batch_size=batch, device="cpu")
    seen = []
    for step in range(12):
        frame = torch.randn(shape, generator=generator) * 10
        buffer.append(frame.to(dtype))
        if step % 5 == 2:
            rows = torch.randperm(batch, generator=generator)[: batch // 2]
            buffer.reset(batch_ids=rows)
        if step % 5 == 3:
            buffer.append(torch.randn(shape, generator=generator).to(dtype))
        lags = torch.randint(0, max_len + 2, (batch,), generator=generator)
        for key in (0, max_len - 1, lags, torch.tensor(step % (max_len + 1))):
            seen.append(buffer[key].clone())
        seen.append(buffer.buffer.clone())
        seen.append(buffer.current_length.clone())
    return seen


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    ("shape", "dtype"),
    [((5,), torch.float32), ((6, 3), torch.float32), ((4, 2, 2), torch.float64),
     ((3, 2), torch.int64)],
)  # fmt: skip
def test_the_same_reads_and_buffer_as_mjlab(mjlab_buffer, seed, shape, dtype):
    theirs = _history(seed, shape, dtype)
    assert buffer_syncs.install().active
    ours = _history(seed, shape, dtype)
    assert len(ours) == len(theirs)
    for index, (a, b) in enumerate(zip(theirs, ours, strict=True)):
        assert a.dtype == b.dtype and torch.equal(a, b), f"value {index} differs"


def test_mjlab_asks_the_host_and_the_fix_does_not(mjlab_buffer):
    def delayed_reads() -> None:
        buffer = DelayBuffer(min_lag=0, max_lag=3, batch_size=8)
        for _ in range(5):
            buffer.append(torch.randn(8, 4))
            buffer.compute()

    # one per append and one per read, and the first append's backfill indexes by a mask twice
    assert host_reads(delayed_reads) == 12
    status = buffer_syncs.install()
    assert status.active and status.details["host_reads_after"] == 0
    assert status.details["host_reads_before"] > 0
    assert host_reads(delayed_reads) == 0
    assert buffer_syncs.status().details["appends"] == 5


def test_install_is_idempotent_and_uninstall_puts_mjlab_back(mjlab_buffer):
    first = buffer_syncs.install()
    assert buffer_syncs.install() is first
    assert _hook.is_our_wrapper(CircularBuffer.__dict__["append"], buffer_syncs.FIX)
    assert _hook.unwrap_ours(CircularBuffer.__dict__["__getitem__"]) is MJLAB_READ
    buffer_syncs.uninstall()
    assert CircularBuffer.__dict__["append"] is MJLAB_APPEND
    assert CircularBuffer.__dict__["__getitem__"] is MJLAB_READ
    assert buffer_syncs.status().reason == "not installed"


def test_turned_off_by_the_environment(mjlab_buffer, monkeypatch):
    monkeypatch.setenv(buffer_syncs.ENV_VAR, "0")
    status = buffer_syncs.install()
    assert not status.active and f"{buffer_syncs.ENV_VAR}=0" in status.reason
    assert CircularBuffer.__dict__["append"] is MJLAB_APPEND


class _AlreadySyncFree(CircularBuffer):
    """A release that fixed the buffer: the same values, no host read (our methods as its own)."""

    append = buffer_syncs.append
    __getitem__ = buffer_syncs.read


class _OtherInternals:
    """A buffer whose state has other names than mjlab 1.3's."""

    def __init__(self, max_len: int, batch_size: int, device: str) -> None:
        self.frames: list[torch.Tensor] = []

    def append(self, data: torch.Tensor) -> None:
        if bool(data.any()):
            self.frames.append(data)

    def reset(self, batch_ids=None) -> None:
        self.frames.clear()

    def __getitem__(self, key):
        return self.frames[-1]


class _NoBackfill(CircularBuffer):
    """mjlab's buffer without the backfill of reset rows: its history differs from the fix's."""

    __getitem__ = MJLAB_READ

    def append(self, data: torch.Tensor) -> None:
        if self._buffer is None:
            self._pointer = -1
            self._buffer = torch.zeros((self._max_len, *data.shape), dtype=data.dtype)
        self._pointer = (self._pointer + 1) % self._max_len
        self._buffer[self._pointer] = data
        self._num_pushes += 1


@pytest.mark.parametrize(
    ("buffer_cls", "reason"),
    [(_AlreadySyncFree, "reads no value back to the host"),
     (_OtherInternals, "has other internals"),
     (_NoBackfill, "disagrees with mjlab's")],
)  # fmt: skip
def test_leaves_a_buffer_it_cannot_vouch_for(buffer_cls, reason):
    before = dict(buffer_cls.__dict__)
    status = buffer_syncs.check(buffer_cls)
    assert status[0] is False and reason in status[1]
    assert dict(buffer_cls.__dict__) == before


@pytest.mark.slow
def test_walker_steps_the_same_with_fewer_host_syncs(mjlab_buffer):
    """The walker task on the CPU: identical observations, rewards and terminations over 12
    env steps, and an env step that reads at least 14 fewer values back to the host (the four
    substeps' actuator delay and the actor's three delayed observations, as in a training)."""
    os.environ.pop(buffer_syncs.ENV_VAR, None)
    install = lambda: buffer_syncs.install().active  # noqa: E731
    assert_same_steps_fewer_reads(WALKER, install, seed=3, fewer_per_step=14)
