/**
 * Streaming rational resampler: a Kaiser-windowed sinc low-pass run as a polyphase FIR.
 *
 * Conversion by L/M (reduced with gcd): conceptually zero-stuff by L, low-pass at the lower of the
 * two Nyquist rates, keep every M-th sample. The polyphase form computes only the kept outputs and
 * never multiplies the stuffed zeros: output m sits at t = m*M on the L*inRate grid, uses
 * sub-filter (t mod L) and input samples up to floor(t / L).
 *
 * Design (see NOTES.md for the measured response): passband to 0.85 x the lower Nyquist, stopband
 * from 1.15 x (the mirror image, so aliases of 1.0-1.15 land above the passband), cutoff exactly
 * at the lower Nyquist. That cutoff makes the prototype a Nyquist(max(L, M)) filter: every
 * max(L, M)-th tap from the centre is zero. With an odd prototype length every sub-filter that
 * holds the centre (all of them for L <= 2) is also symmetric. Each sub-filter is therefore stored
 * as runs of its non-zero symmetric pairs, each pair multiplied once. Multiplies per output (was):
 *   16k->8k 16 (64); 8k->16k 15 and 1 (32); 24k->8k 31 (96); 24k->16k 16 and 15 (48).
 * Decimation (L = 1) and 2x interpolation have their own loops with everything hoisted; other
 * pairs run the general loop, and sub-filters that are not symmetric run dense.
 *
 * Filter state (the last K-1 input samples, the phase and the input offset) carries across calls,
 * so 20 ms frames produce exactly the same samples as one long call: no click per frame.
 * Call reset() on barge-in (docs/protocols.md section 10: pre-clear audio must not leak).
 */

export interface ResamplerOptions {
  /**
   * Filter span in samples of the lower of the two rates (default 30: 60 taps at 16 kHz for
   * 16k<->8k, 90 at 24 kHz for 24k->8k). More taps: deeper stopband, more CPU.
   */
  taps?: number;
}

import { DEFAULT_TAPS, KERNEL_FIELDS, design, gcd, type Design } from './resampler-design.js';

export { designPrototype } from './resampler-design.js';

/** One output of a symmetric sub-filter with a single run of step 1 (small: V8 inlines it). */
function symmetricRun(work: Float64Array, n: number, c0: number, ctr: number, lo: number, mir: number, start: number, end: number, coef: Float64Array): number {
  let acc0 = c0 * work[n + ctr]!;
  let acc1 = 0;
  let i = n + lo;
  let j = n + mir;
  let c = start;
  for (; c + 1 < end; c += 2, i += 2, j -= 2) {
    acc0 += coef[c]! * (work[i]! + work[j]!);
    acc1 += coef[c + 1]! * (work[i + 1]! + work[j - 1]!);
  }
  if (c < end) acc0 += coef[c]! * (work[i]! + work[j]!);
  return acc0 + acc1;
}

export class Resampler {
  readonly inRateHz: number;
  readonly outRateHz: number;
  /** Group delay of the filter, in output samples (may be fractional). 0 for identity. */
  readonly delaySamples: number;
  private readonly up: number;
  private readonly down: number;
  private readonly tapsPerPhase: number;
  private readonly d: Design | undefined;
  private readonly identity: boolean;
  /**
   * [K-1 samples of history | current input]; grows only when a bigger input arrives. Float64 so
   * the inner loop multiplies doubles without an int-to-double conversion per tap.
   */
  private work: Float64Array;
  private out: Int16Array;
  private outView: Int16Array;
  /** Index into the current input of the newest sample the next output uses. */
  private inputOffset = 0;
  /** Sub-filter index (t mod L) of the next output. */
  private phase = 0;

