import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BatchedLogStream } from '../../../shared/log-stream.js';
import { transpileToTemp } from '../../helpers/child-build.js';

/** A stand-in for sonic-boom that records what it is handed; `handed()` resolves at its next write. */
function recordingWriter(handoverMs = 5) {
  const writes: string[] = [];
  let waiter: (() => void) | undefined;
  const writer = {
    fd: -1,
    write: (s: string) => {
      writes.push(s);
      waiter?.();
      return true;
    },
    flush: (cb?: () => void) => cb?.(),
    flushSync: () => undefined,
  };
  const handed = () => new Promise<void>((r) => (waiter = r));
  return { writes, handed, stream: new BatchedLogStream(writer as never, handoverMs) };
}

const turnEnd = () => new Promise((r) => setImmediate(r));

describe('BatchedLogStream', () => {
  it('hands the lines of several turns over as one string, in order, once the first has waited handoverMs', async () => {
    const { writes, stream, handed } = recordingWriter(5);
    const t0 = performance.now();
    let first = handed();
    stream.write('a\n');
    stream.write('b\n');
    await turnEnd();
    stream.write('c\n');
    await turnEnd();
    expect(writes).toEqual([]); // not per turn any more: one write for many turns
    await first;
    expect(performance.now() - t0).toBeGreaterThanOrEqual(4);
    expect(writes).toEqual(['a\nb\nc\n']);
    first = handed();
    stream.write('d\n');
    await first;
    expect(writes).toEqual(['a\nb\nc\n', 'd\n']);
  });

  it('a batch that would pass 16 KiB is handed over at once, without waiting, as one write', () => {
    const { writes, stream } = recordingWriter(60_000);
    const line = `${'z'.repeat(99)}\n`;
    for (let i = 0; i < 164; i++) stream.write(line); // 16,400 characters
    expect(writes).toEqual([line.repeat(163)]); // 16,300: the 164th would have passed 16,384
    stream.flushSync();
  });

  it('a batch hands over every 1,024 lines (bounded)', async () => {
    const { writes, stream, handed } = recordingWriter();
    const rest = handed();
    for (let i = 0; i < 2500; i++) stream.write(`${i}\n`);
    expect(writes.map((w) => w.split('\n').length - 1)).toEqual([1024, 1024]);
    await rest; // resolves on the first hand-over: wait for the third
    while (writes.length < 3) await handed();
    expect(writes.map((w) => w.split('\n').length - 1)).toEqual([1024, 1024, 452]);
    expect(writes.join('')).toBe(Array.from({ length: 2500 }, (_, i) => `${i}\n`).join(''));
  });

  it('more than 16 KiB is handed over in pieces of at most 16 KiB, in order', async () => {
    const { writes, stream } = recordingWriter();
    const lines = Array.from({ length: 300 }, (_, i) => `${String(i).padStart(3, '0')} ${'y'.repeat(195)}\n`);
    for (const l of lines) stream.write(l);
    stream.handOver(); // what the timer would do
    expect(writes.length).toBe(4);
    expect(writes.every((w) => w.length <= 16 * 1024)).toBe(true);
    expect(writes.join('')).toBe(lines.join(''));
  });

  it('flush hands the pending lines over first', async () => {
    const { writes, stream } = recordingWriter();
    stream.write('x\n');
    await new Promise<void>((r) => stream.flush(() => r()));
    expect(writes).toEqual(['x\n']);
  });
});

