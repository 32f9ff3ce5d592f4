"""Importing the book package picks MuJoCo's GL backend before anything imports MuJoCo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "codes" / "practices" / "amd" / "microduck-rl" / "src"


def test_the_book_package_chooses_gl_before_mujoco_is_imported():
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM")}
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    code = (
        "import json, os, sys\n"
        "import mjlab_microduck.book\n"
        "from mjlab_microduck.compat import gl_backend\n"
        "print(json.dumps([os.environ.get('MUJOCO_GL'), gl_backend.default_gl_backend(),\n"
        "                  os.environ.get('PYOPENGL_PLATFORM'), 'mujoco' in sys.modules]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    chosen, expected, platform, mujoco_loaded = json.loads(proc.stdout)
    assert chosen == expected == platform and chosen in ("egl", "osmesa")
    assert mujoco_loaded is False
