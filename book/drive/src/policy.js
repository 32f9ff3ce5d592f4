// The exported policy in MuJoCo's WebAssembly build: the same control loop as the book's
// Python sim-to-sim (mjlab_microduck/jobs/plain_mujoco.py), written the same way so the two can
// be compared step by step. Everything it needs is in spec.json (written by `microduck export`):
// which observation terms, in which order, from which sensor or body, with which scale and delay;
// how an action becomes actuator targets; the decimation; the heading law.
//
// Deterministic: no noise, no randomised robot, and every delay fixed at the middle of its
// range, rounded down (typicalLag; the Python rollout's typical_lag).

/** wrap an angle to [-pi, pi), as mjlab's wrap_to_pi */
export function wrapToPi(a) {
  const twoPi = 2 * Math.PI;
  return ((((a + Math.PI) % twoPi) + twoPi) % twoPi) - Math.PI;
}

/** mjlab's heading command: the yaw rate that turns `heading` toward `target` */
export function headingLaw(target, heading, stiffness, [lo, hi]) {
  return Math.min(hi, Math.max(lo, stiffness * wrapToPi(target - heading)));
}

/** v rotated by the inverse of the unit quaternion q = (w, x, y, z): world -> body */
function rotateInverse(q, v) {
  const [w, x, y, z] = [q[0], -q[1], -q[2], -q[3]];
  // v + 2 w (u x v) + 2 u x (u x v), with u = (x, y, z)
  const tx = 2 * (y * v[2] - z * v[1]);
  const ty = 2 * (z * v[0] - x * v[2]);
  const tz = 2 * (x * v[1] - y * v[0]);
  return [
    v[0] + w * tx + (y * tz - z * ty),
    v[1] + w * ty + (z * tx - x * tz),
    v[2] + w * tz + (x * ty - y * tx),
  ];
}

/** the fixed delay used for a [min, max] range: its middle, rounded down */
export function typicalLag([lo, hi]) {
  return Math.floor((lo + hi) / 2);
}

/** A fixed delay of `lag` steps; the first value after a reset fills the history. */
class Lag {
  constructor(lag) { this.lag = lag; this.values = []; }
  reset() { this.values = []; }
  push(value) {
    if (this.values.length === 0) this.values = Array(this.lag + 1).fill(value);
    else { this.values.push(value); this.values.shift(); }
    return this.values[0];
  }
}

/** One robot of an export: reset, then control steps under a command. */
export class Robot {
  constructor(mujoco, model, data, spec, session) {
    Object.assign(this, { mujoco, model, data, spec, session });
    this.terms = spec.observation.terms;
    this.lags = this.terms.map((t) => new Lag(typicalLag(t.delay_steps)));
    this.actionLag = new Lag(typicalLag(spec.actions.delay_physics_steps));
    this.rootBody = spec.robot.root_body_id;
    this.dt = spec.sim.control_dt_s;
    this.command = { vx: 0, vy: 0, wz: 0, holdHeading: false, targetHeading: 0 };
    this.simTime = 0;
  }

  /** default pose at the spec's start position, turned by `yaw`, under `command` (vx, vy, wz,
   * holdHeading); returns the first observation. A held heading is the start heading. */
  reset(yaw = 0, command = {}) {
    const { mujoco, model, data, spec } = this;
    mujoco.mj_resetData(model, data);
    const qpos = data.qpos;
    const q = spec.robot.root_qpos;
    spec.robot.init_pos.forEach((v, i) => { qpos[q + i] = v; });
    [Math.cos(yaw / 2), 0, 0, Math.sin(yaw / 2)].forEach((v, i) => { qpos[q + 3 + i] = v; });
    for (const j of spec.joints) qpos[j.qpos] = j.default_pos;
    mujoco.mj_forward(model, data);
    this.command = { vx: 0, vy: 0, wz: 0, holdHeading: false, ...command, targetHeading: this.heading() };
    this.lastAction = new Float64Array(spec.actions.size);
    this.lags.forEach((l) => l.reset());
    this.actionLag.reset();
    this.simTime = 0;
    // mjlab's first observation holds the command as given: the heading law acts from step 1.
    this.obs = this.observe(false);
    return this.obs;
  }

  /** yaw of the trunk's forward axis in the world (mjlab's heading_w) */
  heading() {
    const m = this.data.xmat;
    const b = 9 * this.rootBody;
    return Math.atan2(m[b + 3], m[b]);
  }

  /** the command the policy sees: (vx, vy, wz), wz from the heading law when holding */
  commandVector(steer = true) {
    const c = this.command;
    const h = this.spec.command.heading;
    const wz = c.holdHeading && steer
      ? headingLaw(c.targetHeading, this.heading(), h.stiffness, h.clip)
      : c.wz;
    return [c.vx, c.vy, wz];
  }

