import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TurnBatchedLogStream } from '../../../shared/log-stream.js';
import { transpileToTemp } from '../../helpers/child-build.js';

/** A stand-in for sonic-boom that records what it is handed. */
function recordingWriter() {
  const writes: string[] = [];
  const writer = {
    fd: -1,
    write: (s: string) => writes.push(s) > 0,
    flush: (cb?: () => void) => cb?.(),
    flushSync: () => undefined,
  };
  return { writes, stream: new TurnBatchedLogStream(writer as never) };
}

const turnEnd = () => new Promise((r) => setImmediate(r));

describe('TurnBatchedLogStream', () => {
  it('hands a turn\'s lines over as one string, in order, at the end of the turn', async () => {
    const { writes, stream } = recordingWriter();
    stream.write('a\n');
    stream.write('b\n');
    stream.write('c\n');
    expect(writes).toEqual([]);
    await turnEnd();
    expect(writes).toEqual(['a\nb\nc\n']);
    stream.write('d\n');
    await turnEnd();
    expect(writes).toEqual(['a\nb\nc\n', 'd\n']);
  });

  it('a turn that logs without end hands over every 1,024 lines (bounded)', async () => {
    const { writes, stream } = recordingWriter();
    for (let i = 0; i < 2500; i++) stream.write(`${i}\n`);
    expect(writes.map((w) => w.split('\n').length - 1)).toEqual([1024, 1024]);
    await turnEnd();
    expect(writes.map((w) => w.split('\n').length - 1)).toEqual([1024, 1024, 452]);
    expect(writes.join('')).toBe(Array.from({ length: 2500 }, (_, i) => `${i}\n`).join(''));
  });

  it('flush hands the pending lines over first', async () => {
    const { writes, stream } = recordingWriter();
    stream.write('x\n');
    await new Promise<void>((r) => stream.flush(() => r()));
    expect(writes).toEqual(['x\n']);
  });
});

describe('the process log stream at exit', () => {
  const dir = transpileToTemp(['shared/logger.ts', 'shared/log-stream.ts', 'test/helpers/log-then-exit.ts'], 'vp-log-exit-');
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const run = async (mode: 'plain' | 'fatal'): Promise<Array<{ msg: string; i?: number }>> => {
    const child = spawn(process.execPath, [path.join(dir, 'test/helpers/log-then-exit.js'), mode, '200'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (c: string) => (out += c));
    const code = await new Promise<number | null>((r) => child.on('close', r));
    expect(code).toBe(3);
    return out.trim().split('\n').map((l) => JSON.parse(l) as { msg: string; i?: number });
  };
  const numbered = Array.from({ length: 200 }, (_, i) => i);

  it('writes the lines of the turn that called process.exit', async () => {
    const lines = await run('plain');
    expect(lines.map((l) => l.i)).toEqual(numbered);
  }, 15_000);

  it('a fatal line goes out at once, after the lines before it', async () => {
    const lines = await run('fatal');
    expect(lines).toHaveLength(201);
    expect(lines.slice(0, 200).map((l) => l.i)).toEqual(numbered);
    expect(lines[200]!.msg).toBe('fatal, exiting');
  }, 15_000);
});
