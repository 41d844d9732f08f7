/**
 * The sim audio code's streaming decoder (pure DSP, no clock): PCM -> tone energies -> preamble
 * lock -> symbols -> checked blocks -> text. Apart from the encoder (codec.ts), which re-exports it.
 */
import { BLOCK_DATA, DATA_SYMBOLS, END, GROUP, highOf, lowOf, PRE1, PRE2, SIM_ALPHABET, symbolDurationMs, TONE_COUNT, TONES_HZ } from './symbols.js';

export type SimDecoderEvent = { type: 'interim'; text: string } | { type: 'final'; text: string };

// ---------------------------------------------------------------- decoder timing
const SUBBLOCK_PER_SECOND = 400; // 2.5 ms sub-blocks: the timing resolution
const SLOT_BLOCKS = (symbolDurationMs * SUBBLOCK_PER_SECOND) / 1000; // 24
/** 40 ms analysis window centred in the 50 ms tone: +-5 ms of timing slack before it hits a ramp. */
const WINDOW_BLOCKS = 16;
/** Sub-blocks per 20 ms: every tone completes whole cycles in 20 ms, so phase repeats. */
const PHASE_PERIOD_BLOCKS = 8;
const RING_BLOCKS = 64; // > PRE1..PRE2 span (40) + lock search (12)

// ---------------------------------------------------------------- decoder thresholds
/**
 * Share of window energy the expected tone pair must hold (1 for a clean window), summed over the
 * two sync symbols. Real speech and noise stay far below (see NOTES.md).
 */
const PREAMBLE_PURITY_SUM = 0.9;
/** Weaker tone of a pair / stronger one: 0.25 tolerates 12 dB of tilt across the band. */
const MIN_TWIST_RATIO = 0.25;
/** After the first preamble match, keep sliding this long to find the best-aligned offset. */
const LOCK_SEARCH_BLOCKS = 12;
/** Quietest accepted tone (per-tone amplitude), about -50 dBFS. */
const MIN_TONE_AMPLITUDE = 100;
/** A data slot carries code when its pair is this pure and this strong relative to the preamble. */
const SLOT_PURITY_MIN = 0.3;
const SLOT_STRENGTH_MIN = 0.3;
/** A sync symbol inside a phrase means a new phrase only when this clean (else: a corrupt slot). */
const RESYNC_PURITY_MIN = 0.6;
/** Slots without code that end a phrase whose end marker was lost: 5 x 60 ms = 300 ms. */
const SILENT_SLOTS_TO_FINAL = 5;
/**
 * The tones of the two sync symbols, all the search reads: four entries for goertzel4, and as PRE1
 * and PRE2 share their low tone, that one twice (the same recurrence twice gives the same bits; four
 * chains in flight cost what three do).
 */
const SYNC_TONES: readonly number[] = [lowOf(PRE1), highOf(PRE1), lowOf(PRE2), highOf(PRE2)];

/**
 * Streaming decoder for 8 or 16 kHz PCM. Push any frame sizes; take events when convenient.
 * Non-code audio (speech, noise) never passes the preamble test, so it decodes to nothing.
 */
