import { describe, it, expect } from 'vitest';
import { designPrototype, Resampler } from '../../../media-engine/audio/resampler.js';

const AMPLITUDE = 16000;

function tone(frequencyHz: number, sampleRateHz: number, seconds: number): Int16Array {
  const out = new Int16Array(Math.round(sampleRateHz * seconds));
  for (let i = 0; i < out.length; i++) out[i] = Math.round(AMPLITUDE * Math.sin((2 * Math.PI * frequencyHz * i) / sampleRateHz));
  return out;
}

/** RMS in dB (re 1 LSB) from `skip` on, so the filter has settled; -Infinity for an all-zero output. */
function rmsDb(samples: Int16Array, skip: number): number {
  let sum = 0;
  for (let i = skip; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  return 10 * Math.log10(sum / (samples.length - skip));
}

/** Amplitude of one frequency (Goertzel), in dB. */
function goertzelDb(samples: Int16Array, frequencyHz: number, sampleRateHz: number, skip: number): number {
  const coeff = 2 * Math.cos((2 * Math.PI * frequencyHz) / sampleRateHz);
  let s1 = 0;
  let s2 = 0;
  for (let i = skip; i < samples.length; i++) {
    const s = samples[i]! + coeff * s1 - s2;
    s2 = s1;
    s1 = s;
  }
  return 10 * Math.log10(s1 * s1 + s2 * s2 - coeff * s1 * s2);
}

/** Runs a whole signal through a fresh resampler in one call and copies the result. */
function resampleAll(inRateHz: number, outRateHz: number, input: Int16Array): Int16Array {
  return new Int16Array(new Resampler(inRateHz, outRateHz).process(input));
}

const SETTLE = 200; // output samples skipped: several group delays for every pair tested

const PAIRS: Array<[number, number]> = [
  [8000, 16000],
  [16000, 8000],
  [22050, 16000],
  [22050, 8000],
  [24000, 16000],
  [24000, 8000],
  [44100, 16000],
  [44100, 8000],
  [48000, 16000],
  [48000, 8000],
];

describe('Resampler stopband (16 kHz -> 8 kHz)', () => {
  const reference = rmsDb(resampleAll(16000, 8000, tone(1000, 16000, 1)), SETTLE);

  it.each([6000, 5000, 4600])('a %d Hz tone comes out at least 60 dB below a 1 kHz tone', (frequencyHz) => {
    const leaked = rmsDb(resampleAll(16000, 8000, tone(frequencyHz, 16000, 1)), SETTLE);
    // With the default filter these land at or below the int16 rounding floor (-92 dB).
    expect(reference - leaked).toBeGreaterThanOrEqual(60);
  });
});

describe('Resampler passband', () => {
  it.each([
    [16000, 8000],
    [8000, 16000],
  ])('%d -> %d keeps 1 kHz and 3 kHz within 0.5 dB', (inRateHz, outRateHz) => {
    const gains = [1000, 3000].map((f) => {
      const input = tone(f, inRateHz, 1);
      return rmsDb(resampleAll(inRateHz, outRateHz, input), SETTLE) - rmsDb(input, 0);
    });
    for (const gainDb of gains) expect(Math.abs(gainDb)).toBeLessThan(0.5);
    expect(Math.abs(gains[0]! - gains[1]!)).toBeLessThan(0.5);
  });

  it.each(PAIRS)('%d -> %d passes 1 kHz at unity gain (within 0.1 dB)', (inRateHz, outRateHz) => {
    const input = tone(1000, inRateHz, 0.5);
    const gainDb = rmsDb(resampleAll(inRateHz, outRateHz, input), SETTLE) - rmsDb(input, 0);
    expect(Math.abs(gainDb)).toBeLessThan(0.1);
  });
});

describe('Resampler aliasing and imaging for other pairs', () => {
  it('8k -> 16k: a 1 kHz tone has no image at 7 kHz above -60 dB', () => {
    const out = resampleAll(8000, 16000, tone(1000, 8000, 1));
    expect(goertzelDb(out, 1000, 16000, SETTLE) - goertzelDb(out, 7000, 16000, SETTLE)).toBeGreaterThanOrEqual(60);
  });

  it.each([
    [24000, 8000, 6000],
    [48000, 8000, 9000],
    [44100, 16000, 12000],
    [22050, 8000, 5000],
  ])('%d -> %d: a %d Hz tone (above the new Nyquist) is at least 60 dB down', (inRateHz, outRateHz, frequencyHz) => {
    const reference = rmsDb(resampleAll(inRateHz, outRateHz, tone(1000, inRateHz, 0.5)), SETTLE);
    const leaked = rmsDb(resampleAll(inRateHz, outRateHz, tone(frequencyHz, inRateHz, 0.5)), SETTLE);
    expect(reference - leaked).toBeGreaterThanOrEqual(60);
  });
});

describe('Resampler measured response (tone sweeps through the real filter)', () => {
  /** Gain in dB of a tone at `frequencyHz` from in to out (settled RMS ratio). */
  function gainDb(inRateHz: number, outRateHz: number, frequencyHz: number): number {
    const input = tone(frequencyHz, inRateHz, 0.25);
    return rmsDb(resampleAll(inRateHz, outRateHz, input), SETTLE) - rmsDb(input, 0);
  }
  /**
   * Level of `at` Hz in the output relative to a 1 kHz tone of the same amplitude, by Goertzel over
   * exactly 200 ms: every multiple of 5 Hz then has whole cycles in the window, so the strong tone
   * itself leaks nothing into the bin measured (a ragged window leaks ~-59 dB at 1.2 kHz away).
   */
  function imageDb(inRateHz: number, outRateHz: number, frequencyHz: number, at: number): number {
    const window = (out: Int16Array) => out.subarray(SETTLE, SETTLE + outRateHz / 5);
    const out = window(resampleAll(inRateHz, outRateHz, tone(frequencyHz, inRateHz, 0.25)));
    const reference = goertzelDb(window(resampleAll(inRateHz, outRateHz, tone(1000, inRateHz, 0.25))), 1000, outRateHz, 0);
    return goertzelDb(out, at, outRateHz, 0) - reference;
  }
  const sweep = (from: number, to: number, steps: number): number[] => Array.from({ length: steps + 1 }, (_, i) => from + ((to - from) * i) / steps);

  it.each([
    [16000, 8000],
    [8000, 16000],
    [24000, 8000],
    [24000, 16000],
    [48000, 16000],
  ])('%d -> %d: passband ripple under 0.05 dB up to 0.85 x the lower Nyquist', (inRateHz, outRateHz) => {
    const nyquist = Math.min(inRateHz, outRateHz) / 2;
    const gains = sweep(0.05, 0.85, 40).map((f) => gainDb(inRateHz, outRateHz, f * nyquist));
    expect(Math.max(...gains.map(Math.abs))).toBeLessThan(0.05);
  });

  it.each([
    [16000, 8000],
    [24000, 8000],
    [24000, 16000],
    [48000, 16000],
  ])('%d -> %d: every tone from 1.15 x the output Nyquist up is at least 60 dB down', (inRateHz, outRateHz) => {
    const nyquist = outRateHz / 2;
    const reference = rmsDb(resampleAll(inRateHz, outRateHz, tone(1000, inRateHz, 0.25)), SETTLE);
    const top = inRateHz / 2 - 50;
    const worst = Math.max(...sweep(1.15 * nyquist, top, 40).map((f) => rmsDb(resampleAll(inRateHz, outRateHz, tone(f, inRateHz, 0.25)), SETTLE) - reference));
    expect(worst).toBeLessThanOrEqual(-60);
  });

  it('8k -> 16k: images of tones up to 3.4 kHz (at 4.6-7.9 kHz) are at least 60 dB down', () => {
    const worst = Math.max(...sweep(100, 3400, 33).map((f) => imageDb(8000, 16000, f, 8000 - f))); // 100 Hz steps
    expect(worst).toBeLessThanOrEqual(-60);
  });

  it('the prototype is a Nyquist filter: exact zeros every max(L, M) taps from its centre, symmetric', () => {
    const h = designPrototype(1, 3, 89, 90); // 24k -> 8k
    const center = 44;
    for (let k = 3; k <= center; k += 3) expect([h[center - k], h[center + k]]).toEqual([0, 0]);
    for (let k = 1; k <= center; k++) expect(h[center - k]).toBe(h[center + k]);
    expect(h[center + 1]).not.toBe(0);
    expect(h[89]).toBe(0); // padding
    expect(h[center]).toBeCloseTo(1 / 3, 12); // 2 x cutoff (cycles per sample), window 1 at the centre
  });
});

describe('Resampler streaming', () => {
  /** Broadband test signal: deterministic noise plus a sweep. */
  function signal(sampleRateHz: number, seconds: number): Int16Array {
    const out = new Int16Array(Math.round(sampleRateHz * seconds));
    let seed = 12345;
    for (let i = 0; i < out.length; i++) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      const noise = ((seed >>> 16) / 65536 - 0.5) * 8000;
      const sweep = 12000 * Math.sin((Math.PI * 4000 * i * i) / (sampleRateHz * out.length));
      out[i] = Math.round(noise + sweep);
    }
    return out;
  }

  it.each(PAIRS)('%d -> %d: 20 ms chunks give exactly the output of one call', (inRateHz, outRateHz) => {
    const input = signal(inRateHz, 0.5);
    const whole = resampleAll(inRateHz, outRateHz, input);
    const chunked = new Resampler(inRateHz, outRateHz);
    const frameSamples = inRateHz / 50;
    const pieces: number[] = [];
    for (let start = 0; start < input.length; start += frameSamples) {
      const out = chunked.process(input.subarray(start, start + frameSamples));
      expect(out.length).toBe(outRateHz / 50); // 20 ms in, 20 ms out, for every supported pair
      pieces.push(...out);
    }
    expect(pieces.length).toBe(whole.length);
    expect(new Int16Array(pieces)).toEqual(whole);
  });

  it('odd and tiny chunk sizes also match one call, and stay within maxOutputFor', () => {
    const input = signal(44100, 0.3);
    const whole = resampleAll(44100, 8000, input);
    const chunked = new Resampler(44100, 8000);
    const out = new Int16Array(chunked.maxOutputFor(1000));
    const pieces: number[] = [];
    const sizes = [1, 7, 100, 3, 882, 1000, 13, 441];
    for (let start = 0, k = 0; start < input.length; k++) {
      const piece = input.subarray(start, start + sizes[k % sizes.length]!);
      const written = chunked.processInto(piece, out);
      expect(written).toBeLessThanOrEqual(chunked.maxOutputFor(piece.length));
      pieces.push(...out.subarray(0, written));
      start += piece.length;
    }
    expect(new Int16Array(pieces)).toEqual(whole);
  });

  it('process() reuses its output view for steady frames and grows only for bigger input', () => {
    const r = new Resampler(16000, 8000);
    const frame = tone(440, 16000, 0.02);
    const first = r.process(frame);
    expect(r.process(frame)).toBe(first);
    const big = r.process(tone(440, 16000, 0.1));
    expect(big.length).toBe(800);
    expect(r.process(frame).buffer).toBe(big.buffer); // smaller input: same buffer, no growth
  });

  it('reset() forgets history: output equals a fresh instance', () => {
    const input = signal(24000, 0.1);
    const r = new Resampler(24000, 16000);
    r.process(signal(24000, 0.05));
    r.reset();
    expect(new Int16Array(r.process(input))).toEqual(resampleAll(24000, 16000, input));
  });

  it('delaySamples matches where an impulse comes out', () => {
    for (const [inRateHz, outRateHz] of [[16000, 8000], [8000, 16000], [24000, 8000]] as const) {
      const input = new Int16Array(inRateHz / 10);
      const at = inRateHz / 50; // 20 ms in
      input[at] = 30000;
      const out = resampleAll(inRateHz, outRateHz, input);
      let peak = 0;
      for (let i = 1; i < out.length; i++) if (out[i]! > out[peak]!) peak = i;
      const r = new Resampler(inRateHz, outRateHz);
      expect(Math.abs(peak - ((at * outRateHz) / inRateHz + r.delaySamples))).toBeLessThanOrEqual(1);
    }
  });

  it('identity is a passthrough', () => {
    const r = new Resampler(16000, 16000);
    const input = signal(16000, 0.02);
    expect(r.process(input)).toBe(input);
    expect(r.delaySamples).toBe(0);
    const out = new Int16Array(input.length);
    expect(r.processInto(input, out)).toBe(input.length);
    expect(out).toEqual(input);
  });

  it('rejects bad rates and a short output buffer', () => {
    expect(() => new Resampler(0, 8000)).toThrow(RangeError);
    expect(() => new Resampler(16000, 8000.5)).toThrow(RangeError);
    expect(() => new Resampler(16000, 8000).processInto(new Int16Array(320), new Int16Array(10))).toThrow(RangeError);
  });
});
