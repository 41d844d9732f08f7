/**
 * Flow (stored, validated, nothing saved by /validate), mode, publish refusing an invalid flow in
 * flow mode, the telephony binding (E.164, enums, one agent per number) and the phone lookup.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestUser, expectError, expectInvalid, restClient, startAgentsApp, type AgentsApp, type Call, type TestUser } from '../unit/agents/support.js';

let h: AgentsApp;
let owner: TestUser;
let other: TestUser;
let call: Call;
let agentId = '';

const node = (id: string, type = 'prompt') => ({ id, type, label: id });

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h);
  [owner, other] = await Promise.all([createTestUser(h), createTestUser(h)]);
  agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Flowy' })).body.data.id;
});

afterAll(async () => {
  await h?.close();
});

describe('flow', () => {
  it('an agent without a flow has the empty flow (invalid: no start node)', async () => {
    const res = await call('GET', `/agents/${agentId}/flow`, owner.token);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      id: null,
      agent_id: agentId,
      version: 0,
      created_at: null,
      updated_at: null,
      graph: { nodes: [], edges: [], start_node_id: '' },
      variables: [],
      is_valid: false,
    });
    expect(res.body.data.validation_errors.map((e: { code: string }) => e.code)).toEqual(['MISSING_START_NODE']);
  });

  it('validate names each broken rule and the offending node ids, and saves nothing', async () => {
    const graph = {
      nodes: [node('s', 'start'), node('a'), node('a'), node('b', 'teleport'), node('orphan'), node('s2', 'start')],
      edges: [
        { from: 's', to: 'a' },
        { from: 'a', to: 'ghost' },
        { from: 'phantom', to: 'b' },
      ],
      start_node_id: 's',
    };
    const res = await call('POST', `/agents/${agentId}/flow/validate`, owner.token, { graph });
    expect(res.status).toBe(200);
    const byCode = Object.fromEntries(res.body.data.errors.map((e: { code: string; node_ids: string[] }) => [e.code, e.node_ids]));
    expect(byCode).toEqual({
      DUPLICATE_NODE_ID: ['a'],
      UNKNOWN_NODE_TYPE: ['b'],
      MULTIPLE_START_NODES: ['s', 's2'],
      EDGE_UNKNOWN_NODE: ['ghost', 'phantom'],
      UNREACHABLE_NODE: ['b', 'orphan', 's2'],
    });
    expect(res.body.data.is_valid).toBe(false);
    expect(res.body.data.validation_errors).toEqual(res.body.data.errors);
    for (const e of res.body.data.errors) expect(typeof e.message).toBe('string');

    const missing = await call('POST', `/agents/${agentId}/flow/validate`, owner.token, { graph: { nodes: [node('p')], edges: [], start_node_id: 'x' } });
    expect(missing.body.data.errors.find((e: { code: string }) => e.code === 'MISSING_START_NODE').node_ids).toEqual(['x']);
    const wrongType = await call('POST', `/agents/${agentId}/flow/validate`, owner.token, { graph: { nodes: [node('p')], edges: [], start_node_id: 'p' } });
    expect(wrongType.body.data.errors).toEqual([{ code: 'START_NODE_WRONG_TYPE', message: expect.any(String), node_ids: ['p'] }]);
    const good = await call('POST', `/agents/${agentId}/flow/validate`, owner.token, { graph: { nodes: [node('s', 'start'), node('p')], edges: [{ from: 's', to: 'p' }], start_node_id: 's' } });
    expect(good.body.data).toEqual({ is_valid: true, errors: [], validation_errors: [] });

    expect((await call('GET', `/agents/${agentId}/flow`, owner.token)).body.data.version).toBe(0);
  });

  it('request-level problems are 400 naming the field', async () => {
    expectInvalid(await call('POST', `/agents/${agentId}/flow/validate`, owner.token, {}), 'graph');
    expectInvalid(await call('PUT', `/agents/${agentId}/flow`, owner.token, { variables: [] }), 'graph');
    expectInvalid(await call('PUT', `/agents/${agentId}/flow`, owner.token, { graph: { nodes: 'x' } }), 'graph.nodes');
    expectInvalid(await call('PUT', `/agents/${agentId}/flow`, owner.token, { graph: 'x' }), 'graph');
    expectInvalid(await call('PUT', `/agents/${agentId}/flow`, owner.token, { graph: { nodes: [] }, variables: [{ name: '1bad', type: 'string' }] }), 'variables[0].name');
    expectInvalid(await call('PUT', `/agents/${agentId}/flow`, owner.token, { graph: { nodes: [] }, variables: [{ name: 'ok', type: 'date' }] }), 'variables[0].type');
    expectInvalid(
      await call('PUT', `/agents/${agentId}/flow`, owner.token, { graph: { nodes: [] }, variables: [{ name: 'v', type: 'string' }, { name: 'v', type: 'number' }] }),
      'variables[1].name',
    );
  });

  it('an invalid flow is saved with its errors; publishing in flow mode refuses it', async () => {
    const saved = await call('PUT', `/agents/${agentId}/flow`, owner.token, { graph: { nodes: [node('s', 'start'), node('lost')], edges: [], start_node_id: 's' } });
    expect(saved.status).toBe(200);
    expect(saved.body.data).toMatchObject({ version: 1, is_valid: false, validation_errors: [{ code: 'UNREACHABLE_NODE', node_ids: ['lost'] }] });
    expect((await call('PUT', `/agents/${agentId}/mode`, owner.token, { mode: 'flow' })).body.data).toEqual({ mode: 'flow' });
    expectError(await call('POST', `/agents/${agentId}/versions/publish`, owner.token), 409, 'CONFLICT');

    const fixed = await call('PUT', `/agents/${agentId}/flow`, owner.token, {
      graph: { nodes: [node('s', 'start'), node('lost')], edges: [{ from: 's', to: 'lost' }], start_node_id: 's' },
      variables: [{ name: 'customer_name', type: 'string' }],
    });
    expect(fixed.body.data).toMatchObject({ version: 2, is_valid: true, variables: [{ name: 'customer_name', type: 'string' }] });
    expect((await call('POST', `/agents/${agentId}/versions/publish`, owner.token)).body.data.version_number).toBe(1);
    expect((await h.app.agents.liveConfig(agentId)).flow).toMatchObject({ version: 2, is_valid: true });
  });

  it('mode must be single_prompt or flow', async () => {
    expectInvalid(await call('PUT', `/agents/${agentId}/mode`, owner.token, { mode: 'freestyle' }), 'mode');
    expectInvalid(await call('PUT', `/agents/${agentId}/mode`, owner.token, {}), 'mode');
    expect((await call('PUT', `/agents/${agentId}/mode`, owner.token, { mode: 'single_prompt' })).body.data).toEqual({ mode: 'single_prompt' });
    expect((await call('GET', `/agents/${agentId}/mode`, owner.token)).body.data).toEqual({ mode: 'single_prompt' });
  });
});

describe('telephony binding', () => {
  const tel = () => `/agents/${agentId}/telephony`;

  it('reads the default binding before one is written', async () => {
    const res = await call('GET', tel(), owner.token);
    expect(res.body.data).toMatchObject({ agent_id: agentId, carrier_phone_number: '', call_direction: 'both', human_transfer_mode: 'phone', carrier_auth_token: '' });
    // Nothing written yet: no timestamps (null, not empty strings).
    expect(res.body.data).toMatchObject({ created_at: null, updated_at: null });
    expect((await call('GET', `/agents/${agentId}`, owner.token)).body.data.telephony).toBeNull();
  });

  it('validates every field', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ carrier_phone_number: '4155552671' }, 'carrier_phone_number'],
      [{ carrier_phone_number: '+1415555' }, 'carrier_phone_number'],
      [{ carrier_phone_number: '+999123' }, 'carrier_phone_number'],
      [{ call_direction: 'sideways' }, 'call_direction'],
      [{ human_transfer_mode: 'pigeon' }, 'human_transfer_mode'],
      [{ human_transfer_number: '12' }, 'human_transfer_number'],
      [{ webhook_url: 'nope' }, 'webhook_url'],
      [{ transcribe_human_segment: 'yes' }, 'transcribe_human_segment'],
      [{ generate_call_summary: 3 }, 'generate_call_summary'],
    ];
    for (const [body, field] of cases) expectInvalid(await call('PUT', tel(), owner.token, body), field);
  });

  it('normalises to E.164, merges partial writes and binds a number to one agent only', async () => {
    const first = await call('PUT', tel(), owner.token, { carrier_phone_number: ' +61291234567 ', human_transfer_mode: 'panel', panel_project_id: 'proj-1' });
    expect(first.body.data).toMatchObject({ carrier_phone_number: '+61291234567', human_transfer_mode: 'panel', panel_project_id: 'proj-1' });
    const partial = await call('PUT', tel(), owner.token, { call_direction: 'outbound' });
    expect(partial.body.data).toMatchObject({ carrier_phone_number: '+61291234567', call_direction: 'outbound', human_transfer_mode: 'panel' });
    // The panel project is the agent's own workspace (or a label): another workspace's id is refused.
    expectInvalid(await call('PUT', tel(), owner.token, { panel_project_id: other.workspaceId }), 'panel_project_id');
    const own = await call('PUT', tel(), owner.token, { panel_project_id: owner.workspaceId.toUpperCase() });
    expect(own.body.data.panel_project_id).toBe(owner.workspaceId);
    // same agent, same number: fine
    expect((await call('PUT', tel(), owner.token, { carrier_phone_number: '+61291234567' })).status).toBe(200);

    const mine2 = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Two' })).body.data.id;
    const theirs = (await call('POST', '/agents', other.token, { workspace_id: other.workspaceId, name: 'Theirs' })).body.data.id;
    expectError(await call('PUT', `/agents/${mine2}/telephony`, owner.token, { carrier_phone_number: '+61291234567' }), 409, 'PHONE_NUMBER_TAKEN');
    expectError(await call('PUT', `/agents/${theirs}/telephony`, other.token, { carrier_phone_number: '+61291234567' }), 409, 'PHONE_NUMBER_TAKEN');

    // detaching frees the number
    expect((await call('PUT', tel(), owner.token, { carrier_phone_number: '' })).body.data.carrier_phone_number).toBe('');
    expect((await call('PUT', `/agents/${theirs}/telephony`, other.token, { carrier_phone_number: '+61291234567' })).status).toBe(200);
  });

  it('phone lookup: E.164 required, only the caller\'s workspaces', async () => {
    expectInvalid(await call('GET', '/agents/lookup/phone', owner.token), 'phone_number');
    expectInvalid(await call('GET', '/agents/lookup/phone?phone_number=hello', owner.token), 'phone_number');
    expectError(await call('GET', `/agents/lookup/phone?phone_number=${encodeURIComponent('+442071838750')}`, owner.token), 404, 'NOT_FOUND');
    // bound in the other user's workspace: looks exactly like an unbound number
    expectError(await call('GET', `/agents/lookup/phone?phone_number=${encodeURIComponent('+61291234567')}`, owner.token), 404, 'NOT_FOUND');
    const theirs = await call('GET', `/agents/lookup/phone?phone_number=${encodeURIComponent('+61291234567')}`, other.token);
    expect(theirs.status).toBe(200);
    expect(theirs.body.data.telephony.carrier_phone_number).toBe('+61291234567');
    // an unencoded + (decoded as a space) is accepted too
    expect((await call('GET', '/agents/lookup/phone?phone_number=+61291234567', other.token)).status).toBe(200);
    // a never-published agent is not found by the inbound-call lookup
    expect(await h.app.agents.findAgentByNumber('+61291234567')).toBeUndefined();
  });
});