  constructor(inRateHz: number, outRateHz: number, opts: ResamplerOptions = {}) {
    for (const [name, rate] of [['inRateHz', inRateHz], ['outRateHz', outRateHz]] as const) {
      if (!Number.isInteger(rate) || rate <= 0) throw new RangeError(`Resampler: ${name} must be a positive integer, got ${rate}`);
    }
    const taps = opts.taps ?? DEFAULT_TAPS;
    if (!Number.isInteger(taps) || taps < 4 || taps > 512) throw new RangeError(`Resampler: taps must be an integer in 4..512, got ${taps}`);
    this.inRateHz = inRateHz;
    this.outRateHz = outRateHz;
    const divisor = gcd(inRateHz, outRateHz);
    this.up = outRateHz / divisor;
    this.down = inRateHz / divisor;
    this.identity = this.up === this.down;
    // Span `taps` lower-rate samples; expressed in input samples that is taps * in / lower.
    this.tapsPerPhase = this.identity ? 1 : Math.ceil((taps * inRateHz) / Math.min(inRateHz, outRateHz));
    this.d = this.identity ? undefined : design(this.up, this.down, this.tapsPerPhase);
    this.delaySamples = this.d ? this.d.center / this.down : 0;
    this.work = new Float64Array(this.tapsPerPhase - 1 + 1024);
    this.out = new Int16Array(0);
    this.outView = this.out;
  }

  /** Upper bound on the samples one call with `inputSamples` samples can produce. */
  maxOutputFor(inputSamples: number): number {
    // The next output's position t0 on the L*inRate grid is in [0, M), so at most ceil(n*L/M) fit.
    return Math.ceil((inputSamples * this.up) / this.down);
  }

  /**
   * Resamples `input` and returns a view into an internal buffer that the next call overwrites
   * (sized for the largest input seen). Identity conversion returns `input` itself. Do not mutate
   * the result. Steady frame sizes reuse the same view object, so this allocates nothing.
   */
  process(input: Int16Array): Int16Array {
    if (this.identity) return input;
    const needed = this.maxOutputFor(input.length);
    if (this.out.length < needed) {
      this.out = new Int16Array(needed);
      this.outView = this.out;
    }
    const written = this.processInto(input, this.out);
    if (this.outView.length !== written) this.outView = this.out.subarray(0, written);
    return this.outView;
  }

