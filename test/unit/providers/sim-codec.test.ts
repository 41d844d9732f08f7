/**
 * The sim audio code through the real telephone path: 16 kHz -> 8 kHz -> mu-law -> 20 ms frame
 * loss (silence or repeat) -> back to 16 kHz, plus noise, odd framing and real speech.
 */
import { readFileSync } from 'node:fs';
import alawmulaw from 'alawmulaw';
import { describe, expect, it } from 'vitest';
import { mulawDecode, mulawEncode } from '../../../media-engine/audio/g711.js';
import { Resampler } from '../../../media-engine/audio/resampler.js';
import { parseWav, pcm16FromBytes } from '../../helpers/wav.js';
import {
  SimDecoder,
  encodeText,
  normalizeSimText,
  simSymbolsOf,
  symbolDurationMs,
  type SimDecoderEvent,
} from '../../../shared/providers/sim/codec.js';
import { mulberry32 as prng } from '../../carrier-sim/prng.js';

// ---------------------------------------------------------------- test channel
function clamp16(v: number): number {
  return Math.max(-32768, Math.min(32767, Math.round(v)));
}

/**
 * Reference resampling written here, independent of media-engine/audio/resampler.ts, so a codec
 * failure can be told apart from a resampler one: Blackman-windowed sinc low-pass at 3.6 kHz
 * (63 taps at the higher rate), centred; decimate by keeping every other (or third) sample,
 * interpolate by zero-stuffing and filtering with gain 2.
 */
function lowPass(cutoffFraction: number, taps: number): Float64Array {
  const h = new Float64Array(taps);
  const mid = (taps - 1) / 2;
  for (let n = 0; n < taps; n++) {
    const k = n - mid;
    const sinc = k === 0 ? 2 * cutoffFraction : Math.sin(2 * Math.PI * cutoffFraction * k) / (Math.PI * k);
    const blackman = 0.42 - 0.5 * Math.cos((2 * Math.PI * n) / (taps - 1)) + 0.08 * Math.cos((4 * Math.PI * n) / (taps - 1));
    h[n] = sinc * blackman;
  }
  return h;
}
function refDecimate(x: Int16Array, factor: 2 | 3): Int16Array {
  const h = lowPass(3600 / (8000 * factor), 32 * factor - 1); // odd: centred on a sample
  const mid = (h.length - 1) / 2;
  const y = new Int16Array(Math.floor(x.length / factor));
  for (let k = 0; k < y.length; k++) {
    let acc = 0;
    for (let j = 0; j < h.length; j++) {
      const i = factor * k + j - mid;
      if (i >= 0 && i < x.length) acc += h[j]! * x[i]!;
    }
    y[k] = clamp16(acc);
  }
  return y;
}
function refInterpolate2(x: Int16Array): Int16Array {
  const h = lowPass(3600 / 16000, 63);
  const mid = (h.length - 1) / 2;
  const y = new Int16Array(x.length * 2);
  for (let n = 0; n < y.length; n++) {
    let acc = 0;
    for (let j = 0; j < h.length; j++) {
      const i = n + j - mid; // index into the zero-stuffed signal
      if (i >= 0 && i < y.length && i % 2 === 0) acc += h[j]! * x[i / 2]!;
    }
    y[n] = clamp16(2 * acc);
  }
  return y;
}
function refMulawRoundTrip(x: Int16Array): Int16Array {
  return x.map((v) => alawmulaw.mulaw.decodeSample(alawmulaw.mulaw.encodeSample(v) & 0xff));
}

/** Production resampling; `process` returns a reused view, hence the copy. */
function resample(x: Int16Array, inRateHz: number, outRateHz: number): Int16Array {
  return new Resampler(inRateHz, outRateHz).process(x).slice();
}
function mulawRoundTrip(x: Int16Array): Int16Array {
  const bytes = new Uint8Array(x.length);
  const y = new Int16Array(x.length);
  mulawEncode(x, bytes);
  mulawDecode(bytes, y);
  return y;
}

