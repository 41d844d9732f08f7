/**
 * The filter design behind `Resampler` (resampler.ts): a Kaiser-windowed sinc prototype cut at
 * the lower Nyquist, split into polyphase sub-filters stored as runs of symmetric tap pairs.
 * Designs are immutable and cached per (L, M, K). Measured responses: NOTES.md.
 */

/** Span in lower-rate samples: ~69 dB from 1.15 x the lower Nyquist (measured, NOTES.md); 28 gives 64. */
export const DEFAULT_TAPS = 30;
/** Kaiser beta for ~70 dB of attenuation (beta = 0.1102 * (A - 8.7)); tests require 60. */
const KAISER_BETA = 6.8;
/** Ints per phase in `Design.kernel`. */
export const KERNEL_FIELDS = 10;
/** Relative size under which a designed tap counts as zero (the sinc's zero crossings). */
const ZERO_TAP = 1e-9;

export function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** Zeroth-order modified Bessel function of the first kind (series; converges fast for beta < 20). */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const halfXSquared = (x * x) / 4;
  for (let k = 1; k < 50; k++) {
    term *= halfXSquared / (k * k);
    sum += term;
    if (term < sum * 1e-12) break;
  }
  return sum;
}

/**
 * The prototype low-pass on the L*inRate grid: `length` taps (odd, so the centre is a sample),
 * zero-padded to `padded`. Cutoff at the lower Nyquist, 0.5 / max(L, M) cycles per grid sample.
 */
export function designPrototype(up: number, down: number, length: number, padded: number, beta = KAISER_BETA): Float64Array {
  const ratio = Math.max(up, down);
  const cutoff = 0.5 / ratio;
  const center = (length - 1) / 2;
  const h = new Float64Array(padded);
  const i0Beta = besselI0(beta);
  for (let n = 0; n < length; n++) {
    const x = n - center;
    // Exact zeros at the sinc's crossings (Math.sin(k * PI) is ~1e-16, not 0).
    const sinc = x === 0 ? 2 * cutoff : x % ratio === 0 ? 0 : Math.sin(2 * Math.PI * cutoff * x) / (Math.PI * x);
    const r = x / center;
    h[n] = (sinc * besselI0(beta * Math.sqrt(Math.max(0, 1 - r * r)))) / i0Beta;
  }
  return h;
}

/**
 * One design shared by every instance of a pair. Per phase p: `mode` 1 = symmetric, the centre tap
 * (`centerCoef`) plus up to two runs of non-zero tap pairs described by `kernel`, coefficients in
 * `runCoef`; 0 = dense taps `dense[p*K + j]` (reversed, so the loop walks the input forward).
 */
export interface Design {
  /**
   * Per phase, KERNEL_FIELDS ints: centre tap index, step, then for runs A and B: first tap index,
   * its mirror (first + mirror = the sub-filter's first + last non-zero tap), first and end index
   * into `runCoef` (end = first: no run). Tap i of a run pairs with mirror - i.
   */
  kernel: Int32Array;
  tapsPerPhase: number;
  /** Grid samples from the first tap to the centre: the group delay times M. */
  center: number;
  mode: Uint8Array;
  runCoef: Float64Array;
  centerCoef: Float64Array;
  dense: Float64Array;
}

/**
 * Coefficient tables are immutable and depend only on (L, M, K), so calls share them: one actor per
 * call would otherwise design the same filter thousands of times.
 */
const designCache = new Map<string, Design>();