describe('the process log stream at exit', () => {
  const dir = transpileToTemp(['shared/logger.ts', 'shared/log-stream.ts', 'shared/iso-time.ts', 'test/helpers/log-then-exit.ts'], 'vp-log-exit-');
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  /** Runs the child; a slow reader starts reading `readAfterMs` after the start (the pipe fills first). */
  const run = async (mode: 'plain' | 'fatal' | 'later', count: number, nonblocking = false, readAfterMs = 0): Promise<Array<{ msg: string; i?: number }>> => {
    const child = spawn(process.execPath, [path.join(dir, 'test/helpers/log-then-exit.js'), mode, String(count), nonblocking ? 'nonblocking' : ''], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    if (readAfterMs > 0) {
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), readAfterMs);
    }
    child.stdout.on('data', (c: string) => (out += c));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(code).toBe(3);
    return out.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; i?: number });
  };
  const numbered = (n: number) => Array.from({ length: n }, (_, i) => i);

  it('writes the lines of the turn that called process.exit', async () => {
    const lines = await run('plain', 200);
    expect(lines.map((l) => l.i)).toEqual(numbered(200));
  }, 15_000);

  it('a fatal line goes out at once, after the lines before it (all but the one piece a write may have in flight)', async () => {
    // 200 lines are several pieces: one may already be with sonic-boom's thread-pool write when the
    // fatal line flushes the rest (seen once under a loaded CI host), the risk the test below states.
    const lines = await run('fatal', 200);
    const fatalAt = lines.findIndex((l) => l.msg === 'fatal, exiting');
    expect(fatalAt).toBeGreaterThan(0);
    const piece = expectAllButOnePiece(lines, 200);
    const inPiece = new Set(piece);
    // Every line outside that piece came before the fatal line.
    expect(lines.slice(0, fatalAt).filter((l) => l.i !== undefined && !inPiece.has(l.i)).length).toBe(200 - piece.length);
  }, 15_000);

  // 3,000 lines of ~270 bytes (~800 kB) are several times what the socket pair to the parent
  // buffers: the child meets a full non-blocking pipe (partial writes, EAGAIN) while the parent
  // has not started reading.
  const LINES = 3000;
  for (const mode of ['plain', 'fatal'] as const) {
    it(`a reader that is behind still gets every line, in order (${mode} exit, non-blocking stdout)`, async () => {
      const lines = await run(mode, LINES, true, 300);
      expect(lines.filter((l) => l.i !== undefined).map((l) => l.i)).toEqual(numbered(LINES));
      if (mode === 'fatal') expect(lines.at(-1)!.msg).toBe('fatal, exiting');
    }, 15_000);
  }

  it('exiting while writes are in flight loses or delays at most the one piece being written (<= 16 KiB)', async () => {
    // sonic-boom writes one piece at a time on the thread pool, and the exit hook cannot see when
    // that write runs: the process may end before it (the piece is lost, pino's documented risk of
    // asynchronous logging) or the thread pool may run it while the hook writes the later lines
    // (the piece lands after them; seen once in CI on a loaded 2-core host). Every other line
    // arrives, in order, and the piece, if it arrives, arrives whole.
    const lines = await run('later', LINES, true, 300);
    expectAllButOnePiece(lines, LINES);
    expect(lines.at(-1)!.msg).toBe('fatal, exiting');
  }, 15_000);
});

/**
 * Lines 0..count-1 all arrived in order but for at most one piece (<= 16 KiB) a write had in
 * flight, which is missing or arrives whole elsewhere. Returns that piece's line numbers.
 */
function expectAllButOnePiece(lines: Array<{ msg: string; i?: number }>, count: number): number[] {
  const numbered = (n: number) => Array.from({ length: n }, (_, k) => k);
  const got = lines.filter((l) => l.i !== undefined).map((l) => l.i!);
  // The piece starts at the first line out of place (or missing at the end) and ends before the line found there.
  const first = got.findIndex((v, k) => v !== k);
  const piece = first < 0 ? numbered(count).slice(got.length) : numbered(got[first]!).slice(first);
  expect(piece.length * 270).toBeLessThanOrEqual(16 * 1024 + 270);
  const inPiece = new Set(piece);
  expect(got.filter((i) => !inPiece.has(i))).toEqual(numbered(count).filter((i) => !inPiece.has(i)));
  const arrived = got.filter((i) => inPiece.has(i));
  expect(arrived.length === 0 || arrived.join() === piece.join()).toBe(true);
  return piece;
}