/** Loses 20 ms frames with probability `lossRate`; a lost frame becomes silence or a repeat. */
function loseFrames(x: Int16Array, sampleRateHz: number, lossRate: number, fill: 'silence' | 'repeat', seed: number): Int16Array {
  const frame = sampleRateHz / 50;
  const rand = prng(seed);
  const y = Int16Array.from(x);
  for (let start = 0; start + frame <= y.length; start += frame) {
    if (rand() >= lossRate) continue;
    if (fill === 'silence' || start === 0) y.fill(0, start, start + frame);
    else y.copyWithin(start, start - frame, start); // what a concealing jitter buffer plays
  }
  return y;
}
/** White Gaussian noise at `snrDb` below the signal's power (measured where it is not silent). */
function addNoise(x: Int16Array, snrDb: number, seed: number): Int16Array {
  const rand = prng(seed);
  let power = 0;
  let active = 0;
  for (const v of x) {
    if (v !== 0) {
      power += v * v;
      active++;
    }
  }
  const sigma = Math.sqrt(power / Math.max(1, active) / 10 ** (snrDb / 10));
  return x.map((v) => clamp16(v + sigma * Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand())));
}
function padded(x: Int16Array, leadSamples: number, tailSamples: number): Int16Array {
  const y = new Int16Array(leadSamples + x.length + tailSamples);
  y.set(x, leadSamples);
  return y;
}
/** Pushes `x` in frames of `frameSamples`; returns every event with the sample count pushed so far. */
function decodeAll(x: Int16Array, sampleRateHz: 8000 | 16000, frameSamples: number): Array<SimDecoderEvent & { atSample: number }> {
  const dec = new SimDecoder(sampleRateHz);
  const events: Array<SimDecoderEvent & { atSample: number }> = [];
  for (let i = 0; i < x.length; i += frameSamples) {
    const frame = x.subarray(i, i + frameSamples);
    dec.push(frame);
    for (const e of dec.takeEvents()) events.push({ ...e, atSample: i + frame.length });
  }
  return events;
}
function finalText(events: SimDecoderEvent[]): string {
  return events.filter((e) => e.type === 'final').map((e) => e.text).join(' ');
}
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[b.length]!;
}

const PHRASES = [
  "I'd like to book a table for 4 at 7:30, please.",
  'My number is 555-0142, ext. 9!',
  'Is it open on Sunday? Great!',
  'Hello.',
  "What's the weather in Paris",
  'the quick brown fox jumps over the lazy dog 0123456789',
];

interface PathOptions {
  lossRate?: number;
  fill?: 'silence' | 'repeat';
  snrDb?: number;
  decodeRateHz: 8000 | 16000;
  seed: number;
}
/** 16 kHz TTS audio at a random offset -> 8 kHz -> mu-law -> loss -> decoded in 20 ms frames. */
function telephonePath(text: string, o: PathOptions): string {
  const lead = Math.floor(prng(o.seed * 7919)() * 640); // up to 40 ms, any sample offset
  let x = padded(encodeText(text, 16000), lead, 8000);
  if (o.snrDb !== undefined) x = addNoise(x, o.snrDb, o.seed);
  let y = mulawRoundTrip(resample(x, 16000, 8000));
  y = loseFrames(y, 8000, o.lossRate ?? 0, o.fill ?? 'silence', o.seed);
  if (o.decodeRateHz === 16000) y = resample(y, 8000, 16000);
  return finalText(decodeAll(y, o.decodeRateHz, o.decodeRateHz / 50));
}
/** Phrases that decoded to nothing at all (the robustness report prints it). */
let missedPhrases = 0;
/** Character error rate over every phrase x `seeds` seeds (each phrase gets its own pattern). */
function cer(o: Omit<PathOptions, 'seed'>, seeds: number): number {
  let errors = 0;
  let chars = 0;
  for (let seed = 1; seed <= seeds; seed++) {
    PHRASES.forEach((phrase, i) => {
      const want = normalizeSimText(phrase);
      const got = telephonePath(phrase, { ...o, seed: seed * 100 + i });
      if (got === '') missedPhrases++;
      errors += editDistance(got, want);
      chars += want.length;
    });
  }
  return errors / chars;
}