export class SimDecoder {
  private readonly blockLen: number; // samples per 2.5 ms sub-block
  private readonly windowNorm: number; // |X| of a full-window tone of amplitude 1 (= samples / 2)
  /** Window energy below which no tone can reach MIN_TONE_AMPLITUDE (see the constructor). */
  private readonly quietWindowEnergy: number;
  /** Goertzel 2 cos(w), cos(w), sin(w) and the phase rotations: fixed per rate, shared by every decoder. */
  private readonly coef: Float64Array;
  private readonly cosW: Float64Array;
  private readonly sinW: Float64Array;
  private readonly rotRe: Float64Array;
  private readonly rotIm: Float64Array;
  private readonly s1 = new Float64Array(TONE_COUNT);
  private readonly s2 = new Float64Array(TONE_COUNT);
  private blockFill = 0;
  private blockEnergy = 0;
  /**
   * The sub-block being filled runs only the sync symbols' tones (the others' ring entries are
   * then 0, never read). All 14 are read only by the data state's slot windows; the search, the
   * lock and the resync replay inside a phrase read PRE1/PRE2 only. So: all tones from the block
   * after a preamble first matches (the first slot window starts 9 blocks after the match, see
   * searchPreamble) and, in the data state, for the blocks of the next slot window; sync tones
   * otherwise. Real speech or noise fed to the sim ASR costs 3 filters instead of 14, and a
   * phrase's guard blocks between windows (8 of every 24) too. Fixed at a sub-block's start
   * (finishBlock), so a sub-block is never half filtered for a tone that is read.
   */
  private syncTonesOnly = true;
  private blockIndex = 0; // absolute index of the sub-block being filled
  // Ring of finished sub-blocks: complex tone coefficients (absolute phase) and energy.
  private readonly ringRe = new Float64Array(RING_BLOCKS * TONE_COUNT);
  private readonly ringIm = new Float64Array(RING_BLOCKS * TONE_COUNT);
  private readonly ringEnergy = new Float64Array(RING_BLOCKS);
  private readonly amp = new Float64Array(TONE_COUNT); // per-tone amplitude of the last window
  private windowEnergy = 0;

  private state: 'search' | 'data' = 'search';
  private lockFirstBlock = -1; // sub-block where the preamble first matched, -1 when not locking
  private lockBestBlock = -1;
  private lockBestScore = 0;
  private nextWindowEnd = 0; // sub-block index at which the next data window completes
  private refAmplitude = 0; // per-tone amplitude of the preamble
  private silentSlots = 0;
  private readonly blockValues = new Int32Array(BLOCK_DATA + 1);
  private readonly blockConf = new Float64Array(BLOCK_DATA + 1);
  private blockCount = 0;
  private committed = '';
  private lastInterim = '';
  private events: SimDecoderEvent[] = [];

  constructor(sampleRateHz: 8000 | 16000) {
    if (sampleRateHz !== 8000 && sampleRateHz !== 16000) {
      throw new RangeError(`SimDecoder: unsupported sample rate ${sampleRateHz} Hz`);
    }
    this.blockLen = sampleRateHz / SUBBLOCK_PER_SECOND;
    this.windowNorm = (this.blockLen * WINDOW_BLOCKS) / 2;
    // Cauchy-Schwarz: a window of N samples and energy E has |X(w)| <= sqrt(N * E) at any
    // frequency, so a tone amplitude (|X| / (N / 2)) <= 2 * sqrt(E / N). Below this energy no tone
    // reaches MIN_TONE_AMPLITUDE (1 % margin for rounding).
    const windowSamples = this.blockLen * WINDOW_BLOCKS;
    this.quietWindowEnergy = ((0.99 * MIN_TONE_AMPLITUDE) ** 2 * windowSamples) / 4;
    const tables = rateTables(sampleRateHz, this.blockLen);
    this.coef = tables.coef;
    this.cosW = tables.cosW;
    this.sinW = tables.sinW;
    this.rotRe = tables.rotRe;
    this.rotIm = tables.rotIm;
  }

  /**
   * Feeds PCM samples (any frame size): `frame[0..length)`, so callers reusing a scratch buffer
   * need no subarray. Events become available through `takeEvents()`.
   */
  push(frame: Int16Array, length: number = frame.length): void {
    const { coef, s1, s2 } = this;
    const n = Math.min(length, frame.length);
    let i = 0;
    while (i < n) {
      // Up to the end of the current sub-block, four tones at a time with their Goertzel state in
      // locals: the same arithmetic in the same order per tone as sample by sample (so the same
      // bits), without a load and store of s1/s2 per tone per sample, and four independent
      // recurrences in flight instead of one (each is a serial chain of a multiply and two adds).
      // One tone at a time was 4x faster than per sample; four at a time is 2.7x faster again.
      const end = Math.min(n, i + this.blockLen - this.blockFill);
      if (this.syncTonesOnly) {
        goertzel4(frame, i, end, coef, s1, s2, SYNC_TONES[0]!, SYNC_TONES[1]!, SYNC_TONES[2]!, SYNC_TONES[3]!);
      } else {
        let t = 0;
        for (; t + 4 <= TONE_COUNT; t += 4) goertzel4(frame, i, end, coef, s1, s2, t, t + 1, t + 2, t + 3);
        for (; t < TONE_COUNT; t++) goertzel1(frame, i, end, coef, s1, s2, t);
      }
      let energy = this.blockEnergy;
      for (let k = i; k < end; k++) {
        const x = frame[k]!;
        energy += x * x;
      }
      this.blockEnergy = energy;
      this.blockFill += end - i;
      i = end;
      if (this.blockFill === this.blockLen) this.finishBlock();
    }
  }

