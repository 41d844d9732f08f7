/**
 * Engine-side instrumentation for benchmarks, attached from outside the engine (no engine file is
 * changed): it wraps, per call, the transport's `sendAudio`/`clearAudio` and the actor's `onAudio`,
 * and wraps the node's pacer tick. What it measures:
 *
 * - frame lateness vs slot: a frame's departure minus the time its 20 ms slot opened. The slot
 *   schedule is continuous over an agent run (reply, welcome...): frame n of the run is due at
 *   runStart + max(0, n - leadFrames) * 20 ms, where runStart is the run's first frame. The actor
 *   restarts its own pacing schedule when its playout queue runs dry (TTS audio arriving late,
 *   e.g. behind a congested event loop): those underruns are counted and their frames measured
 *   against the original schedule, so they show up as lateness. The pacer ticks every 10 ms, so a
 *   frame may legitimately wait up to one tick: inside a tick the slot is max(due, the moment the
 *   tick was due); what remains is delay the engine added.
 * - frame lateness vs schedule: the same without the tick allowance (includes the 0-10 ms tick
 *   quantisation by design).
 * - barge-in reaction: from the inbound frame whose recognition confirmed the barge-in (the last
 *   frame handed to `onAudio` before `clearAudio`, as the sim ASR answers synchronously) to
 *   `clearAudio` (the carrier `clear`), and to the last agent frame sent after it (0 when none).
 *   Carrier frames that arrive out of order wait in the transport's jitter buffer before
 *   `onAudio` (in-order ones are handed over on arrival): the same reaction is also measured from
 *   that frame's arrival on the socket (the buffer's `push`).
 * - dropped frames: transport drops (backpressure) and playout-queue overflow.
 *
 * It reads private fields of CallActor by name (`d.transport`, the current run and the pacing
 * state: `runs.current` and `runs.output` (AgentRuns, SpeechOutput: paceStartMs, paceFramesSent,
 * playout) with `caller.vad`, or the older layouts with `run` and `output` or `playout` on the
 * actor): if the engine renames them, `attach` throws ("probe out of date") instead of measuring
 * nothing.
 */
import type { EngineNode } from '../../media-engine/node.js';
import type { CallActor } from '../../media-engine/session/actor.js';
import type { CallRecorder, TurnRecord } from '../../media-engine/session/recorder.js';
import { Histogram, type HistogramJson } from '../lib/stats.js';

interface Pacing {
  paceStartMs: number;
  paceFramesSent: number;
}
interface PlayoutLike {
  droppedSamples: number;
  frameSamples: number;
}
interface VadLike {
  process: (f: Int16Array) => unknown;
  y1: number;
  y2: number;
}
interface ActorInternals {
  d: { transport: TransportLike };
  run?: Partial<Pacing>;
  /** Current layout: AgentRuns (`current` run, SpeechOutput) and CallerSpeech. */
  runs?: { current?: unknown; output?: Pacing & { playout: PlayoutLike } };
  /** Previous layout: SpeechOutput on the actor. */
  output?: Pacing & { playout: PlayoutLike };
  caller?: { vad: VadLike };
  /** Older layout: playout and VAD on the actor, pacing on the run. */
  playout?: PlayoutLike;
  vad?: VadLike;
  onAudio: (pcm: unknown, raw?: unknown) => void;
}

/** The actor's pacing state, playout and VAD, whichever layout the engine has. */
function internalsOf(a: ActorInternals): { pacing: () => Pacing | undefined; playout: PlayoutLike; vad?: VadLike; run: () => unknown } | undefined {
  const runs = a.runs;
  if (runs?.output && typeof runs.output.paceStartMs === 'number' && runs.output.playout) {
    const out = runs.output;
    return { pacing: () => (runs.current ? out : undefined), playout: out.playout, vad: a.caller?.vad, run: () => runs.current };
  }
  if (a.output && typeof a.output.paceStartMs === 'number' && a.output.playout) {
    const out = a.output;
    return { pacing: () => (a.run ? out : undefined), playout: out.playout, vad: a.caller?.vad, run: () => a.run };
  }
  if (a.playout) return { pacing: () => (a.run && typeof a.run.paceStartMs === 'number' ? (a.run as Pacing) : undefined), playout: a.playout, vad: a.vad, run: () => a.run };
  return undefined;
}
interface TransportLike {
  kind: string;
  leadMs: number;
  /** Browser transport: frames dropped on backpressure. */
  droppedFrames?: number;
  /** Twilio transport: outbound drops and the inbound jitter buffer's counters. */
  stats?: () => { outFramesDropped: number; jitter: { lost: number; late: number; trimmed: number; received: number } };
  sendAudio(frame: Int16Array): void;
  clearAudio(): void;
  close(code: number, reason: string): void;
}