// ---------------------------------------------------------------- tests
describe('sim codec: encoding', () => {
  it('folds case, accents and whitespace and skips unsupported characters', () => {
    expect(normalizeSimText('  Héllo,\n\tWORLD!  #1 ©')).toBe('hello, world! 1');
    expect(normalizeSimText('It’s 7:30 - ok?')).toBe("it's 7:30 - ok?");
    expect(encodeText('#@$', 16000)).toHaveLength(0);
  });

  it('lays out preamble, blocks of 4 characters with a check symbol, and the end marker', () => {
    // "abcde": a..e = 0..4; checks (0+1+2+3)%44 = 6 and 4; PRE1 44, PRE2 45, END 46.
    expect(simSymbolsOf('ABCDE')).toEqual([44, 45, 0, 1, 2, 3, 6, 4, 4, 46]);
    for (const rateHz of [8000, 16000, 24000] as const) {
      expect(encodeText('abcde', rateHz)).toHaveLength((10 * symbolDurationMs * rateHz) / 1000);
    }
  });

  it('is loud enough for a VAD, never clips, and ramps in and out without clicks', () => {
    const x = encodeText('hello world', 16000);
    const tone = x.subarray(80, 800 - 80); // inside the first slot, past the 5 ms ramp
    const rms = Math.sqrt(tone.reduce((s, v) => s + v * v, 0) / tone.length);
    expect(20 * Math.log10(rms / 32768)).toBeGreaterThan(-15); // -20 dBFS is a typical VAD threshold
    expect(Math.max(...x.map(Math.abs))).toBeLessThan(32767);
    expect(Math.abs(x[0]!)).toBeLessThan(100);
    expect(x.subarray(800, 960).every((v) => v === 0)).toBe(true); // 10 ms guard
    let maxStep = 0;
    for (let i = 1; i < x.length; i++) maxStep = Math.max(maxStep, Math.abs(x[i]! - x[i - 1]!));
    // Two tones of 8000 peak at <= 2850 Hz change by at most 2*pi*f/fs*8000 per sample each.
    expect(maxStep).toBeLessThan(2 * Math.PI * (1150 + 2850) / 16000 * 8000 * 1.01);
  });
});

