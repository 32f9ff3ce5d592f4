"""Pick MuJoCo's offscreen GL backend before anything imports ``mujoco``.

MuJoCo reads ``MUJOCO_GL`` once, when it is imported. EGL needs a GPU render node; on a machine
without one (CI, the book's CPU build) only Mesa's OSMesa renders. This module chooses by what
the machine has, not by vendor: a DRM render node or an NVIDIA device file means EGL, otherwise
OSMesa. It is a no-op when the user already set ``MUJOCO_GL``.
"""

from __future__ import annotations

import glob
import os


def default_gl_backend() -> str:
    has_gpu_node = bool(glob.glob("/dev/dri/renderD*")) or os.path.exists("/dev/nvidia0")
    return "egl" if has_gpu_node else "osmesa"


def choose_gl_backend() -> str:
    """Set ``MUJOCO_GL`` (and PyOpenGL's platform) unless already set; return the backend."""
    backend = os.environ.setdefault("MUJOCO_GL", default_gl_backend())
    if backend in ("egl", "osmesa"):
        os.environ.setdefault("PYOPENGL_PLATFORM", backend)
    return backend