export interface ProbeSnapshot {
  lateSlot: HistogramJson;
  lateSched: HistogramJson;
  tickLate: HistogramJson;
  framesSent: number;
  underruns: number;
  droppedFrames: number;
  droppedPlayoutFrames: number;
  framesAfterClear: number;
  bargeToClearMs: number[];
  bargeArrivalToClearMs: number[];
  bargeToLastFrameMs: number[];
  turnOverheadMs: number[];
  turnTotalMs: number[];
  turns: number;
  interruptedTurns: number;
  callsAttached: number;
  /** Carrier calls: inbound frames through the jitter buffer, concealed (lost), late, trimmed. */
  inbound?: { received: number; concealed: number; late: number; trimmed: number };
}

const FRAME_MS = 20;

/**
 * Projection of a cheaper carrier upsampler, applied from outside: 8 -> 16 kHz by linear
 * interpolation instead of the 32-tap polyphase filter (~13 us a frame). Only the VAD consumes
 * this audio when the ASR takes mu-law (the sim ASR does), and an energy VAD behind a 300 Hz
 * high-pass does not need a brick-wall filter. Stands in for "run the VAD at 8 kHz" or a half-band filter.
 */
function patchUpsampler(t: TransportLike): void {
  const up = (t as unknown as { upsampler?: { processInto: (i: Int16Array, o: Int16Array) => number } }).upsampler;
  if (!up || typeof up.processInto !== 'function') throw new Error('probe out of date: TwilioTransport.upsampler not found');
  let last = 0;
  up.processInto = (input: Int16Array, out: Int16Array) => {
    for (let i = 0; i < input.length; i++) {
      const x = input[i]!;
      out[2 * i] = (last + x) >> 1;
      out[2 * i + 1] = x;
      last = x;
    }
    return input.length * 2;
  };
}

function transportDrops(t: TransportLike): number {
  return t.droppedFrames ?? t.stats?.().outFramesDropped ?? 0;
}

/**
 * Projection of the proposed VAD fix, applied from outside: after each frame, a high-pass state
 * that has decayed below 1e-20 is set to 0. On digital silence the biquad's output decays into
 * subnormal doubles (-1.5e-323), which x86 computes ~10x slower (26 us instead of 2.5 us a frame).
 */
function patchVadDenormals(vad: VadLike | undefined): void {
  if (!vad || typeof vad.process !== 'function' || typeof vad.y1 !== 'number') throw new Error('probe out of date: Vad state (y1, y2) not found');
  const process = vad.process.bind(vad);
  vad.process = (frame: Int16Array) => {
    const r = process(frame);
    if (vad.y1 < 1e-20 && vad.y1 > -1e-20) vad.y1 = 0;
    if (vad.y2 < 1e-20 && vad.y2 > -1e-20) vad.y2 = 0;
    return r;
  };
}

export class EngineProbe {
  readonly lateSlot = new Histogram(0, 2000, 0.05);
  readonly lateSched = new Histogram(0, 2000, 0.05);
  readonly tickLate = new Histogram(0, 2000, 0.05);
  framesSent = 0;
  framesAfterClear = 0;
  /** Times an actor restarted its pacing inside a run because its playout queue ran dry. */
  underruns = 0;
  bargeToClearMs: number[] = [];
  /** Same, from the confirming frame's arrival on the socket (carrier: includes the jitter buffer). */
  bargeArrivalToClearMs: number[] = [];
  bargeToLastFrameMs: number[] = [];
  turnOverheadMs: number[] = [];
  turnTotalMs: number[] = [];
  turns = 0;
  interruptedTurns = 0;
  callsAttached = 0;
  /** Drops of calls already closed (live calls are summed at snapshot time). */
  private closedDrops = { transport: 0, playoutSamples: 0 };
  private closedJitter = { lost: 0, late: 0, trimmed: 0, received: 0 };
  private jitterBase = { lost: 0, late: 0, trimmed: 0, received: 0 };
  private dropBase = { transport: 0, playoutSamples: 0 };
  private readonly live = new Set<ActorInternals>();
  private readonly playouts = new WeakMap<ActorInternals, PlayoutLike>();
  private inTick = false;
  private tickDueAt = 0;

  private vadDenormalFix = false;
  private cheapUpsample = false;

