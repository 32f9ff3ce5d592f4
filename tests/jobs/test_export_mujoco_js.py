"""The exported scene in MuJoCo's WebAssembly build (npm ``mujoco-js``, what the drive page
runs) and in this Python's MuJoCo: the same model, and the same motion step for step.

Needs Node.js and ``book/drive/node_modules`` (``make book`` runs ``npm ci`` there). Locally a
missing one skips with that reason; in CI (CI set) it fails.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import mujoco
import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
SCENE = REPO / "book" / "results" / "cpu_export_walker_heading_s42_model_999" / "scene.xml"
MUJOCO_JS = REPO / "book" / "drive" / "node_modules" / "mujoco-js" / "dist" / "mujoco_wasm.js"
STEPS = 400  # 2 s at 5 ms, with the feet landing and the servos swinging the legs

SCRIPT = """
import loadMujoco from %(module)s;
import fs from 'node:fs';
const mj = await loadMujoco();
mj.FS.mkdir('/w');
mj.FS.writeFile('/w/scene.xml', fs.readFileSync(%(scene)s, 'utf8'));
const m = mj.MjModel.loadFromXML('/w/scene.xml');
const d = new mj.MjData(m);
const path = [];
for (let i = 0; i < %(steps)d; i++) {
  const ctrl = d.ctrl;
  for (let k = 0; k < m.nu; k++) ctrl[k] = 0.3 * Math.sin(0.05 * i + k);
  mj.mj_step(m, d);
  path.push(Array.from(d.qpos));
}
console.log(JSON.stringify({version: mj.mj_versionString(), nq: m.nq, nu: m.nu, nbody: m.nbody,
  ngeom: m.ngeom, nsensor: m.nsensor, timestep: m.opt.timestep, iterations: m.opt.iterations,
  path}));
"""


def _node_or_skip() -> str:
    node = shutil.which("node")
    if node and MUJOCO_JS.is_file():
        return node
    message = "node or book/drive/node_modules missing (run `make book`, which runs npm ci)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.mark.slow
def test_mujoco_js_loads_the_exported_scene_and_moves_it_as_python_does(tmp_path):
    node = _node_or_skip()
    script = tmp_path / "load.mjs"
    script.write_text(SCRIPT % {"module": json.dumps(MUJOCO_JS.as_uri()),
                                "scene": json.dumps(str(SCENE)), "steps": STEPS})  # fmt: skip
    done = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    js = json.loads(done.stdout)
    assert js["version"] == "3.3.8"  # the WebAssembly build the page ships
    model = mujoco.MjModel.from_xml_path(str(SCENE))
    data = mujoco.MjData(model)
    assert (js["nq"], js["nu"], js["nbody"], js["ngeom"], js["nsensor"]) == (
        model.nq, model.nu, model.nbody, model.ngeom, model.nsensor)  # fmt: skip
    assert (js["timestep"], js["iterations"]) == (model.opt.timestep, model.opt.iterations)
    worst = 0.0
    for i in range(STEPS):
        data.ctrl[:] = [0.3 * math.sin(0.05 * i + k) for k in range(model.nu)]
        mujoco.mj_step(model, data)
        worst = max(worst, float(np.abs(data.qpos - np.array(js["path"][i])).max()))
    assert worst < 1e-9, f"mujoco-js 3.3.8 and Python MuJoCo {mujoco.__version__} differ by {worst}"
