// three.js drawing of a MuJoCo model from its geoms: one mesh per visual geom (and the ground),
// posed every frame from data.geom_xpos / geom_xmat. MuJoCo is z-up; so is this scene.
import * as THREE from 'three';

const GEOM = { PLANE: 0, SPHERE: 2, CAPSULE: 3, ELLIPSOID: 4, CYLINDER: 5, BOX: 6 };
// The MicroDuck's visual shapes are in group 2 and its collision soles (drawn by their visual
// twins) in group 3; the ground plane is group 0.
const DRAWN_GROUPS = new Set([0, 1, 2]);

// The floor's checker repeats every FLOOR_PERIOD_M (two 5 cm squares a side) over a drawn plane
// FLOOR_SIZE_M wide.
const FLOOR_SIZE_M = 20;
const FLOOR_PERIOD_M = 0.1;

function checkerTexture() {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 64;
  const g = canvas.getContext('2d');
  g.fillStyle = '#33475c'; g.fillRect(0, 0, 64, 64);
  g.fillStyle = '#1f3247'; g.fillRect(0, 0, 32, 32); g.fillRect(32, 32, 32, 32);
  const tex = new THREE.CanvasTexture(canvas);
  tex.wrapS = tex.wrapT = THREE.RepeatWrapping;
  // small squares: distance walked reads off the floor
  tex.repeat.set(FLOOR_SIZE_M / FLOOR_PERIOD_M, FLOOR_SIZE_M / FLOOR_PERIOD_M);
  tex.magFilter = THREE.NearestFilter;
  return tex;
}

function geometry(type, size) {
  switch (type) {
    case GEOM.PLANE: return new THREE.PlaneGeometry(FLOOR_SIZE_M, FLOOR_SIZE_M);
    case GEOM.SPHERE: return new THREE.SphereGeometry(size[0], 24, 16);
    case GEOM.ELLIPSOID: return new THREE.SphereGeometry(1, 24, 16).scale(size[0], size[1], size[2]);
    // three's capsule and cylinder run along y; MuJoCo's along z
    case GEOM.CAPSULE: return new THREE.CapsuleGeometry(size[0], 2 * size[1], 6, 12).rotateX(Math.PI / 2);
    case GEOM.CYLINDER: return new THREE.CylinderGeometry(size[0], size[0], 2 * size[1], 16).rotateX(Math.PI / 2);
    case GEOM.BOX: return new THREE.BoxGeometry(2 * size[0], 2 * size[1], 2 * size[2]);
    default: return null;
  }
}

export class View {
  constructor(canvas, model) {
    this.renderer = new THREE.WebGLRenderer({ canvas, antialias: true });
    this.renderer.setPixelRatio(Math.min(window.devicePixelRatio, 2));
    this.scene = new THREE.Scene();
    this.scene.background = new THREE.Color('#dfe7ee');
    this.camera = new THREE.PerspectiveCamera(40, 1, 0.01, 50);
    this.camera.up.set(0, 0, 1);
    this.scene.add(new THREE.HemisphereLight('#ffffff', '#445566', 2.2));
    const sun = new THREE.DirectionalLight('#ffffff', 1.5);
    sun.position.set(1, -1, 3);
    this.scene.add(sun);
    this.meshes = [];
    const types = model.geom_type; const sizes = model.geom_size;
    const rgba = model.geom_rgba; const groups = model.geom_group;
    for (let i = 0; i < model.ngeom; i++) {
      if (!DRAWN_GROUPS.has(groups[i])) continue;
      const geo = geometry(types[i], sizes.subarray(3 * i, 3 * i + 3));
      if (!geo) continue;
      const material = types[i] === GEOM.PLANE
        ? new THREE.MeshLambertMaterial({ map: checkerTexture() })
        : new THREE.MeshLambertMaterial({
          color: new THREE.Color(rgba[4 * i], rgba[4 * i + 1], rgba[4 * i + 2]),
        });
      const mesh = new THREE.Mesh(geo, material);
      mesh.matrixAutoUpdate = false;
      this.scene.add(mesh);
      this.meshes.push([i, mesh, types[i] === GEOM.PLANE]);
    }
    this.resize();
    window.addEventListener('resize', () => this.resize());
  }

  resize() {
    const c = this.renderer.domElement;
    const w = c.clientWidth || 640; const h = c.clientHeight || 400;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / h;
    this.camera.updateProjectionMatrix();
  }

  /** pose every mesh from the data and look at `target` (the trunk) from behind its heading */
  draw(data, target, heading) {
    const pos = data.geom_xpos; const mat = data.geom_xmat;
    // MuJoCo's ground plane is infinite, the drawn one is not: it follows the trunk in x and y
    // by whole periods of the checker (the ground is level and axis-aligned), so its squares
    // stay where they are on the ground.
    const snap = (v) => Math.round(v / FLOOR_PERIOD_M) * FLOOR_PERIOD_M;
    const floor = [snap(target[0]), snap(target[1])];
    for (const [i, mesh, isFloor] of this.meshes) {
      const p = 3 * i; const r = 9 * i;
      const [dx, dy] = isFloor ? floor : [0, 0];
      mesh.matrix.set(
        mat[r], mat[r + 1], mat[r + 2], pos[p] + dx,
        mat[r + 3], mat[r + 4], mat[r + 5], pos[p + 1] + dy,
        mat[r + 6], mat[r + 7], mat[r + 8], pos[p + 2],
        0, 0, 0, 1,
      );
    }
    const back = 0.55; const side = 0.25;
    this.camera.position.set(
      target[0] - back * Math.cos(heading) + side * Math.sin(heading),
      target[1] - back * Math.sin(heading) - side * Math.cos(heading),
      target[2] + 0.22,
    );
    this.camera.lookAt(target[0], target[1], target[2] - 0.03);
    this.renderer.render(this.scene, this.camera);
  }
}