describe('sim codec: decoding', () => {
  it('round-trips every phrase at 16 kHz, with interims that grow into the final', () => {
    for (const phrase of PHRASES) {
      const events = decodeAll(padded(encodeText(phrase, 16000), 123, 0), 16000, 320);
      const finals = events.filter((e) => e.type === 'final');
      expect(finals.map((e) => e.text)).toEqual([normalizeSimText(phrase)]);
      const interims = events.filter((e) => e.type === 'interim').map((e) => e.text);
      expect(interims.length).toBeGreaterThan(normalizeSimText(phrase).length / 2);
      for (let i = 1; i < interims.length; i++) expect(interims[i]!.length).toBeGreaterThanOrEqual(interims[i - 1]!.length);
      expect(normalizeSimText(phrase).startsWith(interims.at(-1)!)).toBe(true);
      expect(events.at(-1)!.type).toBe('final');
    }
  });

  it('round-trips audio encoded at 8 kHz and at 24 kHz (decimated to 8 kHz)', () => {
    const phrase = PHRASES[0]!;
    expect(finalText(decodeAll(encodeText(phrase, 8000), 8000, 160))).toBe(normalizeSimText(phrase));
    const from24k = refDecimate(encodeText(phrase, 24000), 3);
    expect(finalText(decodeAll(from24k, 8000, 160))).toBe(normalizeSimText(phrase));
    expect(finalText(decodeAll(resample(encodeText(phrase, 24000), 24000, 16000), 16000, 320))).toBe(normalizeSimText(phrase));
  });

  it('delivers the final before the phrase audio ends (end marker decoded mid-slot)', () => {
    const x = encodeText('hello', 16000);
    const final = decodeAll(x, 16000, 320).find((e) => e.type === 'final')!;
    expect(final.atSample).toBeLessThanOrEqual(x.length);
  });

  it('decodes whatever the starting offset and frame size', () => {
    const phrase = PHRASES[1]!;
    for (const lead of [0, 1, 37, 80, 159, 160, 161, 319]) {
      for (const frameSamples of [1, 7, 160, 320, 321, 4096]) {
        const text = finalText(decodeAll(padded(encodeText(phrase, 16000), lead, 0), 16000, frameSamples));
        expect(text, `lead ${lead}, frames of ${frameSamples}`).toBe(normalizeSimText(phrase));
      }
    }
  });

  it('splits back-to-back phrases into one final each', () => {
    const a = encodeText('first one.', 16000);
    const b = encodeText('second, 2nd!', 16000);
    const x = new Int16Array(a.length + b.length);
    x.set(a);
    x.set(b, a.length);
    expect(decodeAll(x, 16000, 320).filter((e) => e.type === 'final').map((e) => e.text)).toEqual(['first one.', 'second, 2nd!']);
  });

  it('ends a phrase ~300 ms after the code stops when its end marker is lost', () => {
    const slot = (16000 * symbolDurationMs) / 1000;
    const x = padded(encodeText('lost end', 16000), 0, 16000);
    const audioEnd = x.length - 16000;
    x.fill(0, audioEnd - slot, audioEnd); // wipe the END slot
    const final = decodeAll(x, 16000, 320).find((e) => e.type === 'final')!;
    expect(final.text).toBe('lost end');
    const afterEndMs = ((final.atSample - audioEnd) * 1000) / 16000;
    expect(afterEndMs).toBeGreaterThan(150);
    expect(afterEndMs).toBeLessThan(350);
  });

  it('repairs a completely wiped character slot with the block check symbol', () => {
    const slot = (16000 * symbolDurationMs) / 1000;
    for (let wiped = 2; wiped < 2 + 10; wiped++) {
      const x = encodeText('robust code', 16000); // 11 chars + 3 checks
      x.fill(0, wiped * slot, (wiped + 1) * slot);
      expect(finalText(decodeAll(x, 16000, 320)), `slot ${wiped}`).toBe('robust code');
    }
  });

  it('flush() ends the phrase in progress; reset() forgets it', () => {
    const x = encodeText('abcdefghij', 16000);
    const slot = (16000 * symbolDurationMs) / 1000;
    const dec = new SimDecoder(16000);
    dec.push(x.subarray(0, 10 * slot)); // PRE1 PRE2 abcd check efg
    dec.flush();
    const events = dec.takeEvents();
    expect(events.at(-1)).toEqual({ type: 'final', text: 'abcdefg' });
    expect(dec.takeEvents()).toEqual([]);
    dec.push(x.subarray(10 * slot)); // the rest has no preamble: ignored
    dec.reset();
    dec.push(x);
    expect(finalText(dec.takeEvents())).toBe('abcdefghij');
  });

  it('rejects unsupported decoder rates', () => {
    expect(() => new SimDecoder(24000 as 16000)).toThrow(RangeError);
  });
});

