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
const SPEED_SMOOTHING_S = 0.5; // time constant of the measured speed's exponential filter
const KEY_FRACTION = 0.75; // a held arrow key commands this fraction of its axis's range

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

// The keys a focused slider moves itself with; R and Space still reach the page.
const SLIDER_KEYS = ['ArrowUp', 'ArrowDown', 'ArrowLeft', 'ArrowRight', 'Home', 'End', 'PageUp', 'PageDown'];

/** true where the focused element has its own use for `key`: the arrows move a slider, and
 * Space presses a button or ticks a box; the page then leaves the key alone */
function ownsKey(target, key) {
  const tag = target?.tagName;
  if (tag === 'BUTTON' || (tag === 'INPUT' && ['checkbox', 'button'].includes(target.type))) return key === ' ';
  if (tag === 'INPUT' && target.type === 'range') return SLIDER_KEYS.includes(key);
  return tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || !!target?.isContentEditable;
}

/** sliders, keys and the hold-heading toggle -> the robot's command */
class Controls {
  constructor(ranges, onReset) {
    this.onReset = onReset;
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
    // left/right step sideways; releasing a key brings its slider back to zero. R resets,
    // Space stops.
    window.addEventListener('keydown', (e) => this.key(e, true));
    window.addEventListener('keyup', (e) => this.key(e, false));
    // A key released while the window is not focused sends no keyup: let go of every key.
    window.addEventListener('blur', () => this.release());
    $('zero').addEventListener('click', () => this.zero());
    this.show();
  }

  key(event, down) {
    // A key lets go of the axis it pressed wherever the focus went, even if shift was released
    // or Ctrl, Alt or Meta pressed in between: no axis stays commanded without its key held.
    if (!down) {
      if (this.held.has(event.key)) { event.preventDefault(); this.releaseKey(event.key); }
      return;
    }
    if (this.locked || event.ctrlKey || event.metaKey || event.altKey) return;
    if (ownsKey(event.target, event.key)) return;
    if (event.key === 'r' || event.key === 'R') {
      event.preventDefault();
      if (!event.repeat) this.onReset();
      return;
    }
    if (event.key === ' ') { event.preventDefault(); this.zero(); return; }
    const map = {
      ArrowUp: ['vx', 1], ArrowDown: ['vx', -1],
      ArrowLeft: [event.shiftKey ? 'vy' : 'wz', 1], ArrowRight: [event.shiftKey ? 'vy' : 'wz', -1],
    };
    if (!(event.key in map)) return;
    event.preventDefault();
    const [axis, sign] = map[event.key];
    // Shift pressed or released while an arrow is held: the key's repeats now move the other
    // axis, and the one it held goes back to zero (its keyup will only see the new one).
    const previous = this.held.get(event.key);
    if (previous && previous !== axis) this.sliders[previous].value = 0;
    this.held.set(event.key, axis);
    const el = this.sliders[axis];
    el.value = (sign > 0 ? el.max : el.min) * KEY_FRACTION;
    this.show();
  }

  releaseKey(key) {
    this.sliders[this.held.get(key)].value = 0;
    this.held.delete(key);
    this.show();
  }

  release() { for (const key of [...this.held.keys()]) this.releaseKey(key); }

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

/** where the policy comes from, in one line: task, iteration, seed, checkpoint digest, export */
function provenance(spec, about) {
  const ck = spec.checkpoint ?? {};
  return [
    spec.task && `task ${spec.task}`,
    ck.iteration != null && `iteration ${ck.iteration}`,
    about.seed != null && `seed ${about.seed}`,
    ck.sha256 && `checkpoint SHA-256 ${ck.sha256.slice(0, 12)}…`,
    about.export_run && `export ${about.export_run}`,
  ].filter(Boolean).join(', ') + '.';
}

/** whether this browser can draw with WebGL, asked of a canvas that is then dropped (three.js
 * itself would log errors and leave a blank box) */
function hasWebGL() {
  try {
    const canvas = document.createElement('canvas');
    return !!(canvas.getContext('webgl2') || canvas.getContext('webgl'));
  } catch {
    return false;
  }
}

async function main() {
  const status = $('status');
  // Without it MuJoCo's loader fails with an unrelated message; say what is missing instead.
  if (typeof WebAssembly !== 'object') {
    throw new Error('this browser has no WebAssembly (or it is turned off), which MuJoCo and the policy need');
  }
  status.textContent = 'starting MuJoCo and the policy…';
  const exported = window.DRIVE_EXPORT;
  if (!exported || !window.DRIVE_ORT_WASM) throw new Error('export/export.js or ort-wasm.js did not load');
  const { spec, about } = exported;
  $('checkpoint').textContent = about.label;
  $('checkpoint').className = about.walker ? 'walker' : 'candidate';
  $('provenance').textContent = provenance(spec, about);

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
  // speed; only the picture is missing, and its box is hidden.
  let view = null;
  if (hasWebGL()) {
    try {
      view = new View($('view'), model);
    } catch (err) {
      console.warn(`drive page: WebGL failed, nothing is drawn (${err.message})`);
    }
  }
  if (!view) $('view').style.display = 'none'; // not `hidden`: the page's CSS sets display
  const controls = new Controls(spec.command.ranges, () => requestReset());
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
  // A reset asked for while a step awaits the policy would land in the middle of that step:
  // it waits for the step to end. Between steps (between frames, or with the loop stopped)
  // nothing runs, and it applies at once.
  let stepping = false; let resetPending = false;
  function requestReset() {
    state.resets += 1;
    if (stepping) resetPending = true; else reset();
  }
  function applyPendingReset() {
    if (!resetPending) return false;
    resetPending = false;
    reset();
    return true;
  }
  $('reset').addEventListener('click', () => requestReset());
  $('reset').title = 'R';
  $('zero').title = 'Space';

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
    try {
      await advance(now);
    } catch (err) {
      applyPendingReset(); // the step that threw ended; later requests apply at once
      // A frame that throws schedules no other: say so instead of freezing silently.
      status.textContent = `stopped: ${err.message}`;
      console.error(err);
      return;
    }
    requestAnimationFrame(frame);
  }

  async function advance(now) {
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
      stepping = true;
      try {
        await robot.step(ort);
      } finally {
        stepping = false;
      }
      simClock += robot.dt; steps += 1;
      const sample = robot.sample();
      state.log.push(sample);
      if (applyPendingReset()) continue;
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
  }

  reset();
  state.ready = true;
  status.textContent = (fixed ? 'fixed command (test)' : 'drive with the arrow keys or the sliders')
    + (view ? '' : ' (this browser has no WebGL: the robot runs and the table reports it, but nothing is drawn)');
  requestAnimationFrame((now) => { start = now; requestAnimationFrame(frame); });
}

main().catch((err) => {
  $('status').textContent = `could not start: ${err.message}`;
  console.error(err);
});
