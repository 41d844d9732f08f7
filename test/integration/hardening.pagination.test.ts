/**
 * Finding "pagination ignored" (issue 11): `?limit=-1` or `?limit=abc` on `/providers`,
 * `/providers/user-config` and `/telephony/calls` answered 200. Every paginated list route now
 * validates `limit` and `offset` with the one helper (control-plane/http/pagination.ts): out of
 * range or not a number is 400 INVALID_REQUEST naming the parameter.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api } from '../helpers/accounts.js';
import { createTestUser, expectInvalid, restClient, startAgentsApp, type AgentsApp, type Call, type TestUser } from '../unit/agents/support.js';

let h: AgentsApp;
let call: Call;
let owner: TestUser;
let agentId = '';

/** Every list route that pages, with its maximum `limit`. Paths are under /api/v1. */
function listRoutes(): Array<[string, number]> {
  const ws = owner.workspaceId;
  return [
    ['/auth/api-keys', 200],
    ['/auth/workspaces', 200],
    [`/auth/workspaces/${ws}/members`, 200],
    [`/auth/workspaces/${ws}/memory`, 200],
    ['/agents', 200],
    [`/agents/${agentId}/versions`, 200],
    ['/providers', 200],
    ['/providers/user-config', 200],
    ['/telephony/calls', 200],
    ['/conversations', 500],
  ];
}

beforeAll(async () => {
  h = await startAgentsApp();
  call = restClient(h);
  owner = await createTestUser(h);
  agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'Paged' })).body.data.id;
});

afterAll(async () => {
  await h?.close();
});

/** 400 naming `field`, in the envelope or (telephony) raw family. */
function expect400(res: Awaited<ReturnType<Call>>, field: string, what: string): void {
  const details = res.body?.error?.details ?? res.body?.details;
  if (res.status !== 400 || details?.[0]?.field !== field) throw new Error(`${what}: expected 400 naming ${field}, got ${res.status} ${JSON.stringify(res.body)}`);
}

describe('pagination ignored', () => {
  it('limit=-1, abc, 0, above the maximum, and offset=-1 are 400 naming the parameter on every list route', async () => {
    for (const [path, max] of listRoutes()) {
      const sep = path.includes('?') ? '&' : '?';
      for (const bad of ['-1', 'abc', '0', String(max + 1), '1.5']) {
        expect400(await call('GET', `${path}${sep}limit=${bad}`, owner.token), 'limit', `${path} limit=${bad}`);
      }
      for (const bad of ['-1', 'abc']) expect400(await call('GET', `${path}${sep}offset=${bad}`, owner.token), 'offset', `${path} offset=${bad}`);
      const ok = await call('GET', `${path}${sep}limit=${max}&offset=0`, owner.token);
      expect({ path, status: ok.status }).toEqual({ path, status: 200 });
    }
  });

  it('/providers pages the registry with meta', async () => {
    const all = await call('GET', '/providers?limit=200', owner.token);
    const total = all.body.meta.total;
    expect(total).toBe(all.body.data.length);
    expect(total).toBeGreaterThan(3);
    const page2 = await call('GET', '/providers?limit=2&offset=2', owner.token);
    expect(page2.body.data.map((p: { id: string }) => p.id)).toEqual(all.body.data.slice(2, 4).map((p: { id: string }) => p.id));
    expect(page2.body.meta).toEqual({ page: 2, per_page: 2, total, total_pages: Math.ceil(total / 2) });
    expect((await call('GET', '/providers', owner.token)).body.meta.per_page).toBe(20);
  });

  it('/providers/user-config pages the caller\'s configurations with meta', async () => {
    const defs = (await call('GET', '/providers?limit=3', owner.token)).body.data as Array<{ id: string }>;
    for (const d of defs) expect((await call('POST', '/providers/user-config', owner.token, { provider_id: d.id, model_name: 'm' })).status).toBe(201);
    const page = await call('GET', '/providers/user-config?limit=2&offset=2', owner.token);
    expect(page.body.data).toHaveLength(1);
    expect(page.body.meta).toEqual({ page: 2, per_page: 2, total: 3, total_pages: 2 });
  });

  it('/telephony/calls keeps {count, calls} and adds meta', async () => {
    const res = await api(h, 'GET', '/api/v1/telephony/calls?limit=5', { token: owner.token });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ count: 0, calls: [], meta: { page: 1, per_page: 5, total: 0, total_pages: 0 } });
  });

  it('over Connect too', async () => {
    const res = await fetch(`http://127.0.0.1:${h.port}/voiceplane.v1.ProviderRegistryService/ListProviderDefinitions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${owner.token}` },
      body: JSON.stringify({ limit: -1 }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { message: string }).message).toMatch(/^limit:/);
  });
});