describe('sim codec: telephone path (production resampler and G.711)', () => {
  it('survives 16k -> 8k -> mu-law, decoded at 8 kHz and back at 16 kHz', () => {
    expect(cer({ decodeRateHz: 8000 }, 2)).toBe(0);
    expect(cer({ decodeRateHz: 16000 }, 2)).toBe(0);
  });

  it('survives 2 % of 20 ms frames lost (silence or repeat)', () => {
    expect(cer({ decodeRateHz: 8000, lossRate: 0.02, fill: 'silence' }, 8)).toBe(0);
    expect(cer({ decodeRateHz: 16000, lossRate: 0.02, fill: 'repeat' }, 8)).toBe(0);
  });

  it('survives 5 % of 20 ms frames lost (silence or repeat) with CER under 1 %', () => {
    expect(cer({ decodeRateHz: 8000, lossRate: 0.05, fill: 'silence' }, 8)).toBeLessThan(0.01);
    expect(cer({ decodeRateHz: 8000, lossRate: 0.05, fill: 'repeat' }, 8)).toBeLessThan(0.01);
    expect(cer({ decodeRateHz: 16000, lossRate: 0.05, fill: 'silence' }, 8)).toBeLessThan(0.01);
  });

  it('survives white noise at 20 dB SNR, alone and with 5 % loss', () => {
    expect(cer({ decodeRateHz: 8000, snrDb: 20 }, 4)).toBe(0);
    expect(cer({ decodeRateHz: 8000, snrDb: 20, lossRate: 0.05, fill: 'repeat' }, 4)).toBeLessThan(0.01);
  });

  it('agrees with an independent reference channel (test-local resampler, alawmulaw per sample)', () => {
    for (const [i, phrase] of PHRASES.entries()) {
      let y = refMulawRoundTrip(refDecimate(padded(encodeText(phrase, 16000), 37 * i, 800), 2));
      y = loseFrames(y, 8000, 0.05, 'repeat', i + 1);
      expect(finalText(decodeAll(y, 8000, 160))).toBe(normalizeSimText(phrase));
      expect(finalText(decodeAll(refInterpolate2(y), 16000, 320))).toBe(normalizeSimText(phrase));
    }
  });
});

describe('sim codec: audio that is not code', () => {
  const wav = parseWav(new Uint8Array(readFileSync(new URL('../../fixtures/audio/caller-booking.16k.wav', import.meta.url))));
  const speech = pcm16FromBytes(wav.data);

  it('decodes real speech to nothing, at 16 kHz and through mu-law at 8 kHz', () => {
    expect(wav.sampleRateHz).toBe(16000);
    expect(decodeAll(speech, 16000, 320)).toEqual([]);
    expect(decodeAll(mulawRoundTrip(resample(speech, 16000, 8000)), 8000, 160)).toEqual([]);
  });

  it('decodes white noise, single tones and tone pairs that are not a preamble to nothing', () => {
    const noise = addNoise(new Int16Array(16000 * 3).fill(3000), 0, 7).map((v) => v - 3000);
    expect(decodeAll(noise, 16000, 320)).toEqual([]);
    // 1150 Hz is the low tone of both sync symbols; 1150 + 2850 Hz is not a symbol sent.
    for (const tonesHz of [[550], [1150], [1150, 2850], [697, 1336]]) {
      const tone = new Int16Array(16000 * 2).map((_, n) => Math.round(tonesHz.reduce((v, f) => v + 8000 * Math.sin((2 * Math.PI * f * n) / 16000), 0)));
      expect(decodeAll(tone, 16000, 320), `${tonesHz.join(' + ')} Hz`).toEqual([]);
    }
  });

  it('still decodes a phrase spoken right after speech', () => {
    const code = encodeText('after speech', 16000);
    const x = new Int16Array(speech.length + code.length);
    x.set(speech);
    x.set(code, speech.length);
    expect(finalText(decodeAll(x, 16000, 320))).toBe('after speech');
  });

  it('decodes a phrase right after speech at any sub-block offset, at 8 kHz too (the search filters only the sync tones)', () => {
    for (const rate of [8000, 16000] as const) {
      const before = rate === 16000 ? speech : speech.filter((_, i) => i % 2 === 0);
      const code = encodeText('after speech', rate);
      // Offsets inside one 2.5 ms sub-block and across a few: the speech ends mid sub-block.
      for (const gap of [0, 1, 7, 13, rate / 400 - 1, rate / 400 + 3, 3 * (rate / 400) + 5]) {
        const x = new Int16Array(before.length + gap + code.length);
        x.set(before);
        x.set(code, before.length + gap);
        expect(finalText(decodeAll(x, rate, rate / 50)), `${rate} Hz, gap ${gap}`).toBe('after speech');
      }
    }
  });
});

