/**
 * Frame energy VAD for 20 ms frames of 16 kHz (320 samples) or 8 kHz (160 samples) PCM.
 *
 * Per frame:
 *   1. speech-band energy: the frame through a 300 Hz high-pass (2nd-order Butterworth), in dBFS.
 *      Brown noise, hum and rumble sit mostly below 300 Hz, speech formants above.
 *   2. band ratio: speech-band energy minus full-band energy (dB). Brown noise reads mostly
 *      -11 to -19 dB, voiced speech 0 to -8 dB (measured on the fixtures, see NOTES.md).
 *   3. a frame is "voiced" when band energy > floor + margin (+ echo margin while the agent
 *      speaks) and the ratio is above RATIO_MIN_DB.
 *   4. the noise floor follows band energy down fast and up slowly; it never rises while the
 *      agent speaks (echo is not noise) and never drops below MIN_FLOOR_DB.
 *   5. onset after `minSpeechMs` of consecutive voiced frames; offset `hangoverMs` after the
 *      last voiced frame. `silenceMs` counts from the last voiced frame regardless of hangover,
 *      so turn logic can run its own endpointing.
 *
 * Time is counted in audio (samples), not from a Clock: the VAD must give the same answer when
 * a file is replayed faster than real time, and frames are its only notion of time.
 * process() allocates nothing: filter state lives in fields and the result object is reused.
 */

export interface VadOptions {
  /** Sample rate of the frames: 16000 (320-sample frames) or 8000 (160-sample frames). */
  sampleRateHz: number;
  /** 0..1 sensitivity from the agent's `vad_threshold`; maps to a margin of 6 + 12 * threshold dB over the floor. Default 0.5 (12 dB). */
  threshold?: number;
  /** Consecutive voiced audio needed before `onset`. Default 60 ms (3 frames). */
  minSpeechMs?: number;
  /** Speech stays on this long after the last voiced frame. Default 200 ms. */
  hangoverMs?: number;
  /** Extra dB over the threshold while the agent is speaking (echo suppression). Default 6. */
  echoMarginDb?: number;
  /** Frame duration; process() requires frames of exactly sampleRateHz * frameMs / 1000 samples. Default 20. */
  frameMs?: number;
}

/** Result of one frame. The same object is returned by every call: read it before the next one. */
export interface VadResult {
  /** Speech is active (after onset, including hangover). */
  speech: boolean;
  /** True on the frame where speech became active. */
  onset: boolean;
  /** True on the frame where speech ended (hangover expired). */
  offset: boolean;
  /** Speech-band (above 300 Hz) energy of this frame, dBFS. */
  energyDb: number;
  /** Noise floor estimate after this frame, dBFS (speech band). */
  noiseFloorDb: number;
  /** Time since the last voiced frame (0 on a voiced frame). */
  silenceMs: number;
  /** Length of the current speech segment from its first voiced frame; on the offset frame, the segment that just ended; else 0. */
  speechMs: number;
}

export type VadProfile = 'browser_headset' | 'browser_speakers' | 'telephony';

/** Filter state below this (in sample units, far under one LSB) is flushed to zero. */
const DENORMAL_FLUSH = 1e-20;
const DEFAULT_THRESHOLD = 0.5;
const DEFAULT_MIN_SPEECH_MS = 60;
const DEFAULT_HANGOVER_MS = 200;
const DEFAULT_ECHO_MARGIN_DB = 6;
const DEFAULT_FRAME_MS = 20;
/** Margin over the floor at threshold 0 and its growth up to threshold 1. */
const MARGIN_BASE_DB = 6;
const MARGIN_SPAN_DB = 12;
/** Below this no caller is speaking into a microphone; also stops digital silence from making the floor -inf. */
const MIN_FLOOR_DB = -60;
/** The first frame seeds the floor, capped so a call that opens mid-word still detects that word. */
const INITIAL_FLOOR_CAP_DB = -45;
/** Frames whose speech band holds less than this share of the energy are rumble, not speech. */
const RATIO_MIN_DB = -10;
/** Floor rise rate (dB per second). Slow, so long utterances barely move it. */
const FLOOR_UP_DB_PER_S = 2;
/** Fraction of the gap the floor closes per frame when energy is below it. */
const FLOOR_DOWN_ALPHA = 0.3;
const HIGH_PASS_HZ = 300;
/** Full scale squared, so energies come out in dBFS. */
const FULL_SCALE_SQUARED = 32768 * 32768;
/** Keeps log10 finite on digital silence (-120 dBFS). */
const ENERGY_EPSILON = 1e-12;

