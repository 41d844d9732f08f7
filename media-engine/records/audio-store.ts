/**
 * Per-turn audio: PCM -> Ogg/Opus (piscina worker) -> `DATA_DIR/audio/<yyyy-mm-dd>/<message_id>.ogg`.
 * Never on the audio path: `save()` only queues; batches of turns go to the worker as one moved
 * buffer; files are written with a rename so a reader never sees half a file. `done(relPath)` tells
 * the record writer to set the message's `audio_path` (relative to `DATA_DIR/audio`).
 *
 * Queue bound: `maxPending` turns and `maxPendingBytes` of PCM waiting or encoding (a turn holds up
 * to 60 s = 1.9 MB of caller audio). Overflow policy: the NEW turn's audio is
 * refused (`save` returns false; the caller counts and logs it). Audio is the lowest-value part of
 * a record: the transcript and telemetry rows are never affected.
 *
 * Worker file: `../workers/opus-encode.js` beside this module, i.e. present after `npm run build`
 * (`dist/`). When running from TypeScript sources (vitest) it does not exist and encoding runs
 * inline on this thread (logged once); tests of the pooled path pass `workerFile` explicitly.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Logger } from '../../shared/logger.js';
import { encodePackedBatch, packPcmBatch, unpackBytesBatch } from '../workers/ogg-opus.js';

export interface AudioJob {
  messageId: string;
  samples: Int16Array;
  sampleRateHz: number;
  /** When the turn happened (epoch ms): picks the day directory. */
  atMs: number;
}

export interface AudioStoreStats {
  mode: 'worker' | 'inline';
  pending: number;
  pendingBytes: number;
  written: number;
  failed: number;
  refused: number;
}

export interface AudioStore {
  /** Queues one file; `done` gets the relative path, or undefined when encoding or writing failed. False: refused (queue full or closed). */
  save(job: AudioJob, done: (relPath: string | undefined) => void): boolean;
  /** Resolves when everything queued so far is written (or failed). */
  idle(): Promise<void>;
  stats(): AudioStoreStats;
  /** Absolute path of a stored file. */
  resolve(relPath: string): string;
  /** Finishes queued work, then stops the worker pool. Idempotent. */
  close(): Promise<void>;
  readonly closed: boolean;
}

export interface AudioStoreOptions {
  /** `DATA_DIR`; files go under `<dataDir>/audio/`. */
  dataDir: string;
  logger: Logger;
  /** Worker module (compiled JS). Default: `../workers/opus-encode.js` when it exists; `null` forces inline encoding. */
  workerFile?: string | URL | null;
  /** Turns waiting or encoding before new ones are refused. Default 256. */
  maxPending?: number;
  /** PCM bytes waiting or encoding before new turns are refused. Default 64 MiB. */
  maxPendingBytes?: number;
  /** Turns per worker task. Default 16. */
  batchMaxJobs?: number;
  /** Worker threads. Default 2. */
  maxThreads?: number;
  /** piscina's own task queue bound (tasks, not turns). Default 32. */
  maxQueuedTasks?: number;
}

/** Relative path of a message's audio: `<yyyy-mm-dd>/<message_id>.ogg` (UTC day of the turn). */
export function audioRelPath(messageId: string, atMs: number): string {
  return `${new Date(atMs).toISOString().slice(0, 10)}/${messageId}.ogg`;
}

/** The compiled worker beside this module, if present (after `npm run build`). */
export function defaultOpusWorkerFile(): string | undefined {
  const file = fileURLToPath(new URL('../workers/opus-encode.js', import.meta.url));
  return fs.existsSync(file) ? file : undefined;
}

interface Pending {
  job: AudioJob;
  done: (relPath: string | undefined) => void;
}

