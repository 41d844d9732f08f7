/**
 * Connector tools on a call (engine side): one function per action, pinned values filled from
 * the call context, every failure an error result, and the actor reporting them like any tool
 * call (events and turn records). The connector is a fake `CallConnectors`; the real one runs in
 * test/integration/connectors.calls.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../shared/errors.js';
import { realClock, SimulatedClock } from '../../../shared/clock.js';
import type { ConnectorToolConfig, SessionConfig } from '../../../shared/voice/session-config.js';
import { buildCallTools } from '../../../media-engine/session/call-tools.js';
import { callVariables, fillPinned, MAX_CONNECTOR_RESULT_CHARS, type CallConnectors } from '../../../media-engine/session/connector-tools.js';
import { sessionConfig, weatherTool } from '../../helpers/session-config.js';
import { actorHarness } from './actor-harness.js';

const CALLER = '+14155550199';
const LINE = '+14155550101';

function calcomTool(over: Partial<ConnectorToolConfig> = {}): ConnectorToolConfig {
  return {
    tool_id: 'tool-cal',
    connection_id: '0193a4c2-7b7e-7cc1-8f00-0000000000c9',
    provider_id: 'calcom',
    timeout_ms: 2000,
    actions: [
      {
        name: 'calcom__book',
        description: 'Book a slot for the caller.',
        parameters: { type: 'object', properties: { start: { type: 'string' }, name: { type: 'string' }, email: { type: 'string' } }, required: ['start', 'name', 'email'] },
        fixed: { event_type_id: 77, phone: '{{caller_number}}', time_zone: '{{tz|Europe/London}}' },
      },
      { name: 'calcom__list_free_slots', description: 'Free slots.', parameters: { type: 'object', properties: {} }, fixed: {} },
    ],
    ...over,
  };
}

/** Records every request; answers with `answer` (a function may throw). */
function fakeConnectors(answer: (body: Record<string, unknown>, signal: AbortSignal) => unknown | Promise<unknown> = (b) => ({ booked: true, echo: b })) {
  const calls: Array<{ workspaceId: string; connectionId: string; action: string; body: Record<string, unknown> }> = [];
  const connectors: CallConnectors = {
    async execute(req, signal) {
      calls.push(req);
      return answer(req.body, signal);
    },
  };
  return { connectors, calls };
}

function carrierConfig(over: Partial<SessionConfig> = {}): SessionConfig {
  return sessionConfig({ connector_tools: [calcomTool()], call_id: 'call-1', from_number: CALLER, to_number: LINE, connection_type: 'twilio', ...over });
}

const ARGS = JSON.stringify({ start: '2030-03-04T09:00:00.000Z', name: 'Ann Lee', email: 'ann@example.com' });

describe('connector tools: building the functions', () => {
  it('one function per action after the HTTP tools, named <provider>__<action>, with the parameters the config carries', () => {
    const tools = buildCallTools(carrierConfig({ tools: [weatherTool('http://127.0.0.1:1/w')] }), { clock: realClock });
    expect(tools.map((t) => t.spec.name)).toEqual(['get_weather', 'calcom__book', 'calcom__list_free_slots']);
    expect(tools[1]!.spec).toEqual({
      name: 'calcom__book',
      description: 'Book a slot for the caller.',
      parameters: { type: 'object', properties: { start: { type: 'string' }, name: { type: 'string' }, email: { type: 'string' } }, required: ['start', 'name', 'email'] },
    });
  });

  it('an HTTP tool named like a built-in function the call offers (saved before the names were reserved) is left out, not offered twice', () => {
    const clash = { ...weatherTool('http://127.0.0.1:1/w'), name: 'transfer_to_human' };
    const tools = buildCallTools(carrierConfig({ tools: [weatherTool('http://127.0.0.1:1/w'), clash], human_handoff: true }), { clock: realClock, requestHandoff: () => {} });
    expect(tools.map((t) => t.spec.name)).toEqual(['get_weather', 'calcom__book', 'calcom__list_free_slots', 'transfer_to_human']);
    // Without the built-in on this call, the agent's own tool of that name stays.
    const own = buildCallTools(carrierConfig({ tools: [clash] }), { clock: realClock });
    expect(own.map((t) => t.spec.name)).toEqual(['transfer_to_human', 'calcom__book', 'calcom__list_free_slots']);
  });

  it('a config without connector_tools (an older control plane) builds none', () => {
    const { connector_tools: _none, ...old } = carrierConfig();
    expect(buildCallTools(old, { clock: realClock }).map((t) => t.spec.name)).toEqual([]);
  });
});