export function vadOptionsForProfile(profile: VadProfile, vadThreshold = DEFAULT_THRESHOLD, sampleRateHz = 16000): VadOptions {
  switch (profile) {
    case 'browser_headset':
      // Little acoustic coupling: a small margin is enough for residual echo.
      return { sampleRateHz, threshold: vadThreshold, minSpeechMs: 60, hangoverMs: 200, echoMarginDb: 6 };
    case 'browser_speakers':
      // Speaker-to-mic echo is loud: in echo-of-agent-long.16k.wav it peaks 36 dB over the
      // -60 dBFS floor. 12 + 24 dB flags none of its frames yet still catches a caller who talks
      // over it (echo-plus-caller-at-3s: onset 100 ms after the caller starts). 22 dB leaks.
      return { sampleRateHz, threshold: vadThreshold, minSpeechMs: 60, hangoverMs: 200, echoMarginDb: 24 };
    case 'telephony':
      // Line echo from the far-end hybrid is usually 10+ dB down; carriers add some noise.
      return { sampleRateHz, threshold: vadThreshold, minSpeechMs: 60, hangoverMs: 240, echoMarginDb: 10 };
  }
}

export class Vad {
  readonly sampleRateHz: number;
  readonly frameSamples: number;
  private readonly frameMs: number;
  private readonly marginDb: number;
  private readonly minSpeechMs: number;
  private readonly hangoverMs: number;
  private readonly echoMarginDb: number;
  private readonly floorUpDbPerFrame: number;
  // High-pass biquad coefficients (RBJ cookbook, Q = 1/sqrt(2)) and state.
  private readonly b0: number;
  private readonly b1: number;
  private readonly b2: number;
  private readonly a1: number;
  private readonly a2: number;
  private x1 = 0;
  private x2 = 0;
  private y1 = 0;
  private y2 = 0;

  private floorDb = Number.NaN;
  private agentSpeaking = false;
  private inSpeech = false;
  /** Consecutive voiced audio while not yet in speech. */
  private candidateMs = 0;
  private segmentMs = 0;
  private sinceVoicedMs = 0;
  private readonly result: VadResult = {
    speech: false,
    onset: false,
    offset: false,
    energyDb: -120,
    noiseFloorDb: MIN_FLOOR_DB,
    silenceMs: 0,
    speechMs: 0,
  };

  constructor(opts: VadOptions) {
    const { sampleRateHz } = opts;
    if (sampleRateHz !== 8000 && sampleRateHz !== 16000) {
      throw new RangeError(`Vad: sampleRateHz must be 8000 or 16000, got ${sampleRateHz}`);
    }
    const threshold = opts.threshold ?? DEFAULT_THRESHOLD;
    if (!(threshold >= 0 && threshold <= 1)) throw new RangeError(`Vad: threshold must be in 0..1, got ${threshold}`);
    this.sampleRateHz = sampleRateHz;
    this.frameMs = opts.frameMs ?? DEFAULT_FRAME_MS;
    this.frameSamples = Math.round((sampleRateHz * this.frameMs) / 1000);
    this.marginDb = MARGIN_BASE_DB + MARGIN_SPAN_DB * threshold;
    this.minSpeechMs = opts.minSpeechMs ?? DEFAULT_MIN_SPEECH_MS;
    this.hangoverMs = opts.hangoverMs ?? DEFAULT_HANGOVER_MS;
    this.echoMarginDb = opts.echoMarginDb ?? DEFAULT_ECHO_MARGIN_DB;
    this.floorUpDbPerFrame = (FLOOR_UP_DB_PER_S * this.frameMs) / 1000;

    const w0 = (2 * Math.PI * HIGH_PASS_HZ) / sampleRateHz;
    const cosW0 = Math.cos(w0);
    const alpha = Math.sin(w0) / (2 * Math.SQRT1_2);
    const a0 = 1 + alpha;
    this.b0 = (1 + cosW0) / 2 / a0;
    this.b1 = -(1 + cosW0) / a0;
    this.b2 = (1 + cosW0) / 2 / a0;
    this.a1 = (-2 * cosW0) / a0;
    this.a2 = (1 - alpha) / a0;
  }

  /** While the agent speaks, voiced frames need `echoMarginDb` more and the floor stops rising. */
  setAgentSpeaking(speaking: boolean): void {
    this.agentSpeaking = speaking;
  }

