import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import { Vad, vadOptionsForProfile, type VadOptions } from '../../../media-engine/audio/vad.js';
import { parseWav, pcm16FromBytes } from '../../helpers/wav.js';
import { mulawDecode } from '../../../media-engine/audio/g711.js';

const FRAME_MS = 20;

/** A G.711 mu-law 8 kHz fixture, decoded as the carrier transport does. */
function loadMulaw(name: string): Int16Array {
  const wav = parseWav(new Uint8Array(readFileSync(new URL(`../../fixtures/audio/${name}`, import.meta.url))));
  expect(wav).toMatchObject({ format: 'mulaw', sampleRateHz: 8000, channels: 1 });
  const pcm = new Int16Array(wav.data.length);
  mulawDecode(wav.data, pcm);
  return pcm;
}

function loadPcm(name: string): Int16Array {
  const wav = parseWav(new Uint8Array(readFileSync(new URL(`../../fixtures/audio/${name}`, import.meta.url))));
  expect(wav).toMatchObject({ format: 'pcm16', sampleRateHz: 16000, channels: 1 });
  return pcm16FromBytes(wav.data);
}

interface Run {
  speech: boolean[];
  onsetsMs: number[];
  offsetsMs: number[];
  /** speechMs reported on each offset frame. */
  segmentMs: number[];
}

/** Feeds whole 20 ms frames; times are frame start times. */
function run(vad: Vad, samples: Int16Array): Run {
  const frameSamples = vad.frameSamples;
  const out: Run = { speech: [], onsetsMs: [], offsetsMs: [], segmentMs: [] };
  for (let i = 0; i + frameSamples <= samples.length; i += frameSamples) {
    const r = vad.process(samples.subarray(i, i + frameSamples));
    const tMs = out.speech.length * FRAME_MS;
    out.speech.push(r.speech);
    if (r.onset) out.onsetsMs.push(tMs);
    if (r.offset) {
      out.offsetsMs.push(tMs);
      out.segmentMs.push(r.speechMs);
    }
  }
  return out;
}

/** Reference speech span: first and last frame whose full-band level exceeds -40 dBFS. */
function loudSpanMs(samples: Int16Array, frameSamples = 320): { startMs: number; endMs: number } {
  let startMs = -1;
  let endMs = -1;
  for (let f = 0; (f + 1) * frameSamples <= samples.length; f++) {
    let sum = 0;
    for (let i = f * frameSamples; i < (f + 1) * frameSamples; i++) sum += samples[i]! * samples[i]!;
    if (10 * Math.log10(sum / frameSamples / 32768 ** 2) > -40) {
      if (startMs < 0) startMs = f * FRAME_MS;
      endMs = f * FRAME_MS;
    }
  }
  return { startMs, endMs };
}

function concat(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function whiteNoise(samples: number, amplitude: number, seed = 1): Int16Array {
  const out = new Int16Array(samples);
  let s = seed;
  for (let i = 0; i < samples; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    out[i] = Math.round(((s >>> 16) / 65536 - 0.5) * 2 * amplitude);
  }
  return out;
}

function sine(samples: number, frequencyHz: number, amplitude: number, sampleRateHz = 16000): Int16Array {
  const out = new Int16Array(samples);
  for (let i = 0; i < samples; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * frequencyHz * i) / sampleRateHz));
  return out;
}

const fraction = (flags: boolean[]): number => flags.filter(Boolean).length / flags.length;
const headset = (): Vad => new Vad(vadOptionsForProfile('browser_headset'));

