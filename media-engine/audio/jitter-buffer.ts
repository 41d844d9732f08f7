/**
 * Adaptive jitter buffer for carrier audio frames (G.711 over Twilio, Telnyx, ...).
 *
 * The caller pushes frames as they arrive and pops one frame every frameMs. Frames live in a
 * preallocated ring of maxDepthMs / frameMs slots; payload bytes are copied in, so push and pop
 * allocate nothing (pop returns one of three reused result objects).
 *
 * Policy (bounded queue, rule 10: realtime audio drops the oldest):
 * - Playout starts once targetDepthMs of frames are buffered.
 * - Seq numbers are non-negative safe integers without wrap (carriers send chunk counters). Every
 *   loop runs over the ring's slots, never over a range of seq numbers, so no input value can
 *   make push or pop cost more than O(slots) (issue 11: a chunk of 1e300 froze the node).
 * - A frame older than the next one to play is 'late' and dropped; a frame already buffered is a
 *   'duplicate'; a frame arriving after a higher seq is placed in order ('reordered').
 * - A frame that would make the buffer span more than maxDepthMs drops the oldest ('overflow').
 * - When the next frame is missing:
 *     nothing buffered (underrun, e.g. a TCP stall) -> 'concealed' without advancing, so the
 *       stalled frames still play when they burst in; after maxDepthMs of underrun, playout
 *       stops and rebuffers ('empty');
 *     later frames buffered, depth below target -> wait one tick ('concealed'; depth grows);
 *     later frames buffered otherwise -> the frame is lost: 'concealed', skip it;
 *     after one waiting tick -> skip to the earliest buffered frame and play it.
 *   So every tick that has no audio to play counts once in `lost`, and a lost frame costs one tick.
 * - Target depth = clamp(minDepthMs, 3 x RFC 3550 interarrival jitter rounded up to frames,
 *   maxDepthMs). It grows at once and shrinks one frame per second. When the buffer holds more
 *   than the target for 200 ms, the oldest frame is dropped ('trimmed') to bring latency back.
 */
import { realClock, type Clock } from '../../shared/clock.js';
import { MULAW_SILENCE, mulawDecodeSample, mulawEncodeSample } from './g711.js';
import { JitterTarget } from './jitter-target.js';

export interface JitterBufferOptions {
  /** Duration of one frame. Default 20 ms. */
  frameMs?: number;
  /** Lowest target depth (and the depth playout starts at on a calm line). Default 20 ms. */
  minDepthMs?: number;
  /** Most audio held; also the longest underrun concealed before rebuffering. Default 120 ms. */
  maxDepthMs?: number;
  /** Bytes per frame (160 = 20 ms of 8 kHz G.711). Default 160. */
  frameBytes?: number;
  /** Pads short payloads. Default 0xff (mu-law silence). */
  fillByte?: number;
  /** Time source when push/pop are called without explicit times. Default realClock (monotonic). */
  clock?: Clock;
}

export type PushResult = 'accepted' | 'late' | 'duplicate' | 'overflow';

export type PopResult =
  | { readonly kind: 'frame'; readonly seq: number; readonly payload: Uint8Array }
  /** `skipped`: the frame was given up as lost (false: still waited for, e.g. an underrun). */
  | { readonly kind: 'concealed'; readonly seq: number; readonly skipped: boolean }
  | { readonly kind: 'empty' };

export interface JitterBufferStats {
  /** Every push, whatever its result. */
  received: number;
  played: number;
  /** Ticks answered with 'concealed'. */
  lost: number;
  late: number;
  reordered: number;
  duplicate: number;
  overflow: number;
  /** Frames dropped to bring latency back to the target. */
  trimmed: number;
  depthMs: number;
  targetDepthMs: number;
  jitterMs: number;
}

/** Excess depth must persist this long before a frame is trimmed. */
const TRIM_AFTER_MS = 200;

export class JitterBuffer {
  private readonly frameMs: number;
  private readonly minDepthMs: number;
  private readonly maxDepthMs: number;
  private readonly frameBytes: number;
  private readonly fillByte: number;
  private readonly clock: Clock;
  private readonly slots: number;
  private readonly trimAfterPops: number;
  private readonly ring: Uint8Array;
  /** One fixed view per slot, made once, so pop hands out payloads without allocating. */
  private readonly slotViews: Uint8Array[];
  private readonly slotSeq: Float64Array;
  private readonly slotFull: Uint8Array;

  private count = 0;
  private newestSeq = -1;
  private oldestSeq = -1;
  private started = false;
  private everStarted = false;
  private nextSeq = 0;
  /** A 'concealed' tick already went out for nextSeq. */
  private held = false;
  private underrunTicks = 0;
  private excessPops = 0;
  /** Target depth from the arrival jitter (jitter-target.ts). */
  private readonly target: JitterTarget;
  private readonly st = { received: 0, played: 0, lost: 0, late: 0, reordered: 0, duplicate: 0, overflow: 0, trimmed: 0 };

  private readonly frameOut: { kind: 'frame'; seq: number; payload: Uint8Array };
  private readonly concealedOut = { kind: 'concealed' as const, seq: 0, skipped: false };
  private readonly emptyOut = { kind: 'empty' as const };

