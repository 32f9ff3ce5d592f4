// The page: load the export, step MuJoCo in real time, run the policy at the control rate,
// draw with three.js, and let the reader steer. Everything comes from this folder, as scripts
// (export/export.js, ort-wasm.js), so the page also works opened from disk.
//
// A test fixes the command with URL parameters: ?vx=0.15&vy=0&wz=0&hold=1 sets it and locks
// the controls; window.drive exposes the trunk log and the timing (see tests/chapters/).
import loadMujoco from 'mujoco-js';
import * as ort from 'onnxruntime-web/wasm';
import { Robot, wrapToPi } from './policy.js';
import { View } from './view.js';

const $ = (id) => document.getElementById(id);
const MAX_STEPS_PER_FRAME = 25; // 0.5 s of simulation: a tab that slept does not freeze the page
const SPEED_SMOOTHING_S = 0.5;

/** base64 (as the build writes the binaries into scripts) -> bytes */
function bytes(base64) {
  const text = atob(base64);
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i);
  return out;
}

function readFixedCommand() {
  const p = new URLSearchParams(window.location.search);
  if (!p.has('vx') && !p.has('vy') && !p.has('wz')) return null;
  const num = (k) => Number(p.get(k) ?? 0);
  return { vx: num('vx'), vy: num('vy'), wz: num('wz'), holdHeading: p.get('hold') === '1' };
}

/** sliders, arrow keys and the hold-heading toggle -> the robot's command */
class Controls {
  constructor(ranges) {
    this.sliders = { vx: $('vx'), vy: $('vy'), wz: $('wz') };
    const keys = { vx: 'lin_vel_x', vy: 'lin_vel_y', wz: 'ang_vel_z' };
    for (const [k, el] of Object.entries(this.sliders)) {
      [el.min, el.max] = ranges[keys[k]];
      el.step = 0.01;
      el.value = 0;
      el.addEventListener('input', () => this.show());
    }
    this.hold = $('hold');
    this.held = new Map(); // key -> the axis it moves
    // Arrow keys move the sliders while held: up/down forward, left/right turn, with shift
    // left/right step sideways; releasing a key brings its slider back to zero.
    window.addEventListener('keydown', (e) => this.key(e, true));
    window.addEventListener('keyup', (e) => this.key(e, false));
    $('zero').addEventListener('click', () => this.zero());
    this.show();
  }

  key(event, down) {
    const map = {
      ArrowUp: ['vx', 1], ArrowDown: ['vx', -1],
      ArrowLeft: [event.shiftKey ? 'vy' : 'wz', 1], ArrowRight: [event.shiftKey ? 'vy' : 'wz', -1],
    };
    if (!(event.key in map) || this.locked) return;
    event.preventDefault();
    // A key lets go of the axis it pressed, even if shift was released in between.
    const [axis, sign] = down ? map[event.key] : [this.held.get(event.key), 0];
    if (!axis) return;
    if (down) this.held.set(event.key, axis); else this.held.delete(event.key);
    const el = this.sliders[axis];
    el.value = down ? (sign > 0 ? el.max : el.min) * 0.75 : 0;
    this.show();
  }

  zero() { for (const el of Object.values(this.sliders)) el.value = 0; this.show(); }

  lock(command) {
    this.locked = true;
    this.sliders.vx.value = command.vx; this.sliders.vy.value = command.vy;
    this.sliders.wz.value = command.wz; this.hold.checked = command.holdHeading;
    for (const el of [...Object.values(this.sliders), this.hold, $('zero')]) el.disabled = true;
    this.show();
  }

  show() {
    for (const [k, el] of Object.entries(this.sliders)) $(`${k}-value`).textContent = Number(el.value).toFixed(2);
  }

  value() {
    const n = (el) => Number(el.value);
    return { vx: n(this.sliders.vx), vy: n(this.sliders.vy), wz: n(this.sliders.wz), holdHeading: this.hold.checked };
  }
}