/** The decoder's private parts the filtering test below watches (names as in decoder.ts). */
interface DecoderInternals {
  finishBlock(): void;
  analyseWindow(end: number): void;
  syncTonesOnly: boolean;
  blockIndex: number;
  amp: Float64Array;
}

/**
 * A decoder that records, per sub-block, whether all 14 tones were filtered, every window the data
 * state analyses (with its amplitudes), and any window reading a sub-block filtered for the sync
 * tones only. `allTones`: filter every tone of every sub-block (the reference).
 */
function watchedDecoder(rate: 8000 | 16000, allTones: boolean): { dec: SimDecoder; windows: number[][]; partialReads: number[] } {
  const dec = new SimDecoder(rate);
  const d = dec as unknown as DecoderInternals;
  const full = new Map<number, boolean>();
  const windows: number[][] = [];
  const partialReads: number[] = [];
  const finishBlock = d.finishBlock.bind(d);
  const analyseWindow = d.analyseWindow.bind(d);
  if (allTones) d.syncTonesOnly = false;
  d.finishBlock = () => {
    full.set(d.blockIndex, !d.syncTonesOnly);
    finishBlock();
    if (allTones) d.syncTonesOnly = false;
  };
  d.analyseWindow = (end: number) => {
    for (let b = end - 15; b <= end; b++) if (full.get(b) === false) partialReads.push(b);
    analyseWindow(end);
    windows.push([end, ...d.amp]);
  };
  return { dec, windows, partialReads };
}

describe('sim codec: filtering only the tones that are read', () => {
  const wav = parseWav(new Uint8Array(readFileSync(new URL('../../fixtures/audio/caller-booking.16k.wav', import.meta.url))));
  const speech16k = pcm16FromBytes(wav.data);

  function inputs(rate: 8000 | 16000): Array<{ name: string; x: Int16Array; flushAt?: number }> {
    const speech = rate === 16000 ? speech16k : speech16k.filter((_, i) => i % 2 === 0);
    const slot = (rate * symbolDurationMs) / 1000;
    const join = (...parts: Int16Array[]) => {
      const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
      let o = 0;
      for (const p of parts) (out.set(p, o), (o += p.length));
      return out;
    };
    const a = encodeText('first one, then more.', rate);
    const lostEnd = encodeText('lost end', rate);
    lostEnd.fill(0, lostEnd.length - slot); // its END slot wiped: the next preamble resyncs
    return [
      { name: 'speech then a phrase', x: join(speech.subarray(0, rate), new Int16Array(13), encodeText('after speech', rate)) },
      { name: 'back-to-back phrases', x: join(a, encodeText('second, 2nd!', rate)) },
      { name: 'lost end marker, next phrase at once', x: join(lostEnd, encodeText('next one', rate)) },
      { name: 'noisy phrase with lost frames', x: loseFrames(addNoise(padded(a, 77, rate / 2), 15, 3), rate, 0.05, 'repeat', 4) },
      { name: 'flush mid-phrase, then more code', x: join(a, encodeText('and the rest', rate)), flushAt: Math.floor(a.length / 2) },
    ];
  }

  for (const rate of [8000, 16000] as const) {
    it(`at ${rate} Hz: every slot window reads fully filtered sub-blocks, and decodes as with all tones filtered`, () => {
      for (const input of inputs(rate)) {
        const watched = watchedDecoder(rate, false);
        const reference = watchedDecoder(rate, true);
        const events: SimDecoderEvent[][] = [[], []];
        const frame = rate / 50;
        for (let i = 0; i < input.x.length; i += frame) {
          if (input.flushAt !== undefined && i <= input.flushAt && input.flushAt < i + frame) {
            watched.dec.flush();
            reference.dec.flush();
          }
          const f = input.x.subarray(i, i + frame);
          watched.dec.push(f);
          reference.dec.push(f);
          events[0]!.push(...watched.dec.takeEvents());
          events[1]!.push(...reference.dec.takeEvents());
        }
        expect(watched.partialReads, input.name).toEqual([]);
        expect(watched.windows.length, input.name).toBeGreaterThan(0);
        expect(watched.windows, input.name).toEqual(reference.windows);
        expect(events[0], input.name).toEqual(events[1]);
        expect(finalText(events[0]!).length, input.name).toBeGreaterThan(0);
      }
    });
  }
});

