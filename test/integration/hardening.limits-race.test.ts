/**
 * Finding "limits race" (issue 11): 200 parallel tool creates with a limit of 128 stored 200, 160
 * parallel knowledge-base binds (limit 100) stored 160, 250 parallel provider configurations (limit
 * 200) stored 249: the services counted, then inserted. The limits are now enforced by the database
 * (migration 0004), so parallel creates store exactly the limit and the rest answer 409
 * LIMIT_REACHED. Counts are read back from Postgres, not from the API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse } from '../helpers/accounts.js';
import { countRows, expectSplit, parallel } from '../helpers/limits-race.js';
import { createMemoryItem, createTestUser, restClient, startAgentsApp, type AgentsApp, type Call, type TestUser } from '../unit/agents/support.js';

let h: AgentsApp;
let call: Call;
let owner: TestUser;

/** Runs `n` setup requests, `width` at a time (setup, not the race under test). */
async function batched(n: number, width: number, one: (i: number) => Promise<ApiResponse>): Promise<ApiResponse[]> {
  const out: ApiResponse[] = [];
  for (let i = 0; i < n; i += width) out.push(...(await parallel(Math.min(width, n - i), (j) => one(i + j))));
  return out;
}

const count = (table: string, column: string, id: string) => countRows(h.infra.sql, table, column, id);

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h);
  owner = await createTestUser(h);
});

afterAll(async () => {
  await h?.close();
});

describe('limits race', () => {
  it('200 parallel tool creates (limit 128): exactly 128 stored, the rest 409 LIMIT_REACHED', async () => {
    const agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Tools' })).body.data.id;
    const res = await parallel(200, (i) => call('POST', `/agents/${agentId}/tools`, owner.token, { name: `tool_${i}`, endpoint_url: 'https://example.com/t' }));
    expectSplit(res, 201, 128);
    expect(await count('agent_tools', 'agent_id', agentId)).toBe(128);
    // Deleting one makes room for exactly one more.
    const first = res.find((r) => r.status === 201)!.body.data.id;
    expect((await call('DELETE', `/agents/${agentId}/tools/${first}`, owner.token)).status).toBe(200);
    expect((await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 'again', endpoint_url: 'https://example.com/t' })).status).toBe(201);
    expect((await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 'over', endpoint_url: 'https://example.com/t' })).body.error.code).toBe('LIMIT_REACHED');
  }, 60_000);

  it('160 parallel knowledge-base binds (limit 100): exactly 100 stored; re-binding a bound item still works when full', async () => {
    const agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Knowledge' })).body.data.id;
    const items: string[] = [];
    for (let i = 0; i < 160; i += 20) {
      items.push(...(await Promise.all(Array.from({ length: 20 }, (_, j) => createMemoryItem(h, owner.token, owner.workspaceId, `kb ${i + j}`, 'content')))));
    }
    const res = await parallel(160, (i) => call('POST', `/agents/${agentId}/knowledge-bases`, owner.token, { knowledge_base_id: items[i], mode: 'always' }));
    expectSplit(res, 201, 100);
    expect(await count('agent_knowledge_bases', 'agent_id', agentId)).toBe(100);
    const bound = res.find((r) => r.status === 201)!.body.data.knowledge_base_id;
    const again = await call('POST', `/agents/${agentId}/knowledge-bases`, owner.token, { knowledge_base_id: bound, mode: 'on_demand' });
    expect(again.status).toBe(201);
    expect(again.body.data.mode).toBe('on_demand');
  }, 60_000);

  it('250 parallel user provider configurations (limit 200): exactly 200 stored; saving an existing one still works when full', async () => {
    const defs = await batched(250, 25, (i) => call('POST', '/providers', h.orgKey, { name: `race-${i}`, provider_type: 'llm', base_url: 'https://llm.example.com/v1' }));
    expect(defs.every((d) => d.status === 201)).toBe(true);
    const res = await parallel(250, (i) => call('POST', '/providers/user-config', owner.token, { provider_id: defs[i].body.data.id, model_name: 'm' }));
    expectSplit(res, 201, 200);
    expect(await count('user_provider_configs', 'user_id', owner.userId)).toBe(200);
    const saved = res.find((r) => r.status === 201)!.body.data.provider_id;
    expect((await call('POST', '/providers/user-config', owner.token, { provider_id: saved, model_name: 'changed' })).status).toBe(201);
  }, 90_000);

  it('130 parallel API key creates (limit 100 active): exactly 100 stored', async () => {
    const user = await createTestUser(h);
    const res = await parallel(130, (i) => call('POST', '/auth/api-keys', user.token, { name: `k${i}`, scopes: [] }));
    expectSplit(res, 201, 100);
    const [r] = await h.infra.sql<{ n: number }[]>`select count(*)::int as n from api_keys where user_id = ${user.userId} and revoked_at is null`;
    expect(r.n).toBe(100);
  }, 60_000);

  it('120 parallel workspace creates (limit 100 per owner, one exists): exactly 99 more stored', async () => {
    const user = await createTestUser(h);
    const res = await parallel(120, (i) => call('POST', '/auth/workspaces', user.token, { name: `w${i}` }));
    expectSplit(res, 201, 99);
    expect(await count('workspaces', 'user_id', user.userId)).toBe(100);
  }, 60_000);
});