  /** Returns and clears pending events (a shared empty array when there are none: do not mutate). */
  takeEvents(): SimDecoderEvent[] {
    if (this.events.length === 0) return NO_EVENTS;
    const out = this.events;
    this.events = [];
    return out;
  }

  /**
   * Ends the phrase in progress now and emits its final, if any characters were decoded (used when
   * the caller forces end of turn). The rest of that phrase, if it keeps coming, is ignored.
   */
  flush(): void {
    if (this.state !== 'data') return;
    // Mid-phrase the last symbol is usually a character, at the phrase end the check: trust the
    // checksum to tell (a character passes as a check 1 time in 44 and is then dropped).
    const n = this.blockCount;
    const lastIsCheck = n >= 2 && this.checksumOk(n);
    this.finishPhrase(lastIsCheck);
  }

  /** Forgets everything, including audio in flight and undelivered events. */
  reset(): void {
    this.s1.fill(0);
    this.s2.fill(0);
    this.blockFill = 0;
    this.blockEnergy = 0;
    this.syncTonesOnly = true;
    this.ringRe.fill(0);
    this.ringIm.fill(0);
    this.ringEnergy.fill(0);
    this.events = [];
    this.toSearch();
  }

  private finishBlock(): void {
    const slot = (this.blockIndex % RING_BLOCKS) * TONE_COUNT;
    const phase = this.blockIndex % PHASE_PERIOD_BLOCKS;
    for (let t = 0; t < TONE_COUNT; t++) {
      const yRe = this.s1[t]! - this.cosW[t]! * this.s2[t]!;
      const yIm = this.sinW[t]! * this.s2[t]!;
      const rRe = this.rotRe[t * PHASE_PERIOD_BLOCKS + phase]!;
      const rIm = this.rotIm[t * PHASE_PERIOD_BLOCKS + phase]!;
      this.ringRe[slot + t] = rRe * yRe - rIm * yIm;
      this.ringIm[slot + t] = rRe * yIm + rIm * yRe;
      this.s1[t] = 0;
      this.s2[t] = 0;
    }
    this.ringEnergy[this.blockIndex % RING_BLOCKS] = this.blockEnergy;
    this.blockEnergy = 0;
    this.blockFill = 0;
    const finished = this.blockIndex++;
    if (this.state === 'search') this.searchPreamble(finished);
    else if (finished === this.nextWindowEnd) {
      this.nextWindowEnd += SLOT_BLOCKS;
      this.decodeSlot(finished);
    }
    this.syncTonesOnly = this.state === 'search' ? this.lockFirstBlock < 0 : this.blockIndex < this.nextWindowEnd - WINDOW_BLOCKS + 1;
  }

  /** Fills `amp` (per-tone amplitude) and `windowEnergy` for the window ending at sub-block `end`. */
  private analyseWindow(end: number): void {
    for (let t = 0; t < TONE_COUNT; t++) this.amp[t] = this.toneAmplitude(end, t);
    this.windowEnergy = this.windowEnergyAt(end);
  }

  /** analyseWindow for tones `lo` and `hi` only (the rest of `amp` is left as it was); `energy`: windowEnergyAt(end). */
  private analysePair(end: number, lo: number, hi: number, energy: number): void {
    this.amp[lo] = this.toneAmplitude(end, lo);
    this.amp[hi] = this.toneAmplitude(end, hi);
    this.windowEnergy = energy;
  }

  /** Amplitude of tone `t` over the window ending at sub-block `end`. */
  private toneAmplitude(end: number, t: number): number {
    let re = 0;
    let im = 0;
    for (let b = end - WINDOW_BLOCKS + 1; b <= end; b++) {
      const k = (b % RING_BLOCKS) * TONE_COUNT + t;
      re += this.ringRe[k]!;
      im += this.ringIm[k]!;
    }
    return Math.hypot(re, im) / this.windowNorm;
  }

