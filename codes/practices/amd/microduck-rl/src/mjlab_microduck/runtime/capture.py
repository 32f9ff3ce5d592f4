"""Hold what Python and native code write to stdout/stderr during a block.

Warp's native library prints driver warnings with ``fprintf(stderr, ...)`` and mjlab prints
its own configuration while an environment is built; that text belongs in a report's notes or
nowhere, not in the middle of a table, a notebook cell, a --json document or a one-line error.
Redirecting ``sys.stderr`` alone misses the C side, so the file descriptors are redirected too.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

_STREAM_OF_FD = {1: "stdout", 2: "stderr"}


@dataclass
class HeldOutput:
    """The text held during the block (filled when the block ends)."""

    text: str = ""
    echo: bool = False
    _discarded: bool = field(default=False, repr=False)

    def lines(self) -> list[str]:
        return [line.strip() for line in self.text.splitlines() if line.strip()]

    def discard(self) -> None:
        """Drop the held text instead of echoing it (e.g. when the input turned out bad)."""
        self._discarded = True


def _flush_c_stdio() -> None:
    # C stdio buffers must reach the held files now, not the real streams later.
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


@contextlib.contextmanager
def held_output(fds: tuple[int, ...] = (1, 2), echo: bool = False) -> Iterator[HeldOutput]:
    """Redirect file descriptors ``fds`` (1 stdout, 2 stderr) and the matching ``sys`` streams
    into temporary files for the block. With ``echo`` the held text is written to the real
    stderr afterwards unless :meth:`HeldOutput.discard` was called."""
    held = HeldOutput(echo=echo)
    python_held = io.StringIO()
    saved_fds: list[tuple[int, int, tempfile.TemporaryFile]] = []  # type: ignore[valid-type]
    saved_streams: list[tuple[str, object]] = []
    for fd in fds:
        name = _STREAM_OF_FD[fd]
        stream = getattr(sys, name)
        try:
            stream.flush()
            dup = os.dup(fd)
        except (OSError, ValueError, AttributeError):
            dup = None  # no such fd (an embedding host): hold the Python stream only
        if dup is not None:
            tmp = tempfile.TemporaryFile()
            os.dup2(tmp.fileno(), fd)
            saved_fds.append((fd, dup, tmp))
        saved_streams.append((name, stream))
        setattr(sys, name, python_held)
    try:
        yield held
    finally:
        _flush_c_stdio()
        for name, stream in saved_streams:
            setattr(sys, name, stream)
        parts = []
        for fd, dup, tmp in saved_fds:
            os.dup2(dup, fd)
            os.close(dup)
            tmp.seek(0)
            parts.append(tmp.read().decode("utf-8", "replace"))
            tmp.close()
        parts.append(python_held.getvalue())
        held.text = "".join(parts)
        if held.echo and not held._discarded and held.text:
            sys.stderr.write(held.text)
            sys.stderr.flush()


def init_warp_quietly() -> list[str]:
    """``wp.init()`` with its output held; returns what it printed, one line each.

    Warp prints a banner when it initialises and, on a machine without an NVIDIA driver, a
    warning from native code (``Warp CUDA warning: Could not find or load the NVIDIA CUDA
    driver``) that is a fact about the machine, not a problem of the run. Jobs that build an
    environment call this first, so the text lands nowhere unless they record it. A no-op
    (returning nothing) once Warp is initialised.
    """
    import warp as wp

    with held_output((1, 2)) as native:
        wp.init()
    return native.lines()
