"""Progress of long loops: one bar that redraws in place, or a few milestone lines.

Problem it solves: a tqdm bar in an output that cannot redraw (a notebook executed headless by
the book build, a log file) leaves one line per update; chapter pages filled with a thousand
of them. :func:`progress_bar` draws a bar only where it can be redrawn (a terminal, a live
Jupyter kernel) and otherwise prints a handful of milestone lines.

``MICRODUCK_PROGRESS`` chooses: ``bar``, ``milestones`` or ``off``; unset, a terminal or a
Jupyter kernel with ipywidgets gets the bar and anything else the milestones. The book build
sets ``milestones`` (its kernels have no page to redraw). ``enabled=False`` prints nothing.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO

ENV_VAR = "MICRODUCK_PROGRESS"
STYLES = ("bar", "milestones", "off")
MILESTONES = (0.25, 0.5, 0.75, 1.0)
"""Fractions of the total at which the milestone style prints a line."""


def _in_jupyter_kernel_with_widgets() -> bool:
    """A Jupyter kernel that can draw tqdm's widget bar (ipywidgets installed)."""
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell is not None and hasattr(shell, "get_ipython") else None
    if ip is None or type(ip).__name__ != "ZMQInteractiveShell":
        return False
    import importlib.util

    return importlib.util.find_spec("ipywidgets") is not None


def style(stream: TextIO | None = None) -> str:
    """The progress style in force: ``MICRODUCK_PROGRESS`` if set, else bar or milestones."""
    chosen = os.environ.get(ENV_VAR, "").strip().lower()
    if chosen:
        if chosen not in STYLES:
            raise ValueError(f"{ENV_VAR}={chosen!r}: use one of {', '.join(STYLES)}")
        return chosen
    stream = stream or sys.stderr
    if getattr(stream, "isatty", lambda: False)() or _in_jupyter_kernel_with_widgets():
        return "bar"
    return "milestones"


class Milestones:
    """Counts updates and prints ``desc: 50 % (250/500) in 12.3 s`` at each milestone."""

    def __init__(self, total: int, desc: str, stream: TextIO) -> None:
        self.total, self.desc, self.stream = max(int(total), 1), desc, stream
        self.done, self.started = 0, time.monotonic()
        self._next = 0

    def update(self, n: int = 1) -> None:
        self.done += n
        while self._next < len(MILESTONES) and self.done >= MILESTONES[self._next] * self.total:
            fraction = MILESTONES[self._next]
            self._next += 1
            elapsed = time.monotonic() - self.started
            self.stream.write(
                f"{self.desc}: {fraction:.0%} ({self.done}/{self.total}) in {elapsed:.1f} s\n"
            )
            self.stream.flush()


class _Silent:
    def update(self, n: int = 1) -> None:
        del n


@contextmanager
def progress_bar(
    total: int, desc: str, enabled: bool = True, stream: TextIO | None = None
) -> Iterator[object]:
    """A progress reporter with ``update(n=1)``, in the style in force (see the module)."""
    stream = stream or sys.stderr
    chosen = style(stream) if enabled else "off"
    if chosen == "off":
        yield _Silent()
        return
    if chosen == "milestones":
        yield Milestones(total, desc, stream)
        return
    from tqdm.auto import tqdm

    with tqdm(total=total, desc=desc, file=stream) as bar:
        yield bar
