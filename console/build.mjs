/**
 * Builds the web console (console/src, plain TypeScript) into a directory the control plane serves
 * (dist/console by default): esbuild bundles, content-hashed names (served as immutable), an
 * index.html that names them, and manifest.json, the only list of files the server will answer
 * for. `npm run build` runs it after tsc; tests call `buildConsole(tmpDir)`.
 * Plain .mjs because it runs before anything is compiled and needs no types.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const SRC = path.dirname(fileURLToPath(import.meta.url));
const COMMON = { bundle: true, format: 'esm', target: 'es2022', minify: true, sourcemap: false, write: false, logLevel: 'silent' };

const hashed = (name, text) => {
  const ext = path.extname(name);
  return `${path.basename(name, ext)}-${createHash('sha256').update(text).digest('hex').slice(0, 10)}${ext}`;
};

async function bundle(entry, define = {}) {
  const out = await esbuild.build({ ...COMMON, entryPoints: [path.join(SRC, 'src', entry)], define, outdir: '/out' });
  return out.outputFiles[0].text;
}

/** Writes the bundle into `outDir` (replacing what a previous build left) and returns its manifest. */
export async function buildConsole(outDir) {
  const files = {};
  // The AudioWorklet module first: the app loads it by its hashed name.
  const worklet = await bundle('worklet.ts');
  const workletName = hashed('worklet.js', worklet);
  files[workletName] = worklet;
  const app = await bundle('app.ts', { __WORKLET_URL__: JSON.stringify(`/console/${workletName}`) });
  const appName = hashed('app.js', app);
  files[appName] = app;
  const css = await fs.readFile(path.join(SRC, 'style.css'), 'utf8');
  const cssName = hashed('style.css', css);
  files[cssName] = css;
  const html = (await fs.readFile(path.join(SRC, 'index.html'), 'utf8')).replace('{{app}}', `/console/${appName}`).replace('{{css}}', `/console/${cssName}`);
  files['index.html'] = html;
  await fs.rm(outDir, { recursive: true, force: true });
  await fs.mkdir(outDir, { recursive: true });
  for (const [name, text] of Object.entries(files)) await fs.writeFile(path.join(outDir, name), text);
  const manifest = { index: 'index.html', files: Object.keys(files) };
  await fs.writeFile(path.join(outDir, 'manifest.json'), JSON.stringify(manifest, null, 1));
  return manifest;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outDir = path.resolve(process.argv[2] ?? 'dist/console');
  const started = performance.now();
  const m = await buildConsole(outDir);
  process.stdout.write(`console: ${m.files.length} files in ${path.relative(process.cwd(), outDir)} (${Math.round(performance.now() - started)} ms)\n`);
}
