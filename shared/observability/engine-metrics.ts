/**
 * An engine node's metrics. Nothing here runs per audio frame: gauges and the transport frame
 * counters are read from the live calls at scrape time (`collect`), each call's final counters
 * are folded into totals when it ends (counters stay monotonic), and histograms and counters are
 * touched at turn boundaries only.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CallTelemetry, ProviderComponent, TurnObservation } from './call-telemetry.js';
import { llmBeforeAudioMs } from './call-telemetry.js';
import type { CallTrace } from './call-trace.js';

export type TransportKind = 'browser' | 'twilio';

/** A call's transport counters since it started (read at scrape time and at the call's end). */
export interface TransportCounters {
  /** Inbound frames that arrived after their play-out slot (carrier jitter buffer). */
  lateIn: number;
  /** Inbound audio dropped (over the rate budget, jitter-buffer overflow or trim, invalid frames). */
  droppedIn: number;
  /** Outbound frames dropped (socket backpressure). */
  droppedOut: number;
  /** Current jitter-buffer depth; absent: the transport has none (browser). */
  jitterDepthMs?: number;
}

interface LiveCall {
  transport: TransportKind;
  counters: () => TransportCounters;
}

/** Turn latency buckets in seconds: voice turns live between ~300 ms and a few seconds. */
const LATENCY_BUCKETS = [0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];
const COMPONENTS = ['asr', 'llm', 'tool', 'tts', 'overhead', 'total'] as const;
type FrameKey = 'lateIn' | 'droppedIn' | 'droppedOut';

export interface EngineMetricsSources {
  /** Pre-warmed sessions holding capacity. */
  prewarmed?: () => number;
  /** The conversation records writer's queue (records, the node's durable writes). */
  recordsQueued?: () => number;
}

export class EngineMetrics {
  readonly registry = new Registry();
  private readonly live = new Map<object, LiveCall>();
  /** Frame counters of ended calls, by transport. */
  private readonly retired: Record<TransportKind, Record<FrameKey, number>> = {
    browser: { lateIn: 0, droppedIn: 0, droppedOut: 0 },
    twilio: { lateIn: 0, droppedIn: 0, droppedOut: 0 },
  };
  /** One bound child per component: no label lookup per observation. */
  private readonly turnLatency: Record<(typeof COMPONENTS)[number], { observe(v: number): void }>;
  private readonly turns: Counter<'interrupted'>;
  private readonly bargeIns: Counter;
  private readonly providerErrors: Counter<'component' | 'vendor'>;
  private readonly callsEnded: Counter<'transport' | 'status'>;
  /** Replies with audio in the current window and the one before (the node's health report). */
  private responses = { sumMs: 0, n: 0, prevSumMs: 0, prevN: 0, windowStartMs: 0 };

  constructor(sources: EngineMetricsSources = {}) {
    const registers = [this.registry];
    const live = this.live;
    const retired = this.retired;
    new Gauge({
      name: 'voiceplane_engine_active_calls',
      help: 'Calls running on this engine node',
      labelNames: ['transport'],
      registers,
      collect() {
        this.reset();
        const n = { browser: 0, twilio: 0 };
        for (const c of live.values()) n[c.transport]++;
        this.set({ transport: 'browser' }, n.browser);
        this.set({ transport: 'twilio' }, n.twilio);
      },
    });
    if (sources.prewarmed) {
      const prewarmed = sources.prewarmed;
      new Gauge({ name: 'voiceplane_engine_prewarmed_sessions', help: 'Pre-warmed sessions holding capacity', registers, collect: function () { this.set(prewarmed()); } });
    }
    if (sources.recordsQueued) {
      const queued = sources.recordsQueued;
      new Gauge({ name: 'voiceplane_records_queue_depth', help: 'Conversation record operations waiting for the writer', registers, collect: function () { this.set(queued()); } });
    }
    const frameCounter = (name: string, help: string, key: FrameKey) =>
      new Counter({
        name,
        help,
        labelNames: ['transport'],
        registers,
        collect() {
          const sum = { browser: retired.browser[key], twilio: retired.twilio[key] };
          for (const c of live.values()) sum[c.transport] += c.counters()[key];
          this.reset();
          this.inc({ transport: 'browser' }, sum.browser);
          this.inc({ transport: 'twilio' }, sum.twilio);
        },
      });
    frameCounter('voiceplane_engine_frames_late_total', 'Inbound audio frames that arrived after their play-out slot', 'lateIn');
    frameCounter('voiceplane_engine_frames_dropped_in_total', 'Inbound audio dropped (rate budget, jitter-buffer overflow or trim, invalid frames)', 'droppedIn');
    frameCounter('voiceplane_engine_frames_dropped_out_total', 'Outbound audio frames dropped (socket backpressure)', 'droppedOut');
    new Gauge({
      name: 'voiceplane_engine_jitter_buffer_depth_ms',
      help: 'Jitter-buffer depth over live carrier calls (max and mean)',
      labelNames: ['stat'],
      registers,
      collect() {
        let max = 0;
        let sum = 0;
        let n = 0;
        for (const c of live.values()) {
          const d = c.counters().jitterDepthMs;
          if (d === undefined) continue;
          max = Math.max(max, d);
          sum += d;
          n++;
        }
        this.set({ stat: 'max' }, max);
        this.set({ stat: 'mean' }, n ? sum / n : 0);
      },
    });
    const latency = new Histogram({
      name: 'voiceplane_turn_latency_seconds',
      help: 'Agent reply latency by component: total = caller speech end to first agent audio; overhead = total minus asr, llm (before audio), tool and tts',
      labelNames: ['component'],
      buckets: LATENCY_BUCKETS,
      registers,
    });
    this.turnLatency = Object.fromEntries(COMPONENTS.map((c) => [c, latency.labels({ component: c })])) as unknown as EngineMetrics['turnLatency'];
    this.turns = new Counter({ name: 'voiceplane_engine_turns_total', help: 'Agent replies completed (interrupted or not)', labelNames: ['interrupted'], registers });
    this.bargeIns = new Counter({ name: 'voiceplane_engine_barge_ins_total', help: 'Confirmed barge-ins (the caller cut the agent)', registers });
    this.providerErrors = new Counter({ name: 'voiceplane_engine_provider_errors_total', help: 'Provider failures seen by calls (LLM errors, TTS retries exhausted, ASR streams closed by an error)', labelNames: ['component', 'vendor'], registers });
    this.callsEnded = new Counter({ name: 'voiceplane_engine_calls_ended_total', help: 'Calls ended on this node', labelNames: ['transport', 'status'], registers });
  }