  constructor(opts: JitterBufferOptions = {}) {
    this.frameMs = opts.frameMs ?? 20;
    this.minDepthMs = opts.minDepthMs ?? 20;
    this.maxDepthMs = opts.maxDepthMs ?? 120;
    this.frameBytes = opts.frameBytes ?? 160;
    this.fillByte = opts.fillByte ?? MULAW_SILENCE;
    this.clock = opts.clock ?? realClock;
    if (!(this.frameMs > 0) || !(this.minDepthMs >= this.frameMs) || !(this.maxDepthMs >= this.minDepthMs)) {
      throw new RangeError('JitterBuffer: need 0 < frameMs <= minDepthMs <= maxDepthMs');
    }
    this.slots = Math.ceil(this.maxDepthMs / this.frameMs);
    this.trimAfterPops = Math.ceil(TRIM_AFTER_MS / this.frameMs);
    this.ring = new Uint8Array(this.slots * this.frameBytes);
    this.slotViews = [];
    for (let i = 0; i < this.slots; i++) this.slotViews.push(this.ring.subarray(i * this.frameBytes, (i + 1) * this.frameBytes));
    this.slotSeq = new Float64Array(this.slots);
    this.slotFull = new Uint8Array(this.slots);
    this.target = new JitterTarget(this.frameMs, this.minDepthMs, this.maxDepthMs);
    this.frameOut = { kind: 'frame', seq: 0, payload: this.slotViews[0]! };
  }

  push(seq: number, timestampMs: number, payload: Uint8Array, arrivalMs: number = this.clock.monotonicMs()): PushResult {
    // Safe integers only: above 2^53, seq + 1 === seq and the slot arithmetic stops meaning anything.
    if (!Number.isSafeInteger(seq) || seq < 0) throw new RangeError(`JitterBuffer: seq must be a non-negative safe integer, got ${seq}`);
    if (!Number.isFinite(timestampMs)) throw new RangeError(`JitterBuffer: timestampMs must be finite, got ${timestampMs}`);
    this.st.received++;
    if (this.has(seq)) {
      this.st.duplicate++;
      return 'duplicate';
    }
    this.target.onArrival(timestampMs, arrivalMs);
    if (this.everStarted && seq < this.nextSeq) {
      this.st.late++;
      return 'late';
    }
    // Keep the span [front, newest] within the ring. While playing, the front is nextSeq even when
    // nothing is buffered, so a jump ahead moves our place instead of overwriting a slot.
    if (this.started || this.count > 0) {
      const front = this.frontSeq();
      if (seq < front && this.newestSeq - seq >= this.slots) {
        // Before playout starts the incoming frame can itself be the oldest: drop it.
        this.st.overflow++;
        return 'overflow';
      }
      if (seq - front >= this.slots) this.dropBefore(seq - this.slots + 1);
    }
    if (this.count > 0 && seq < this.newestSeq) this.st.reordered++;

    const slot = seq % this.slots;
    const view = this.slotViews[slot]!;
    const copied = Math.min(payload.length, this.frameBytes);
    view.set(copied === payload.length ? payload : payload.subarray(0, copied));
    if (copied < this.frameBytes) view.fill(this.fillByte, copied);
    this.slotSeq[slot] = seq;
    this.slotFull[slot] = 1;
    if (this.count === 0 || seq > this.newestSeq) this.newestSeq = seq;
    if (this.count === 0 || seq < this.oldestSeq) this.oldestSeq = seq;
    this.count++;
    return 'accepted';
  }

  /**
   * Call once per frameMs. The returned object is reused, and a frame's payload is a view into the
   * ring: read or copy it before the next push or pop.
   */
  pop(nowMs: number = this.clock.monotonicMs()): PopResult {
    this.target.onPop(nowMs);
    if (!this.started) {
      if (this.count === 0 || this.count * this.frameMs < this.target.depthMs) return this.emptyOut;
      this.started = true;
      this.everStarted = true;
      this.nextSeq = this.oldestSeq;
      this.held = false;
      this.underrunTicks = 0;
      this.excessPops = 0;
    }

    if (this.count === 0) {
      // Underrun: the frames may only be late (a stalled TCP stream), so keep our place.
      if (this.underrunTicks * this.frameMs >= this.maxDepthMs) {
        this.started = false;
        return this.emptyOut;
      }
      this.underrunTicks++;
      return this.conceal(false);
    }
    this.underrunTicks = 0;

    const depthFrames = this.newestSeq - this.nextSeq + 1;
    const targetFrames = Math.ceil(this.target.depthMs / this.frameMs);
    this.excessPops = depthFrames > targetFrames ? this.excessPops + 1 : 0;
    if (this.excessPops >= this.trimAfterPops && this.has(this.nextSeq)) {
      this.take(this.nextSeq);
      this.st.trimmed++;
      this.nextSeq++;
      this.excessPops = 0;
    }

    if (!this.has(this.nextSeq)) {
      if (this.held) {
        this.nextSeq = this.oldestSeq; // waited one tick already: skip the gap
      } else {
        // Buffered up to the target: the frame had its full wait and is lost. Below: wait a tick.
        return this.conceal(this.newestSeq - this.nextSeq + 1 >= targetFrames);
      }
    }
    const out = this.frameOut;
    out.seq = this.nextSeq;
    out.payload = this.take(this.nextSeq);
    this.nextSeq++;
    this.held = false;
    this.st.played++;
    return out;
  }

