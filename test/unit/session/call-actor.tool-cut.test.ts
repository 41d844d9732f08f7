/**
 * A reply cut while its tool runs (the caller speaks over it): the tool's request has gone out, so
 * the turn record keeps the call, `interrupted`, and the next model request gets the interrupted
 * result instead of running the tool again. A real local endpoint that never answers.
 */
import http from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createOutboundClient } from '../../../shared/outbound/index.js';
import { weatherTool } from '../../helpers/session-config.js';
import { actorHarness } from './actor-harness.js';

let server: http.Server;
let url = '';
const received: string[] = [];

beforeAll(async () => {
  // Takes the request and never answers (a slow booking API).
  server = http.createServer((req) => {
    req.resume();
    received.push(req.url ?? '');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}/weather`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

it('the tool call cut by the caller is on the turn record as interrupted, and is not run again', async () => {
  const h = actorHarness(
    { tools: [{ ...weatherTool(url), timeout_ms: 30_000 }] },
    {
      outbound: createOutboundClient({ allowCidrs: ['127.0.0.1/32'] }),
      llm: { script: { rules: [{ when: 'weather', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }], afterTool: 'It is {{result}}.' }] } },
    },
  );
  h.actor.start();
  h.actor.post({ kind: 'text_inject', text: 'the weather in Paris', role: 'user' });
  await h.runUntil(() => h.transport.of('tool_call_in_progress').length === 1);
  // The request reached the endpoint before the cut.
  for (let i = 0; i < 200 && received.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
  expect(received).toEqual(['/weather']);
  h.clock.advance(400);
  h.actor.post({ kind: 'text_inject', text: 'never mind', role: 'user' });
  await h.runUntil(() => h.transport.of('turn_complete').length === 2);

  const cut = h.recorder.turns[0]!;
  expect(cut).toMatchObject({ turn: 1, interrupted: true });
  expect(cut.tool_calls).toEqual([
    expect.objectContaining({ tool_name: 'get_weather', tool_input: { city: 'Paris' }, status: 'interrupted', tool_output: { status: 'interrupted', note: expect.any(String) } }),
  ]);
  expect(cut.tool_calls[0]!.latency_ms).toBeGreaterThanOrEqual(400);
  expect(h.transport.of('tool_call_result')).toHaveLength(0);
  // The next request carries the interrupted result; the tool is not called again.
  const last = h.requests[h.requests.length - 1]!;
  expect(last.filter((m) => m.role === 'tool').map((m) => JSON.parse((m as { content: string }).content).status)).toEqual(['interrupted']);
  expect(received).toHaveLength(1);
});