  raw(term) {
    const d = this.data;
    const joints = this.spec.joints;
    switch (term.kind) {
      case 'sensor': return Array.from(d.sensordata.subarray(term.adr, term.adr + term.size));
      case 'projected_gravity': {
        const q = d.xquat.subarray(4 * term.body_id, 4 * term.body_id + 4);
        return rotateInverse(q, term.gravity_w);
      }
      case 'joint_pos_rel': { const qpos = d.qpos; return joints.map((j) => qpos[j.qpos] - j.default_pos); }
      case 'joint_vel_rel': { const qvel = d.qvel; return joints.map((j) => qvel[j.dof]); }
      case 'last_action': return Array.from(this.lastAction);
      case 'velocity_command': return this.currentCommand;
      default: throw new Error(`observation term kind ${term.kind} is not known here`);
    }
  }

  observe(steer = true) {
    this.currentCommand = this.commandVector(steer);
    const out = new Float32Array(this.spec.observation.size);
    let k = 0;
    this.terms.forEach((term, i) => {
      let v = this.raw(term);
      if (term.clip) v = v.map((x) => Math.min(term.clip[1], Math.max(term.clip[0], x)));
      if (term.scale) v = v.map((x, n) => x * term.scale[n]);
      for (const x of this.lags[i].push(v)) out[k++] = x;
    });
    return out;
  }

  /** one control step: policy, `decimation` physics steps, mj_forward, command, observation */
  async step(ort) {
    const { mujoco, model, data, spec } = this;
    const input = new ort.Tensor('float32', this.obs, [1, this.obs.length]);
    const result = await this.session.run({ [this.session.inputNames[0]]: input });
    const action = result[this.session.outputNames[0]].data;
    const a = spec.actions;
    const target = Array.from(action, (x, i) => {
      const t = x * a.scale[i] + a.offset[i];
      return a.clip ? Math.min(a.clip[i][1], Math.max(a.clip[i][0], t)) : t;
    });
    for (let s = 0; s < spec.sim.decimation; s++) {
      const ctrl = data.ctrl;
      this.actionLag.push(target).forEach((t, i) => { ctrl[a.ctrl[i]] = t; });
      mujoco.mj_step(model, data);
    }
    mujoco.mj_forward(model, data);
    this.lastAction = Float64Array.from(action);
    this.simTime += this.dt;
    this.obs = this.observe();
    return this.obs;
  }

  /** trunk position and heading-frame velocity, for the readout and the tests */
  sample() {
    const d = this.data;
    const b = this.rootBody;
    const heading = this.heading();
    const dof = this.spec.robot.root_dof;
    const v = d.qvel; // a free joint's linear velocity is in the world frame
    const [c, s] = [Math.cos(heading), Math.sin(heading)];
    const x = d.xpos;
    const m = d.xmat;
    // a free joint's angular velocity is in the body frame: world z = third row of R times w
    const wz = m[9 * b + 6] * v[dof + 3] + m[9 * b + 7] * v[dof + 4] + m[9 * b + 8] * v[dof + 5];
    return {
      t: this.simTime, x: x[3 * b], y: x[3 * b + 1], z: x[3 * b + 2], heading,
      vForward: c * v[dof] + s * v[dof + 1], vLeft: -s * v[dof] + c * v[dof + 1], yawRate: wz,
    };
  }

  /** true when a termination of the spec holds (time-outs aside): the trunk tilts past the
   * task's limit, sinks onto its feet or below the ground, or the state is not finite;
   * plain_mujoco.py's terminated() */
  fallen() {
    const d = this.data;
    const z = d.xpos[3 * this.rootBody + 2];
    for (const term of this.spec.terminations) {
      if (term.kind === 'nan') {
        // A state gone NaN or infinite compares false with every limit below: test it as such.
        if (!d.qpos.every(Number.isFinite) || !d.qvel.every(Number.isFinite)) return true;
      } else if (term.kind === 'tilt') {
        const q = d.xquat.subarray(4 * this.rootBody, 4 * this.rootBody + 4);
        const up = -rotateInverse(q, [0, 0, -1])[2];
        if (Math.acos(Math.max(-1, Math.min(1, up))) > term.limit_rad) return true;
      } else if (term.kind === 'trunk_above_feet') {
        const feet = Math.min(...term.site_ids.map((i) => d.site_xpos[3 * i + 2]));
        if (z - feet < term.min_height_m) return true;
      } else if (term.kind === 'trunk_below' && z < term.min_height_m) return true;
    }
    return false;
  }
}
