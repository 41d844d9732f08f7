/**
 * EngineMetrics reads transport counters of live calls at scrape time and folds a call's final
 * counts into totals when it ends: the exported counters never go backwards. Tracing is off
 * (no tracer at all) without an endpoint.
 */
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { EngineMetrics, type TransportCounters } from '../../../shared/observability/engine-metrics.js';
import type { TurnObservation } from '../../../shared/observability/call-telemetry.js';
import { startTracing } from '../../../shared/observability/tracing.js';

const vendors = { asr: 'sim', llm: 'sim', tts: 'sim' };

async function series(m: EngineMetrics, name: string): Promise<Record<string, number>> {
  const got = await m.registry.getSingleMetric(name)!.get();
  return Object.fromEntries(got.values.map((v) => [Object.values(v.labels).join(','), v.value]));
}

describe('engine metrics', () => {
  it('frame counters sum live calls and keep ended ones; gauges follow the live calls', async () => {
    const m = new EngineMetrics({ prewarmed: () => 3, recordsQueued: () => 7 });
    const a: TransportCounters = { lateIn: 2, droppedIn: 1, droppedOut: 0, jitterDepthMs: 40 };
    const b: TransportCounters = { lateIn: 5, droppedIn: 0, droppedOut: 4, jitterDepthMs: 100 };
    const c: TransportCounters = { lateIn: 0, droppedIn: 9, droppedOut: 1 };
    const ta = m.callStarted({ transport: 'twilio', vendors, counters: () => a });
    m.callStarted({ transport: 'twilio', vendors, counters: () => b });
    const tc = m.callStarted({ transport: 'browser', vendors, counters: () => c });

    expect(await series(m, 'voiceplane_engine_active_calls')).toEqual({ browser: 1, twilio: 2 });
    expect(await series(m, 'voiceplane_engine_frames_late_total')).toEqual({ browser: 0, twilio: 7 });
    expect(await series(m, 'voiceplane_engine_frames_dropped_in_total')).toEqual({ browser: 9, twilio: 1 });
    expect(await series(m, 'voiceplane_engine_jitter_buffer_depth_ms')).toEqual({ max: 100, mean: 70 });
    expect(await series(m, 'voiceplane_engine_prewarmed_sessions')).toEqual({ '': 3 });
    expect(await series(m, 'voiceplane_records_queue_depth')).toEqual({ '': 7 });

    a.lateIn = 4;
    ta.end('completed');
    ta.end('completed'); // idempotent
    tc.end('error');
    // The ended calls' counts stay; their gauges go.
    expect(await series(m, 'voiceplane_engine_frames_late_total')).toEqual({ browser: 0, twilio: 9 });
    expect(await series(m, 'voiceplane_engine_frames_dropped_in_total')).toEqual({ browser: 9, twilio: 1 });
    expect(await series(m, 'voiceplane_engine_frames_dropped_out_total')).toEqual({ browser: 1, twilio: 4 });
    expect(await series(m, 'voiceplane_engine_active_calls')).toEqual({ browser: 0, twilio: 1 });
    expect(await series(m, 'voiceplane_engine_jitter_buffer_depth_ms')).toEqual({ max: 100, mean: 100 });
    expect(await series(m, 'voiceplane_engine_calls_ended_total')).toEqual({ 'twilio,completed': 1, 'browser,failed': 1 });
    // Nothing is counted for an ended call any more.
    tc.bargeIn();
    tc.providerError('asr');
    expect(await series(m, 'voiceplane_engine_barge_ins_total')).toEqual({ '': 0 });
    expect(await series(m, 'voiceplane_engine_provider_errors_total')).toEqual({});
  });

  it('the health report\'s response time: mean end-of-turn to first audio of the replies since the last take, cut replies left out', () => {
    const m = new EngineMetrics();
    const t = m.callStarted({ transport: 'twilio', vendors, counters: () => ({ lateIn: 0, droppedIn: 0, droppedOut: 0 }) });
    const reply = (total: number, interrupted = false): TurnObservation => ({
      turn: 1,
      interrupted,
      originMs: 0,
      endMs: total,
      asrMs: 0,
      spoken: total > 0,
      stepStartedAt: [],
      steps: [],
      tools: [],
      ttsRequestAt: 0,
      ttsFirstAudioAt: 0,
      timing: { asr_ms: 0, llm_ttfb_ms: 0, tool_ms: 0, tts_ttfb_ms: 0, total_ms: total, internal_overhead_ms: 0 },
      ttsFailed: false,
    });
    const W = 15_000;
    expect(m.avgResponseMs(0, W)).toBeNull();
    t.turn(reply(300));
    t.turn(reply(500));
    t.turn(reply(0, true)); // cut before any audio
    // Heartbeats every 2 s read it without consuming it: the collector's 15 s report sees the window.
    expect(m.avgResponseMs(2_000, W)).toBe(400);
    expect(m.avgResponseMs(4_000, W)).toBe(400);
    // The window ends: its replies stay counted for one more window beside the new ones.
    expect(m.avgResponseMs(15_000, W)).toBe(400);
    t.turn(reply(250.555));
    expect(m.avgResponseMs(16_000, W)).toBe(350.19);
    expect(m.avgResponseMs(30_000, W)).toBe(250.56);
    // Two windows without a reply: none.
    expect(m.avgResponseMs(45_000, W)).toBeNull();
    t.end('completed');
    t.turn(reply(900)); // after the call ended: not counted
    expect(m.avgResponseMs(46_000, W)).toBeNull();
    // A long quiet spell (no heartbeat read for more than two windows) forgets everything.
    const m2 = new EngineMetrics();
    const t2 = m2.callStarted({ transport: 'twilio', vendors, counters: () => ({ lateIn: 0, droppedIn: 0, droppedOut: 0 }) });
    t2.turn(reply(100));
    expect(m2.avgResponseMs(100_000, W)).toBeNull();
  });

  it('tracing is off without an endpoint (no tracer); with one, spans reach <endpoint>/v1/traces over OTLP/HTTP', async () => {
    const off = startTracing({ serviceName: 'voiceplane' });
    expect(off.tracer).toBeUndefined();
    await off.shutdown();

    const received: Array<{ url?: string; type?: string; bytes: number }> = [];
    const collector = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ url: req.url, type: req.headers['content-type'], bytes: Buffer.concat(chunks).length });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => collector.listen(0, '127.0.0.1', r));
    try {
      const on = startTracing({ serviceName: 'voiceplane', endpoint: `http://127.0.0.1:${(collector.address() as { port: number }).port}/` });
      on.tracer!.startSpan('call').end();
      // Shutdown flushes the batch: the request has been answered when it resolves.
      await on.shutdown();
      expect(received).toHaveLength(1);
      expect(received[0]).toMatchObject({ url: '/v1/traces' });
      expect(received[0]!.bytes).toBeGreaterThan(0);
    } finally {
      await new Promise((r) => collector.close(r));
    }
  });
});
