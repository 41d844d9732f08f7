/**
 * The flow functions of a node (flow-tools.ts), run directly: what each node offers, a `tool`
 * node run by the engine on entry (arguments from variables, result into a variable, the single
 * edge followed), collected variables filled into an HTTP tool's templates (a real local server
 * through the outbound client), and the typed coercion of `set_variables`.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../../shared/clock.js';
import { createOutboundClient } from '../../../shared/outbound/index.js';
import type { FlowConfig } from '../../../shared/voice/flow.js';
import type { HttpToolConfig } from '../../../shared/voice/session-config.js';
import { buildCallTools, type CallTool } from '../../../media-engine/session/call-tools.js';
import { FlowState } from '../../../media-engine/session/flow-state.js';
import { coerce, flowStepContext } from '../../../media-engine/session/flow-tools.js';
import { sessionConfig } from '../../helpers/session-config.js';

const outbound = createOutboundClient({ allowCidrs: ['127.0.0.1/32'] });
let server: http.Server;
let url = '';
const seen: Array<{ url: string; body: string }> = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ slots: ['19:00', '20:30'] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
  await outbound.close?.();
});

const availability = (): HttpToolConfig => ({
  id: 't1',
  name: 'check_availability',
  description: 'free slots',
  parameters: { type: 'object', properties: { area: { type: 'string' } } },
  endpoint_url: `${url}/slots/{{date}}`,
  http_method: 'POST',
  headers: {},
  request_body: { date: '{{date}}', people: '{{party_size}}', area: '{{area}}' },
  timeout_ms: 5000,
  retry_count: 0,
});

const FLOW: FlowConfig = {
  start_node_id: 'collect',
  nodes: [
    { id: 'collect', type: 'start', label: 'Collect', instructions: 'Ask for date and size.', tools: [] },
    { id: 'lookup', type: 'tool', label: 'Look up', instructions: '', tool_name: 'check_availability', tool_arguments: { area: 'terrace' }, result_variable: 'slots' },
    { id: 'offer', type: 'prompt', label: 'Offer', instructions: 'Offer one of {{slots}}.', collect: [] },
  ],
  edges: [
    { from: 'collect', to: 'lookup', description: 'date and size known' },
    { from: 'lookup', to: 'offer', description: 'offer a slot' },
  ],
  variables: [
    { name: 'date', type: 'string' },
    { name: 'party_size', type: 'integer' },
    { name: 'slots', type: 'object' },
  ],
};

function setup(tool: HttpToolConfig = availability()): { flow: FlowState; step: ReturnType<typeof flowStepContext>; tools: CallTool[] } {
  const config = sessionConfig({ tools: [tool], flow: FLOW });
  const tools = buildCallTools(config, { outbound, clock: realClock });
  const flow = new FlowState(FLOW, {});
  const step = flowStepContext(flow, { callTools: tools, httpTools: config.tools, runDeps: { outbound, clock: realClock }, basePrompt: 'Base.' });
  return { flow, step, tools };
}

const signal = new AbortController().signal;

describe('flow functions of a node', () => {
  it('a node with tools: [] offers no agent tool, only set_variables and its transitions', () => {
    const { step } = setup();
    expect(step().tools.map((t) => t.spec.name)).toEqual(['set_variables', 'go_to_lookup']);
    expect(step().tools[0]!.spec.parameters).toEqual({ type: 'object', properties: { date: { type: 'string' }, party_size: { type: 'integer' }, slots: { type: 'object' } } });
  });

  it('entering a tool node runs its tool with variables filled in, stores the result and follows the edge', async () => {
    const { flow, step } = setup();
    const set = await step().tools.find((t) => t.spec.name === 'set_variables')!.run('{"date":"2026-12-24","party_size":"3"}', signal);
    expect(set.status).toBe('success');
    const go = await step().tools.find((t) => t.spec.name === 'go_to_lookup')!.run('{}', signal);
    expect(go.status).toBe('success');
    expect(go.effects).toEqual([
      { kind: 'enter', nodeId: 'lookup' },
      { kind: 'set', name: 'slots', value: { slots: ['19:00', '20:30'] } },
      { kind: 'enter', nodeId: 'offer' },
    ]);
    expect(JSON.parse(go.content)).toMatchObject({ ok: true, from: 'collect', now_in: 'offer', tool_results: { check_availability: { slots: ['19:00', '20:30'] } } });
    // The URL and body templates got the collected variables; the node's own argument too.
    expect(seen.at(-1)).toEqual({ url: '/slots/2026-12-24', body: JSON.stringify({ date: '2026-12-24', people: 3, area: 'terrace' }) });
    expect(flow.path).toEqual(['collect', 'lookup', 'offer']);
    const ctx = step();
    expect(ctx.system).toContain('Offer one of {"slots":["19:00","20:30"]}.');
    // `offer` collects nothing (collect: []) and has no edges: only the agent tool remains.
    expect(ctx.tools.map((t) => t.spec.name)).toEqual(['check_availability']);
    expect(ctx.unknownTool?.('go_to_collect')).toMatchObject({ status: 'error' });
    expect(ctx.unknownTool?.('lookup_weather')).toBeUndefined();
  });

  it("a tool node stores what the tool's response_path picks, as a normal call gives the model (not the whole response)", async () => {
    const { flow, step } = setup({ ...availability(), response_path: 'slots' });
    await step().tools.find((t) => t.spec.name === 'set_variables')!.run('{"date":"2026-12-24","party_size":"3"}', signal);
    const go = await step().tools.find((t) => t.spec.name === 'go_to_lookup')!.run('{}', signal);
    expect(go.effects).toContainEqual({ kind: 'set', name: 'slots', value: ['19:00', '20:30'] });
    expect(JSON.parse(go.content).tool_results).toEqual({ check_availability: ['19:00', '20:30'] });
    expect(flow.variables.slots).toEqual(['19:00', '20:30']);
  });

  it('set_variables coerces to the declared types and refuses the rest', () => {
    expect(coerce('integer', '4')).toBe(4);
    expect(coerce('integer', 4.5)).toBeUndefined();
    expect(coerce('number', '4.5')).toBe(4.5);
    expect(coerce('number', 'four')).toBeUndefined();
    expect(coerce('boolean', 'true')).toBe(true);
    expect(coerce('boolean', 'yes')).toBeUndefined();
    expect(coerce('string', 12)).toBe('12');
    expect(coerce('object', [1])).toBeUndefined();
    expect(coerce('array', [1])).toEqual([1]);
  });
});