export function createAudioStore(opts: AudioStoreOptions): AudioStore {
  const root = path.join(opts.dataDir, 'audio');
  const maxPending = opts.maxPending ?? 256;
  const maxPendingBytes = opts.maxPendingBytes ?? 64 * 1024 * 1024;
  let pendingBytes = 0;
  const batchMaxJobs = opts.batchMaxJobs ?? 16;
  const workerFile = opts.workerFile === null ? undefined : (opts.workerFile ?? defaultOpusWorkerFile());
  const pool = workerFile
    ? new Piscina({
        filename: workerFile instanceof URL ? workerFile.href : workerFile,
        minThreads: 0,
        maxThreads: opts.maxThreads ?? 2,
        maxQueue: opts.maxQueuedTasks ?? 32,
        idleTimeout: 30_000,
      })
    : undefined;
  // A worker that dies (or fails to load) must not crash the process: its tasks reject and are logged.
  pool?.on('error', (err: Error) => opts.logger.error({ err }, 'opus worker error'));
  if (!pool) opts.logger.info('opus worker not compiled (running from sources): encoding turn audio inline');

  const waiting: Pending[] = [];
  let inFlight = 0;
  let written = 0;
  let failed = 0;
  let refused = 0;
  let scheduled = false;
  let closed = false;
  let idleWaiters: Array<() => void> = [];

  const pendingCount = () => waiting.length + inFlight;

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      dispatch();
    });
  }

  function dispatch(): void {
    // Keep a few tasks in flight per thread; piscina's queue bound is a second line of defence.
    const maxTasks = (opts.maxThreads ?? 2) * 2;
    while (waiting.length && (!pool || Math.ceil(inFlight / batchMaxJobs) < maxTasks)) {
      const batch = waiting.splice(0, batchMaxJobs);
      inFlight += batch.length;
      void runBatch(batch).finally(() => {
        inFlight -= batch.length;
        for (const p of batch) pendingBytes -= p.job.samples.byteLength;
        if (waiting.length) schedule();
        checkIdle();
      });
      if (!pool) break; // inline: one batch per tick so the event loop breathes between batches
    }
  }

  async function runBatch(batch: Pending[]): Promise<void> {
    let files: Uint8Array[];
    try {
      const packed = packPcmBatch(batch.map((p) => ({ samples: p.job.samples, sampleRateHz: p.job.sampleRateHz })));
      const out = pool ? ((await pool.run(Piscina.move(packed))) as ArrayBuffer) : encodePackedBatch(packed);
      files = unpackBytesBatch(out);
    } catch (err) {
      failed += batch.length;
      opts.logger.error({ err, turns: batch.length }, 'turn audio encoding failed');
      for (const p of batch) p.done(undefined);
      return;
    }
    await Promise.all(
      batch.map(async (p, i) => {
        const rel = audioRelPath(p.job.messageId, p.job.atMs);
        const abs = path.join(root, rel);
        try {
          await fsp.mkdir(path.dirname(abs), { recursive: true });
          const tmp = `${abs}.${process.pid}.tmp`;
          await fsp.writeFile(tmp, files[i]);
          await fsp.rename(tmp, abs);
          written++;
          p.done(rel);
        } catch (err) {
          failed++;
          opts.logger.error({ err, messageId: p.job.messageId }, 'turn audio write failed');
          p.done(undefined);
        }
      }),
    );
  }

  function idle(): Promise<void> {
    if (pendingCount() === 0) return Promise.resolve();
    return new Promise((resolve) => idleWaiters.push(resolve));
  }

  function checkIdle(): void {
    if (pendingCount() > 0) return;
    const ws = idleWaiters;
    idleWaiters = [];
    for (const w of ws) w();
  }

  return {
    save(job, done) {
      if (closed || pendingCount() >= maxPending || pendingBytes + job.samples.byteLength > maxPendingBytes || job.samples.length === 0) {
        refused++;
        return false;
      }
      pendingBytes += job.samples.byteLength;
      waiting.push({ job, done });
      schedule();
      return true;
    },
    idle,
    stats: () => ({ mode: pool ? 'worker' : 'inline', pending: pendingCount(), pendingBytes, written, failed, refused }),
    resolve: (rel) => path.join(root, rel),
    get closed() {
      return closed;
    },
    async close() {
      if (closed) return;
      closed = true;
      await idle();
      await pool?.destroy();
    },
  };
}
