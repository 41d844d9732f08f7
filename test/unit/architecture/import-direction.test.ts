/**
 * One direction of imports (issue 12): `control-plane/` and `media-engine/` never import each
 * other, and `shared/` imports neither; both halves import `shared/`. Only the top-level `main.ts`
 * (ROLE=all) imports both. uWebSockets.js is the engine's alone. A new cross import fails here with
 * the file and the specifier.
 *
 * Specifiers come from TypeScript's own pre-processor (`ts.preProcessFile`): static imports,
 * `export ... from`, `import type`, and dynamic `import()` with a literal argument.
 */
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const HALVES = ['control-plane', 'media-engine', 'shared'] as const;
type Half = (typeof HALVES)[number];

/** What each folder may not reach (by top-level folder of the target, or a bare package name). */
const FORBIDDEN: Record<Half, { folders: string[]; packages: string[] }> = {
  'control-plane': { folders: ['media-engine'], packages: ['uWebSockets.js'] },
  'media-engine': { folders: ['control-plane'], packages: [] },
  shared: { folders: ['control-plane', 'media-engine'], packages: ['uWebSockets.js'] },
};

interface Violation {
  file: string;
  specifier: string;
}

/** `files`: repo-relative path -> source. Answers every import that breaks the direction. */
function crossImports(files: Map<string, string>): Violation[] {
  const out: Violation[] = [];
  for (const [file, src] of files) {
    const half = file.split('/')[0] as Half;
    const rule = FORBIDDEN[half];
    if (!rule) continue;
    for (const { fileName: specifier } of ts.preProcessFile(src, true, true).importedFiles) {
      if (specifier.startsWith('.')) {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
        if (rule.folders.includes(target.split('/')[0]!)) out.push({ file, specifier });
      } else if (rule.packages.includes(specifier)) {
        out.push({ file, specifier });
      }
    }
  }
  return out;
}

function sourcesUnder(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) return sourcesUnder(rel);
    return e.name.endsWith('.ts') ? [rel] : [];
  });
}

describe('import direction', () => {
  it('control-plane/, media-engine/ and shared/ have no cross import', () => {
    const files = new Map(HALVES.flatMap(sourcesUnder).map((f) => [f, fs.readFileSync(path.join(ROOT, f), 'utf8')] as const));
    expect(files.size).toBeGreaterThan(200);
    expect(crossImports(files)).toEqual([]);
  });

  it('catches every import form that crosses (the check can fail)', () => {
    const files = new Map([
      ['control-plane/x/a.ts', "import { y } from '../../media-engine/node.js';"],
      ['control-plane/b.ts', "export { z } from '../media-engine/records/index.js';"],
      ['control-plane/c.ts', "const m = await import('../media-engine/node.js');"],
      ['control-plane/d.ts', "import type { T } from '../media-engine/session/actor.js';"],
      ['control-plane/e.ts', "import uws from 'uWebSockets.js';"],
      ['media-engine/f.ts', "import { createSql } from '../control-plane/db/client.js';"],
      ['shared/g/h.ts', "import '../../media-engine/uws.js';"],
      ['shared/i.ts', "import { x } from '../control-plane/app.js';"],
      // Allowed: within a half, into shared/, the engine's own native server.
      ['control-plane/ok.ts', "import { a } from '../shared/db/client.js'; import { b } from './app.js';"],
      ['media-engine/ok.ts', "import uws from 'uWebSockets.js'; import { c } from '../shared/providers/types.js';"],
      ['shared/ok.ts', "import { d } from './records/rows.js';"],
    ]);
    expect(crossImports(files).map((v) => v.file)).toEqual([
      'control-plane/x/a.ts',
      'control-plane/b.ts',
      'control-plane/c.ts',
      'control-plane/d.ts',
      'control-plane/e.ts',
      'media-engine/f.ts',
      'shared/g/h.ts',
      'shared/i.ts',
    ]);
  });
});