describe('Vad on recorded speech', () => {
  it('caller-booking: onset within 150 ms of the real onset, offset after the end, one segment', () => {
    const pcm = loadPcm('caller-booking.16k.wav');
    const real = loudSpanMs(pcm);
    const r = run(headset(), pcm);
    expect(r.onsetsMs).toHaveLength(1);
    expect(r.onsetsMs[0]! - real.startMs).toBeGreaterThanOrEqual(0);
    expect(r.onsetsMs[0]! - real.startMs).toBeLessThanOrEqual(150);
    expect(r.offsetsMs).toHaveLength(1);
    expect(r.offsetsMs[0]!).toBeGreaterThan(real.endMs);
    expect(r.offsetsMs[0]! - real.endMs).toBeLessThanOrEqual(200 + 2 * FRAME_MS);
  });

  it('background-noise: no speech at all (the floor seeds from the first frame)', () => {
    const r = run(headset(), loadPcm('background-noise.16k.wav'));
    expect(r.onsetsMs).toEqual([]);
    expect(fraction(r.speech)).toBe(0);
  });

  it('caller-booking-noisy: speech still detected over brown noise at ~15 dB SNR', () => {
    const clean = loudSpanMs(loadPcm('caller-booking.16k.wav'));
    const r = run(headset(), loadPcm('caller-booking-noisy.16k.wav'));
    expect(r.onsetsMs[0]! - clean.startMs).toBeLessThanOrEqual(150);
    const during = r.speech.slice(clean.startMs / FRAME_MS, clean.endMs / FRAME_MS + 1);
    expect(fraction(during)).toBeGreaterThan(0.9);
    expect(r.offsetsMs.at(-1)!).toBeGreaterThan(clean.endMs);
  });

  it('noise-burst: a 0.35 s cough is flagged as one short segment; turn logic must reject it', () => {
    // Energy and spectrum of a cough look like speech; only its duration gives it away, and that
    // is a turn-logic decision (false barge-in -> phase_idle), so the VAD just reports it.
    const pcm = concat(loadPcm('noise-burst.16k.wav'), new Int16Array(16000 * 0.5));
    const r = run(headset(), pcm);
    expect(r.onsetsMs).toHaveLength(1);
    expect(r.offsetsMs).toHaveLength(1);
    expect(r.segmentMs[0]!).toBeGreaterThanOrEqual(200);
    expect(r.segmentMs[0]!).toBeLessThanOrEqual(400);
  });

  it('echo-of-agent-long with the speakers profile and the agent speaking: almost nothing flagged', () => {
    const pcm = loadPcm('echo-of-agent-long.16k.wav');
    const vad = new Vad(vadOptionsForProfile('browser_speakers'));
    vad.setAgentSpeaking(true);
    expect(fraction(run(vad, pcm).speech)).toBeLessThanOrEqual(0.05);
    // The margin is what does it: without it most of the echo counts as speech.
    expect(fraction(run(new Vad(vadOptionsForProfile('browser_speakers')), pcm).speech)).toBeGreaterThan(0.3);
  });

  it('echo-plus-caller-at-3s: the caller talking over the echo is still caught', () => {
    const vad = new Vad(vadOptionsForProfile('browser_speakers'));
    vad.setAgentSpeaking(true);
    const r = run(vad, loadPcm('echo-plus-caller-at-3s.16k.wav'));
    expect(r.onsetsMs.length).toBeGreaterThanOrEqual(1);
    expect(r.onsetsMs[0]!).toBeGreaterThanOrEqual(3000);
    expect(r.onsetsMs[0]!).toBeLessThanOrEqual(3300);
  });
});

describe('Vad on synthetic signals', () => {
  const quiet = (ms: number, seed = 1): Int16Array => whiteNoise(16 * ms, 100, seed); // about -53 dBFS

  it('digital silence and quiet noise are never speech', () => {
    const r = run(headset(), concat(new Int16Array(16000), quiet(2000)));
    expect(fraction(r.speech)).toBe(0);
  });

  it('a tone: onset on its 3rd frame (60 ms), offset 200 ms after its last frame, counters', () => {
    const vad = headset();
    const pcm = concat(quiet(1000), sine(16 * 500, 1000, 3000), quiet(1000, 7));
    const results: Array<{ speech: boolean; silenceMs: number; speechMs: number }> = [];
    for (let i = 0; i + 320 <= pcm.length; i += 320) {
      const r = vad.process(pcm.subarray(i, i + 320));
      results.push({ speech: r.speech, silenceMs: r.silenceMs, speechMs: r.speechMs });
      if (r.onset) expect(i / 16).toBe(1000 + 40);
      if (r.offset) {
        expect(i / 16).toBe(1500 + 180);
        expect(r.speechMs).toBe(500);
      }
    }
    expect(results[50 + 2]).toMatchObject({ speech: true, speechMs: 60, silenceMs: 0 });
    expect(results[75 + 4]).toMatchObject({ speech: true, silenceMs: 100 }); // in hangover
    expect(results[75 + 20]).toMatchObject({ speech: false, silenceMs: 420, speechMs: 0 });
  });

  it('loud low rumble (60 Hz) and brown noise do not trigger', () => {
    // Leaky integrator of white noise: a 1/f^2 spectrum about 16 dB louder than the floor in the
    // speech band. The first second (the integrator charging) is dropped: steady noise only.
    const white = whiteNoise(16000 * 3, 3000, 3);
    const brown = new Int16Array(16000 * 2);
    let level = 0;
    for (let i = 0; i < white.length; i++) {
      level = 0.995 * level + white[i]!;
      if (i >= 16000) brown[i - 16000] = Math.max(-32768, Math.min(32767, Math.round(level / 8)));
    }
    for (const noise of [sine(16000 * 2, 60, 20000), brown]) {
      const r = run(headset(), concat(quiet(500), noise));
      expect(fraction(r.speech)).toBe(0);
    }
  });

  it('threshold maps to the margin: a tone 10 dB over the floor passes at 0, not at 1', () => {
    const pcm = concat(quiet(1000), sine(16 * 400, 1000, 300), quiet(300));
    const at = (threshold: number): number => run(new Vad({ sampleRateHz: 16000, threshold }), pcm).onsetsMs.length;
    expect(at(0)).toBe(1);
    expect(at(1)).toBe(0);
  });

  it('setAgentSpeaking raises the bar by echoMarginDb and can be turned off again', () => {
    const pcm = concat(quiet(1000), sine(16 * 400, 1000, 1500), quiet(400));
    const vad = new Vad({ sampleRateHz: 16000, echoMarginDb: 24 });
    vad.setAgentSpeaking(true);
    expect(run(vad, pcm).onsetsMs).toEqual([]);
    vad.reset();
    expect(run(vad, pcm).onsetsMs).toHaveLength(1); // reset() also clears agent speaking
  });

  it('accepts 8 kHz 160-sample frames and rejects frames of the wrong length', () => {
    const vad = new Vad(vadOptionsForProfile('telephony', 0.5, 8000));
    expect(vad.frameSamples).toBe(160);
    const pcm = concat(whiteNoise(8000, 100), sine(4000, 1000, 3000, 8000), whiteNoise(4000, 100, 5));
    expect(run(vad, pcm).onsetsMs).toEqual([1040]);
    expect(() => vad.process(new Int16Array(320))).toThrow(RangeError);
    expect(() => new Vad({ sampleRateHz: 44100 })).toThrow(RangeError);
  });

  it('returns the same result object every frame (no allocation per frame)', () => {
    const vad = headset();
    const frame = new Int16Array(320);
    expect(vad.process(frame)).toBe(vad.process(frame));
  });
});