  /** Resamples `input` into `out` (which must hold maxOutputFor(input.length)); returns samples written. */
  processInto(input: Int16Array, out: Int16Array): number {
    const inputLength = input.length;
    if (out.length < this.maxOutputFor(inputLength)) {
      throw new RangeError(`Resampler: output holds ${out.length} samples, need ${this.maxOutputFor(inputLength)}`);
    }
    const d = this.d;
    if (d === undefined) {
      out.set(input);
      return inputLength;
    }
    const K = this.tapsPerPhase;
    const L = this.up;
    const M = this.down;
    const history = K - 1;
    if (this.work.length < history + inputLength) {
      const grown = new Float64Array(history + inputLength);
      grown.set(this.work.subarray(0, history));
      this.work = grown;
    }
    const work = this.work;
    work.set(input, history);
    const { mode, kernel, runCoef, centerCoef, dense } = d;

    let n = this.inputOffset;
    let phase = this.phase;
    let written = 0;
    if (L === 1 && mode[0] === 1) {
      // Integer decimation (16k->8k, 24k->8k, 48k->16k): one symmetric sub-filter, its values
      // hoisted out of the loop (~20 % faster than the general loop below).
      const k = 0;
      const st = kernel[k + 1]!;
      const st2 = 2 * st;
      const c0 = centerCoef[0]!;
      const ctr = kernel[k]!;
      const loA = kernel[k + 2]!;
      const mirA = kernel[k + 3]!;
      const aStart = kernel[k + 4]!;
      const aEnd = kernel[k + 5]!;
      const loB = kernel[k + 6]!;
      const mirB = kernel[k + 7]!;
      const bStart = kernel[k + 8]!;
      const bEnd = kernel[k + 9]!;
      for (; n < inputLength; n += M) {
        let acc0 = c0 * work[n + ctr]!;
        let acc1 = 0;
        let i = n + loA;
        let j = n + mirA;
        let c = aStart;
        for (; c + 1 < aEnd; c += 2, i += st2, j -= st2) {
          acc0 += runCoef[c]! * (work[i]! + work[j]!);
          acc1 += runCoef[c + 1]! * (work[i + st]! + work[j - st]!);
        }
        if (c < aEnd) acc0 += runCoef[c]! * (work[i]! + work[j]!);
        i = n + loB;
        j = n + mirB;
        for (c = bStart; c + 1 < bEnd; c += 2, i += st2, j -= st2) {
          acc0 += runCoef[c]! * (work[i]! + work[j]!);
          acc1 += runCoef[c + 1]! * (work[i + st]! + work[j - st]!);
        }
        if (c < bEnd) acc0 += runCoef[c]! * (work[i]! + work[j]!);
        const rounded = Math.round(acc0 + acc1);
        out[written++] = rounded > 32767 ? 32767 : rounded < -32768 ? -32768 : rounded;
      }
    }
    if (L === 2 && M === 1 && mode[0] === 1 && mode[1] === 1 && kernel[1] === 1 && kernel[KERNEL_FIELDS + 1] === 1) {
      // Interpolation by 2 (8k->16k, 24k->48k): two symmetric sub-filters of one run of step 1
      // each (one of them only the centre tap), hoisted out of the loop.
      const c0a = centerCoef[0]!;
      const ctrA = kernel[0]!;
      const loA = kernel[2]!;
      const mirA = kernel[3]!;
      const sA = kernel[4]!;
      const eA = kernel[5]!;
      const b = KERNEL_FIELDS;
      const c0b = centerCoef[1]!;
      const ctrB = kernel[b]!;
      const loB = kernel[b + 2]!;
      const mirB = kernel[b + 3]!;
      const sB = kernel[b + 4]!;
      const eB = kernel[b + 5]!;
      while (n < inputLength) {
        const acc = phase === 0 ? symmetricRun(work, n, c0a, ctrA, loA, mirA, sA, eA, runCoef) : symmetricRun(work, n, c0b, ctrB, loB, mirB, sB, eB, runCoef);
        const rounded = Math.round(acc);
        out[written++] = rounded > 32767 ? 32767 : rounded < -32768 ? -32768 : rounded;
        if (phase === 0) phase = 1;
        else {
          phase = 0;
          n++;
        }
      }
    }
    while (n < inputLength) {
      let acc: number;
      if (mode[phase] === 1) {
        // Symmetric sub-filter: one multiply per pair of taps, zero taps skipped by the runs.
        const k = phase * KERNEL_FIELDS;
        const st = kernel[k + 1]!;
        const st2 = 2 * st;
        let acc0 = centerCoef[phase]! * work[n + kernel[k]!]!;
        let acc1 = 0;
        for (let r = k + 2; r < k + KERNEL_FIELDS; r += 4) {
          let i = n + kernel[r]!;
          let j = n + kernel[r + 1]!;
          let c = kernel[r + 2]!;
          const end = kernel[r + 3]!;
          for (; c + 1 < end; c += 2, i += st2, j -= st2) {
            acc0 += runCoef[c]! * (work[i]! + work[j]!);
            acc1 += runCoef[c + 1]! * (work[i + st]! + work[j - st]!);
          }
          if (c < end) acc0 += runCoef[c]! * (work[i]! + work[j]!);
        }
        acc = acc0 + acc1;
      } else {
        // Four partial sums break the add dependency chain: ~20 % faster in V8 than one accumulator.
        const base = phase * K;
        let acc0 = 0;
        let acc1 = 0;
        let acc2 = 0;
        let acc3 = 0;
        let k = 0;
        for (; k + 3 < K; k += 4) {
          const t = base + k;
          const x = n + k;
          acc0 += dense[t]! * work[x]!;
          acc1 += dense[t + 1]! * work[x + 1]!;
          acc2 += dense[t + 2]! * work[x + 2]!;
          acc3 += dense[t + 3]! * work[x + 3]!;
        }
        for (; k < K; k++) acc0 += dense[base + k]! * work[n + k]!;
        acc = acc0 + acc1 + (acc2 + acc3);
      }
      const rounded = Math.round(acc);
      out[written++] = rounded > 32767 ? 32767 : rounded < -32768 ? -32768 : rounded;
      // Next output: M grid steps on, without division or modulo (M < L: at most one input step).
      phase += M;
      while (phase >= L) {
        phase -= L;
        n++;
      }
    }
    this.inputOffset = n - inputLength;
    this.phase = phase;
    // Keep the newest K-1 samples (history plus input, so inputs shorter than K-1 also work).
    work.copyWithin(0, inputLength, inputLength + history);
    return written;
  }

  /** Forgets all filter state (history, phase), as after construction. Call on barge-in. */
  reset(): void {
    this.work.fill(0);
    this.inputOffset = 0;
    this.phase = 0;
  }
}
