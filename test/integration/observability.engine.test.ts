/**
 * Engine observability against a real node and one short simulated browser call (real time):
 * `/metrics` (token enforced) shows the live call, then its turn latency series and the call's
 * end; an in-memory span exporter receives the call's trace: `call` > `turn` > `asr.final`,
 * `llm.first_token` (one per LLM step), `tool.call`, `tts.first_byte`.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { loadConfig } from '../../shared/config.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import type { EngineNode } from '../../media-engine/node.js';
import { startSimEngine } from '../helpers/sim-engine.js';
import { captureLogger, TEST_OUTBOUND_ALLOW_CIDRS } from '../helpers/infra.js';
import { VoiceClient } from '../helpers/voice-client.js';
import { sessionConfig, weatherTool } from '../helpers/session-config.js';
import { metricsScraper, sample } from '../helpers/metrics-scrape.js';

const TOKEN = 'metrics-token-0123456789';
let node: EngineNode;
let registry: MemoryRegistry;
let toolServer: http.Server;
let toolUrl = '';
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

beforeAll(async () => {
  toolServer = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ forecast: 'sunny' }));
    });
  });
  await new Promise<void>((r) => toolServer.listen(0, '127.0.0.1', r));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as { port: number }).port}/weather`;
  registry = new MemoryRegistry();
  const config = loadConfig({ OUTBOUND_ALLOW_CIDRS: TEST_OUTBOUND_ALLOW_CIDRS, METRICS_TOKEN: TOKEN }, { enginePort: 0, host: '127.0.0.1', engineCapacity: 4, maxSockets: 4 });
  node = await startSimEngine({
    config,
    logger: captureLogger().logger,
    registry,
    tracer: provider.getTracer('test'),
    llm: { ttftMs: 30, tokensPerSecond: 200, script: { rules: [{ when: 'weather', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }], afterTool: 'It is {{result}}.' }] } },
    tts: { ttfbMs: 20 },
  });
});

afterAll(async () => {
  await node?.close();
  await registry?.close();
  await provider.shutdown();
  await new Promise((r) => toolServer?.close(r));
});

const { scrape, metrics } = metricsScraper(() => node.port, TOKEN);

describe('engine observability', () => {
  it('refuses scrapes without the token', async () => {
    const none = await scrape();
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
    expect((await scrape('Bearer wrong-token-0123456789')).status).toBe(401);
    expect((await scrape(TOKEN)).status).toBe(401);
  });

  it('exports one call: live gauge, turn latency series, barge-in free end, and its trace', { timeout: 40_000 }, async () => {
    const before = await metrics();
    expect(sample(before, 'voiceplane_engine_active_calls{transport="browser"}')).toBe(0);
    // Deltas: a retried attempt (the realtime project retries once) sees the first one's counts.
    const endedBefore = sample(before, 'voiceplane_engine_calls_ended_total{transport="browser",status="completed"}') ?? 0;
    const countBefore = sample(before, 'voiceplane_turn_latency_seconds_count{component="total"}') ?? 0;
    const sumBefore = (component: string) => sample(before, `voiceplane_turn_latency_seconds_sum{component="${component}"}`) ?? 0;
    const turnsBefore = sample(before, 'voiceplane_engine_turns_total{interrupted="false"}') ?? 0;
    exporter.reset();

    const cfg = sessionConfig({ tools: [weatherTool(toolUrl)] });
    await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${cfg.session_id}?profile=browser_headset`);
    let turnTiming: Record<string, number>;
    try {
      await c.waitForType('pipeline_ready');
      await c.say('what is the weather');
      const done = await c.waitFor((e) => e.type === 'turn_complete' && e.turn === 1, 20_000);
      turnTiming = done.timing as Record<string, number>;
      expect(turnTiming.total_ms).toBeGreaterThan(0);

      const during = await metrics();
      expect(sample(during, 'voiceplane_engine_active_calls{transport="browser"}')).toBe(1);
      expect(sample(during, 'voiceplane_turn_latency_seconds_count{component="total"}')).toBe(countBefore + 1);
      for (const [component, field] of [['total', 'total_ms'], ['asr', 'asr_ms'], ['tool', 'tool_ms'], ['tts', 'tts_ttfb_ms'], ['overhead', 'internal_overhead_ms']]) {
        expect(sample(during, `voiceplane_turn_latency_seconds_sum{component="${component}"}`)! - sumBefore(component), component).toBeCloseTo(turnTiming[field] / 1000, 3);
      }
      expect(sample(during, 'voiceplane_engine_turns_total{interrupted="false"}')).toBe(turnsBefore + 1);
      // Process metrics ride along (event-loop delay from prom-client's defaults).
      expect(during).toMatch(/^voiceplane_process_nodejs_eventloop_lag_p99_seconds /m);
    } finally {
      c.close();
    }
    await c.closed();
    await waitUntil(async () => sample(await metrics(), 'voiceplane_engine_active_calls{transport="browser"}') === 0);
    const after = await metrics();
    expect(sample(after, 'voiceplane_engine_calls_ended_total{transport="browser",status="completed"}')).toBe(endedBefore + 1);

    const spans = exporter.getFinishedSpans();
    const call = one(spans, 'call');
    expect(call.attributes['voiceplane.session_id']).toBe(cfg.session_id);
    const turn = one(spans, 'turn');
    expect(turn.parentSpanContext?.spanId).toBe(call.spanContext().spanId);
    expect(turn.attributes['voiceplane.turn']).toBe(1);
    expect(turn.attributes['voiceplane.turn.total_ms']).toBe(turnTiming!.total_ms);
    const children = spans.filter((s) => s.parentSpanContext?.spanId === turn.spanContext().spanId);
    expect(children.map((s) => s.name).sort()).toEqual(['asr.final', 'llm.first_token', 'llm.first_token', 'tool.call', 'tts.first_byte']);
    for (const s of [turn, ...children]) expect(s.spanContext().traceId).toBe(call.spanContext().traceId);
    const tool = one(children, 'tool.call');
    expect(tool.attributes['voiceplane.tool.name']).toBe('get_weather');
    // Children lie within their turn.
    for (const s of children) {
      expect(ms(s.startTime)).toBeGreaterThanOrEqual(ms(turn.startTime) - 1);
      expect(ms(s.endTime)).toBeLessThanOrEqual(ms(turn.endTime) + 1);
    }
    // The tool ran after the first step's model output and before the second step started (marks are rounded to 1 ms).
    const steps = children.filter((s) => s.name === 'llm.first_token').sort((a, b) => ms(a.startTime) - ms(b.startTime));
    expect(ms(tool.startTime)).toBeGreaterThanOrEqual(ms(steps[0].endTime) - 2);
    expect(ms(steps[1].startTime)).toBeGreaterThanOrEqual(ms(tool.endTime) - 2);
  });
});

function one(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found, `spans named ${name}`).toHaveLength(1);
  return found[0];
}

function ms(t: [number, number]): number {
  return t[0] * 1000 + t[1] / 1e6;
}

async function waitUntil(pred: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
