/**
 * The production build (tsconfig.build.json, `npm run build`) emits only control-plane/,
 * media-engine/ and shared/. tsc follows imports past `include`, so one production import of a
 * test helper or a bench module would quietly ship it in dist/: this resolves the build's program
 * the way tsc does and fails on any such file.
 */
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

function programFiles(configName: string): string[] {
  const parsed = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, configName), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(String(d.messageText)); } });
  if (!parsed) throw new Error(`cannot read ${configName}`);
  const program = ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
  return program
    .getSourceFiles()
    .map((f) => path.relative(ROOT, f.fileName))
    .filter((f) => !f.startsWith('..') && !f.startsWith('node_modules'));
}

describe('production build output', () => {
  it('holds only the services and shared/ (no test or bench module reaches dist/)', () => {
    const files = programFiles('tsconfig.build.json');
    expect(files.length).toBeGreaterThan(100);
    // main.ts at the root wires single-process mode (ROLE=all): the one file that imports both halves.
    expect(files.filter((f) => f !== 'main.ts' && !/^(control-plane|media-engine|shared)\//.test(f))).toEqual([]);
    expect(files).toContain('main.ts');
    expect(files).toContain('control-plane/main.ts');
    expect(files).toContain('media-engine/main.ts');
  });

  it('emits where `npm start` and `npm run bench` look (dist/, dist-bench/)', () => {
    const opts = (name: string) => ts.getParsedCommandLineOfConfigFile(path.join(ROOT, name), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!.options;
    expect(path.relative(ROOT, opts('tsconfig.build.json').outDir!)).toBe('dist');
    expect(opts('tsconfig.build.json').noEmit).toBeFalsy();
    expect(path.relative(ROOT, opts('tsconfig.bench.json').outDir!)).toBe('dist-bench');
    expect(opts('tsconfig.json').noEmit).toBe(true);
  });
});
