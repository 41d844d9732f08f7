/**
 * Finding "scope escalation" (issue 11): a key with ["agents:read"] created an unscoped key with
 * `POST /auth/api-keys {"scopes": []}`, and could create workspaces, add an admin member, write
 * memory, conversations and provider configurations. Scopes are now enforced on every method
 * (control-plane/http/scopes.ts) for REST, Connect and the SSE stream alike, and a key only mints
 * keys with a subset of its own scopes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../shared/ids.js';
import { ruleFor } from '../../control-plane/http/scopes.js';
import { api } from '../helpers/accounts.js';
import { createMemoryItem, createTestUser, expectError, expectInvalid, restClient, startAgentsApp, type AgentsApp, type Call, type TestUser } from '../unit/agents/support.js';

let h: AgentsApp;
let call: Call;
let owner: TestUser;
let other: TestUser;
let agentId = '';
let providerId = '';
let readKey = '';

async function mintKey(token: string, scopes: string[]): Promise<string> {
  const res = await call('POST', '/auth/api-keys', token, { name: `k-${scopes.join('-') || 'all'}`, scopes });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.key;
}

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h);
  [owner, other] = await Promise.all([createTestUser(h), createTestUser(h)]);
  agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Scoped' })).body.data.id;
  providerId = (await call('GET', '/providers', owner.token)).body.data[0].id;
  readKey = await mintKey(owner.token, ['agents:read']);
});

afterAll(async () => {
  await h?.close();
});

describe('scope escalation', () => {
  it('a key with ["agents:read"] reads agents', async () => {
    expect((await call('GET', '/agents', readKey)).status).toBe(200);
    expect((await call('GET', `/agents/${agentId}`, readKey)).status).toBe(200);
    expect((await call('GET', '/auth/me', readKey)).status).toBe(200);
  });

  it('a key with ["agents:read"] cannot create an unscoped key, nor any key', async () => {
    expectError(await call('POST', '/auth/api-keys', readKey, { name: 'escalate', scopes: [] }), 403, 'FORBIDDEN');
    expectError(await call('POST', '/auth/api-keys', readKey, { name: 'same', scopes: ['agents:read'] }), 403, 'FORBIDDEN');
    const [{ n }] = await h.infra.sql<{ n: number }[]>`select count(*)::int as n from api_keys where user_id = ${owner.userId}`;
    expect(n).toBe(1);
  });

  it('a key with ["agents:read"] cannot write workspaces, members, memory, conversations, provider configurations or agents', async () => {
    const ws = owner.workspaceId;
    const item = await createMemoryItem(h, owner.token, ws, 't', 'c');
    const writes: Array<[string, string, unknown?]> = [
      ['POST', '/auth/workspaces', { name: 'new' }],
      ['PUT', `/auth/workspaces/${ws}`, { name: 'renamed' }],
      ['POST', `/auth/workspaces/${ws}/members`, { email: other.email, role: 'admin' }],
      ['POST', `/auth/workspaces/${ws}/memory`, { title: 't', content: 'c' }],
      ['PUT', `/auth/workspaces/${ws}/memory/${item}`, { title: 'x' }],
      ['GET', `/auth/workspaces/${ws}/memory`],
      ['POST', '/conversations', { id: newId(), session_id: `s-${newId()}`, agent_id: agentId }],
      ['GET', '/conversations'],
      ['POST', '/providers/user-config', { provider_id: providerId, api_key: 'sk-test' }],
      ['GET', '/providers/user-config'],
      ['PUT', `/agents/${agentId}`, { name: 'mine' }],
      ['POST', `/agents/${agentId}/tools`, { name: 't', endpoint_url: 'https://example.com' }],
      ['GET', '/auth/api-keys'],
    ];
    for (const [method, path, body] of writes) {
      const res = await call(method, path, readKey, body);
      if (res.status !== 403) throw new Error(`${method} ${path}: expected 403, got ${res.status} ${JSON.stringify(res.body)}`);
      expect(res.body.error.code).toBe('FORBIDDEN');
    }
    const telephony = await api(h, 'GET', '/api/v1/telephony/calls', { token: readKey });
    expect(telephony.status).toBe(403);
    // Nothing was stored by the refused calls.
    const [w] = await h.infra.sql<{ n: number }[]>`select count(*)::int as n from workspace_members where user_id = ${other.userId}`;
    expect(w.n).toBe(1);
    const [m] = await h.infra.sql<{ n: number }[]>`select count(*)::int as n from memory_items where workspace_id = ${ws}`;
    expect(m.n).toBe(1);
  });

  it('the SSE transcript stream needs conversations:read', async () => {
    const res = await api(h, 'GET', `/api/v1/conversations/${newId()}/stream`, { token: readKey });
    expect(res.status).toBe(403);
    const convKey = await mintKey(owner.token, ['conversations:read']);
    expect((await api(h, 'GET', `/api/v1/conversations/${newId()}/stream`, { token: convKey })).status).toBe(404);
  });

  it('over Connect too: PermissionDenied', async () => {
    const res = await fetch(`http://127.0.0.1:${h.port}/voiceplane.v1.WorkspaceService/CreateWorkspace`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${readKey}` },
      body: JSON.stringify({ name: 'via connect' }),
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { code: string }).code).toBe('permission_denied');
  });

  it('a key mints only subsets of its scopes: 403 naming what is missing', async () => {
    const minter = await mintKey(owner.token, ['api_keys:write', 'agents:write']);
    const unscoped = await call('POST', '/auth/api-keys', minter, { name: 'all', scopes: [] });
    expectError(unscoped, 403, 'FORBIDDEN');
    expect(unscoped.body.error.details).toEqual([{ field: 'scopes', problem: 'missing *' }]);
    const wider = await call('POST', '/auth/api-keys', minter, { name: 'wider', scopes: ['agents:read', 'memory:write', 'workspaces:write'] });
    expectError(wider, 403, 'FORBIDDEN');
    expect(wider.body.error.details.map((d: { problem: string }) => d.problem)).toEqual(['missing memory:write', 'missing workspaces:write']);
    // agents:write implies agents:read.
    const narrower = await call('POST', '/auth/api-keys', minter, { name: 'narrower', scopes: ['agents:read'] });
    expect(narrower.status).toBe(201);
    expect((await call('GET', `/agents/${agentId}`, narrower.body.data.key)).status).toBe(200);
  });

  it('unknown scope strings are 400 naming scopes', async () => {
    expectInvalid(await call('POST', '/auth/api-keys', owner.token, { name: 'typo', scopes: ['agent:read'] }), 'scopes');
    expectInvalid(await call('POST', '/auth/api-keys', owner.token, { name: 'typo', scopes: ['agents:admin'] }), 'scopes');
  });

  it('empty scopes stay unscoped (backwards compatible); the organization key and sessions are not limited', async () => {
    const all = await mintKey(owner.token, []);
    expect((await call('POST', '/auth/workspaces', all, { name: 'by unscoped key' })).status).toBe(201);
    expect((await call('POST', '/auth/api-keys', all, { name: 'child', scopes: [] })).status).toBe(201);
    expect((await call('POST', '/auth/workspaces', h.orgKey, { name: 'by org key' })).status).toBe(201);
    expect((await call('POST', '/auth/workspaces', owner.token, { name: 'by session' })).status).toBe(201);
  });

  it('the credential comes before the body: every REST route that needs one answers 401 without it, whatever its fields hold (a few answered 400 naming them)', async () => {
    const { accounts, agents, voice, telephony, conversations, webhooks, campaigns, analysis, qa, systemAnalytics, alerts, billing, connectors, simTests, portal } = h.app;
    const routes = [accounts, agents, voice, telephony, conversations, webhooks, campaigns, analysis, qa, systemAnalytics, alerts, billing, connectors, simTests, portal].flatMap((d) => d.routes);
    const guarded = routes.filter((r) => r.method !== 'GET' && ruleFor(r.service.typeName, r.service.methods.find((m) => m.localName === r.rpc)!.name) !== 'public');
    expect(guarded.length).toBeGreaterThan(80);
    // Wrong types and unknown values for fields the routes have (password, metric, day_of_week, ...).
    const hostile = JSON.stringify({ password: 5, metric: 'bad', day_of_week: 'x', window_minutes: 'x', is_active: 'x', reviewer_id: 5, rotate_webhook_secret: 'x', name: 7 });
    const wrong: string[] = [];
    for (const r of guarded) {
      const path = r.path.replace(/:[A-Za-z_]+/g, newId());
      const res = await fetch(`http://127.0.0.1:${h.port}${path}`, { method: r.method, headers: { 'content-type': 'application/json' }, body: hostile });
      await res.arrayBuffer();
      if (res.status !== 401) wrong.push(`${r.method} ${r.path}: ${res.status}`);
    }
    expect(wrong).toEqual([]);
    // An API key without the route's scope: 403 before its fields too.
    expectError(await call('PUT', `/alerts/rules/${newId()}`, readKey, { metric: 'bad' }), 403, 'FORBIDDEN');
    // With the credential, the fields are checked.
    expectInvalid(await call('PUT', `/alerts/rules/${newId()}`, owner.token, { metric: 'bad' }), 'metric');
    // Over Connect the same order: unauthenticated, not invalid_argument naming `metric`.
    const connect = (auth?: string) =>
      fetch(`http://127.0.0.1:${h.port}/voiceplane.v1.AlertService/UpdateAlertRule`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}) },
        body: JSON.stringify({ ruleId: newId(), metric: 'bad' }),
      }).then(async (r) => ({ status: r.status, code: ((await r.json()) as { code: string }).code }));
    expect(await connect()).toEqual({ status: 401, code: 'unauthenticated' });
    expect(await connect(owner.token)).toMatchObject({ code: 'invalid_argument' });
  });

  it('every method of every registered service has a scope rule', () => {
    const { accounts, agents, voice, telephony, conversations } = h.app;
    const services = [accounts, agents, voice, telephony, conversations].flatMap((d) => d.services.map((s) => s.service));
    expect(services.length).toBeGreaterThanOrEqual(10);
    const missing = services.flatMap((s) => s.methods.filter((m) => ruleFor(s.typeName, m.name) === undefined).map((m) => `${s.typeName}/${m.name}`));
    expect(missing).toEqual([]);
  });
});
