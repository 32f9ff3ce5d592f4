"""How a job ends when it is asked to stop: SIGINT, SIGTERM and SIGHUP become
:class:`Interrupted`.

Problem it solves: Python turns Ctrl-C into ``KeyboardInterrupt`` but lets SIGTERM (what
``kill``, job schedulers and ``timeout`` send) and SIGHUP (a closed terminal) end the process on
the spot, before any ``finally`` runs, so the run's record stays ``running`` forever. Inside
:func:`signals_raise` these signals raise :class:`Interrupted` in the main thread, once: the job
stops its child processes (:func:`stop_group`), writes its record as ``interrupted`` and the
command exits ``128 + signal`` (130 for SIGINT, 143 for SIGTERM), as a shell reports a process
the signal ended. Further signals while the job is stopping are ignored, so the record of the
first one gets written; :func:`stop_group` bounds how long that takes.

No-op cases: outside the main thread (where Python cannot install signal handlers) the context
changes nothing; a signal the process was started ignoring (``nohup`` ignores SIGHUP, a shell's
background job SIGINT) stays ignored; inside an enclosing :func:`signals_raise` it installs the
same behaviour again and restores it on exit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Iterator

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# How long a child gets to exit after the signal is passed on, before it is killed.
STOP_GRACE_S = 20.0


class Interrupted(BaseException):
    """The job was asked to stop by ``signum``. A BaseException, like KeyboardInterrupt: code
    that catches ``Exception`` to record a failure must not record a stop as one."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        super().__init__(f"interrupted by {self.signal_name}")

    @property
    def signal_name(self) -> str:
        return signal_name(self.signum)

    @property
    def exit_status(self) -> int:
        return 128 + self.signum


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15; a number without a name (a real-time signal) as ``signal 40``."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_status(name: str | None) -> int:
    """A command's exit status after the signal ``name`` stopped its job: ``128 + signal``
    (130 for SIGINT, 143 for SIGTERM); 1 when the name is not a signal's."""
    try:
        return 128 + signal.Signals[name or ""].value
    except KeyError:
        return 1


def as_interrupted(err: BaseException) -> Interrupted | None:
    """``err`` as an :class:`Interrupted`: a KeyboardInterrupt raised while no handler of ours
    was installed is a SIGINT too; anything else is not a stop (None)."""
    if isinstance(err, Interrupted):
        return err
    if isinstance(err, KeyboardInterrupt):
        return Interrupted(signal.SIGINT)
    return None


class _Handler:
    """The installed handler: raises on the first signal, then only notes the others."""

    def __init__(self) -> None:
        self.raising = True
        self.ignored: list[int] = []

    def __call__(self, signum, frame) -> None:
        if not self.raising:
            self.ignored.append(signum)
            return
        self.raising = False
        raise Interrupted(signum)

    def hold(self) -> None:
        """From now on a signal is only noted: the job is writing its end and must finish."""
        self.raising = False


@contextlib.contextmanager
def signals_raise() -> Iterator[_Handler]:
    """Within the block, the first SIGINT, SIGTERM or SIGHUP raises :class:`Interrupted`."""
    handler = _Handler()
    if threading.current_thread() is not threading.main_thread():
        yield handler
        return
    previous = {s: signal.getsignal(s) for s in SIGNALS}
    for s, old in previous.items():
        if old is not signal.SIG_IGN:
            signal.signal(s, handler)
    try:
        yield handler
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def stop_group(proc: subprocess.Popen, signum: int = signal.SIGTERM,
               grace_s: float = STOP_GRACE_S) -> threading.Timer | None:  # fmt: skip
    """Pass ``signum`` to the process group ``proc`` leads (started with
    ``start_new_session=True``, so its own children get it too) and kill the group if it is
    still there after ``grace_s``. Returns the armed timer (cancel it once ``proc`` is reaped),
    or None when the group had already gone."""

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    try:
        os.killpg(proc.pid, signum)
    except ProcessLookupError:
        return None
    timer = threading.Timer(grace_s, kill)
    timer.daemon = True
    timer.start()
    return timer
