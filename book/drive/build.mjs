// Build the drive page into a folder of static files: `node build.mjs <out> [<export>]`.
//
// <out>/index.html      the page (index.html here)
// <out>/drive.js        src/*.js with three.js and onnxruntime-web bundled by esbuild
// <out>/mujoco_wasm.js  MuJoCo's WebAssembly build (npm mujoco-js; the wasm is inside it)
// <out>/ort-wasm-*.wasm onnxruntime-web's WebAssembly runtime
// <out>/export/         policy.onnx, scene.xml, spec.json, about.json: copied from <export>
//                       when given (`microduck records drive-export` writes that folder)
//
// Files are written only when their bytes change, so an unchanged build leaves every file
// (and the book's `make` timestamps) as they were. Nothing is fetched: npm ci did that.
import { build } from 'esbuild';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';

const here = path.dirname(new URL(import.meta.url).pathname);
const [out, exportDir] = process.argv.slice(2);
if (!out) {
  console.error('usage: node build.mjs <out> [<export folder>]');
  process.exit(2);
}
const require = createRequire(import.meta.url);
const EXPORT_FILES = ['policy.onnx', 'scene.xml', 'spec.json', 'about.json'];

function writeIfChanged(file, bytes) {
  if (fs.existsSync(file) && Buffer.compare(fs.readFileSync(file), bytes) === 0) return false;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, bytes);
  fs.renameSync(tmp, file); // atomic: a reader sees the old file or the new one
  return true;
}

if (exportDir) {
  for (const name of EXPORT_FILES) {
    if (!fs.existsSync(path.join(exportDir, name))) {
      console.error(`${exportDir}: no ${name} (run \`microduck records drive-export\` first)`);
      process.exit(2);
    }
  }
}

const bundle = await build({
  entryPoints: [path.join(here, 'src', 'main.js')],
  bundle: true,
  format: 'esm',
  minify: true,
  write: false,
  target: 'es2022',
  // MuJoCo's 11 MB module is loaded as it is, beside the bundle.
  external: ['./mujoco_wasm.js'],
  logLevel: 'warning',
});

const files = {
  'index.html': fs.readFileSync(path.join(here, 'index.html')),
  'drive.js': Buffer.from(bundle.outputFiles[0].contents),
  'mujoco_wasm.js': fs.readFileSync(require.resolve('mujoco-js')),
  'ort-wasm-simd-threaded.wasm': fs.readFileSync(
    path.join(path.dirname(require.resolve('onnxruntime-web/wasm')), 'ort-wasm-simd-threaded.wasm'),
  ),
};
if (exportDir) {
  for (const name of EXPORT_FILES) files[`export/${name}`] = fs.readFileSync(path.join(exportDir, name));
}
let changed = 0;
for (const [name, bytes] of Object.entries(files)) changed += writeIfChanged(path.join(out, name), bytes);
console.log(`drive page: ${Object.keys(files).length} files in ${out} (${changed} changed)`);
