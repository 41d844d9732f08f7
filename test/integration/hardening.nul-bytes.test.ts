/**
 * Finding "NUL bytes -> 500" (issue 11): any text or JSON field containing \u0000 (agent name,
 * prompt, metadata, memory, tool fields, emails, `?user_id=%00`, `/conversations/by-session/%00`)
 * answered 500 from Postgres, over REST and Connect. One edge check (control-plane/http/input.ts)
 * now answers 400 INVALID_REQUEST naming the field, for NUL and for unpaired UTF-16 surrogates
 * (which jsonb refuses too), and nothing is stored.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../helpers/accounts.js';
import { createTestUser, expectInvalid, restClient, startAgentsApp, type AgentsApp, type Call, type TestUser } from '../unit/agents/support.js';

let h: AgentsApp;
let call: Call;
let owner: TestUser;
let agentId = '';

const NUL = 'a\u0000b';
const LONE = 'x\uD800y';

async function rows(table: string, where: string, id: string): Promise<number> {
  const [r] = await h.infra.sql.unsafe<{ n: number }[]>(`select count(*)::int as n from ${table} where ${where} = $1`, [id]);
  return r.n;
}

/** A Connect unary JSON call (camelCase fields, as the Connect protocol writes them). */
async function connect(method: string, body: unknown, token = owner.token): Promise<{ status: number; body: any }> {
  const res = await fetch(`http://127.0.0.1:${h.port}/voiceplane.v1.${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h);
  owner = await createTestUser(h);
  agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Clean' })).body.data.id;
});

afterAll(async () => {
  await h?.close();
});

describe('NUL bytes -> 500', () => {
  it('agent fields over REST: 400 naming the field, nothing stored', async () => {
    const ws = owner.workspaceId;
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: NUL }, 'name'],
      [{ name: 'ok', system_prompt: `be kind${NUL}` }, 'system_prompt'],
      [{ name: 'ok', welcome_message: NUL }, 'welcome_message'],
      [{ name: 'ok', metadata: { note: NUL } }, 'metadata.note'],
      [{ name: 'ok', metadata: { deep: { list: ['fine', NUL] } } }, 'metadata.deep.list[1]'],
      [{ name: 'ok', metadata: { [NUL]: 1 } }, 'metadata'],
      [{ name: LONE }, 'name'],
      [{ name: 'ok', metadata: { note: LONE } }, 'metadata.note'],
    ];
    for (const [body, field] of cases) expectInvalid(await call('POST', '/agents', owner.token, { workspace_id: ws, ...body }), field);
    expectInvalid(await call('PUT', `/agents/${agentId}`, owner.token, { description: NUL }), 'description');
    expect(await rows('agents', 'workspace_id', ws)).toBe(1);
    expect((await call('GET', `/agents/${agentId}`, owner.token)).body.data.agent.description).not.toContain('\u0000');
  });

  it('tool fields: 400 naming the field, nothing stored', async () => {
    const tools = `/agents/${agentId}/tools`;
    const ok = { name: 'lookup', endpoint_url: 'https://example.com/x' };
    expectInvalid(await call('POST', tools, owner.token, { ...ok, description: NUL }), 'description');
    expectInvalid(await call('POST', tools, owner.token, { ...ok, name: NUL }), 'name');
    expectInvalid(await call('POST', tools, owner.token, { ...ok, headers: { 'x-key': NUL } }), 'headers.x-key');
    expectInvalid(await call('POST', tools, owner.token, { ...ok, request_body: { q: NUL } }), 'request_body.q');
    expectInvalid(
      await call('POST', tools, owner.token, { ...ok, function_schema: { type: 'object', properties: { q: { type: 'string', description: NUL } } } }),
      'function_schema.properties.q.description',
    );
    expectInvalid(await call('POST', tools, owner.token, { ...ok, auth_token: NUL }), 'auth_token');
    expect(await rows('agent_tools', 'agent_id', agentId)).toBe(0);
  });

  it('memory items and workspaces: 400 naming the field, nothing stored', async () => {
    const mem = `/auth/workspaces/${owner.workspaceId}/memory`;
    expectInvalid(await call('POST', mem, owner.token, { title: 't', content: NUL }), 'content');
    expectInvalid(await call('POST', mem, owner.token, { title: NUL, content: 'c' }), 'title');
    expectInvalid(await call('POST', mem, owner.token, { title: 't', content: 'c', metadata: { note: NUL } }), 'metadata.note');
    expect(await rows('memory_items', 'workspace_id', owner.workspaceId)).toBe(0);
    expectInvalid(await call('POST', '/auth/workspaces', owner.token, { name: NUL }), 'name');
    expect(await rows('workspaces', 'user_id', owner.userId)).toBe(1);
  });

  it('emails and passwords: 400 naming the field', async () => {
    expectInvalid(await call('POST', '/auth/register', undefined, { email: `x${NUL}@example.com`, password: 'long enough pw', first_name: 'A', last_name: 'B' }), 'email');
    expectInvalid(await call('POST', '/auth/login', undefined, { email: `x${NUL}@example.com`, password: 'whatever1' }), 'email');
    expectInvalid(await call('POST', '/auth/resend-otp', undefined, { email: `x${NUL}@example.com` }), 'email');
    expectInvalid(await call('POST', `/auth/workspaces/${owner.workspaceId}/members`, owner.token, { email: `x${NUL}@example.com`, role: 'member' }), 'email');
  });

  it('query strings and path parameters: 400 naming the parameter', async () => {
    expectInvalid(await call('GET', '/conversations?user_id=%00', owner.token), 'user_id');
    expectInvalid(await call('GET', '/conversations/by-session/%00', owner.token), 'session_id');
    expectInvalid(await call('GET', '/providers/resolve?provider_type=llm&agent_id=%00', owner.token), 'agent_id');
  });

  it('voice routes (raw family) refuse it too', async () => {
    const res = await api(h, 'POST', '/api/v1/voice/sessions/start', { body: { agent_id: agentId, session_metadata: { note: NUL } } });
    expect(res.status).toBe(400);
    expect(res.body.error?.details?.[0]?.field ?? res.body.details?.[0]?.field ?? JSON.stringify(res.body)).toContain('session_metadata.note');
  });

  it('over Connect: invalid_argument naming the field, nothing stored', async () => {
    const bad = await connect('AgentService/CreateAgent', { workspaceId: owner.workspaceId, name: NUL });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('invalid_argument');
    expect(bad.body.message).toMatch(/^name:/);
    const meta = await connect('AgentService/CreateAgent', { workspaceId: owner.workspaceId, name: 'ok', metadata: { note: NUL } });
    expect(meta.status).toBe(400);
    expect(meta.body.message).toMatch(/^metadata\.note:/);
    const mem = await connect('MemoryService/CreateMemoryItem', { workspaceId: owner.workspaceId, title: 't', content: NUL });
    expect(mem.body.message).toMatch(/^content:/);
    expect(await rows('agents', 'workspace_id', owner.workspaceId)).toBe(1);
    expect(await rows('memory_items', 'workspace_id', owner.workspaceId)).toBe(0);
  });

  it('ordinary non-ASCII text (emoji pairs, accents) is still accepted', async () => {
    const res = await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Zoë 🎧', metadata: { note: '日本語 ✓' } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ name: 'Zoë 🎧', metadata: { note: '日本語 ✓' } });
  });
});
