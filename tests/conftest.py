"""Shared test set-up: the helpers at the top of ``tests/`` (``fakes.py``) are importable from
every layer's folder, as they were when the suite was one flat folder; ``record_property``
refuses what a pytest-xdist worker could not report."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

# MuJoCo reads MUJOCO_GL once, when first imported; choose it (EGL with a GPU render node, else
# OSMesa) before any test module imports MuJoCo, as the tasks module and the book package do.
from mjlab_microduck.compat import gl_backend  # noqa: E402

gl_backend.choose_gl_backend()


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