describe('connector tools: call variables and pinned values', () => {
  it('caller_number is the other party: the caller inbound, the callee outbound; carrier facts beat dynamic variables', () => {
    const inbound = callVariables(carrierConfig({ dynamic_variables: { caller_number: '+10000000000', plan: 'gold' } }));
    expect(inbound).toMatchObject({ caller_number: CALLER, agent_number: LINE, from_number: CALLER, to_number: LINE, plan: 'gold', call_id: 'call-1', call_direction: 'inbound' });
    const outbound = callVariables(carrierConfig({ call_direction: 'outbound', from_number: LINE, to_number: CALLER }));
    expect(outbound).toMatchObject({ caller_number: CALLER, agent_number: LINE });
    // A browser session has no carrier number: a dynamic variable may supply one.
    expect(callVariables(sessionConfig({ dynamic_variables: { caller_number: '+4930123456' } })).caller_number).toBe('+4930123456');
  });

  it('fills placeholders in nested strings, keeps other JSON values, applies defaults, names the first missing variable', () => {
    const vars = { caller_number: CALLER, name: 'Ann' };
    expect(fillPinned({ phone: '{{caller_number}}', note: 'call {{ name }} back', n: 3, ok: true, tags: ['{{name}}'], deep: { tz: '{{tz|UTC}}' } }, vars)).toEqual({
      value: { phone: CALLER, note: 'call Ann back', n: 3, ok: true, tags: ['Ann'], deep: { tz: 'UTC' } },
    });
    expect(fillPinned({ a: '{{nope}}', b: '{{also_nope}}' }, vars)).toMatchObject({ missing: 'nope' });
    // Prototype keys are not variables.
    expect(fillPinned({ a: '{{constructor}}' }, vars)).toMatchObject({ missing: 'constructor' });
  });
});

describe('connector tools: running an action', () => {
  const signal = () => new AbortController().signal;

  it('merges the model arguments with the pinned values (pinned win) and returns the data as JSON', async () => {
    const fake = fakeConnectors((b) => ({ uid: 'bk_1', start: b.start }));
    const [book] = buildCallTools(carrierConfig(), { clock: realClock, connectors: fake.connectors });
    // The model tries to set a pinned parameter: ignored.
    const r = await book!.run(JSON.stringify({ ...JSON.parse(ARGS), phone: '+19999999999' }), signal());
    expect(r).toMatchObject({ status: 'success', content: '{"uid":"bk_1","start":"2030-03-04T09:00:00.000Z"}', output: { uid: 'bk_1', start: '2030-03-04T09:00:00.000Z' }, attempts: 1 });
    expect(fake.calls).toEqual([
      {
        workspaceId: sessionConfig().workspace_id,
        connectionId: calcomTool().connection_id,
        action: 'calcom__book',
        body: { start: '2030-03-04T09:00:00.000Z', name: 'Ann Lee', email: 'ann@example.com', event_type_id: 77, phone: CALLER, time_zone: 'Europe/London' },
      },
    ]);
  });

  it('a pinned variable the call lacks: error result naming it, the connector is not called', async () => {
    const fake = fakeConnectors();
    // A browser session: no carrier number, no dynamic variable.
    const [book] = buildCallTools(sessionConfig({ connector_tools: [calcomTool()] }), { clock: realClock, connectors: fake.connectors });
    const r = await book!.run(ARGS, signal());
    expect(r).toMatchObject({ status: 'error', attempts: 0 });
    expect(r.error).toContain('{{caller_number}}');
    expect(JSON.parse(r.content)).toEqual({ error: r.error });
    expect(fake.calls).toHaveLength(0);
  });

  it('arguments that are not a JSON object: error result, no call', async () => {
    const fake = fakeConnectors();
    const [book] = buildCallTools(carrierConfig(), { clock: realClock, connectors: fake.connectors });
    expect(await book!.run('{"start": ', signal())).toMatchObject({ status: 'error', error: 'the model sent arguments that are not JSON' });
    expect(await book!.run('[1,2]', signal())).toMatchObject({ status: 'error', error: 'the arguments must be a JSON object' });
    expect(fake.calls).toHaveLength(0);
  });

  it('a connector failure (AppError) is an error result with its message; anything else a plain one', async () => {
    const disconnected = fakeConnectors(() => {
      throw new AppError('CONNECTOR_NOT_CONNECTED', 'Cal.com is disconnected; connect it again first');
    });
    const [book] = buildCallTools(carrierConfig(), { clock: realClock, connectors: disconnected.connectors });
    expect(await book!.run(ARGS, signal())).toMatchObject({ status: 'error', error: 'Cal.com is disconnected; connect it again first', attempts: 1 });
    const buggy = fakeConnectors(() => {
      throw new TypeError('secret-ish internals');
    });
    const [book2] = buildCallTools(carrierConfig(), { clock: realClock, connectors: buggy.connectors });
    expect(await book2!.run(ARGS, signal())).toMatchObject({ status: 'error', error: 'the connector failed unexpectedly' });
  });

  it('no connector on the engine: error result', async () => {
    const [book] = buildCallTools(carrierConfig(), { clock: realClock });
    expect(await book!.run(ARGS, signal())).toMatchObject({ status: 'error', error: 'connector tools are not configured on this engine' });
  });

  it('the tool timeout (call clock) and a barge-in both end the run with an error result and abort the connector', async () => {
    const clock = new SimulatedClock();
    const seen: AbortSignal[] = [];
    const hanging = fakeConnectors((_b, s) => (seen.push(s), new Promise(() => {})));
    const [book] = buildCallTools(carrierConfig({ connector_tools: [calcomTool({ timeout_ms: 3000 })] }), { clock, connectors: hanging.connectors });
    const timed = book!.run(ARGS, signal());
    await new Promise((r) => setImmediate(r));
    clock.advance(2999);
    await new Promise((r) => setImmediate(r));
    expect(seen[0]!.aborted).toBe(false);
    clock.advance(1);
    expect(await timed).toMatchObject({ status: 'error', error: 'calcom__book timed out after 3000 ms' });
    expect(seen[0]!.aborted).toBe(true);

    const barge = new AbortController();
    const cancelled = book!.run(ARGS, barge.signal);
    await new Promise((r) => setImmediate(r));
    barge.abort();
    expect(await cancelled).toMatchObject({ status: 'error', error: 'cancelled' });
    expect(seen[1]!.aborted).toBe(true);
  });

  it('a large answer is cut for the model, marked as truncated', async () => {
    const fake = fakeConnectors(() => ({ rows: 'x'.repeat(MAX_CONNECTOR_RESULT_CHARS * 2) }));
    const [book] = buildCallTools(carrierConfig(), { clock: realClock, connectors: fake.connectors });
    const r = await book!.run(ARGS, signal());
    expect(r.status).toBe('success');
    expect(r.content.length).toBeLessThan(MAX_CONNECTOR_RESULT_CHARS + 100);
    expect(JSON.parse(r.content)).toMatchObject({ truncated: true });
  });
});