describe('vadOptionsForProfile', () => {
  it('gives speakers a bigger echo margin than headsets, and passes threshold and rate through', () => {
    const speakers = vadOptionsForProfile('browser_speakers', 0.7);
    const headsetOpts = vadOptionsForProfile('browser_headset');
    expect(speakers.echoMarginDb!).toBeGreaterThan(headsetOpts.echoMarginDb! + 10);
    expect(speakers).toMatchObject<Partial<VadOptions>>({ threshold: 0.7, sampleRateHz: 16000 });
    expect(vadOptionsForProfile('telephony', undefined, 8000)).toMatchObject({ sampleRateHz: 8000, threshold: 0.5 });
  });
});

describe('Vad filter state after speech (denormals)', () => {
  /** Smallest positive normal double: below it V8 computes with subnormals, ~15x slower per frame. */
  const MIN_NORMAL = 2.2250738585072014e-308;
  const subnormal = (v: number): boolean => v !== 0 && Math.abs(v) < MIN_NORMAL;

  it.each([16000, 8000])('%d Hz: digital silence after speech never leaves the biquad state subnormal', (rateHz) => {
    const vad = new Vad(vadOptionsForProfile('telephony', 0.5, rateHz));
    const state = vad as unknown as { y1: number; y2: number };
    const frame = rateHz / 50;
    const speech = concat(sine(rateHz / 2, 440, 8000, rateHz), sine(rateHz / 2, 1900, 6000, rateHz));
    for (let i = 0; i + frame <= speech.length; i += frame) vad.process(speech.subarray(i, i + frame));
    expect(state.y1).not.toBe(0); // the filter is excited: the check below is not vacuous
    const silence = new Int16Array(frame);
    // Unflushed, the state reaches the subnormal range after ~30 frames at 16 kHz and stays there.
    let bad = 0;
    for (let f = 0; f < 500; f++) {
      vad.process(silence);
      if (subnormal(state.y1) || subnormal(state.y2)) bad++;
    }
    expect(bad).toBe(0);
    expect([state.y1, state.y2]).toEqual([0, 0]);
  });
});

describe('Vad at 8 kHz on the carrier (mu-law) fixtures: same decisions as at 16 kHz', () => {
  const telephony = (rateHz: number): Vad => new Vad(vadOptionsForProfile('telephony', 0.5, rateHz));

  it.each(['caller-booking', 'caller-digits', 'caller-hours', 'backchannel-okay'])('%s: onsets and offsets within 40 ms, speech share within 3 %%', (name) => {
    const narrow = run(telephony(8000), loadMulaw(`${name}.8k-mulaw.wav`));
    const wide = run(telephony(16000), loadPcm(`${name}.16k.wav`));
    expect(narrow.onsetsMs.length).toBeGreaterThan(0);
    expect(narrow.onsetsMs).toHaveLength(wide.onsetsMs.length);
    expect(narrow.offsetsMs).toHaveLength(wide.offsetsMs.length);
    narrow.onsetsMs.forEach((t, i) => expect(Math.abs(t - wide.onsetsMs[i]!)).toBeLessThanOrEqual(40));
    narrow.offsetsMs.forEach((t, i) => expect(Math.abs(t - wide.offsetsMs[i]!)).toBeLessThanOrEqual(40));
    expect(Math.abs(fraction(narrow.speech) - fraction(wide.speech))).toBeLessThanOrEqual(0.03);
  });

  it('caller-booking at 8 kHz: onset within 150 ms of the real onset, one segment, offset after the end', () => {
    const pcm = loadMulaw('caller-booking.8k-mulaw.wav');
    const real = loudSpanMs(pcm, 160);
    const r = run(telephony(8000), pcm);
    expect(r.onsetsMs).toHaveLength(1);
    expect(r.onsetsMs[0]! - real.startMs).toBeGreaterThanOrEqual(0);
    expect(r.onsetsMs[0]! - real.startMs).toBeLessThanOrEqual(150);
    expect(r.offsetsMs).toHaveLength(1);
    expect(r.offsetsMs[0]!).toBeGreaterThan(real.endMs);
  });
});