  /**
   * Share of the window's energy held by tones `lo` and `hi`: 1 for a clean full-window pair, the
   * covered fraction for a partly silent window. 0 when one tone is missing, so that a single
   * tone (a whistle, a dial tone) never passes for a pair.
   */
  private purity(lo: number, hi: number): number {
    const aLo = this.amp[lo]!;
    const aHi = this.amp[hi]!;
    if (this.windowEnergy <= 0 || Math.min(aLo, aHi) < MIN_TWIST_RATIO * Math.max(aLo, aHi)) return 0;
    return ((aLo * aLo + aHi * aHi) * this.windowNorm) / this.windowEnergy;
  }

  /** Energy of the analysis window that ends with sub-block `end`. */
  private windowEnergyAt(end: number): number {
    let energy = 0;
    for (let b = end - WINDOW_BLOCKS + 1; b <= end; b++) energy += this.ringEnergy[b % RING_BLOCKS]!;
    return energy;
  }

  private searchPreamble(end: number): void {
    const pre1End = end - SLOT_BLOCKS;
    if (pre1End - WINDOW_BLOCKS + 1 < 0) return; // not enough history yet
    // Skipped when neither window can hold a tone as strong as MIN_TONE_AMPLITUDE (the bound is
    // exact: the decode is the same), i.e. on silence and quiet lines, where the two window
    // analyses were most of an idle call's cost.
    let matched = false;
    let score = 0;
    let strongest = 0;
    const energy2 = this.windowEnergyAt(end);
    const energy1 = this.windowEnergyAt(pre1End);
    if (Math.max(energy2, energy1) >= this.quietWindowEnergy) {
      this.analysePair(end, lowOf(PRE2), highOf(PRE2), energy2);
      const p2 = this.purity(lowOf(PRE2), highOf(PRE2));
      const a2 = (this.amp[lowOf(PRE2)]! + this.amp[highOf(PRE2)]!) / 2;
      this.analysePair(pre1End, lowOf(PRE1), highOf(PRE1), energy1);
      const p1 = this.purity(lowOf(PRE1), highOf(PRE1));
      const a1 = (this.amp[lowOf(PRE1)]! + this.amp[highOf(PRE1)]!) / 2;
      // Purities add up so that either sync symbol may be wiped out by lost frames (1 + 0), or
      // both half-wiped (0.5 + 0.5), and the phrase still locks.
      matched = p1 + p2 >= PREAMBLE_PURITY_SUM && Math.max(a1, a2) >= MIN_TONE_AMPLITUDE;
      score = a1 + a2;
      strongest = Math.max(a1, a2);
    }
    if (matched && score > this.lockBestScore) {
      this.lockBestScore = score;
      this.lockBestBlock = end;
      this.refAmplitude = strongest;
    }
    if (matched && this.lockFirstBlock < 0) this.lockFirstBlock = end;
    // Windows partly over the preamble already match; slide on to the best-aligned offset.
    if (this.lockFirstBlock >= 0 && end - this.lockFirstBlock >= LOCK_SEARCH_BLOCKS) {
      // The first data window ends one slot after the best PRE2 window; as the search lasts
      // under a slot, that is still ahead of us.
      this.state = 'data';
      this.nextWindowEnd = this.lockBestBlock + SLOT_BLOCKS;
    }
  }

