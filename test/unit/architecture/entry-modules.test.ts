/**
 * `ROLE=control-plane` must start without loading uWebSockets.js (a native binary the API does not
 * need) or any engine module. Each entry runs in a real child process, transpiled as `npm run
 * build` would (test/helpers/child-build.ts), under a module `load` hook that appends every URL
 * Node actually loads to a file; the test reads that list. The database URL points at a closed
 * port, so the process gets past module loading and configuration, fails at the first query and
 * exits: by then every static import is loaded, and `ROLE=control-plane` has chosen not to load
 * the engine lazily.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildChild } from '../../helpers/child-build.js';

// Runs in Node's hooks thread: plain JavaScript, no imports from the project.
const HOOKS = `
import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  appendFileSync(process.env.PROBE_LOG, url + '\\n');
  return next(url, context);
}
`;
const REGISTER = `import { register } from 'node:module'; register('./probe-hooks.mjs', import.meta.url);`;

let dir: string;

beforeAll(() => {
  dir = buildChild(['main.ts']);
  fs.writeFileSync(path.join(dir, 'probe-hooks.mjs'), HOOKS);
  fs.writeFileSync(path.join(dir, 'probe-register.mjs'), REGISTER);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Runs `entry` (a .js path inside the built dir) and answers the URLs it loaded and its stderr. */
async function loadedBy(entry: string, env: Record<string, string>): Promise<{ urls: string[]; stderr: string; code: number | null }> {
  const log = path.join(dir, `loaded-${path.basename(entry)}-${Date.now()}.txt`);
  const child = spawn(process.execPath, ['--import', path.join(dir, 'probe-register.mjs'), path.join(dir, entry)], {
    cwd: dir,
    env: {
      PATH: process.env.PATH ?? '',
      PROBE_LOG: log,
      // A closed port: the first query fails fast (connection refused).
      DATABASE_URL: 'postgres://probe@127.0.0.1:1/probe',
      DATA_DIR: path.join(dir, 'data'),
      SEED_DEMO: 'false',
      LOG_LEVEL: 'silent',
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  // Every case here exits on its own within a second or two; a hung child is killed, not waited for.
  const kill = setTimeout(() => child.kill('SIGKILL'), 15_000);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearTimeout(kill);
  const urls = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  return { urls, stderr, code };
}

const isUws = (u: string) => u.includes('/node_modules/uWebSockets.js/');
const isEngine = (u: string) => u.includes('/media-engine/');

describe('process entries load only their half', () => {
  it('control-plane/main.js with ROLE=control-plane loads neither uWebSockets.js nor media-engine/', async () => {
    const r = await loadedBy('control-plane/main.js', { ROLE: 'control-plane' });
    // It ran: past configuration, into start-up, and failed at the closed database port.
    expect(r.stderr).toMatch(/^fatal: /m);
    expect(r.code).toBe(1);
    expect(r.urls.some((u) => u.endsWith('/control-plane/app.js'))).toBe(true);
    expect(r.urls.filter(isUws)).toEqual([]);
    expect(r.urls.filter(isEngine)).toEqual([]);
  }, 30_000);

  it('main.js with ROLE=control-plane does not load the engine either', async () => {
    const r = await loadedBy('main.js', { ROLE: 'control-plane' });
    expect(r.stderr).toMatch(/^fatal: /m);
    expect(r.urls.some((u) => u.endsWith('/control-plane/app.js'))).toBe(true);
    expect(r.urls.filter(isUws)).toEqual([]);
    expect(r.urls.filter(isEngine)).toEqual([]);
  }, 30_000);

  it('control-plane/main.js refuses ROLE=all (exit 2, one line) instead of serving without an engine', async () => {
    const r = await loadedBy('control-plane/main.js', { ROLE: 'all' });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^invalid configuration: ROLE /);
  }, 30_000);

  it('the probe sees uWebSockets.js when an entry does load it (media-engine/main.js)', async () => {
    // Static imports load before any code runs: the missing REDIS_URL stops it (exit 2) after that.
    const r = await loadedBy('media-engine/main.js', {});
    expect(r.code).toBe(2);
    expect(r.urls.filter(isUws).length).toBeGreaterThan(0);
  }, 30_000);
});
