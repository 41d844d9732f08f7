/**
 * The console's AudioWorklet module (runs on the audio rendering thread). Three processors:
 * - `vp-capture`: microphone at the context rate -> 16 kHz 16-bit mono PCM in 20 ms frames (320
 *   samples), posted to the page with the frame's RMS (the page's own end-of-speech clock);
 * - `vp-player`: agent PCM (16 kHz) -> the context rate, behind a small jitter buffer; `flush`
 *   empties it at once (barge-in); reports `started` (first sample of a burst reaches the output,
 *   in context time), `mark` (a position the page marked, e.g. the start of a turn's audio, reaches
 *   the output) and `drained` (queue empty for DRAIN_MS: time for `playback_done`);
 * - `vp-tap`: copies what reaches the speakers (after ducking) to the page, when recording.
 * Everything here is bounded: the player queue holds at most MAX_QUEUE_S of audio.
 */

declare const sampleRate: number;
declare const currentTime: number;
declare function registerProcessor(name: string, ctor: unknown): void;
declare class AudioWorkletProcessor {
  readonly port: MessagePort;
}

const PCM_RATE = 16000;
const FRAME = 320; // 20 ms at 16 kHz
/** Start a burst once this much is queued: absorbs network jitter between 20 ms frames. */
const JITTER_MS = 40;
/** ...or once the first sample has waited this long (a reply shorter than the buffer). */
const MAX_WAIT_MS = 60;
/** Queue empty this long after playing: the burst is over (not a late frame). */
const DRAIN_MS = 120;
/** Pending marks kept at most (one per turn; a guard). */
const MAX_MARKS = 64;
/** Agent audio queued beyond this is dropped (the engine paces in real time; this is a guard). */
const MAX_QUEUE_S = 60;

/**
 * Capture: a 2nd-order low-pass (biquad, cutoff 7 kHz) against aliasing, then linear interpolation
 * at 16 kHz. Cheap enough for the audio thread, and clean for speech (energy is below 7 kHz).
 */
class Capture extends AudioWorkletProcessor {
  private readonly step = sampleRate / PCM_RATE;
  private pos = 0; // position of the next output sample, in input samples (relative to `prev`)
  private prev = 0;
  private readonly frame = new Int16Array(FRAME);
  private n = 0;
  private sumSq = 0;
  // Biquad low-pass coefficients (RBJ cookbook, Q = 0.707) and state.
  private readonly b: number[];
  private readonly a: number[];
  private x1 = 0;
  private x2 = 0;
  private y1 = 0;
  private y2 = 0;

  constructor() {
    super();
    const w = (2 * Math.PI * Math.min(7000, sampleRate * 0.45)) / sampleRate;
    const alpha = Math.sin(w) / (2 * Math.SQRT1_2);
    const cos = Math.cos(w);
    const a0 = 1 + alpha;
    this.b = [(1 - cos) / 2 / a0, (1 - cos) / a0, (1 - cos) / 2 / a0];
    this.a = [(-2 * cos) / a0, (1 - alpha) / a0];
  }

  process(inputs: Float32Array[][]): boolean {
    const input = inputs[0]?.[0];
    if (!input) return true;
    for (let i = 0; i < input.length; i++) {
      const x = input[i]!;
      const y = this.b[0]! * x + this.b[1]! * this.x1 + this.b[2]! * this.x2 - this.a[0]! * this.y1 - this.a[1]! * this.y2;
      this.x2 = this.x1;
      this.x1 = x;
      this.y2 = this.y1;
      this.y1 = y;
      // Output samples falling between prev (index -1) and y (index 0).
      while (this.pos <= 0) {
        const s = this.prev + (y - this.prev) * (this.pos + 1);
        this.push(s);
        this.pos += this.step;
      }
      this.pos -= 1;
      this.prev = y;
    }
    return true;
  }

  private push(s: number): void {
    const v = Math.max(-1, Math.min(1, s));
    this.frame[this.n++] = Math.round(v * 32767);
    this.sumSq += v * v;
    if (this.n === FRAME) {
      const pcm = this.frame.slice();
      this.port.postMessage({ pcm, rms: Math.sqrt(this.sumSq / FRAME), t: currentTime }, [pcm.buffer]);
      this.n = 0;
      this.sumSq = 0;
    }
  }
}

