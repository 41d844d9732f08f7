/**
 * Issue 18, agent side of connectors: disconnect switches the tools bound to a connection off
 * (not deleted) and reconnect switches back exactly those; `POST /agents/{id}/tools` with
 * `connector` and its error codes (UNKNOWN_CONNECTOR, CONNECTOR_NOT_CONNECTED, INVALID_REQUEST,
 * NOT_FOUND for a foreign connection id, TOOL_NAME_TAKEN); `connectors` on `PUT /agents/{id}`
 * idempotent. Real Postgres, vendor fakes in test/fakes/.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { api } from '../helpers/accounts.js';
import { ALL_SECRETS, CALCOM_KEY, connectorsSuite, HUBSPOT_KEY, HUBSPOT_KEY2, STRIPE_KEY, ZENDESK_TOKEN } from '../helpers/connectors.js';
import { createAgent } from '../unit/records/control-plane.js';

const s = connectorsSuite();
const { hubspot, stripe, ws, connectKey, execute, connectionOf, rowsOf } = s;

beforeAll(async () => {
  for (const [provider, body] of [
    ['hubspot', { api_key: HUBSPOT_KEY }],
    ['calcom', { api_key: CALCOM_KEY }],
    ['zendesk', { subdomain: 'acme', email: 'agent@acme.example', api_token: ZENDESK_TOKEN }],
    ['stripe', { api_key: STRIPE_KEY }],
  ] as const) {
    const res = await connectKey(provider, body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  hubspot.validKeys.add(HUBSPOT_KEY2);
  const hs = await connectionOf('hubspot');
  expect((await execute(hs.id, 'create_contact', { email: 'ana@example.com' })).status).toBe(200);
});

describe('disconnect and reconnect', () => {
  it('purges the secret, switches bound tools off (not deleted), and reconnect switches back only those', async () => {
    const hs = await connectionOf('hubspot');
    const agentId = await createAgent(s.cp as never, s.infra, s.owner, s.owner.workspaceId, 'Front desk');
    const binding = (active: boolean, name: string) => ({
      name,
      is_active: active,
      connector_binding: { connection_id: hs.id, actions: [{ name: 'hubspot__find_contact', description: 'Look up the caller', parameters: { type: 'object' }, fixed: {} }] },
    });
    const bound = await api(s.cp, 'POST', `/api/v1/agents/${agentId}/tools`, { token: s.owner.token, body: binding(true, 'crm') });
    expect(bound.status, JSON.stringify(bound.body)).toBe(201);
    const byHand = await api(s.cp, 'POST', `/api/v1/agents/${agentId}/tools`, { token: s.owner.token, body: binding(false, 'crm_off') });
    expect(byHand.status).toBe(201);

    const users = await api(s.cp, 'GET', `${ws()}/connections/${hs.id}/agents`, { token: s.member.token });
    expect(users.status).toBe(200);
    expect(users.body.data).toEqual([
      { agent_id: agentId, agent_name: 'Front desk', tool_id: bound.body.data.id, tool_name: 'crm', action_count: 1 },
      { agent_id: agentId, agent_name: 'Front desk', tool_id: byHand.body.data.id, tool_name: 'crm_off', action_count: 1 },
    ]);

    // The agent also names the connector (`connectors`), which adds a third tool, `hubspot`.
    expect((await api(s.cp, 'PUT', `/api/v1/agents/${agentId}`, { token: s.owner.token, body: { connectors: ['hubspot'] } })).status).toBe(200);
    const named = (await api(s.cp, 'GET', `/api/v1/agents/${agentId}/tools`, { token: s.owner.token })).body.data.find((t: any) => t.name === 'hubspot');

    expect((await api(s.cp, 'DELETE', `${ws()}/connections/${hs.id}`, { token: s.member.token })).status).toBe(403);
    const del = await api(s.cp, 'DELETE', `${ws()}/connections/${hs.id}`, { token: s.manager.token });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ message: 'disconnected' });
    expect((await rowsOf('hubspot'))[0]!.secret_enc).toBeNull();
    const tool = async (id: string) => (await api(s.cp, 'GET', `/api/v1/agents/${agentId}/tools/${id}`, { token: s.owner.token })).body.data;
    expect(await tool(bound.body.data.id)).toMatchObject({ is_active: false, connector_binding: { connection_id: hs.id } });
    const off = await connectionOf('hubspot');
    expect(off).toMatchObject({ id: hs.id, is_active: false, health_status: 'reconnect_needed' });
    expect(off.actions.some((a: any) => a.enabled)).toBe(false);
    // Switching the tool on by hand needs a live connection (it answered 200 and showed an
    // active tool that no session would get).
    const switchOn = await api(s.cp, 'PUT', `/api/v1/agents/${agentId}/tools/${bound.body.data.id}`, { token: s.owner.token, body: { is_active: true } });
    envelope(switchOn, 409, 'CONNECTOR_NOT_CONNECTED');
    // A client PUTting back the agent it read (its `connectors` name hubspot) while the connection
    // is down changes nothing (it was 409); a connector the agent does not have yet still is.
    expect((await api(s.cp, 'PUT', `/api/v1/agents/${agentId}`, { token: s.owner.token, body: { connectors: ['hubspot'], name: 'Front desk' } })).status).toBe(200);
    expect(await tool(named.id)).toMatchObject({ is_active: false });
    envelope(await api(s.cp, 'PUT', `/api/v1/agents/${agentId}`, { token: s.owner.token, body: { connectors: ['hubspot', 'slack'] } }), 409, 'CONNECTOR_NOT_CONNECTED');
    const denied = await execute(hs.id, 'find_contact', { email: 'ana@example.com' });
    expect(denied.status).toBe(409);
    expect(denied.body.detail).toContain('disconnected');

    const again = await connectKey('hubspot', { api_key: HUBSPOT_KEY2 });
    expect(again.body).toMatchObject({ id: hs.id, is_active: true, health_status: 'ok' });
    expect((await tool(bound.body.data.id)).is_active).toBe(true);
    expect((await tool(named.id)).is_active).toBe(true);
    expect((await tool(byHand.body.data.id)).is_active).toBe(false);
    expect((await execute(hs.id, 'find_contact', { email: 'ana@example.com' })).body.data.total).toBe(1);
  });
});

function envelope(res: { status: number; body: any }, status: number, code: string) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toMatchObject({ success: false, error: { code } });
}

describe('connector tools on agents', () => {

  it('`connector` binds every usable action of the live connection, with the spec defaults', async () => {
    const agentId = await createAgent(s.cp as never, s.infra, s.owner, s.owner.workspaceId, 'Scheduler');
    const cal = await connectionOf('calcom');
    const res = await api(s.cp, 'POST', `/api/v1/agents/${agentId}/tools`, { token: s.owner.token, body: { connector: 'Cal.com' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.data).toMatchObject({ name: 'calcom', description: `Cal.com (${cal.account_label})`, endpoint_url: '', is_active: true, function_schema: {} });
    expect(res.body.data.connector_binding.connection_id).toBe(cal.id);
    expect(res.body.data.connector_binding.actions.map((a: any) => a.name)).toEqual(['calcom__list_free_slots', 'calcom__book', 'calcom__cancel_booking']);
    expect(res.body.data.connector_binding.actions[1]).toMatchObject({ fixed: {}, parameters: { type: 'object', required: ['event_type_id', 'start', 'name', 'email'] } });
    const named = await api(s.cp, 'POST', `/api/v1/agents/${agentId}/tools`, { token: s.owner.token, body: { connector: 'zendesk', name: 'tickets', description: 'Open tickets' } });
    expect(named.body.data).toMatchObject({ name: 'tickets', description: 'Open tickets' });
    envelope(await api(s.cp, 'POST', `/api/v1/agents/${agentId}/tools`, { token: s.owner.token, body: { connector: 'calcom' } }), 409, 'TOOL_NAME_TAKEN');
    const users = await api(s.cp, 'GET', `${ws()}/connections/${cal.id}/agents`, { token: s.owner.token });
    expect(users.body.data).toEqual([{ agent_id: agentId, agent_name: 'Scheduler', tool_id: res.body.data.id, tool_name: 'calcom', action_count: 3 }]);
  });

  it('UNKNOWN_CONNECTOR, CONNECTOR_NOT_CONNECTED, INVALID_REQUEST and NOT_FOUND for a foreign connection id', async () => {
    const agentId = await createAgent(s.cp as never, s.infra, s.owner, s.owner.workspaceId, 'Errors');
    const tools = `/api/v1/agents/${agentId}/tools`;
    envelope(await api(s.cp, 'POST', tools, { token: s.owner.token, body: { connector: 'calendly' } }), 404, 'UNKNOWN_CONNECTOR');
    // In the catalog, never connected here (and no adapter in this build).
    envelope(await api(s.cp, 'POST', tools, { token: s.owner.token, body: { connector: 'Slack' } }), 409, 'CONNECTOR_NOT_CONNECTED');
    const hs = await connectionOf('hubspot');
    envelope(await api(s.cp, 'POST', tools, { token: s.owner.token, body: { connector: 'hubspot', connector_binding: { connection_id: hs.id, actions: [] } } }), 400, 'INVALID_REQUEST');
    // An action list with `connector` would be ignored (it binds every action): refused, not dropped.
    const onlyActions = await api(s.cp, 'POST', tools, { token: s.owner.token, body: { connector: 'hubspot', connector_binding: { actions: [{ name: 'hubspot__find_contact', parameters: { type: 'object' } }] } } });
    envelope(onlyActions, 400, 'INVALID_REQUEST');
    expect(onlyActions.body.error.details[0].field).toBe('connector');
    // A hand-written binding's actions must be the connection's provider's, and in the catalog.
    for (const [i, name] of [[0, 'stripe__create_customer'], [0, 'hubspot__delete_everything']] as const) {
      const wrong = await api(s.cp, 'POST', tools, { token: s.owner.token, body: { name: `w${name.length}`, connector_binding: { connection_id: hs.id, actions: [{ name, description: 'x', parameters: { type: 'object' } }] } } });
      envelope(wrong, 400, 'INVALID_REQUEST');
      expect(wrong.body.error.details[0].field).toBe(`connector_binding.actions[${i}].name`);
    }
    // Another workspace's live connection, written by hand: looks like a missing one.
    await connectKey('stripe', { api_key: STRIPE_KEY }, s.stranger.token, s.stranger.workspaceId);
    const foreign = (await s.infra.sql<Array<{ id: string }>>`select id from connector_connections where workspace_id = ${s.stranger.workspaceId}`)[0]!.id;
    const action = { name: 'stripe__find_customer', description: 'x', parameters: { type: 'object' }, fixed: {} };
    envelope(await api(s.cp, 'POST', tools, { token: s.owner.token, body: { name: 'pay', connector_binding: { connection_id: foreign, actions: [action] } } }), 404, 'NOT_FOUND');
    // Executing it answers exactly like a missing connection too.
    const theirs = await execute(foreign, 'find_customer', { email: 'cy@example.com' });
    const missing = await execute('0190a000-0000-7000-8000-00000000dead', 'find_customer', { email: 'cy@example.com' });
    expect([theirs.status, theirs.body]).toEqual([404, missing.body]);
    // Unhealthy is not usable: a refused credential makes the provider not connected for new tools.
    const st = await connectionOf('stripe');
    stripe.revoke(STRIPE_KEY);
    await execute(st.id, 'find_customer', { email: 'cy@example.com' });
    stripe.validKeys.add(STRIPE_KEY);
    envelope(await api(s.cp, 'POST', tools, { token: s.owner.token, body: { connector: 'stripe' } }), 409, 'CONNECTOR_NOT_CONNECTED');
    expect((await connectKey('stripe', { api_key: STRIPE_KEY })).status).toBe(200);
    const bound = await api(s.cp, 'POST', tools, { token: s.owner.token, body: { name: 'pay', connector_binding: { connection_id: st.id, actions: [{ ...action, fixed_labels: { email: 'Caller' } }] } } });
    expect(bound.status, JSON.stringify(bound.body)).toBe(201);
    expect(bound.body.data.connector_binding).toEqual({ connection_id: st.id, actions: [{ ...action, fixed_labels: { email: 'Caller' } }] });
    envelope(await api(s.cp, 'PUT', `${tools}/${bound.body.data.id}`, { token: s.owner.token, body: { connector_binding: { connection_id: foreign, actions: [action] } } }), 404, 'NOT_FOUND');
  });
});

describe('who may add a connector to an agent (spec doc 1, Connectors: owner, admin or manager; keys need connectors:write)', () => {
  it('a member, or a key without connectors:write, is refused on every agent route that binds one; a member re-sending the list adds nothing and passes', async () => {
    const agentId = await createAgent(s.cp as never, s.infra, s.owner, s.owner.workspaceId, 'Guarded');
    const hs = await connectionOf('hubspot');
    const tools = `/api/v1/agents/${agentId}/tools`;
    const action = { name: 'hubspot__find_contact', description: 'x', parameters: { type: 'object' }, fixed: {} };
    const attempts = (token: string) => [
      api(s.cp, 'POST', tools, { token, body: { connector: 'hubspot', name: 'hs-by-member' } }),
      api(s.cp, 'POST', tools, { token, body: { name: 'hand', connector_binding: { connection_id: hs.id, actions: [action] } } }),
      api(s.cp, 'PUT', `/api/v1/agents/${agentId}`, { token, body: { connectors: ['hubspot'] } }),
    ];
    for (const r of await Promise.all(attempts(s.member.token))) envelope(r, 403, 'FORBIDDEN');
    const key = async (scopes: string[]) => (await api(s.cp, 'POST', '/api/v1/auth/api-keys', { token: s.owner.token, body: { name: `k-${scopes.join('-')}`, scopes } })).body.data.key as string;
    for (const r of await Promise.all(attempts(await key(['agents:write'])))) {
      envelope(r, 403, 'FORBIDDEN');
      expect(r.body.error.message).toMatch(/connectors:write/);
    }
    expect(await api(s.cp, 'GET', tools, { token: s.owner.token }).then((r) => r.body.data)).toEqual([]);
    const both = await key(['agents:write', 'connectors:write']);
    expect((await api(s.cp, 'PUT', `/api/v1/agents/${agentId}`, { token: both, body: { connectors: ['hubspot'] } })).status).toBe(200);
    // Sending back the list the agent has (a read-modify-write of the whole agent) is accepted and
    // binds nothing: a connector tool a manager switched off stays off.
    const [hsTool] = (await api(s.cp, 'GET', tools, { token: s.owner.token })).body.data as any[];
    expect((await api(s.cp, 'PUT', `${tools}/${hsTool.id}`, { token: s.owner.token, body: { is_active: false } })).status).toBe(200);
    const resend = await api(s.cp, 'PUT', `/api/v1/agents/${agentId}`, { token: s.member.token, body: { connectors: ['hubspot'], name: 'Guarded 2' } });
    expect(resend.status, JSON.stringify(resend.body)).toBe(200);
    expect((await api(s.cp, 'GET', tools, { token: s.owner.token })).body.data.map((t: any) => [t.name, t.is_active])).toEqual([['hubspot', false]]);
    // Nor can a member switch the tool back on (or off) through the tool route: enabling and
    // disabling a connector are a manager's. Other tool edits stay a member's.
    for (const is_active of [true, false]) {
      if (is_active === false) expect((await api(s.cp, 'PUT', `${tools}/${hsTool.id}`, { token: s.owner.token, body: { is_active: true } })).status).toBe(200);
      envelope(await api(s.cp, 'PUT', `${tools}/${hsTool.id}`, { token: s.member.token, body: { is_active } }), 403, 'FORBIDDEN');
    }
    expect((await api(s.cp, 'PUT', `${tools}/${hsTool.id}`, { token: s.member.token, body: { is_active: true, description: 'same state, new words' } })).status).toBe(200);
    expect((await api(s.cp, 'GET', `${tools}/${hsTool.id}`, { token: s.owner.token })).body.data).toMatchObject({ is_active: true, description: 'same state, new words' });
  });
});

describe('connectors on PUT /agents/{id}', () => {
  it('adds one tool per entry, idempotently: a same-named (even disabled) tool is re-bound and re-activated', async () => {
    const agentId = await createAgent(s.cp as never, s.infra, s.owner, s.owner.workspaceId, 'Idempotent');
    const put = (connectors: string[]) => api(s.cp, 'PUT', `/api/v1/agents/${agentId}`, { token: s.owner.token, body: { connectors } });
    const tools = async () => (await api(s.cp, 'GET', `/api/v1/agents/${agentId}/tools`, { token: s.owner.token })).body.data as any[];
    expect((await put(['hubspot', 'Zendesk'])).status).toBe(200);
    expect((await put(['hubspot'])).status).toBe(200);
    const first = await tools();
    expect(first.map((t) => [t.name, t.is_active])).toEqual([['hubspot', true], ['zendesk', true]]);
    const hs = first.find((t) => t.name === 'hubspot');
    expect(hs.connector_binding.connection_id).toBe((await connectionOf('hubspot')).id);
    // Narrowed to one action, with its own description and a pinned parameter, then switched off.
    const narrowed = { ...hs.connector_binding.actions[0], description: 'Look up the caller', fixed: { phone: '{{caller_number}}' } };
    const edit = await api(s.cp, 'PUT', `/api/v1/agents/${agentId}/tools/${hs.id}`, { token: s.owner.token, body: { is_active: false, connector_binding: { ...hs.connector_binding, actions: [narrowed] } } });
    expect(edit.status, JSON.stringify(edit.body)).toBe(200);
    expect((await put(['HubSpot'])).status).toBe(200);
    const again = (await tools()).find((t) => t.name === 'hubspot');
    expect(again).toMatchObject({ id: hs.id, is_active: true });
    // Re-activated with its settings intact (every catalog action came back, the pin was lost).
    expect(again.connector_binding.actions).toEqual([expect.objectContaining({ name: narrowed.name, description: 'Look up the caller', fixed: { phone: '{{caller_number}}' } })]);
    // The same for the dashboard's save: the agent read back and PUT whole.
    const read = (await api(s.cp, 'GET', `/api/v1/agents/${agentId}`, { token: s.owner.token })).body.data.agent;
    expect((await api(s.cp, 'PUT', `/api/v1/agents/${agentId}`, { token: s.owner.token, body: { ...read, name: 'Idempotent too' } })).status).toBe(200);
    expect((await tools()).find((t) => t.name === 'hubspot').connector_binding.actions).toHaveLength(1);
    // A hand-written tool that has a connector's name does not become a connector tool.
    const byHand = await api(s.cp, 'POST', `/api/v1/agents/${agentId}/tools`, { token: s.owner.token, body: { name: 'stripe', description: 'billing', endpoint_url: 'https://billing.example.com/hook' } });
    expect(byHand.status, JSON.stringify(byHand.body)).toBe(201);
    const mixed = await put(['stripe']);
    envelope(mixed, 409, 'TOOL_NAME_TAKEN');
    expect(mixed.body.error.details).toEqual([expect.objectContaining({ field: 'connectors' })]);
    expect((await api(s.cp, 'GET', `/api/v1/agents/${agentId}/tools/${byHand.body.data.id}`, { token: s.owner.token })).body.data.connector_binding).toBeFalsy();
    await api(s.cp, 'DELETE', `/api/v1/agents/${agentId}/tools/${byHand.body.data.id}`, { token: s.owner.token });
    const unknown = await put(['hubspot', 'calendly']);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('UNKNOWN_CONNECTOR');
    const notConnected = await put(['slack']);
    expect(notConnected.body.error.code).toBe('CONNECTOR_NOT_CONNECTED');
    const agent = await api(s.cp, 'GET', `/api/v1/agents/${agentId}`, { token: s.owner.token });
    // `HubSpot` names the connector `hubspot` already listed (ids and names match case-insensitively).
    expect(agent.body.data.agent.connectors).toEqual(['hubspot', 'Zendesk']);
    expect(await tools()).toHaveLength(2);
  });
});

it('no credential ever reaches the logs', () => {
  const log = s.infra.logLines.join('');
  expect(log).toContain('connector disconnected');
  for (const secret of ALL_SECRETS) expect(log).not.toContain(secret);
});