  /**
   * The payload of `seq` if it is buffered and not yet played, else undefined; the buffer is not
   * changed. A view into the ring, like pop's: read it before the next push or pop.
   */
  peek(seq: number): Uint8Array | undefined {
    return this.has(seq) ? this.slotViews[seq % this.slots] : undefined;
  }

  stats(): JitterBufferStats {
    return {
      ...this.st,
      depthMs: this.depthFrames() * this.frameMs,
      targetDepthMs: this.target.depthMs,
      jitterMs: this.target.jitterMs,
    };
  }

  /** The highest seq pushed so far (-1 before the first): where a stream renumbered from here continues. */
  get newestPushed(): number {
    return this.newestSeq;
  }

  /** Back to the state after construction (for a new stream or after a carrier 'clear'). */
  reset(): void {
    this.slotFull.fill(0);
    this.count = 0;
    this.newestSeq = this.oldestSeq = -1;
    this.started = this.everStarted = this.held = false;
    this.nextSeq = this.underrunTicks = this.excessPops = 0;
    this.target.reset();
    for (const key of Object.keys(this.st) as (keyof typeof this.st)[]) this.st[key] = 0;
  }

  /** 'concealed' for nextSeq; `skip` gives the frame up as lost, otherwise we wait for it. */
  private conceal(skip: boolean): PopResult {
    const out = this.concealedOut;
    out.seq = this.nextSeq;
    out.skipped = skip;
    this.st.lost++;
    if (skip) {
      this.nextSeq++;
      this.held = false;
    } else {
      this.held = true;
    }
    return out;
  }

  private frontSeq(): number {
    return this.started ? this.nextSeq : this.oldestSeq;
  }

  private depthFrames(): number {
    return this.count === 0 ? 0 : this.newestSeq - this.frontSeq() + 1;
  }

  private has(seq: number): boolean {
    const slot = seq % this.slots;
    return this.slotFull[slot] === 1 && this.slotSeq[slot] === seq;
  }

  /** Removes a buffered frame and returns its slot view (valid until that slot is reused). */
  private take(seq: number): Uint8Array {
    const slot = seq % this.slots;
    this.slotFull[slot] = 0;
    this.count--;
    if (this.count > 0 && seq === this.oldestSeq) this.oldestSeq = this.findOldestFrom(seq + 1);
    return this.slotViews[slot]!;
  }

  /**
   * Drops every frame below `seq` (counted as overflow) and moves the front there. Walks the ring's
   * slots, never the seq range: a jump from 0 to 2e8 (or 1e300) used to loop once per number in
   * between and froze the node (issue 11). O(slots) whatever `seq` is.
   */
  private dropBefore(seq: number): void {
    for (let slot = 0; slot < this.slots; slot++) {
      if (this.slotFull[slot] === 1 && this.slotSeq[slot]! < seq) {
        this.slotFull[slot] = 0;
        this.count--;
        this.st.overflow++;
      }
    }
    // `held` stays: if we were already waiting, the next pop skips straight to the new frames.
    if (this.started) this.nextSeq = seq;
    if (this.count > 0 && this.oldestSeq < seq) this.oldestSeq = this.findOldestFrom(seq);
  }

  /** The lowest buffered seq >= `seq` (newestSeq if none): a scan of the slots, O(slots). */
  private findOldestFrom(seq: number): number {
    let oldest = Number.POSITIVE_INFINITY;
    for (let slot = 0; slot < this.slots; slot++) {
      const s = this.slotSeq[slot]!;
      if (this.slotFull[slot] === 1 && s >= seq && s < oldest) oldest = s;
    }
    return oldest === Number.POSITIVE_INFINITY ? this.newestSeq : oldest;
  }
}

/**
 * Fills `out` with a concealment frame for mu-law audio: `prev` repeated, fading by 6 dB per
 * consecutive concealed frame (`count` = 1 for the first), ramped within the frame to avoid a
 * step, fading out during the 4th frame and silence (0xff) after it. Bytes past `prev` are silence. Repeating 20 ms is crude (no pitch
 * search, unlike G.711 Appendix I) but masks a single lost frame far better than a hole.
 */
export function conceal(prev: Uint8Array, out: Uint8Array, count: number): void {
  const k = Math.max(1, count);
  const startGain = Math.pow(0.5, k - 1);
  const endGain = k >= 4 ? 0 : Math.pow(0.5, k);
  const n = out.length;
  for (let i = 0; i < n; i++) {
    if (k > 4 || i >= prev.length) {
      out[i] = MULAW_SILENCE;
      continue;
    }
    const gain = startGain + ((endGain - startGain) * i) / n;
    out[i] = mulawEncodeSample(Math.round(mulawDecodeSample(prev[i]!) * gain));
  }
}