describe('connector tools in a call (actor, sim LLM)', () => {
  const script = {
    rules: [{ when: 'book', toolCalls: [{ name: 'calcom__book', arguments: JSON.parse(ARGS) as Record<string, unknown> }], afterTool: 'Done: {{result}}' }],
  };

  it('the model calls calcom__book: tool events on the socket, the call in the turn record, the reply uses the result', async () => {
    const fake = fakeConnectors(() => ({ uid: 'bk_9', status: 'accepted' }));
    const h = actorHarness(carrierConfig(), { llm: { script }, connectors: fake.connectors });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'please book me in', role: 'user' });
    await h.runUntil(() => h.recorder.turns.length === 1, 10_000);
    expect(h.transport.of('tool_calls_started')[0]!.tools).toEqual([{ id: expect.any(String), name: 'calcom__book', arguments: JSON.parse(ARGS) }]);
    expect(h.transport.of('tool_call_result')[0]).toMatchObject({ tool_name: 'calcom__book', result: '{"uid":"bk_9","status":"accepted"}' });
    expect(h.recorder.turns[0]!.tool_calls).toEqual([expect.objectContaining({ tool_name: 'calcom__book', status: 'success', tool_output: { uid: 'bk_9', status: 'accepted' } })]);
    expect(h.recorder.turns[0]!.assistant_text).toContain('bk_9');
    expect(fake.calls[0]!.body).toMatchObject({ phone: CALLER, event_type_id: 77 });
  });

  it('a failing connector: the model reads an error result and the call goes on', async () => {
    const fake = fakeConnectors(() => {
      throw new AppError('CONNECTOR_NOT_CONNECTED', 'Cal.com is disconnected; connect it again first');
    });
    const h = actorHarness(carrierConfig(), { llm: { script }, connectors: fake.connectors });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'please book me in', role: 'user' });
    await h.runUntil(() => h.recorder.turns.length === 1, 10_000);
    expect(h.recorder.turns[0]!.tool_calls).toEqual([expect.objectContaining({ tool_name: 'calcom__book', status: 'error', error_message: 'Cal.com is disconnected; connect it again first' })]);
    expect(h.recorder.turns[0]!.assistant_text).toContain('disconnected');
    h.actor.post({ kind: 'text_inject', text: 'thanks anyway', role: 'user' });
    await h.runUntil(() => h.recorder.turns.length === 2, 10_000);
    expect(h.recorder.turns[1]!.assistant_text).toBe('You said: thanks anyway.');
    expect(h.transport.closed).toBeUndefined();
  });
});