  /** A call starts: its telemetry, which ends its gauges and folds its counters at `end`. */
  callStarted(opts: { transport: TransportKind; counters: () => TransportCounters; vendors: Record<ProviderComponent, string>; trace?: CallTrace }): CallTelemetry {
    const key = {};
    const entry: LiveCall = { transport: opts.transport, counters: opts.counters };
    this.live.set(key, entry);
    let ended = false;
    return {
      turn: (t: TurnObservation) => {
        if (ended) return;
        this.observeTurn(t);
        if (t.llmError) this.providerErrors.inc({ component: 'llm', vendor: opts.vendors.llm });
        if (t.ttsFailed) this.providerErrors.inc({ component: 'tts', vendor: opts.vendors.tts });
        opts.trace?.turn(t);
      },
      bargeIn: () => {
        if (!ended) this.bargeIns.inc();
      },
      providerError: (component) => {
        if (!ended) this.providerErrors.inc({ component, vendor: opts.vendors[component] });
      },
      end: (reason) => {
        if (ended) return;
        ended = true;
        const final = opts.counters();
        const r = this.retired[opts.transport];
        r.lateIn += final.lateIn;
        r.droppedIn += final.droppedIn;
        r.droppedOut += final.droppedOut;
        this.live.delete(key);
        this.callsEnded.inc({ transport: opts.transport, status: reason === 'error' ? 'failed' : 'completed' });
        opts.trace?.end(reason);
      },
    };
  }

  /**
   * Mean response time (end of the caller's turn to the reply's first audio) of the replies in
   * the last `windowMs` to 2 x `windowMs` (the current window and the whole one before it), null
   * when none. The health report's `avg_response_ms` (docs/system-analytics.md): heartbeats come
   * every 2 s but the collector stores one every report interval, so the window is that interval,
   * not the heartbeat's.
   */
  avgResponseMs(nowMs: number, windowMs: number): number | null {
    const r = this.responses;
    if (nowMs - r.windowStartMs >= windowMs) {
      // A whole window (or more) passed: the one that ended becomes the previous; older ones go.
      const justEnded = nowMs - r.windowStartMs < 2 * windowMs;
      r.prevSumMs = justEnded ? r.sumMs : 0;
      r.prevN = justEnded ? r.n : 0;
      r.sumMs = 0;
      r.n = 0;
      r.windowStartMs = nowMs;
    }
    const n = r.n + r.prevN;
    return n ? Math.round(((r.sumMs + r.prevSumMs) / n) * 100) / 100 : null;
  }

  private observeTurn(t: TurnObservation): void {
    this.turns.inc({ interrupted: String(t.interrupted) });
    const tm = t.timing;
    // A reply cut before any audio has no latency (total 0): it would drag the histograms down.
    if (tm.total_ms <= 0) return;
    this.responses.sumMs += tm.total_ms;
    this.responses.n++;
    const values: Record<(typeof COMPONENTS)[number], number> = {
      asr: tm.asr_ms,
      llm: llmBeforeAudioMs(t.steps),
      tool: tm.tool_ms,
      tts: tm.tts_ttfb_ms,
      overhead: tm.internal_overhead_ms,
      total: tm.total_ms,
    };
    for (const c of COMPONENTS) this.turnLatency[c].observe(values[c] / 1000);
  }
}