export function design(up: number, down: number, tapsPerPhase: number): Design {
  const key = `${up}/${down}/${tapsPerPhase}`;
  const cached = designCache.get(key);
  if (cached) return cached;
  const K = tapsPerPhase;
  const padded = up * K;
  const length = padded % 2 === 1 ? padded : padded - 1;
  const h = designPrototype(up, down, length, padded);
  const dense = new Float64Array(padded);
  const mode = new Uint8Array(up);
  const runStart = new Int32Array(up);
  const runEnd = new Int32Array(up);
  const step = new Int32Array(up);
  const mirror = new Int32Array(up);
  const centerAt = new Int32Array(up);
  const centerCoef = new Float64Array(up);
  const runLo: number[] = [];
  const runCount: number[] = [];
  const runFirst: number[] = [];
  const runCoef: number[] = [];
  // Zero taps recur every max(L, M) grid samples, i.e. every `zeroStep` taps of one phase.
  const ratio = Math.max(up, down);
  const zeroStep = ratio / gcd(ratio, up);
  for (let p = 0; p < up; p++) {
    // Phase p, reversed: taps[j] multiplies the j-th oldest input of the window. Each phase is
    // normalised to a DC gain of exactly 1 (otherwise the small per-phase gain differences would
    // modulate DC into a tone at the input rate).
    const taps = new Float64Array(K);
    let sum = 0;
    for (let j = 0; j < K; j++) sum += h[p + j * up]!;
    for (let j = 0; j < K; j++) taps[K - 1 - j] = h[p + j * up]! / sum;
    for (let j = 0; j < K; j++) dense[p * K + j] = taps[j]!;
    let peak = 0;
    for (const t of taps) peak = Math.max(peak, Math.abs(t));
    const isZero = (j: number): boolean => Math.abs(taps[j]!) <= peak * ZERO_TAP;
    let first = 0;
    let last = K - 1;
    while (first < K && isZero(first)) first++;
    while (last > first && isZero(last)) last--;
    let symmetric = true;
    for (let i = 0; first + i < last - i; i++) {
      if (Math.abs(taps[first + i]! - taps[last - i]!) > peak * 1e-12) symmetric = false;
    }
    runStart[p] = runLo.length;
    runEnd[p] = runLo.length;
    if (!symmetric) continue;
    mode[p] = 1;
    mirror[p] = first + last;
    // The pairs below the centre, split into runs of equal stride (one run per residue class that
    // is not all zeros), so the inner loop walks the input with a constant step and no index table.
    const half = (last - first + 1) >> 1;
    // More than two runs (zeroStep > 3) costs more in loop overhead than the zeros it skips.
    const s = zeroStep > 1 && zeroStep <= 3 && half > zeroStep ? zeroStep : 1;
    step[p] = s;
    for (let r = 0; r < s; r++) {
      const start = first + r;
      const coefFirst = runCoef.length;
      let count = 0;
      for (let j = start; j < first + half; j += s) {
        runCoef.push(taps[j]!);
        count++;
      }
      let allZero = true;
      for (let i = 0; i < count; i++) if (!isZero(start + i * s)) allZero = false;
      if (allZero) {
        runCoef.length = coefFirst;
        continue;
      }
      runLo.push(start);
      runCount.push(count);
      runFirst.push(coefFirst);
    }
    runEnd[p] = runLo.length;
    if (runEnd[p]! - runStart[p]! > 2) {
      // The kernel holds two runs (zeroStep <= 3 guarantees it); anything else runs dense.
      mode[p] = 0;
      continue;
    }
    if ((last - first) % 2 === 0) {
      centerAt[p] = (first + last) / 2;
      centerCoef[p] = taps[centerAt[p]!]!;
    }
  }
  // The per-phase values the inner loop needs, flat, so one output reads them from one table.
  const kernel = new Int32Array(up * KERNEL_FIELDS);
  for (let p = 0; p < up; p++) {
    const k = p * KERNEL_FIELDS;
    kernel[k] = centerAt[p]!;
    kernel[k + 1] = step[p]!;
    for (let r = 0; r < 2; r++) {
      const run = runStart[p]! + r;
      if (run >= runEnd[p]!) continue;
      kernel[k + 2 + 4 * r] = runLo[run]!;
      kernel[k + 3 + 4 * r] = mirror[p]! - runLo[run]!;
      kernel[k + 4 + 4 * r] = runFirst[run]!;
      kernel[k + 5 + 4 * r] = runFirst[run]! + runCount[run]!;
    }
  }
  const d: Design = {
    kernel,
    tapsPerPhase: K,
    center: (length - 1) / 2,
    mode,
    runCoef: Float64Array.from(runCoef),
    centerCoef,
    dense,
  };
  designCache.set(key, d);
  return d;
}