class Player extends AudioWorkletProcessor {
  private readonly chunks: Int16Array[] = [];
  private offset = 0; // read position in chunks[0], fractional (16 kHz samples)
  private queued = 0; // 16 kHz samples queued
  private playing = false;
  private waitedS = 0;
  private emptyS = 0;
  private readonly step = PCM_RATE / sampleRate;
  private written = 0; // samples ever queued
  private played = 0; // samples ever consumed (or flushed)
  /** Marks waiting to be reached: [position in `written` samples, id]; bounded by MAX_MARKS. */
  private marks: Array<[number, number]> = [];

  constructor() {
    super();
    this.port.onmessage = (e: MessageEvent) => {
      const m = e.data as { pcm?: Int16Array; flush?: boolean; mark?: number };
      if (m.mark !== undefined) {
        if (this.marks.length < MAX_MARKS) this.marks.push([this.written, m.mark]);
        return;
      }
      if (m.flush) {
        this.played += this.queued;
        this.marks = [];
        this.chunks.length = 0;
        this.offset = 0;
        this.queued = 0;
        if (this.playing) this.port.postMessage({ type: 'drained', t: currentTime, flushed: true });
        this.playing = false;
        this.waitedS = 0;
        return;
      }
      if (m.pcm && m.pcm.length > 0 && this.queued + m.pcm.length <= MAX_QUEUE_S * PCM_RATE) {
        this.chunks.push(m.pcm);
        this.queued += m.pcm.length;
        this.written += m.pcm.length;
      }
    };
  }

  process(_inputs: Float32Array[][], outputs: Float32Array[][]): boolean {
    const out = outputs[0]![0]!;
    const blockS = out.length / sampleRate;
    if (!this.playing) {
      if (this.queued === 0) return true;
      this.waitedS += blockS;
      if (this.queued < (JITTER_MS / 1000) * PCM_RATE && this.waitedS < MAX_WAIT_MS / 1000) return true;
      this.playing = true;
      this.emptyS = 0;
      this.port.postMessage({ type: 'started', t: currentTime });
    }
    let i = 0;
    for (; i < out.length && this.chunks.length > 0; i++) {
      const c = this.chunks[0]!;
      const k = Math.floor(this.offset);
      const frac = this.offset - k;
      const a = c[k]! / 32768;
      // The next sample may be in the next chunk; at the very end, hold the last one.
      const nextSample = k + 1 < c.length ? c[k + 1]! : (this.chunks[1]?.[0] ?? c[k]!);
      out[i] = a + (nextSample / 32768 - a) * frac;
      this.offset += this.step;
      while (this.chunks.length > 0 && this.offset >= this.chunks[0]!.length) {
        this.offset -= this.chunks[0]!.length;
        this.queued -= this.chunks[0]!.length;
        this.played += this.chunks[0]!.length;
        this.chunks.shift();
      }
      // A mark is reached when the sample at its position is output (block start + i frames).
      while (this.marks.length > 0 && this.played + Math.floor(this.offset) >= this.marks[0]![0]) {
        const [, id] = this.marks.shift()!;
        this.port.postMessage({ type: 'mark', id, t: currentTime + i / sampleRate });
      }
    }
    if (i < out.length) {
      // Underrun: silence; after DRAIN_MS of it the burst is over.
      out.fill(0, i);
      this.emptyS += blockS;
      if (this.emptyS >= DRAIN_MS / 1000) {
        this.playing = false;
        this.waitedS = 0;
        this.offset = 0;
        this.port.postMessage({ type: 'drained', t: currentTime });
      }
    } else this.emptyS = 0;
    return true;
  }
}

/** Forwards what is played (mono, context rate) in ~100 ms batches; passes audio through. */
class Tap extends AudioWorkletProcessor {
  private buf = new Float32Array(Math.ceil(sampleRate / 10));
  private n = 0;

  process(inputs: Float32Array[][], outputs: Float32Array[][]): boolean {
    const input = inputs[0]?.[0];
    const out = outputs[0]?.[0];
    if (!input) return true;
    if (out) out.set(input);
    for (let i = 0; i < input.length; i++) {
      this.buf[this.n++] = input[i]!;
      if (this.n === this.buf.length) {
        const batch = this.buf;
        // Allocate first: transferring detaches `batch` (its length becomes 0).
        this.buf = new Float32Array(batch.length);
        this.port.postMessage(batch, [batch.buffer]);
        this.n = 0;
      }
    }
    return true;
  }
}

registerProcessor('vp-capture', Capture);
registerProcessor('vp-player', Player);
registerProcessor('vp-tap', Tap);
