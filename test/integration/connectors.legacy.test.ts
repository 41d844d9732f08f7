/**
 * Issue 18, the legacy agent connector routes of the Connectors API:
 * `GET, POST, DELETE /connectors/agents/{agent_id}/connectors[/{connection_id}]`. Enabling is a
 * connector tool bound to the connection (the binder of `POST /agents/{id}/tools`), disabling
 * switches it off (never deletes). A bearer is required (docs/connectors.md, "Choices"), a
 * foreign agent is 404, enable/disable need owner/admin/manager; errors are `{detail}`.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { ConnectorService } from '../../shared/gen/voiceplane/v1/connectors_pb.js';
import { newId } from '../../shared/ids.js';
import { api } from '../helpers/accounts.js';
import { ALL_SECRETS, C, connectorsSuite, HUBSPOT_KEY, STRIPE_KEY } from '../helpers/connectors.js';
import { createAgent } from '../unit/records/control-plane.js';

const s = connectorsSuite();
const { connectKey, connectionOf, ws } = s;

let agentId: string;
let strangerAgentId: string;
const path = (agent = agentId) => `${C}/agents/${agent}/connectors`;
const list = (token = s.owner.token, agent = agentId) => api(s.cp, 'GET', path(agent), { token });
const enable = (connectionId: unknown, token = s.manager.token, agent = agentId) => api(s.cp, 'POST', path(agent), { token, body: { connection_id: connectionId } });
const disable = (connectionId: string, token = s.manager.token, agent = agentId) => api(s.cp, 'DELETE', `${path(agent)}/${connectionId}`, { token });
const tools = async (agent = agentId) => {
  const res = await api(s.cp, 'GET', `/api/v1/agents/${agent}/tools`, { token: s.owner.token });
  expect(res.status).toBe(200);
  return res.body.data as any[];
};

beforeAll(async () => {
  s.hubspot.validKeys.add(HUBSPOT_KEY);
  expect((await connectKey('hubspot', { api_key: HUBSPOT_KEY })).status).toBe(200);
  expect((await connectKey('stripe', { api_key: STRIPE_KEY })).status).toBe(200);
  agentId = await createAgent(s.cp as never, s.infra, s.owner, s.owner.workspaceId, 'Front desk');
  strangerAgentId = await createAgent(s.cp as never, s.infra, s.stranger, s.stranger.workspaceId, 'Elsewhere');
});

describe('enable, list, disable', () => {
  it('enable binds a connector tool to the connection: {message: enabled}, every usable action', async () => {
    const hs = await connectionOf('hubspot');
    const res = await enable(hs.id);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ message: 'enabled' });
    const [tool] = await tools();
    expect(tool).toMatchObject({ name: 'hubspot', description: 'HubSpot (HubSpot portal 4455667)', is_active: true, connector_binding: { connection_id: hs.id } });
    expect(tool.connector_binding.actions.map((a: any) => a.name)).toEqual(['hubspot__find_contact', 'hubspot__create_contact', 'hubspot__create_note', 'hubspot__create_deal']);
  });

  it('lists the enabled connectors to any member, without a secret', async () => {
    const hs = await connectionOf('hubspot');
    const res = await list(s.member.token);
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(1);
    const [item] = res.body.data;
    expect(item).toMatchObject({ id: hs.id, provider_id: 'hubspot', connector_name: 'HubSpot', is_active: true, health_status: 'ok', tool_name: 'hubspot', tool_id: expect.any(String) });
    expect(item.bound_actions).toContain('hubspot__create_note');
    const text = JSON.stringify(res.body);
    for (const secret of ALL_SECRETS) expect(text).not.toContain(secret);
    expect(text).not.toContain('secret_enc');
  });

  it('enable is idempotent: a second call leaves one tool', async () => {
    const hs = await connectionOf('hubspot');
    expect((await enable(hs.id)).status).toBe(200);
    expect((await tools()).filter((t) => t.connector_binding?.connection_id === hs.id)).toHaveLength(1);
  });

  it('disable switches the tool off (not deleted) and the list drops it; enable switches the same tool back on', async () => {
    const hs = await connectionOf('hubspot');
    const [before] = await tools();
    const res = await disable(hs.id);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ message: 'disabled' });
    const [after] = await tools();
    expect(after).toMatchObject({ id: before.id, is_active: false });
    expect((await list()).body.data).toEqual([]);
    expect((await disable(hs.id)).body).toEqual({ message: 'disabled' });
    expect((await enable(hs.id)).status).toBe(200);
    const again = await tools();
    expect(again).toHaveLength(1);
    expect(again[0]).toMatchObject({ id: before.id, is_active: true });
  });

  it('a connector disabled here stays off across disconnect and reconnect; enable brings it back', async () => {
    const hs = await connectionOf('hubspot');
    expect((await disable(hs.id)).status).toBe(200);
    expect((await api(s.cp, 'DELETE', `${ws()}/connections/${hs.id}`, { token: s.owner.token })).status).toBe(200);
    expect((await enable(hs.id)).status).toBe(409);
    expect((await connectKey('hubspot', { api_key: HUBSPOT_KEY })).status).toBe(200);
    expect((await tools())[0].is_active).toBe(false);
    expect((await enable(hs.id)).status).toBe(200);
    expect((await tools())[0].is_active).toBe(true);
  });

  it('a disconnect hides the connector from the list (its tool is switched off by the disconnect)', async () => {
    const st = await connectionOf('stripe');
    expect((await enable(st.id)).status).toBe(200);
    expect((await list()).body.data.map((c: any) => c.provider_id).sort()).toEqual(['hubspot', 'stripe']);
    expect((await api(s.cp, 'DELETE', `${ws()}/connections/${st.id}`, { token: s.owner.token })).status).toBe(200);
    expect((await list()).body.data.map((c: any) => c.provider_id)).toEqual(['hubspot']);
    expect((await connectKey('stripe', { api_key: STRIPE_KEY })).status).toBe(200);
    expect((await list()).body.data.map((c: any) => c.provider_id).sort()).toEqual(['hubspot', 'stripe']);
  });

  it('enable keeps a hand-restricted tool bound to the connection instead of adding a second one', async () => {
    const hs = await connectionOf('hubspot');
    const other = await createAgent(s.cp as never, s.infra, s.owner, s.owner.workspaceId, 'Restricted');
    const made = await api(s.cp, 'POST', `/api/v1/agents/${other}/tools`, {
      token: s.owner.token,
      body: { name: 'crm_lookup', is_active: false, connector_binding: { connection_id: hs.id, actions: [{ name: 'hubspot__find_contact', description: 'Look up', parameters: { type: 'object' }, fixed: {} }] } },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect((await enable(hs.id, s.manager.token, other)).status).toBe(200);
    const list2 = await tools(other);
    expect(list2).toHaveLength(1);
    expect(list2[0]).toMatchObject({ name: 'crm_lookup', is_active: true });
    expect(list2[0].connector_binding.actions).toHaveLength(1);
  });

  it('enable refuses to turn a same-named hand-written tool into a connector tool (409 TOOL_NAME_TAKEN; it became a mixed tool)', async () => {
    const hs = await connectionOf('hubspot');
    const other = await createAgent(s.cp as never, s.infra, s.owner, s.owner.workspaceId, 'Hand-written');
    const made = await api(s.cp, 'POST', `/api/v1/agents/${other}/tools`, { token: s.owner.token, body: { name: 'hubspot', description: 'my own', endpoint_url: 'https://crm.example.com/hook' } });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const res = await enable(hs.id, s.manager.token, other);
    expect(res.status).toBe(409);
    const after = await tools(other);
    expect(after).toHaveLength(1);
    expect(after[0].connector_binding).toBeFalsy();
    expect(after[0].endpoint_url).toBe('https://crm.example.com/hook');
  });
});

describe('authentication, roles, fencing and errors', () => {
  it('needs a bearer (401 in the {detail} family)', async () => {
    const res = await api(s.cp, 'GET', path());
    expect(res.status).toBe(401);
    expect(typeof res.body.detail).toBe('string');
    expect((await api(s.cp, 'POST', path(), { body: { connection_id: newId() } })).status).toBe(401);
  });

  it('another workspace’s agent is 404 for every route; a member cannot enable or disable (403)', async () => {
    const hs = await connectionOf('hubspot');
    expect((await list(s.stranger.token)).status).toBe(404);
    const foreign = await enable(hs.id, s.stranger.token);
    expect(foreign.status).toBe(404);
    expect(foreign.body.detail).toContain('agent');
    expect((await disable(hs.id, s.stranger.token)).status).toBe(404);
    expect((await list(s.owner.token, strangerAgentId)).status).toBe(404);
    expect((await list(s.owner.token, 'not-a-uuid')).status).toBe(404);
    const byMember = await enable(hs.id, s.member.token);
    expect(byMember.status).toBe(403);
    expect(typeof byMember.body.detail).toBe('string');
    expect((await disable(hs.id, s.member.token)).status).toBe(403);
    expect((await tools())[0].is_active).toBe(true);
  });

  it('a connection outside the agent’s workspace is 404; a missing connection_id 400 naming it; never enabled 404', async () => {
    const theirs = await connectKey('stripe', { api_key: STRIPE_KEY }, s.stranger.token, s.stranger.workspaceId);
    expect(theirs.status).toBe(200);
    expect((await enable(theirs.body.id)).status).toBe(404);
    expect((await enable(newId())).status).toBe(404);
    expect((await enable('nope')).status).toBe(404);
    const missing = await enable(undefined);
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toMatch(/^connection_id/);
    const wrongType = await enable(42);
    expect(wrongType.status).toBe(400);
    expect(wrongType.body.detail).toMatch(/connection_id/);
    expect((await disable(theirs.body.id)).status).toBe(404);
    expect((await disable('not-a-uuid')).status).toBe(404);
  });

  it('API keys: connectors:read lists, enabling needs connectors:write', async () => {
    const c = await api(s.cp, 'POST', '/api/v1/auth/api-keys', { token: s.owner.token, body: { name: 'legacy-reader', scopes: ['connectors:read'] } });
    expect(c.status).toBe(201);
    const key = c.body.data.key as string;
    expect((await list(key)).status).toBe(200);
    const hs = await connectionOf('hubspot');
    const res = await enable(hs.id, key);
    expect(res.status).toBe(403);
    expect(res.body.detail).toContain('connectors:write');
  });

  it('the same RPCs over Connect', async () => {
    const client = createClient(ConnectorService, createConnectTransport({ baseUrl: `http://127.0.0.1:${s.cp.port}`, httpVersion: '2' }));
    const headers = { authorization: `Bearer ${s.owner.token}` };
    const { connectors } = await client.listAgentConnectors({ agentId }, { headers });
    expect(connectors.map((c) => c.connection?.providerId).sort()).toEqual(['hubspot', 'stripe']);
    const st = await connectionOf('stripe');
    expect((await client.disableAgentConnector({ agentId, connectionId: st.id }, { headers })).message).toBe('disabled');
    expect((await client.enableAgentConnector({ agentId, connectionId: st.id }, { headers })).message).toBe('enabled');
    const err = await client.enableAgentConnector({ agentId, connectionId: st.id }, { headers: { authorization: `Bearer ${s.stranger.token}` } }).catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.NotFound);
  });
});
