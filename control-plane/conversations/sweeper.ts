/**
 * Per-turn audio retention (spec Limits: "per-turn audio retention: 30 days by default, set per
 * deployment"; `AUDIO_RETENTION_DAYS`). Every `intervalMs` (default 1 h, first run after
 * `firstRunMs`), messages older than the retention lose their file and their `audio_path`, in
 * batches of 500; day directories (`<yyyy-mm-dd>`) entirely before the cutoff day are removed too,
 * which also catches files whose path never reached the database. Safe to run on several control
 * planes at once (deletes and updates are idempotent).
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';

export interface AudioSweeperOptions {
  sql: Sql;
  dataDir: string;
  clock: Clock;
  logger: Logger;
  retentionDays: number;
  /** Default 1 hour. */
  intervalMs?: number;
  /** Default 60 s after start. */
  firstRunMs?: number;
}

export interface AudioSweeper {
  /** One pass; resolves with what it removed. */
  sweepOnce(): Promise<{ files: number; dirs: number }>;
  close(): Promise<void>;
}

const BATCH = 500;
const DAY_DIR = /^\d{4}-\d{2}-\d{2}$/;

export function createAudioSweeper(opts: AudioSweeperOptions): AudioSweeper {
  const root = path.join(opts.dataDir, 'audio');
  let running: Promise<unknown> | undefined;
  let closed = false;

  async function sweepOnce(): Promise<{ files: number; dirs: number }> {
    const cutoffMs = opts.clock.now() - opts.retentionDays * 86_400_000;
    const cutoff = new Date(cutoffMs);
    let files = 0;
    for (;;) {
      const rows = await opts.sql<{ id: string; audio_path: string }[]>`
        select id, audio_path from messages
        where audio_path is not null and created_at < ${cutoff}
        order by created_at limit ${BATCH}`;
      if (!rows.length) break;
      for (const r of rows) {
        const abs = path.resolve(root, r.audio_path);
        if (abs.startsWith(root + path.sep)) await fsp.rm(abs, { force: true });
      }
      await opts.sql`update messages set audio_path = null where id = any(${rows.map((r) => r.id)}::uuid[])`;
      files += rows.length;
      if (rows.length < BATCH || closed) break;
    }
    let dirs = 0;
    const cutoffDay = cutoff.toISOString().slice(0, 10);
    const entries = await fsp.readdir(root).catch(() => [] as string[]);
    for (const name of entries) {
      if (DAY_DIR.test(name) && name < cutoffDay) {
        await fsp.rm(path.join(root, name), { recursive: true, force: true });
        dirs++;
      }
    }
    if (files || dirs) opts.logger.info({ files, dirs, retentionDays: opts.retentionDays }, 'turn audio purged');
    return { files, dirs };
  }

  const run = () => {
    if (running || closed) return;
    running = sweepOnce()
      .catch((err: Error) => opts.logger.warn({ err }, 'audio retention sweep failed'))
      .finally(() => (running = undefined));
  };
  const first: TimerHandle = opts.clock.setTimeout(run, opts.firstRunMs ?? 60_000);
  const every: TimerHandle = opts.clock.setInterval(run, opts.intervalMs ?? 3_600_000);

  return {
    sweepOnce,
    async close() {
      if (closed) return;
      closed = true;
      opts.clock.clearTimeout(first);
      opts.clock.clearInterval(every);
      await running;
    },
  };
}
