/**
 * Fencing (another tenant's agent is 404 for every read and write), roles (member edits, manager+
 * publishes and deletes), API-key scopes, and list pagination (meta values and edges).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createMemoryItem, createTestUser, expectError, expectInvalid, restClient, startAgentsApp, type AgentsApp, type Call, type TestUser } from '../unit/agents/support.js';

let h: AgentsApp;
let owner: TestUser;
let stranger: TestUser;
let member: TestUser;
let manager: TestUser;
let call: Call;
let agentId = '';
let toolId = '';
let kbId = '';

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h);
  [owner, stranger, member, manager] = await Promise.all([createTestUser(h), createTestUser(h), createTestUser(h), createTestUser(h)]);
  await addMember(h, owner.token, owner.workspaceId, member.email, 'member');
  await addMember(h, owner.token, owner.workspaceId, manager.email, 'manager');
  agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Fenced' })).body.data.id;
  toolId = (await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 't', endpoint_url: 'https://example.com' })).body.data.id;
  const item = await createMemoryItem(h, owner.token, owner.workspaceId, 'K', 'k');
  kbId = (await call('POST', `/agents/${agentId}/knowledge-bases`, owner.token, { knowledge_base_id: item })).body.data.id;
  await call('POST', `/agents/${agentId}/versions/publish`, owner.token);
});

afterAll(async () => {
  await h?.close();
});

describe('fencing', () => {
  it('another user cannot see or change the agent: 404 everywhere', async () => {
    const a = `/agents/${agentId}`;
    const routes: Array<[string, string, unknown?]> = [
      ['GET', a],
      ['PUT', a, { name: 'mine now' }],
      ['DELETE', a],
      ['POST', `${a}/providers`, { provider_type: 'llm', provider_name: 'sim' }],
      ['GET', `${a}/providers`],
      ['DELETE', `${a}/providers/llm`],
      ['POST', `${a}/tools`, { name: 'x', endpoint_url: 'https://example.com' }],
      ['GET', `${a}/tools`],
      ['GET', `${a}/tools/${toolId}`],
      ['PUT', `${a}/tools/${toolId}`, { description: 'x' }],
      ['DELETE', `${a}/tools/${toolId}`],
      ['GET', `${a}/knowledge-bases`],
      ['PUT', `${a}/knowledge-bases/${kbId}`, { mode: 'on_demand' }],
      ['GET', `${a}/flow`],
      ['PUT', `${a}/flow`, { graph: { nodes: [] } }],
      ['POST', `${a}/flow/validate`, { graph: { nodes: [] } }],
      ['GET', `${a}/mode`],
      ['PUT', `${a}/mode`, { mode: 'flow' }],
      ['GET', `${a}/telephony`],
      ['PUT', `${a}/telephony`, { call_direction: 'inbound' }],
      ['POST', `${a}/versions/publish`],
      ['POST', `${a}/versions/1/rollback`],
      ['GET', `${a}/versions`],
    ];
    for (const [method, path, body] of routes) {
      const res = await call(method, path, stranger.token, body);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    // the fenced answer is the same as for a missing agent
    const missing = await call('GET', '/agents/0190a0a0-0000-7000-8000-000000000000', stranger.token);
    expect((await call('GET', a, stranger.token)).body.error.message).toBe(missing.body.error.message);
    expectError(await call('GET', `/agents?workspace_id=${owner.workspaceId}`, stranger.token), 404, 'NOT_FOUND');
    expect((await call('GET', '/agents', stranger.token)).body.data).toEqual([]);
    expect((await call('GET', a, owner.token)).body.data.agent.name).toBe('Fenced');
    expect((await call('GET', `${a}/tools`, owner.token)).body.data).toHaveLength(1);
  });
});

describe('roles', () => {
  it('a member reads and edits the draft but cannot publish, roll back or delete', async () => {
    expect((await call('GET', `/agents/${agentId}`, member.token)).status).toBe(200);
    expect((await call('PUT', `/agents/${agentId}`, member.token, { description: 'by member' })).status).toBe(200);
    expect((await call('POST', `/agents/${agentId}/tools`, member.token, { name: 'member_tool', endpoint_url: 'https://example.com' })).status).toBe(201);
    expect((await call('POST', '/agents', member.token, { workspace_id: owner.workspaceId, name: 'by member' })).status).toBe(201);
    expectError(await call('POST', `/agents/${agentId}/versions/publish`, member.token), 403, 'FORBIDDEN');
    expectError(await call('POST', `/agents/${agentId}/versions/1/rollback`, member.token), 403, 'FORBIDDEN');
    expectError(await call('DELETE', `/agents/${agentId}`, member.token), 403, 'FORBIDDEN');
  });

  it('a manager publishes, rolls back and deletes', async () => {
    expect((await call('POST', `/agents/${agentId}/versions/publish`, manager.token)).body.data.version_number).toBe(2);
    expect((await call('POST', `/agents/${agentId}/versions/1/rollback`, manager.token)).body.data.version_number).toBe(1);
    const tmp = (await call('POST', '/agents', manager.token, { workspace_id: owner.workspaceId, name: 'tmp' })).body.data.id;
    expect((await call('DELETE', `/agents/${tmp}`, manager.token)).body.data).toEqual({ message: 'deleted' });
  });

  it('API keys are limited to their agents:* scopes', async () => {
    const mk = async (scopes: string[]) => (await call('POST', '/auth/api-keys', owner.token, { name: `k-${scopes.join('-')}`, scopes })).body.data.key as string;
    const readKey = await mk(['agents:read']);
    const writeKey = await mk(['agents:write']);
    const otherKey = await mk(['conversations:read']);
    expect((await call('GET', `/agents/${agentId}`, readKey)).status).toBe(200);
    expect((await call('GET', '/agents', readKey)).status).toBe(200);
    expectError(await call('PUT', `/agents/${agentId}`, readKey, { description: 'x' }), 403, 'FORBIDDEN');
    expect((await call('PUT', `/agents/${agentId}`, writeKey, { description: 'by key' })).status).toBe(200);
    expectError(await call('GET', '/agents', otherKey), 403, 'FORBIDDEN');
    expectError(await call('GET', `/agents/${agentId}`, otherKey), 403, 'FORBIDDEN');
  });

  it('the organization key acts as owner everywhere', async () => {
    expect((await call('GET', `/agents/${agentId}`, h.orgKey)).status).toBe(200);
    expect((await call('POST', `/agents/${agentId}/versions/publish`, h.orgKey)).status).toBe(200);
  });
});

describe('pagination', () => {
  let pager: TestUser;
  let secondWs = '';

  beforeAll(async () => {
    pager = await createTestUser(h);
    secondWs = (await call('POST', '/auth/workspaces', pager.token, { name: 'Second' })).body.data.id;
    for (let i = 1; i <= 5; i++) await call('POST', '/agents', pager.token, { workspace_id: pager.workspaceId, name: `a${i}` });
    for (let i = 1; i <= 2; i++) await call('POST', '/agents', pager.token, { workspace_id: secondWs, name: `b${i}` });
  });

  it('lists every workspace of the caller by default, newest first, with meta', async () => {
    const res = await call('GET', '/agents', pager.token);
    expect(res.body.data.map((a: { name: string }) => a.name)).toEqual(['b2', 'b1', 'a5', 'a4', 'a3', 'a2', 'a1']);
    expect(res.body.meta).toEqual({ page: 1, per_page: 20, total: 7, total_pages: 1 });
    const one = await call('GET', `/agents?workspace_id=${pager.workspaceId}`, pager.token);
    expect(one.body.meta.total).toBe(5);
  });

  it('limit and offset drive page, per_page and total_pages', async () => {
    const p = async (q: string) => (await call('GET', `/agents?workspace_id=${pager.workspaceId}&${q}`, pager.token)).body;
    expect(await p('limit=2')).toMatchObject({ meta: { page: 1, per_page: 2, total: 5, total_pages: 3 } });
    const last = await p('limit=2&offset=4');
    expect(last.meta).toEqual({ page: 3, per_page: 2, total: 5, total_pages: 3 });
    expect(last.data.map((a: { name: string }) => a.name)).toEqual(['a1']);
    const beyond = await p('limit=2&offset=10');
    expect(beyond.data).toEqual([]);
    expect(beyond.meta).toEqual({ page: 6, per_page: 2, total: 5, total_pages: 3 });
    // offset not a multiple of limit: page is floor(offset / limit) + 1
    expect((await p('limit=2&offset=3')).meta.page).toBe(2);
    expect((await p('limit=200')).meta).toEqual({ page: 1, per_page: 200, total: 5, total_pages: 1 });
  });

  it('out-of-range values are 400 naming the field', async () => {
    expectInvalid(await call('GET', '/agents?limit=0', pager.token), 'limit');
    expectInvalid(await call('GET', '/agents?limit=201', pager.token), 'limit');
    expectInvalid(await call('GET', '/agents?limit=-5', pager.token), 'limit');
    expectInvalid(await call('GET', '/agents?limit=abc', pager.token), 'limit');
    expectInvalid(await call('GET', '/agents?offset=-1', pager.token), 'offset');
    expectInvalid(await call('GET', `/agents/${agentId}/versions?limit=0`, owner.token), 'limit');
    expectError(await call('GET', '/agents?workspace_id=nope', pager.token), 404, 'NOT_FOUND');
  });
});
