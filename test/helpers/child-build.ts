/**
 * Runs TypeScript sources in a real child process (a control plane a test can SIGKILL): every
 * source under control-plane/, shared/, media-engine/ and the given test helpers is transpiled
 * (`typescript.transpileModule`, no type check) into a temp dir whose node_modules points at the
 * project's - what `npm run build` does for dist/, in about a second.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(import.meta.dirname, '../..');

function sources(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return sources(rel);
    return e.name.endsWith('.ts') && !e.name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** Returns the temp dir (remove it when done); `entry` (e.g. `test/helpers/x.ts`) is at `<dir>/<entry .js>`. */
export function buildChild(extra: string[]): string {
  return transpileToTemp([...sources('control-plane'), ...sources('shared'), ...sources('media-engine'), ...extra], 'vp-child-');
}

/**
 * Transpiles the given project files (paths relative to the root) into a new temp dir, same
 * relative paths with `.js`, as ES modules that resolve the project's node_modules. Returns the dir.
 */
export function transpileToTemp(files: string[], prefix = 'vp-build-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  for (const rel of files) {
    const out = ts.transpileModule(fs.readFileSync(path.join(ROOT, rel), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ES2022, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
      fileName: rel,
    });
    const dest = path.join(dir, rel.replace(/\.ts$/, '.js'));
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.writeFileSync(dest, out.outputText);
  }
  fs.writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}');
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}