// Robustness report for NOTES.md: SIM_CODEC_REPORT=1 npx vitest run test/unit/providers/sim-codec
describe.runIf(process.env.SIM_CODEC_REPORT)('sim codec: robustness report', () => {
  it('prints CER per condition', () => {
    const seeds = Number(process.env.SIM_CODEC_SEEDS ?? 50);
    const rows: Array<[string, Omit<PathOptions, 'seed'>]> = [
      ['clean, decode 8k', { decodeRateHz: 8000 }],
      ['clean, decode 16k', { decodeRateHz: 16000 }],
      ['2% loss silence, 8k', { decodeRateHz: 8000, lossRate: 0.02, fill: 'silence' }],
      ['2% loss repeat, 8k', { decodeRateHz: 8000, lossRate: 0.02, fill: 'repeat' }],
      ['5% loss silence, 8k', { decodeRateHz: 8000, lossRate: 0.05, fill: 'silence' }],
      ['5% loss repeat, 8k', { decodeRateHz: 8000, lossRate: 0.05, fill: 'repeat' }],
      ['5% loss silence, 16k', { decodeRateHz: 16000, lossRate: 0.05, fill: 'silence' }],
      ['10% loss silence, 8k', { decodeRateHz: 8000, lossRate: 0.1, fill: 'silence' }],
      ['10% loss repeat, 8k', { decodeRateHz: 8000, lossRate: 0.1, fill: 'repeat' }],
      ['20 dB SNR, 8k', { decodeRateHz: 8000, snrDb: 20 }],
      ['10 dB SNR, 8k', { decodeRateHz: 8000, snrDb: 10 }],
      ['20 dB SNR + 5% repeat, 8k', { decodeRateHz: 8000, snrDb: 20, lossRate: 0.05, fill: 'repeat' }],
    ];
    for (const rateHz of [8000, 16000] as const) {
      const x = encodeText(PHRASES.join(' '), rateHz);
      const started = performance.now();
      decodeAll(x, rateHz, rateHz / 50);
      const cpuMsPerSecond = (performance.now() - started) / (x.length / rateHz);
      console.log(`decode cost at ${rateHz} Hz: ${cpuMsPerSecond.toFixed(2)} ms CPU per second of audio`);
    }
    for (const decodeRateHz of [8000, 16000] as const) {
      // Final time relative to the last sample of the phrase audio, through the telephone path.
      const lags: number[] = [];
      for (const [i, phrase] of PHRASES.entries()) {
        const code = encodeText(phrase, 16000);
        let y = mulawRoundTrip(resample(padded(code, 37 * i, 16000), 16000, 8000));
        if (decodeRateHz === 16000) y = resample(y, 8000, 16000);
        const final = decodeAll(y, decodeRateHz, decodeRateHz / 50).find((e) => e.type === 'final')!;
        lags.push((final.atSample / decodeRateHz - (37 * i + code.length) / 16000) * 1000);
      }
      console.log(`final vs end of phrase audio, decode ${decodeRateHz} Hz, 20 ms frames: ${Math.min(...lags).toFixed(1)} .. ${Math.max(...lags).toFixed(1)} ms`);
    }
    for (const [name, o] of rows) {
      missedPhrases = 0;
      const rate = cer(o, seeds);
      console.log(`${name.padEnd(28)} CER ${(100 * rate).toFixed(3)} % (${seeds * PHRASES.length} phrases, ${missedPhrases} missed)`);
    }
  }, 600_000);
});