  /** Wraps the node's pacer tick and every call the node adds from now on. */
  attach(node: EngineNode, opts: { vadDenormalFix?: boolean; cheapUpsample?: boolean } = {}): void {
    this.vadDenormalFix = opts.vadDenormalFix ?? false;
    this.cheapUpsample = opts.cheapUpsample ?? false;
    const pacer = node.pacer as unknown as { tick: () => void; periodMs: number };
    if (typeof pacer.tick !== 'function') throw new Error('probe out of date: Pacer.tick not found');
    const tick = pacer.tick.bind(pacer);
    let lastTickAt = performance.now();
    pacer.tick = () => {
      const now = performance.now();
      this.tickDueAt = lastTickAt + pacer.periodMs;
      this.tickLate.record(now - this.tickDueAt);
      lastTickAt = now;
      this.inTick = true;
      try {
        tick();
      } finally {
        this.inTick = false;
      }
    };
    const set = node.calls.set.bind(node.calls);
    node.calls.set = (id: string, actor: CallActor) => {
      this.attachActor(actor);
      return set(id, actor);
    };
  }

  private attachActor(actor: CallActor): void {
    const a = actor as unknown as ActorInternals;
    const t = a.d?.transport;
    const internals = internalsOf(a);
    if (!t || typeof t.sendAudio !== 'function' || !internals || typeof a.onAudio !== 'function') {
      throw new Error('probe out of date: CallActor internals (d.transport, output/playout, onAudio) not found');
    }
    this.callsAttached++;
    this.live.add(a);
    this.playouts.set(a, internals.playout);
    if (this.vadDenormalFix) patchVadDenormals(internals.vad);
    if (this.cheapUpsample && t.kind === 'twilio') patchUpsampler(t);
    const leadFrames = Math.ceil(t.leadMs / FRAME_MS);
    let lastInAt = 0;
    let lastSentAt = 0;
    let clearedRun: unknown;
    let lastInArrivedAt = 0;
    let lastPopArrival = 0;
    let trackedRun: unknown;
    let runStart = 0;
    let runFrames = 0;
    let paceStart = 0;
    // The wrappers below run per frame: fixed arity, no rest/spread (an array per call), so the
    // probe adds as little as it can to the engine CPU it measures.
    const jb = (t as unknown as { jb?: { push: (seq: number, timestampMs: number, payload: unknown, nowMs: number) => unknown; pop: (atMs: number) => { kind: string; seq?: number } } }).jb;
    if (jb && typeof jb.push === 'function' && typeof jb.pop === 'function') {
      // Arrival time of each carrier frame by sequence number: a ring of 64 (1.28 s of frames; the
      // buffer holds at most maxDepthMs, 120 ms by default), small so the probe adds little to the
      // memory per call it helps measure.
      const arrivals = new Float64Array(64);
      const push = jb.push.bind(jb);
      jb.push = (seq: number, timestampMs: number, payload: unknown, nowMs: number) => {
        arrivals[seq & 63] = performance.now();
        // A frame handed to the actor from here on is handed over on its arrival (the transport
        // delivers in-order frames at once): its arrival is now, not that of the last pop.
        lastPopArrival = 0;
        return push(seq, timestampMs, payload, nowMs);
      };
      const pop = jb.pop.bind(jb);
      jb.pop = (atMs: number) => {
        const r = pop(atMs);
        lastPopArrival = r.kind === 'frame' && r.seq !== undefined ? arrivals[r.seq & 63]! : 0;
        return r;
      };
    }
    const onAudio = a.onAudio.bind(actor);
    a.onAudio = (pcm: unknown, raw?: unknown) => {
      lastInAt = performance.now();
      lastInArrivedAt = lastPopArrival || lastInAt;
      onAudio(pcm, raw);
    };
    const send = t.sendAudio.bind(t);
    t.sendAudio = (frame: Int16Array) => {
      const now = performance.now();
      const run = internals.run();
      const pacing = internals.pacing();
      if (run && pacing) {
        if (run === clearedRun) this.framesAfterClear++;
        if (run !== trackedRun) {
          trackedRun = run;
          runStart = pacing.paceStartMs;
          runFrames = 0;
        } else if (pacing.paceStartMs !== paceStart && now >= runStart + runFrames * FRAME_MS) {
          // The actor restarted its schedule after its queue ran dry, and the far end had played
          // all the run's audio sent so far: a gap the caller hears. A restart while the far end
          // still holds audio (the answer's first TTS chunk shorter than the lead, the next one a
          // moment later) is not an underrun; its frames are still measured against the schedule.
          this.underruns++;
        }
        paceStart = pacing.paceStartMs;
        const due = runStart + Math.max(0, runFrames - leadFrames) * FRAME_MS;
        runFrames++;
        this.lateSched.record(now - due);
        this.lateSlot.record(now - (this.inTick ? Math.max(due, this.tickDueAt) : due));
      }
      this.framesSent++;
      lastSentAt = now;
      send(frame);
    };
    const clear = t.clearAudio.bind(t);
    t.clearAudio = () => {
      const now = performance.now();
      clearedRun = internals.run();
      if (lastInAt > 0) {
        this.bargeToClearMs.push(now - lastInAt);
        this.bargeArrivalToClearMs.push(now - lastInArrivedAt);
        this.bargeToLastFrameMs.push(Math.max(0, lastSentAt - lastInAt));
      }
      clear();
    };
    const close = t.close.bind(t);
    t.close = (code: number, reason: string) => {
      if (this.live.delete(a)) {
        this.closedDrops.transport += transportDrops(t);
        const j = t.stats?.().jitter;
        if (j) {
          this.closedJitter.lost += j.lost;
          this.closedJitter.late += j.late;
          this.closedJitter.trimmed += j.trimmed;
          this.closedJitter.received += j.received;
        }
        this.closedDrops.playoutSamples += internals.playout.droppedSamples;
      }
      close(code, reason);
    };
  }

