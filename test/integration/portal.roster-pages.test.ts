/**
 * Issue 21, the call-center roster list (`GET /api/v1/call-center/agents`): `limit` + `offset` in,
 * the standard `meta` out (API conventions), by agent code; bad values are 400 naming the field;
 * unknown query parameters are ignored like on every list route but `/analytics/*`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';

const C = '/api/v1/call-center/agents';
let infra: TestInfra;
let cp: ControlPlane;
let owner: TestUser;
const codes: string[] = [];

beforeAll(async () => {
  infra = await startTestInfra();
  cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  owner = await createTestUser(cp);
  const prefix = randomBytes(3).toString('hex');
  // 25 agents, created out of code order; the 25th deactivated.
  for (let i = 24; i >= 0; i--) {
    const code = `p${prefix}-${String(i).padStart(2, '0')}`;
    const r = await api(cp, 'POST', C, { token: owner.token, body: { workspace_id: owner.workspaceId, display_name: `Agent ${i}`, agent_code: code } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    if (i === 24) expect((await api(cp, 'DELETE', `${C}/${r.body.data.id}`, { token: owner.token })).status).toBe(200);
    codes.unshift(code);
  }
}, 60_000);

afterAll(async () => {
  await cp?.close();
  await infra?.close();
});

const list = (query: string) => api(cp, 'GET', `${C}?workspace_id=${owner.workspaceId}${query}`, { token: owner.token });

describe('roster pages', () => {
  it('defaults to 20 by agent code, with meta; offset walks the rest', async () => {
    const first = await list('');
    expect(first.status).toBe(200);
    expect(first.body.data.map((a: { agent_code: string }) => a.agent_code)).toEqual(codes.slice(0, 20));
    expect(first.body.meta).toEqual({ page: 1, per_page: 20, total: 24, total_pages: 2 });
    const second = await list('&limit=20&offset=20');
    expect(second.body.data.map((a: { agent_code: string }) => a.agent_code)).toEqual(codes.slice(20, 24));
    expect(second.body.meta).toEqual({ page: 2, per_page: 20, total: 24, total_pages: 2 });
  });

  it('counts the deactivated agent with include_inactive, and past the end answers an empty page with the total', async () => {
    const all = await list('&include_inactive=true&limit=5&offset=20');
    expect(all.body.data.map((a: { agent_code: string }) => a.agent_code)).toEqual(codes.slice(20));
    expect(all.body.meta).toEqual({ page: 5, per_page: 5, total: 25, total_pages: 5 });
    const past = await list('&limit=10&offset=100');
    expect(past.body.data).toEqual([]);
    expect(past.body.meta).toEqual({ page: 11, per_page: 10, total: 24, total_pages: 3 });
  });

  it('refuses bad values naming the field, and ignores unknown parameters', async () => {
    for (const [q, field] of [
      ['&limit=0', 'limit'],
      ['&limit=201', 'limit'],
      ['&limit=abc', 'limit'],
      ['&offset=-1', 'offset'],
      ['&offset=1.5', 'offset'],
      ['&include_inactive=maybe', 'include_inactive'],
    ]) {
      const r = await list(q);
      expect(r.status, q).toBe(400);
      expect(r.body.error.code, q).toBe('INVALID_REQUEST');
      expect(r.body.error.details?.[0]?.field ?? r.body.error.message, q).toContain(field);
    }
    const r = await list('&limit=3&colour=blue');
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(3);
  });
});
