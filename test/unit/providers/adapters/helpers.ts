/** Small test helpers for the adapter suites (bounded waits, audio round trips, time recording). */
import { realClock, type Clock, type TimerHandle } from '../../../../shared/clock.js';
import { SimDecoder } from '../../../../shared/providers/sim/codec.js';
import type { PcmChunk } from '../../../../shared/providers/types.js';

/** Drains an async iterable; on failure the error carries what was collected so far. */
export async function collect<T>(it: AsyncIterable<T>, timeoutMs = 5000): Promise<T[]> {
  const out: T[] = [];
  const run = (async () => {
    for await (const x of it) out.push(x);
    return out;
  })();
  return withTimeout(run, timeoutMs, 'collect');
}

/** Runs `it` to its end or its error; returns both (errors are data in fault tests). */
export async function settle<T>(it: AsyncIterable<T>, timeoutMs = 5000): Promise<{ items: T[]; error: any }> {
  const items: T[] = [];
  try {
    await withTimeout(
      (async () => {
        for await (const x of it) items.push(x);
      })(),
      timeoutMs,
      'settle',
    );
    return { items, error: undefined };
  } catch (error) {
    return { items, error };
  }
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    t = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(t));
}

/** Polls a condition that no event exposes (e.g. server-side counters); bounded. */
export async function waitFor(pred: () => boolean, timeoutMs = 3000, what = 'condition'): Promise<void> {
  const start = performance.now();
  while (!pred()) {
    if (performance.now() - start > timeoutMs) throw new Error(`waitFor ${what}: timed out after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Keeps every `factor`-th sample. Fine for sim code: its tones sit far below the new Nyquist. */
export function decimate(samples: Int16Array, factor: number): Int16Array {
  const out = new Int16Array(Math.floor(samples.length / factor));
  for (let i = 0; i < out.length; i++) out[i] = samples[i * factor]!;
  return out;
}

export function concatPcm(chunks: PcmChunk[]): Int16Array {
  const out = new Int16Array(chunks.reduce((n, c) => n + c.samples.length, 0));
  let o = 0;
  for (const c of chunks) {
    out.set(c.samples, o);
    o += c.samples.length;
  }
  return out;
}

/** Reads sim-coded PCM back to text (24 kHz is decimated to 8 kHz first). */
export function decodeSimPcm(samples: Int16Array, sampleRateHz: number): string {
  let rate = sampleRateHz;
  let s = samples;
  if (rate === 24000) {
    s = decimate(s, 3);
    rate = 8000;
  }
  if (rate !== 8000 && rate !== 16000) throw new Error(`decodeSimPcm: unsupported ${rate} Hz`);
  const d = new SimDecoder(rate);
  d.push(s);
  d.push(new Int16Array(rate / 2)); // trailing silence ends the phrase
  d.flush();
  return d
    .takeEvents()
    .filter((e) => e.type === 'final')
    .map((e) => e.text)
    .join(' ');
}

/** Real time, but every requested timer duration is recorded (to assert backoffs and timeouts). */
export class RecordingClock implements Clock {
  readonly timeouts: number[] = [];
  now = (): number => realClock.now();
  monotonicMs = (): number => realClock.monotonicMs();
  setTimeout(fn: () => void, ms: number): TimerHandle {
    this.timeouts.push(ms);
    return realClock.setTimeout(fn, ms);
  }
  clearTimeout(h: TimerHandle | undefined): void {
    realClock.clearTimeout(h);
  }
  setInterval(fn: () => void, ms: number): TimerHandle {
    return realClock.setInterval(fn, ms);
  }
  clearInterval(h: TimerHandle | undefined): void {
    realClock.clearInterval(h);
  }
}

/**
 * A vendor that never stops: answers any request with `prelude`, then `event(i)` for i = 0, 1, …
 * (SSE text) until the client goes away. `closed` resolves when it does.
 */
export async function endlessSseServer(event: (i: number) => string, prelude = '') {
  const http = await import('node:http');
  let onClosed!: () => void;
  const closed = new Promise<void>((r) => (onClosed = r));
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.on('close', onClosed);
      if (prelude) res.write(prelude);
      let i = 0;
      const pump = () => {
        if (res.destroyed) return;
        for (let n = 0; n < 50; n++) if (!res.write(event(i++))) return void res.once('drain', pump);
        setImmediate(pump);
      };
      pump();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, closed, close: () => new Promise<void>((r) => server.close(() => r())) };
}