  /** A recorder that keeps each reply turn's timing (the engine calls it synchronously). */
  recorder(): CallRecorder {
    return {
      start: () => {},
      end: () => {},
      turn: (rec: TurnRecord) => {
        this.turns++;
        if (rec.timing.interrupted) this.interruptedTurns++;
        if (rec.timing.total_ms > 0) {
          this.turnOverheadMs.push(rec.timing.internal_overhead_ms);
          this.turnTotalMs.push(rec.timing.total_ms);
        }
      },
    };
  }

  /** Inbound jitter-buffer totals of carrier calls (concealed = lost ticks). */
  private jitter(): { lost: number; late: number; trimmed: number; received: number } {
    const out = { ...this.closedJitter };
    for (const a of this.live) {
      const j = a.d.transport.stats?.().jitter;
      if (!j) continue;
      out.lost += j.lost;
      out.late += j.late;
      out.trimmed += j.trimmed;
      out.received += j.received;
    }
    return out;
  }

  private drops(): { transport: number; playoutSamples: number } {
    let transport = this.closedDrops.transport;
    let playoutSamples = this.closedDrops.playoutSamples;
    for (const a of this.live) {
      transport += transportDrops(a.d.transport);
      playoutSamples += this.playouts.get(a)?.droppedSamples ?? 0;
    }
    return { transport, playoutSamples };
  }

  /** Starts a new measurement window. */
  reset(): void {
    this.lateSlot.reset();
    this.lateSched.reset();
    this.tickLate.reset();
    this.framesSent = 0;
    this.framesAfterClear = 0;
    this.underruns = 0;
    this.bargeToClearMs = [];
    this.bargeArrivalToClearMs = [];
    this.bargeToLastFrameMs = [];
    this.turnOverheadMs = [];
    this.turnTotalMs = [];
    this.turns = 0;
    this.interruptedTurns = 0;
    this.dropBase = this.drops();
    this.jitterBase = this.jitter();
  }

  snapshot(): ProbeSnapshot {
    const d = this.drops();
    const j = this.jitter();
    const anyLive = this.live.values().next().value as ActorInternals | undefined;
    const frameSamples = (anyLive && this.playouts.get(anyLive)?.frameSamples) || 320;
    return {
      lateSlot: this.lateSlot.toJSON(),
      lateSched: this.lateSched.toJSON(),
      tickLate: this.tickLate.toJSON(),
      framesSent: this.framesSent,
      underruns: this.underruns,
      droppedFrames: d.transport - this.dropBase.transport,
      droppedPlayoutFrames: Math.ceil((d.playoutSamples - this.dropBase.playoutSamples) / frameSamples),
      framesAfterClear: this.framesAfterClear,
      bargeToClearMs: this.bargeToClearMs,
      bargeArrivalToClearMs: this.bargeArrivalToClearMs,
      bargeToLastFrameMs: this.bargeToLastFrameMs,
      turnOverheadMs: this.turnOverheadMs,
      turnTotalMs: this.turnTotalMs,
      turns: this.turns,
      interruptedTurns: this.interruptedTurns,
      callsAttached: this.callsAttached,
      inbound: { received: j.received - this.jitterBase.received, concealed: j.lost - this.jitterBase.lost, late: j.late - this.jitterBase.late, trimmed: j.trimmed - this.jitterBase.trimmed },
    };
  }
}
