"""Shared test set-up: the helpers at the top of ``tests/`` (``fakes.py``) are importable from
every layer's folder, as they were when the suite was one flat folder; ``record_property``
refuses what a pytest-xdist worker could not report."""

from __future__ import annotations

import fcntl
import os
import signal
import sys
import tempfile
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

# MuJoCo reads MUJOCO_GL once, when first imported; choose it (EGL with a GPU render node, else
# OSMesa) before any test module imports MuJoCo, as the tasks module and the book package do.
from mjlab_microduck.compat import gl_backend  # noqa: E402

gl_backend.choose_gl_backend()

# A shell starts a background job (``make test &``, ``nohup``) with SIGINT ignored, and every
# child inherits that: the tests that stop a job with SIGINT would fail for the shell's sake.
# Python's own handler here means the suite's children start with SIGINT at its default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# What execnet can send from a pytest-xdist worker to the controller; anything else (a numpy
# scalar) stops the worker in the middle of its file, which a serial run would never show.
PLAIN_PROPERTY_TYPES = (str, int, float, bool, type(None))


@pytest.fixture
def record_property(record_property):
    """pytest's ``record_property``, refusing a value an xdist worker could not report."""

    def record(name: str, value) -> None:
        if type(value) not in PLAIN_PROPERTY_TYPES:
            raise TypeError(f"test property {name!r}: {type(value).__name__} {value!r} is not a "
                            "plain str, int, float or bool (pytest-xdist cannot send it)")
        record_property(name, value)

    return record


def pytest_collection_modifyitems(config, items):
    """The files that hold a slow test first, each file's tests in their own order, then the
    rest: pytest-xdist hands whole files to its workers in this order (with
    ``--no-loadscope-reorder``), so the trainings and browser runs start on both cores at once
    and the many quick files fill in at the end, instead of one long file starting last."""
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow_files)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Under pytest-xdist, a test marked ``alone`` (the drive page keeping real time) runs with
    the other workers held between their tests, and no test of theirs starts until it is done:
    a lock shared by every test of the run, taken exclusively by those. A worker waiting for it
    first takes a turnstile, so the others' next tests queue behind it instead of overtaking
    it. No-op in a run without xdist (nothing else of the suite runs alongside then)."""
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if not run_id:
        return (yield)
    where = Path(tempfile.gettempdir())
    mode = fcntl.LOCK_EX if item.get_closest_marker("alone") else fcntl.LOCK_SH
    with (open(where / f"microduck-pytest-{run_id}.turnstile", "a") as turnstile,
          open(where / f"microduck-pytest-{run_id}.lock", "a") as lock):  # fmt: skip
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(lock, mode)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            return (yield)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
