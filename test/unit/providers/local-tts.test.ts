import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { encodeWav, parseWav } from '../../../shared/providers/audio/wav.js';
import { ProviderError } from '../../../shared/providers/errors.js';
import { createProviders, resolveProviderConfig } from '../../../shared/providers/registry.js';
import { FlitePool, MAX_SENTENCE_CHARS } from '../../../shared/providers/tts/flite-pool.js';
import { createLocalTts, MAX_PIECE_WEIGHT, splitSentences } from '../../../shared/providers/tts/local.js';
import { renderFliteDirect } from '../../helpers/flite-direct.js';

const pool = new FlitePool({ processes: 1, maxQueued: 2 });
afterAll(() => pool.close());

async function collect(text: string, voice?: string): Promise<{ samples: Int16Array; rates: Set<number>; chunks: number }> {
  const tts = createLocalTts({ pool, voice });
  const parts: Int16Array[] = [];
  const rates = new Set<number>();
  for await (const c of tts.synthesize({ text, preferredSampleRateHz: 8000, signal: new AbortController().signal })) {
    parts.push(c.samples);
    rates.add(c.sampleRateHz);
  }
  const samples = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    samples.set(p, at);
    at += p.length;
  }
  return { samples, rates, chunks: parts.length };
}

describe('local TTS (Flite in a child process)', () => {
  it('splits sentences, caps long runs and drops text with nothing to say', () => {
    expect(splitSentences('Hello there. How are you?  Fine;thanks')).toEqual(['Hello there.', 'How are you?', 'Fine;thanks']);
    expect(splitSentences(' ... \n ')).toEqual([]);
    expect(splitSentences('a\u0000b\nc.')).toEqual(['a b c.']);
    const long = splitSentences('word '.repeat(400));
    expect(long.length).toBe(7); // 1,999 characters in runs of at most 300, cut at spaces
    expect(long.every((s) => s.length <= MAX_PIECE_WEIGHT && /^(word )*word$/.test(s))).toBe(true);
    // Digits are read out as words: 60 of them weigh as much as 300 letters.
    const digits = splitSentences('1234567 890123 '.repeat(20).trim());
    expect(digits.every((s) => s.replace(/\D/g, '').length <= MAX_PIECE_WEIGHT / 5)).toBe(true);
    expect(digits.join(' ')).toBe('1234567 890123 '.repeat(20).trim());
    expect(splitSentences('9'.repeat(200))).toEqual(['9'.repeat(60), '9'.repeat(60), '9'.repeat(60), '9'.repeat(20)]);
  });

  it('renders the texts that crashed the process in one Flite run (Node 20 WASI past ~48 MiB) in pieces that do not', { timeout: 60_000 }, async () => {
    // A 1,000-character sentence and 150 characters of digits: 7-8 of 8 and 5 of 6 runs of one
    // Flite instance each killed its process (SIGSEGV/SIGABRT). Pieces keep every run small.
    const words = ('The quick brown fox jumps over the lazy dog near the river bank, '.repeat(16)).slice(0, 1000);
    const digits = '1234567 890123 4567 89012 '.repeat(6).slice(0, 150);
    for (const text of [words, digits]) {
      const got = await collect(text);
      expect(got.samples.length).toBeGreaterThan(16000); // seconds of speech, and this process alive
    }
  });

  it("is sample-identical to Flite's own rendering, sentence by sentence, in 40 ms chunks", async () => {
    const text = 'Hello, thanks for calling. How can I help you today?';
    const before = pool.rendered;
    const got = await collect(text);
    expect(pool.rendered - before).toBe(2); // two sentences, both rendered by the worker
    expect([...got.rates]).toEqual([16000]);
    const a = renderFliteDirect('Hello, thanks for calling.');
    const b = renderFliteDirect('How can I help you today?');
    expect(a.sampleRateHz).toBe(16000);
    expect(got.samples.length).toBe(a.samples.length + b.samples.length);
    expect(Buffer.from(got.samples.buffer).equals(Buffer.concat([Buffer.from(a.samples.buffer), Buffer.from(b.samples.buffer)]))).toBe(true);
    expect(got.chunks).toBeGreaterThan(got.samples.length / 640 - 2);
    // Real speech, not silence: ~1 s per 4 words and a loud enough signal.
    expect(got.samples.length / 16000).toBeGreaterThan(2);
    const rms = Math.sqrt(got.samples.reduce((s, x) => s + x * x, 0) / got.samples.length);
    expect(rms).toBeGreaterThan(500);
  });

  it('speaks the 8 kHz kal voice at its own rate', async () => {
    const got = await collect('Goodbye.', 'kal');
    expect([...got.rates]).toEqual([8000]);
    expect(got.samples.length).toBe(renderFliteDirect('Goodbye.', 'kal').samples.length);
  });

  it('refuses an unknown voice before a call starts (Flite would silently use kal)', () => {
    expect(() => resolveProviderConfig('tts', { provider_name: 'local', model_name: 'alloy' })).toThrow(ProviderError);
    expect(resolveProviderConfig('tts', { provider_name: 'local' }).model).toBe('slt');
    const { tts } = createProviders({ tts: { provider_name: 'local', model_name: 'rms' } }, { clock: undefined as never, outbound: undefined as never });
    expect(tts?.label).toBe('local');
  });

  it('bounds its queue and honours abort', async () => {
    const ac = new AbortController();
    const first = pool.render('One sentence to keep the worker busy for a moment.', 'slt');
    const queued = [pool.render('two.', 'slt', ac.signal), pool.render('three.', 'slt')];
    await expect(pool.render('four.', 'slt')).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    await expect(pool.render('x'.repeat(MAX_SENTENCE_CHARS + 1), 'slt')).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    ac.abort();
    await expect(queued[0]).rejects.toMatchObject({ code: 'ABORTED' });
    await expect(first).resolves.toMatchObject({ sampleRateHz: 16000 });
    await expect(queued[1]).resolves.toMatchObject({ sampleRateHz: 16000 });
  });

  it('warm() starts one worker ahead of the first sentence; close() ends it', async () => {
    const p = new FlitePool();
    expect(p.workerCount).toBe(0);
    await createLocalTts({ pool: p }).warm!();
    expect(p.workerCount).toBe(1);
    p.warm(); // idempotent
    expect(p.workerCount).toBe(1);
    await expect(p.render('Warm.', 'slt')).resolves.toMatchObject({ sampleRateHz: 16000 });
    await p.close();
    expect(p.workerCount).toBe(0);
    await expect(p.render('late.', 'slt')).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });
  });

  it('a Flite process that dies mid-sentence fails that sentence only (retryable); the next renders in a new one', { timeout: 30_000 }, async () => {
    const p = new FlitePool();
    try {
      await expect(p.render('Warm.', 'slt')).resolves.toMatchObject({ sampleRateHz: 16000 });
      const [first] = p.pids;
      const inFlight = p.render('A sentence long enough that its process is still rendering it when it crashes. '.repeat(3), 'slt');
      // What a fault inside Flite or Node's WASI does to its process (it did to the engine's, in a thread).
      process.kill(first!, 'SIGSEGV');
      await expect(inFlight).rejects.toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', retryable: true, message: expect.stringContaining('SIGSEGV') });
      await expect(p.render('Still here.', 'slt')).resolves.toMatchObject({ sampleRateHz: 16000 });
      expect(p.pids).toHaveLength(1);
      expect(p.pids[0]).not.toBe(first);
    } finally {
      await p.close();
    }
  });

  it('a piece whose process dies is rendered again in a new one: the rest of a long text is still spoken', { timeout: 30_000 }, async () => {
    const p = new FlitePool();
    try {
      await p.render('Warm.', 'slt');
      const [first] = p.pids;
      const tts = createLocalTts({ pool: p });
      const text = 'The first sentence is spoken in full. The second one is rendering when its process dies. The third follows it.';
      let chunks = 0;
      for await (const c of tts.synthesize({ text, preferredSampleRateHz: 16000, signal: new AbortController().signal })) {
        // While the first piece plays, the second renders ahead: its process dies under it.
        if (chunks++ === 0) process.kill(first!, 'SIGSEGV');
        expect(c.samples.length).toBeGreaterThan(0);
      }
      const whole = await Promise.all(splitSentences(text).map((t) => renderFliteDirect(t, 'slt')));
      // Every piece was spoken: as many 40 ms chunks as the three renderings hold.
      expect(chunks).toBe(whole.reduce((n, w) => n + Math.ceil(w.samples.length / 640), 0));
      expect(p.pids[0]).not.toBe(first);
    } finally {
      await p.close();
    }
  });

  it('a stuck sentence is killed at its timeout and the process replaced', { timeout: 30_000 }, async () => {
    const p = new FlitePool({ timeoutMs: 50 });
    try {
      const stuck = p.render('A sentence that takes longer than fifty milliseconds to render, certainly. '.repeat(3), 'slt');
      await expect(stuck).rejects.toMatchObject({ code: 'FIRST_BYTE_TIMEOUT', retryable: true });
      expect(p.workerCount).toBe(0);
    } finally {
      await p.close();
    }
  });

  it('close() and the idle timeout end the child process and remove its files', { timeout: 30_000 }, async () => {
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), 'vp-flite-test-'));
    const p = new FlitePool({ tmpDir });
    const inFlight = p.render('A sentence long enough that the process is still busy with it when its pool is closed. '.repeat(4), 'slt').then(
      () => null,
      (err: unknown) => err,
    );
    const [pid] = p.pids;
    await p.close();
    expect(alive(pid!)).toBe(false); // close() awaited its exit
    expect(await inFlight).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE' });

    const idle = new FlitePool({ idleMs: 20, tmpDir });
    await expect(idle.render('Idle soon.', 'slt')).resolves.toMatchObject({ sampleRateHz: 16000 });
    const [idlePid] = idle.pids;
    await vi.waitFor(() => expect(idle.workerCount).toBe(0), { timeout: 10_000, interval: 10 });
    await idle.close();
    expect(alive(idlePid!)).toBe(false);
    expect(fs.readdirSync(tmpDir)).toEqual([]); // both children's directories are gone
    fs.rmdirSync(tmpDir);
  });

  it('WAV round trip', () => {
    const s = Int16Array.from([0, 1, -1, 32767, -32768]);
    const back = parseWav(encodeWav(s, 22050));
    expect(back.sampleRateHz).toBe(22050);
    expect([...back.samples]).toEqual([...s]);
    expect(() => parseWav(new Uint8Array(10))).toThrow(RangeError);
  });
});