  private decodeSlot(end: number): void {
    this.analyseWindow(end);
    let lo = 0;
    let hi = GROUP;
    for (let t = 1; t < GROUP; t++) if (this.amp[t]! > this.amp[lo]!) lo = t;
    for (let t = GROUP + 1; t < TONE_COUNT; t++) if (this.amp[t]! > this.amp[hi]!) hi = t;
    const strength = (this.amp[lo]! + this.amp[hi]!) / 2;
    const purity = this.purity(lo, hi);
    if (purity < SLOT_PURITY_MIN || strength < SLOT_STRENGTH_MIN * this.refAmplitude) {
      // No code here: a wiped slot inside the phrase (an erasure, filled in once a later slot
      // shows the phrase goes on) or the silence after it.
      if (++this.silentSlots >= SILENT_SLOTS_TO_FINAL) this.finishPhrase(true);
      return;
    }
    const value = lo * GROUP + (hi - GROUP);
    if (value === END) {
      this.finishPhrase(true);
      return;
    }
    if ((value === PRE1 || value === PRE2) && purity >= RESYNC_PURITY_MIN) {
      // A new phrase started while we still decoded the last one (its end marker was lost):
      // close that one and look for the preamble again, replaying the last few sub-blocks so a
      // PRE2 whose window is already complete can still lock.
      this.finishPhrase(true);
      for (let b = end - LOCK_SEARCH_BLOCKS / 2; b <= end && this.state === 'search'; b++) this.searchPreamble(b);
      return;
    }
    for (; this.silentSlots > 0; this.silentSlots--) this.appendSymbol(0, -1);
    // Confidence: how far each chosen tone stands above its group's runner-up (for correction).
    const conf = Math.min(this.margin(lo, 0), this.margin(hi, GROUP)) / this.refAmplitude;
    if (value >= DATA_SYMBOLS) this.appendSymbol(0, -1); // never sent: a corrupt slot
    else this.appendSymbol(value, conf);
  }

  private margin(best: number, groupStart: number): number {
    let second = 0;
    for (let t = groupStart; t < groupStart + GROUP; t++) if (t !== best) second = Math.max(second, this.amp[t]!);
    return this.amp[best]! - second;
  }

  private appendSymbol(value: number, conf: number): void {
    this.blockValues[this.blockCount] = value;
    this.blockConf[this.blockCount] = conf;
    if (++this.blockCount === BLOCK_DATA + 1) this.commitBlock(BLOCK_DATA + 1, true);
    this.emitInterim();
  }

  /** True when the last of the first `n` block symbols is the checksum of the others. */
  private checksumOk(n: number): boolean {
    let sum = 0;
    for (let i = 0; i < n - 1; i++) sum += this.blockValues[i]!;
    return sum % DATA_SYMBOLS === this.blockValues[n - 1]!;
  }

  /**
   * Commits the first `n` block symbols. With a check symbol last and a failed checksum, the least
   * confident symbol (a wiped or damaged slot) is replaced by the value that makes it pass.
   */
  private commitBlock(n: number, lastIsCheck: boolean): void {
    const dataCount = lastIsCheck ? n - 1 : n;
    if (lastIsCheck && dataCount > 0 && !this.checksumOk(n)) {
      let worst = 0;
      for (let i = 1; i < n; i++) if (this.blockConf[i]! < this.blockConf[worst]!) worst = i;
      if (worst < dataCount) {
        let others = 0;
        for (let i = 0; i < dataCount; i++) if (i !== worst) others += this.blockValues[i]!;
        const fixed = (this.blockValues[n - 1]! - (others % DATA_SYMBOLS) + DATA_SYMBOLS) % DATA_SYMBOLS;
        this.blockValues[worst] = fixed;
      }
    }
    for (let i = 0; i < dataCount; i++) this.committed += SIM_ALPHABET[this.blockValues[i]!];
    this.blockCount = 0;
  }

  /** Interim = committed blocks + characters of the open block, minus its newest symbol, which
   *  may turn out to be the check of a short last block. */
  private emitInterim(): void {
    let text = this.committed;
    for (let i = 0; i < this.blockCount - 1; i++) {
      if (this.blockConf[i]! >= 0) text += SIM_ALPHABET[this.blockValues[i]!];
    }
    text = text.trim();
    if (text.length > 0 && text !== this.lastInterim) {
      this.lastInterim = text;
      this.events.push({ type: 'interim', text });
    }
  }

  private finishPhrase(lastIsCheck: boolean): void {
    if (this.blockCount > 0) this.commitBlock(this.blockCount, lastIsCheck);
    const text = this.committed.trim();
    if (text.length > 0) this.events.push({ type: 'final', text });
    this.toSearch();
  }