  process(frame: Int16Array): VadResult {
    if (frame.length !== this.frameSamples) {
      throw new RangeError(`Vad: expected ${this.frameSamples}-sample frames (${this.frameMs} ms at ${this.sampleRateHz} Hz), got ${frame.length}`);
    }
    // Features: full-band and speech-band energy in one pass; biquad state carries across frames.
    let fullSum = 0;
    let bandSum = 0;
    let x1 = this.x1;
    let x2 = this.x2;
    let y1 = this.y1;
    let y2 = this.y2;
    // Digital silence through a settled filter (state all zero) gives zeros: both sums stay 0, the
    // state too. Carrier streams send it whenever nobody speaks (muted, idle lines), so the loop
    // is skipped; a frame with any sound takes it, whatever the state.
    const settledSilence = x1 === 0 && x2 === 0 && y1 === 0 && y2 === 0 && isDigitalSilence(frame);
    for (let i = settledSilence ? frame.length : 0; i < frame.length; i++) {
      const x = frame[i]!;
      const y = this.b0 * x + this.b1 * x1 + this.b2 * x2 - this.a1 * y1 - this.a2 * y2;
      x2 = x1;
      x1 = x;
      y2 = y1;
      y1 = y;
      fullSum += x * x;
      bandSum += y * y;
    }
    // After speech, digital silence makes the IIR state decay into denormal floats, which are
    // ~15x slower to compute with (measured by bench/dsp-offload.ts): flush tiny values to zero.
    this.x1 = x1;
    this.x2 = x2;
    this.y1 = Math.abs(y1) < DENORMAL_FLUSH ? 0 : y1;
    this.y2 = Math.abs(y2) < DENORMAL_FLUSH ? 0 : y2;
    const n = frame.length * FULL_SCALE_SQUARED;
    const fullDb = 10 * Math.log10(fullSum / n + ENERGY_EPSILON);
    const bandDb = 10 * Math.log10(bandSum / n + ENERGY_EPSILON);
    const ratioDb = bandDb - fullDb;

    if (Number.isNaN(this.floorDb)) this.floorDb = Math.min(Math.max(bandDb, MIN_FLOOR_DB), INITIAL_FLOOR_CAP_DB);
    const thresholdDb = this.floorDb + this.marginDb + (this.agentSpeaking ? this.echoMarginDb : 0);
    const voiced = bandDb > thresholdDb && ratioDb > RATIO_MIN_DB;
    // The floor update is written out here, not in a method: when V8 compiles process() without
    // inlining such a method (seen on a CPU-starved machine), passing the double bandDb boxes it
    // into a fresh HeapNumber every frame (test/unit/audio/hot-path-allocation.test.ts).
    if (bandDb < this.floorDb) {
      this.floorDb += (bandDb - this.floorDb) * FLOOR_DOWN_ALPHA;
    } else if (!this.agentSpeaking) {
      this.floorDb += Math.min(bandDb - this.floorDb, this.floorUpDbPerFrame);
    }
    if (this.floorDb < MIN_FLOOR_DB) this.floorDb = MIN_FLOOR_DB;

    const r = this.result;
    r.onset = false;
    r.offset = false;
    r.energyDb = bandDb;
    r.noiseFloorDb = this.floorDb;
    const frameMs = this.frameMs;
    if (voiced) {
      this.sinceVoicedMs = 0;
      if (this.inSpeech) {
        this.segmentMs += frameMs;
      } else {
        this.candidateMs += frameMs;
        if (this.candidateMs >= this.minSpeechMs) {
          this.inSpeech = true;
          this.segmentMs = this.candidateMs;
          r.onset = true;
        }
      }
    } else {
      this.sinceVoicedMs += frameMs;
      this.candidateMs = 0;
      if (this.inSpeech) {
        if (this.sinceVoicedMs >= this.hangoverMs) {
          this.inSpeech = false;
          r.offset = true;
        } else {
          this.segmentMs += frameMs;
        }
      }
    }
    r.speech = this.inSpeech;
    r.silenceMs = this.sinceVoicedMs;
    // On the offset frame report the segment up to its last voiced frame, then clear it.
    r.speechMs = this.inSpeech ? this.segmentMs : r.offset ? this.segmentMs - (this.hangoverMs - frameMs) : 0;
    if (!this.inSpeech) this.segmentMs = 0;
    return r;
  }

  /** Back to the state after construction (floor unknown, no speech, filter cleared). */
  reset(): void {
    this.x1 = this.x2 = this.y1 = this.y2 = 0;
    this.floorDb = Number.NaN;
    this.agentSpeaking = false;
    this.inSpeech = false;
    this.candidateMs = 0;
    this.segmentMs = 0;
    this.sinceVoicedMs = 0;
    const r = this.result;
    r.speech = r.onset = r.offset = false;
    r.energyDb = -120;
    r.noiseFloorDb = MIN_FLOOR_DB;
    r.silenceMs = 0;
    r.speechMs = 0;
  }
}

/** Whether every sample of `frame` is 0. */
function isDigitalSilence(frame: Int16Array): boolean {
  for (let i = 0; i < frame.length; i++) if (frame[i] !== 0) return false;
  return true;
}
