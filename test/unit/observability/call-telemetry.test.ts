/**
 * A CallActor on a simulated clock reporting to the real EngineMetrics and CallTrace (in-memory
 * span exporter): a barge-in, interrupted and played replies, injected versus spoken turns, an LLM
 * failure and the call's end reach the metrics and the trace as they happen.
 */
import { describe, expect, it } from 'vitest';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode } from '@opentelemetry/api';
import { EngineMetrics } from '../../../shared/observability/engine-metrics.js';
import { CallTrace } from '../../../shared/observability/call-trace.js';
import type { CallTelemetry } from '../../../shared/observability/call-telemetry.js';
import type { SimulatedClock } from '../../../shared/clock.js';
import { actorHarness } from '../session/actor-harness.js';
import type { LlmProvider } from '../../../shared/providers/types.js';

const QUESTION = 'tell me about the opening hours of the restaurant on the weekend';
const vendors = { asr: 'sim', llm: 'sim', tts: 'sim' };

/** Telemetry whose trace reads the harness's clock once the harness exists. */
function setup() {
  const metrics = new EngineMetrics();
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let clock: SimulatedClock | undefined;
  let inner: CallTelemetry | undefined;
  const lazy = (): CallTelemetry => {
    inner ??= metrics.callStarted({
      transport: 'browser',
      vendors,
      counters: () => ({ lateIn: 0, droppedIn: 0, droppedOut: 0 }),
      trace: new CallTrace(provider.getTracer('t'), clock!, { sessionId: 's', agentId: 'a', transport: 'browser', vendors }),
    });
    return inner;
  };
  const telemetry: CallTelemetry = {
    turn: (t) => lazy().turn(t),
    bargeIn: () => lazy().bargeIn(),
    providerError: (c) => lazy().providerError(c),
    end: (r) => lazy().end(r),
  };
  return { metrics, exporter, telemetry, bind: (c: SimulatedClock) => ((clock = c), lazy()) };
}

/** A counter's or gauge's value for `labels`, or undefined when that series does not exist. */
async function value(m: EngineMetrics, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const got = await m.registry.getSingleMetric(name)!.get();
  return got.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
}

function byName(spans: ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((s) => s.name === name);
}

describe('call telemetry from a CallActor', () => {
  it('counts a confirmed barge-in, both replies and the end; spans only spoken turns get asr.final', async () => {
    const o = setup();
    const h = actorHarness({}, { telemetry: o.telemetry });
    o.bind(h.clock);
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: QUESTION, role: 'user' });
    await h.runUntil(() => h.transport.of('tts_audio_start').length === 1);
    await h.silence(1000);
    await h.speak('wait a second');
    await h.silence(200);
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);

    expect(await value(o.metrics, 'voiceplane_engine_barge_ins_total')).toBe(1);
    expect(await value(o.metrics, 'voiceplane_engine_turns_total', { interrupted: 'true' })).toBe(1);
    expect(await value(o.metrics, 'voiceplane_engine_turns_total', { interrupted: 'false' })).toBe(1);
    expect(await value(o.metrics, 'voiceplane_engine_active_calls', { transport: 'browser' })).toBe(1);
    // Latency samples need audio sent after the origin; the simulated providers answer in zero
    // time, so the latency histograms are exercised by test/integration/observability.engine.test.ts.

    h.actor.endCall('done');
    expect(await value(o.metrics, 'voiceplane_engine_active_calls', { transport: 'browser' })).toBe(0);
    expect(await value(o.metrics, 'voiceplane_engine_calls_ended_total', { transport: 'browser', status: 'completed' })).toBe(1);

    const spans = o.exporter.getFinishedSpans();
    const [call] = byName(spans, 'call');
    expect(call!.attributes['voiceplane.end_reason']).toBe('done');
    const turns = byName(spans, 'turn').sort((a, b) => Number(a.attributes['voiceplane.turn']) - Number(b.attributes['voiceplane.turn']));
    expect(turns.map((t) => [t.attributes['voiceplane.turn'], t.attributes['voiceplane.turn.interrupted']])).toEqual([
      [1, true],
      [2, false],
    ]);
    for (const t of turns) expect(t.parentSpanContext?.spanId).toBe(call!.spanContext().spanId);
    const childrenOf = (t: ReadableSpan) => spans.filter((s) => s.parentSpanContext?.spanId === t.spanContext().spanId).map((s) => s.name).sort();
    // Turn 1 was injected text: no ASR span.
    expect(childrenOf(turns[0]!)).toEqual(['llm.first_token', 'tts.first_byte']);
    expect(childrenOf(turns[1]!)).toEqual(['asr.final', 'llm.first_token', 'tts.first_byte']);
  });

  it('an LLM failure is a provider error of its vendor and an error status on the turn', async () => {
    const o = setup();
    const failing = (sim: LlmProvider): LlmProvider => ({
      ...sim,
      // eslint-disable-next-line require-yield
      stream: async function* () {
        throw new Error('model unavailable');
      },
    });
    const h = actorHarness({}, { telemetry: o.telemetry, wrapLlm: failing });
    o.bind(h.clock);
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: QUESTION, role: 'user' });
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    expect(await value(o.metrics, 'voiceplane_engine_provider_errors_total', { component: 'llm', vendor: 'sim' })).toBe(1);
    const [turn] = byName(o.exporter.getFinishedSpans(), 'turn');
    expect(turn!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'model unavailable' });
    h.actor.endCall('done');
  });
});
