// Build the drive page into a folder of static files: `node build.mjs <out> [<export>]`.
//
// <out>/index.html          the page (index.html here, {{DOWNLOAD_MB}} replaced by the size of
//                           the scripts it loads, in MB)
// <out>/drive.js            src/*.js with MuJoCo's WebAssembly build (npm mujoco-js, the wasm
//                           inside it), onnxruntime-web and three.js, bundled by esbuild
// <out>/ort-wasm.js         onnxruntime-web's WebAssembly runtime, as a script
// <out>/export/             policy.onnx, scene.xml, spec.json, about.json copied from <export>
//                           when given (`microduck records drive-export` writes that folder),
//                           and export.js: the same four as a script
//
// Everything the page loads is a classic <script>: the book is also read straight from
// _build/html on disk (file://), where a browser refuses ES modules and fetch(). Files are
// written only when their bytes change, so an unchanged build leaves every file (and the
// book's `make` timestamps) as they were. Nothing is fetched: npm ci did that.
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
  format: 'iife',
  platform: 'browser',
  minify: true,
  write: false,
  target: 'es2022',
  // The modules ask for their own URL to find files beside them; a classic script has none,
  // and the page hands both WebAssembly binaries over in memory anyway.
  define: { 'import.meta.url': 'document.baseURI' },
  external: ['module'], // mujoco-js's Node.js branch, never taken in a browser
  logLevel: 'error',
});

/** a script that defines window[name] = value (a string, or JSON-able data) */
const script = (name, value) => Buffer.from(`window.${name}=${JSON.stringify(value)};\n`);
const ortWasm = path.join(path.dirname(require.resolve('onnxruntime-web/wasm')), 'ort-wasm-simd-threaded.wasm');
const files = {
  'drive.js': Buffer.from(bundle.outputFiles[0].contents),
  'ort-wasm.js': script('DRIVE_ORT_WASM', fs.readFileSync(ortWasm).toString('base64')),
};
if (exportDir) {
  const read = (name) => fs.readFileSync(path.join(exportDir, name));
  for (const name of EXPORT_FILES) files[`export/${name}`] = read(name);
  files['export/export.js'] = script('DRIVE_EXPORT', {
    spec: JSON.parse(read('spec.json')),
    about: JSON.parse(read('about.json')),
    scene: read('scene.xml').toString('utf8'),
    policy: read('policy.onnx').toString('base64'),
  });
}
// What a reader downloads: the three scripts (the export's other files are there for the book,
// not loaded by the page). Without <export>, the export.js an earlier build left.
const exportScript = files['export/export.js']
  ?? (fs.existsSync(path.join(out, 'export/export.js')) ? fs.readFileSync(path.join(out, 'export/export.js')) : Buffer.alloc(0));
const downloadBytes = files['drive.js'].length + files['ort-wasm.js'].length + exportScript.length;
files['index.html'] = Buffer.from(fs.readFileSync(path.join(here, 'index.html'), 'utf8')
  .replaceAll('{{DOWNLOAD_MB}}', String(Math.round(downloadBytes / 1e6))));
let changed = 0;
for (const [name, bytes] of Object.entries(files)) changed += writeIfChanged(path.join(out, name), bytes);
// Files of an older build that this one does not write go (export/ only when it was written).
let removed = 0;
for (const entry of fs.readdirSync(out, { recursive: true, withFileTypes: true })) {
  const name = path.relative(out, path.join(entry.parentPath ?? entry.path, entry.name));
  if (!entry.isFile() || name in files || (!exportDir && name.startsWith('export'))) continue;
  fs.rmSync(path.join(out, name));
  removed += 1;
}
console.log(`drive page: ${Object.keys(files).length} files in ${out} (${changed} changed, ${removed} removed)`);
