"""Shared test set-up: the helpers at the top of ``tests/`` (``fakes.py``) are importable from
every layer's folder, as they were when the suite was one flat folder."""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

# MuJoCo reads MUJOCO_GL once, when first imported; choose it (EGL with a GPU render node, else
# OSMesa) before any test module imports MuJoCo, as the tasks module and the book package do.
from mjlab_microduck.compat import gl_backend  # noqa: E402

gl_backend.choose_gl_backend()