  private toSearch(): void {
    this.state = 'search';
    this.lockFirstBlock = -1;
    this.lockBestBlock = -1;
    this.lockBestScore = 0;
    this.silentSlots = 0;
    this.blockCount = 0;
    this.committed = '';
    this.lastInterim = '';
  }
}

interface RateTables {
  coef: Float64Array;
  cosW: Float64Array;
  sinW: Float64Array;
  /** Rotation to absolute phase, per tone, per sub-block position inside a 20 ms period. */
  rotRe: Float64Array;
  rotIm: Float64Array;
}

/** One set per sample rate for the process: 2 KiB a decoder (a call on the sim ASR) no longer holds. */
const tablesByRate = new Map<number, RateTables>();

function rateTables(sampleRateHz: number, blockLen: number): RateTables {
  let t = tablesByRate.get(sampleRateHz);
  if (t) return t;
  t = {
    coef: new Float64Array(TONE_COUNT),
    cosW: new Float64Array(TONE_COUNT),
    sinW: new Float64Array(TONE_COUNT),
    rotRe: new Float64Array(TONE_COUNT * PHASE_PERIOD_BLOCKS),
    rotIm: new Float64Array(TONE_COUNT * PHASE_PERIOD_BLOCKS),
  };
  for (let k = 0; k < TONE_COUNT; k++) {
    const w = (2 * Math.PI * TONES_HZ[k]!) / sampleRateHz;
    t.coef[k] = 2 * Math.cos(w);
    t.cosW[k] = Math.cos(w);
    t.sinW[k] = Math.sin(w);
    for (let p = 0; p < PHASE_PERIOD_BLOCKS; p++) {
      // Goertzel's y = s1 - e^{-jw} s2 equals e^{jw(N-1)} * sum x[m] e^{-jwm} over the block;
      // rotating by e^{-jw(n0 + N - 1)} gives the DFT term in absolute time, so blocks add up.
      const angle = w * (p * blockLen + blockLen - 1);
      t.rotRe[k * PHASE_PERIOD_BLOCKS + p] = Math.cos(angle);
      t.rotIm[k * PHASE_PERIOD_BLOCKS + p] = -Math.sin(angle);
    }
  }
  tablesByRate.set(sampleRateHz, t);
  return t;
}

/** Runs the Goertzel recurrences of tones t0..t3 over frame[from..to), interleaved. */
function goertzel4(frame: Int16Array, from: number, to: number, coef: Float64Array, s1: Float64Array, s2: Float64Array, t0: number, t1: number, t2: number, t3: number): void {
  const c0 = coef[t0]!;
  const c1 = coef[t1]!;
  const c2 = coef[t2]!;
  const c3 = coef[t3]!;
  let a0 = s1[t0]!;
  let b0 = s2[t0]!;
  let a1 = s1[t1]!;
  let b1 = s2[t1]!;
  let a2 = s1[t2]!;
  let b2 = s2[t2]!;
  let a3 = s1[t3]!;
  let b3 = s2[t3]!;
  for (let k = from; k < to; k++) {
    const x = frame[k]!;
    let s = x + c0 * a0 - b0;
    b0 = a0;
    a0 = s;
    s = x + c1 * a1 - b1;
    b1 = a1;
    a1 = s;
    s = x + c2 * a2 - b2;
    b2 = a2;
    a2 = s;
    s = x + c3 * a3 - b3;
    b3 = a3;
    a3 = s;
  }
  s1[t0] = a0;
  s2[t0] = b0;
  s1[t1] = a1;
  s2[t1] = b1;
  s1[t2] = a2;
  s2[t2] = b2;
  s1[t3] = a3;
  s2[t3] = b3;
}

/** Tone t's Goertzel recurrence over frame[from..to) (the tones left over after fours). */
function goertzel1(frame: Int16Array, from: number, to: number, coef: Float64Array, s1: Float64Array, s2: Float64Array, t: number): void {
  const c = coef[t]!;
  let a = s1[t]!;
  let b = s2[t]!;
  for (let k = from; k < to; k++) {
    const s0 = frame[k]! + c * a - b;
    b = a;
    a = s0;
  }
  s1[t] = a;
  s2[t] = b;
}

const NO_EVENTS: SimDecoderEvent[] = Object.freeze([]) as unknown as SimDecoderEvent[];