async function main() {
  const status = $('status');
  status.textContent = 'loading MuJoCo and the policy…';
  const exported = window.DRIVE_EXPORT;
  if (!exported || !window.DRIVE_ORT_WASM) throw new Error('export/export.js or ort-wasm.js did not load');
  const { spec, about } = exported;
  $('checkpoint').textContent = about.label;
  $('checkpoint').className = about.walker ? 'walker' : 'candidate';

  const mujoco = await loadMujoco();
  mujoco.FS.mkdir('/drive');
  mujoco.FS.writeFile('/drive/scene.xml', exported.scene);
  const model = mujoco.MjModel.loadFromXML('/drive/scene.xml');
  const data = new mujoco.MjData(model);

  // One thread, no proxy worker: a book page is not cross-origin isolated, and a 51 -> 14 MLP
  // takes well under a millisecond on one core. The runtime's binary comes from ort-wasm.js.
  ort.env.wasm.numThreads = 1;
  ort.env.wasm.proxy = false;
  ort.env.wasm.wasmBinary = bytes(window.DRIVE_ORT_WASM);
  const session = await ort.InferenceSession.create(bytes(exported.policy), { executionProviders: ['wasm'] });

  const robot = new Robot(mujoco, model, data, spec, session);
  // Without WebGL (an old machine, a locked-down browser) the robot still runs and reports its
  // speed; only the picture is missing.
  let view = null;
  try {
    view = new View($('view'), model);
  } catch (err) {
    console.warn(`drive page: no WebGL, nothing is drawn (${err.message})`);
  }
  const controls = new Controls(spec.command.ranges);
  const fixed = readFixedCommand();
  if (fixed) controls.lock(fixed);

  // What the tests read: the trunk after every control step, and the clock.
  const state = (window.drive = {
    ready: false, spec, about, robot, log: [], resets: 0,
    simSeconds: 0, wallSeconds: 0, computeSeconds: 0, droppedSeconds: 0, minLeadSeconds: Infinity,
    // Time the browser gave the page no frame beyond what one frame can catch up: a busy or
    // sleeping tab, not a slow simulation. Dropped time never exceeds it when stepping keeps up.
    stalledSeconds: 0,
  });

  let smooth = { vf: 0, vl: 0, wz: 0 };
  let cameraHeading = 0;
  let start = 0; let simClock = 0; let lastFrameEnd = null;

  function reset() {
    robot.reset(0, fixed ?? controls.value());
    smooth = { vf: 0, vl: 0, wz: 0 };
    cameraHeading = robot.heading();
    state.log.push({ reset: true, ...robot.sample() });
  }
  $('reset').addEventListener('click', () => { state.resets += 1; reset(); });

  function updateCommand(dt) {
    const c = controls.value();
    const wasHolding = robot.command.holdHeading;
    Object.assign(robot.command, { vx: c.vx, vy: c.vy, wz: c.wz, holdHeading: c.holdHeading });
    // Holding the heading: the turn control moves the heading to hold instead of the yaw rate.
    if (c.holdHeading && !wasHolding) robot.command.targetHeading = robot.heading();
    if (c.holdHeading) robot.command.targetHeading += c.wz * dt;
  }

  function readout(sample) {
    const k = Math.min(1, robot.dt / SPEED_SMOOTHING_S);
    smooth.vf += k * (sample.vForward - smooth.vf);
    smooth.vl += k * (sample.vLeft - smooth.vl);
    smooth.wz += k * (sample.yawRate - smooth.wz);
    const [cx, cy, cw] = robot.currentCommand;
    $('cmd-vx').textContent = cx.toFixed(2); $('cmd-vy').textContent = cy.toFixed(2);
    $('cmd-wz').textContent = cw.toFixed(2);
    $('meas-vx').textContent = smooth.vf.toFixed(2); $('meas-vy').textContent = smooth.vl.toFixed(2);
    $('meas-wz').textContent = smooth.wz.toFixed(2);
  }

  async function frame(now) {
    const wall = (now - start) / 1000;
    if (lastFrameEnd !== null) {
      const idle = (now - lastFrameEnd) / 1000;
      state.stalledSeconds += Math.max(0, idle - MAX_STEPS_PER_FRAME * robot.dt);
    }
    let steps = 0;
    const t0 = performance.now();
    // Step until the simulation is at or past the wall clock: sim seconds >= wall seconds.
    while (simClock < wall && steps < MAX_STEPS_PER_FRAME) {
      if (!fixed) updateCommand(robot.dt);
      await robot.step(ort);
      simClock += robot.dt; steps += 1;
      const sample = robot.sample();
      state.log.push(sample);
      if (robot.fallen()) { state.resets += 1; reset(); } else readout(sample);
    }
    state.computeSeconds += (performance.now() - t0) / 1000;
    if (simClock < wall) { state.droppedSeconds += wall - simClock; simClock = wall; }
    state.simSeconds = simClock; state.wallSeconds = wall;
    state.minLeadSeconds = Math.min(state.minLeadSeconds, simClock - wall);
    const b = 3 * robot.rootBody;
    const x = data.xpos;
    cameraHeading += 0.05 * wrapToPi(robot.heading() - cameraHeading); // a camera that lags the turns
    view?.draw(data, [x[b], x[b + 1], x[b + 2]], cameraHeading);
    $('clock').textContent = `${simClock.toFixed(1)} s simulated, ${wall.toFixed(1)} s on the clock`;
    lastFrameEnd = performance.now();
    requestAnimationFrame(frame);
  }

  reset();
  state.ready = true;
  status.textContent = (fixed ? 'fixed command (test)' : 'drive with the arrow keys or the sliders')
    + (view ? '' : ' (this browser has no WebGL: the robot runs, but is not drawn)');
  requestAnimationFrame((now) => { start = now; requestAnimationFrame(frame); });
}

main().catch((err) => {
  $('status').textContent = `could not start: ${err.message}`;
  console.error(err);
});
