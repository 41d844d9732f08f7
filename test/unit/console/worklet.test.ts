/**
 * The console's AudioWorklet processors (console/src/worklet.ts) outside a browser: the module is
 * bundled with esbuild and run in a `vm` context that plays the audio thread (sampleRate,
 * currentTime, registerProcessor, a port). Capture must turn 48 kHz input into 20 ms frames of
 * 16 kHz PCM that still decode; the player must buffer, play, mark, drain and flush as documented.
 */
import path from 'node:path';
import vm from 'node:vm';
import { beforeAll, describe, expect, it } from 'vitest';
import * as esbuild from 'esbuild';
import { encodeText, SimDecoder } from '../../../shared/providers/sim/codec.js';

const RATE = 48000;
const BLOCK = 128;
type Msg = Record<string, unknown>;
interface Proc {
  port: { posted: unknown[]; onmessage: ((e: { data: unknown }) => void) | null };
  process(inputs: Float32Array[][], outputs: Float32Array[][]): boolean;
}
let procs: Record<string, new () => Proc>;
let ctx: { currentTime: number };

beforeAll(async () => {
  const out = await esbuild.build({ entryPoints: [path.resolve(import.meta.dirname, '../../../console/src/worklet.ts')], bundle: true, format: 'iife', write: false, logLevel: 'silent' });
  procs = {};
  ctx = vm.createContext({
    sampleRate: RATE,
    currentTime: 0,
    registerProcessor: (name: string, c: new () => Proc) => (procs[name] = c),
    AudioWorkletProcessor: class {
      port = { posted: [] as unknown[], onmessage: null, postMessage(m: unknown) { this.posted.push(m); } };
    },
  }) as { currentTime: number };
  vm.runInContext(out.outputFiles[0]!.text, ctx);
});

/** 16 kHz PCM -> 48 kHz float (sample and hold x3 is enough for tones under 3 kHz plus the capture low-pass). */
function to48k(pcm: Int16Array): Float32Array {
  const f = new Float32Array(pcm.length * 3);
  for (let i = 0; i < f.length; i++) f[i] = pcm[Math.floor(i / 3)]! / 32768;
  return f;
}

function decode(pcm16k: Int16Array): string[] {
  const d = new SimDecoder(16000);
  d.push(pcm16k);
  d.push(new Int16Array(16000));
  return d.takeEvents().filter((e) => e.type === 'final').map((e) => e.text);
}

describe('vp-capture', () => {
  it('emits 320-sample frames at 16 kHz with RMS, and the code survives the resampling', () => {
    const cap = new procs['vp-capture']!();
    const speech = encodeText('hello there', 16000);
    const input = to48k(new Int16Array([...new Int16Array(3200), ...speech, ...new Int16Array(8000)]));
    for (let i = 0; i + BLOCK <= input.length; i += BLOCK) cap.process([[input.subarray(i, i + BLOCK)]], []);
    const frames = cap.port.posted as Array<{ pcm: Int16Array; rms: number }>;
    expect(frames.every((f) => f.pcm.length === 320)).toBe(true);
    // One frame per 20 ms of input (the tail shorter than a frame stays buffered).
    expect(frames.length).toBe(Math.floor(Math.floor(input.length / BLOCK) * BLOCK / RATE / 0.02));
    expect(frames[0]!.rms).toBeLessThan(0.001);
    expect(Math.max(...frames.map((f) => f.rms))).toBeGreaterThan(0.1);
    const pcm = new Int16Array(frames.length * 320);
    frames.forEach((f, i) => pcm.set(f.pcm, i * 320));
    expect(decode(pcm)).toEqual(['hello there']);
  });
});

describe('vp-player', () => {
  function run(p: Proc, blocks: number): Float32Array {
    const out = new Float32Array(blocks * BLOCK);
    for (let b = 0; b < blocks; b++) {
      const o = new Float32Array(BLOCK);
      p.process([], [[o]]);
      out.set(o, b * BLOCK);
      ctx.currentTime += BLOCK / RATE;
    }
    return out;
  }
  const post = (p: Proc, data: Msg) => p.port.onmessage!({ data });
  const types = (p: Proc) => (p.port.posted as Msg[]).map((m) => m.type);

  it('waits for 40 ms, plays at the context rate, fires marks, drains, and the code decodes', () => {
    const p = new procs['vp-player']!();
    const speech = encodeText('you said hi', 16000);
    post(p, { mark: 7 });
    post(p, { pcm: speech.slice(0, 320) }); // 20 ms: below the jitter target
    run(p, 6); // 16 ms: still waiting (MAX_WAIT 60 ms not reached)
    expect(types(p)).toEqual([]);
    for (let i = 320; i < speech.length; i += 320) post(p, { pcm: speech.slice(i, i + 320) });
    const out = run(p, Math.ceil((speech.length * 3) / BLOCK) + 60);
    expect(types(p)).toEqual(['started', 'mark', 'drained']);
    const mark = (p.port.posted as Msg[])[1]!;
    expect(mark.id).toBe(7);
    // Back to 16 kHz (every 3rd sample) and decode what was played.
    const back = new Int16Array(Math.floor(out.length / 3));
    for (let i = 0; i < back.length; i++) back[i] = Math.round(out[i * 3]! * 32767);
    expect(decode(back)).toEqual(['you said hi']);
  });

  it('a flush drops the queue at once and reports drained (flushed); marks of flushed audio never fire', () => {
    const p = new procs['vp-player']!();
    post(p, { pcm: new Int16Array(16000).fill(1000) });
    run(p, 4);
    expect(types(p)).toEqual(['started']);
    post(p, { mark: 1 });
    post(p, { pcm: new Int16Array(1600).fill(1000) });
    post(p, { flush: true });
    expect((p.port.posted as Msg[]).at(-1)).toMatchObject({ type: 'drained', flushed: true });
    const after = run(p, 40);
    expect(after.every((v) => v === 0)).toBe(true);
    expect(types(p)).toEqual(['started', 'drained']);
  });

  it('bounds its queue (60 s) and starts a short reply after 60 ms', () => {
    const p = new procs['vp-player']!();
    for (let i = 0; i < 70; i++) post(p, { pcm: new Int16Array(16000).fill(500) });
    const q = p as unknown as { queued: number };
    expect(q.queued).toBe(60 * 16000);
    const s = new procs['vp-player']!();
    post(s, { pcm: new Int16Array(160).fill(500) }); // 10 ms only
    run(s, Math.ceil((0.06 * RATE) / BLOCK) + 1);
    expect(types(s)).toContain('started');
  });
});
