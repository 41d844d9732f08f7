/**
 * Internal gateway headers have no effect on public requests: `X-Internal-Service` does not unmask
 * secrets and `X-User-*` does not change who the caller is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';

let infra: TestInfra;
let cp: ControlPlane;
let a: TestUser;
let b: TestUser;

beforeAll(async () => {
  infra = await startTestInfra();
  cp = await startControlPlane({ ...infra }, { port: 0, host: '127.0.0.1' });
  a = await createTestUser(cp);
  b = await createTestUser(cp);
});

afterAll(async () => {
  await cp?.close();
  await infra?.close();
});

describe('internal headers from the public side', () => {
  it('X-User-* does not impersonate, and is not a credential', async () => {
    const spoof = { 'x-user-id': b.userId, 'x-user-email': b.email, 'x-user-role': 'owner' };
    const me = await api(cp, 'GET', '/api/v1/auth/me', { token: a.token, headers: spoof });
    expect(me.status).toBe(200);
    expect(me.body.data.id).toBe(a.userId);
    const anon = await api(cp, 'GET', '/api/v1/auth/me', { headers: { ...spoof, 'x-internal-service': 'agents' } });
    expect(anon.status).toBe(401);
    const other = await api(cp, 'GET', `/api/v1/auth/workspaces/${b.workspaceId}`, { token: a.token, headers: spoof });
    expect(other.status).toBe(404);
  });

  it('X-Internal-Service does not unmask provider keys', async () => {
    const agent = await api(cp, 'POST', '/api/v1/agents', { token: a.token, body: { workspace_id: a.workspaceId, name: 'masked' } });
    expect(agent.status).toBe(201);
    const key = 'sk-live-abcdefghijklmnop1234';
    await api(cp, 'POST', `/api/v1/agents/${agent.body.data.id}/providers`, { token: a.token, body: { provider_type: 'llm', provider_name: 'openai', api_key: key } });
    const read = await api(cp, 'GET', `/api/v1/agents/${agent.body.data.id}/providers`, { token: a.token, headers: { 'x-internal-service': 'voice-pipeline' } });
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.body)).not.toContain(key);
    expect(JSON.stringify(read.body)).toContain('1234');
  });
});
