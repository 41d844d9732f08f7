/**
 * Issue 13, control-plane caches across replicas: two control planes (A and B) on one Postgres
 * schema and one Redis prefix. B caches bearer lookups, workspace roles and agent views; a write
 * or revocation on A reaches B through `registry.invalidations` and B answers the new state as
 * soon as the notice arrived (the test awaits the notice on B, no sleeping). With A cut off from
 * Redis (its notices are lost), B still answers the new state within CACHE_TTL_MS.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { startInfra, type Infra } from '../../control-plane/infra.js';
import { realClock } from '../../shared/clock.js';
import type { Registry } from '../../shared/registry/index.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, TEST_REDIS_URL, type TestInfra } from '../helpers/infra.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

const TTL_MS = 1500;

let proxy: TcpProxy;
let infraA: TestInfra;
let infraB: Infra;
let a: ControlPlane;
let b: ControlPlane;
let owner: TestUser;
let member: TestUser;

beforeAll(async () => {
  // A's registry reaches Redis through a proxy the last test cuts; B directly.
  proxy = await TcpProxy.start('127.0.0.1', Number(new URL(TEST_REDIS_URL).port || 6379));
  infraA = await startTestInfra({ cacheTtlMs: TTL_MS }, { REDIS_URL: proxy.urlFor(TEST_REDIS_URL), REDIS_COMMAND_TIMEOUT_MS: '300' });
  // Only A's registry goes through the proxy; its transcript bus (own Redis clients) connects
  // directly: this suite is about the registry's notices.
  a = await startControlPlane({ ...infraA, config: { ...infraA.config, redisUrl: TEST_REDIS_URL } }, { port: 0, host: '127.0.0.1' });
  const configB = { ...infraA.config, redisUrl: TEST_REDIS_URL };
  infraB = await startInfra(configB, infraA.logger, realClock, { schema: infraA.schema, registryPrefix: infraA.registryPrefix });
  b = await startControlPlane({ ...infraB, config: configB, logger: infraA.logger, clock: realClock }, { port: 0, host: '127.0.0.1' });
  [owner, member] = await Promise.all([createTestUser(a), createTestUser(a)]);
}, 60_000);

afterAll(async () => {
  await b?.close();
  await infraB?.close();
  await a?.close();
  await infraA?.close();
  await proxy?.close();
});

/** Resolves when `reg` delivers a notice for (topic, key): B has evicted by then. */
async function notice(reg: Registry, topic: string, key: string, ms = 5000): Promise<void> {
  let unsub: (() => Promise<void>) | undefined;
  let timer: NodeJS.Timeout | undefined;
  const p = new Promise<void>((resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${topic} notice for ${key} within ${ms} ms`)), ms);
    void reg.invalidations.subscribe((t, k) => (t === topic && k === key ? resolve() : undefined)).then((u) => (unsub = u), reject);
  });
  // The subscription is live before the caller triggers the write.
  await new Promise((r) => setImmediate(r));
  return p.finally(async () => {
    clearTimeout(timer);
    await unsub?.();
  });
}

const get = (app: ControlPlane, path: string, token: string) => api(app, 'GET', path, { token });

describe('two replicas share change notices', () => {
  it('an agent update on A is what B answers once the notice arrived', async () => {
    const created = await api(a, 'POST', '/api/v1/agents', { token: owner.token, body: { workspace_id: owner.workspaceId, name: 'v1' } });
    const id = created.body.data.id as string;
    expect((await get(b, `/api/v1/agents/${id}`, owner.token)).body.data.agent.name).toBe('v1');
    // Cached on B now: a change made behind the API's back is not seen (the cache is in play).
    await infraA.sql`update agents set name = 'behind the back' where id = ${id}`;
    expect((await get(b, `/api/v1/agents/${id}`, owner.token)).body.data.agent.name).toBe('v1');

    const arrived = notice(infraB.registry, 'agent', id);
    expect((await api(a, 'PUT', `/api/v1/agents/${id}`, { token: owner.token, body: { name: 'v2' } })).status).toBe(200);
    await arrived;
    expect((await get(b, `/api/v1/agents/${id}`, owner.token)).body.data.agent.name).toBe('v2');

    // A binding change (provider) reaches B's cached detail too.
    const arrived2 = notice(infraB.registry, 'agent', id);
    expect((await api(a, 'POST', `/api/v1/agents/${id}/providers`, { token: owner.token, body: { provider_type: 'llm', provider_name: 'sim' } })).status).toBeLessThan(300);
    await arrived2;
    expect((await get(b, `/api/v1/agents/${id}`, owner.token)).body.data.providers.map((p: { provider_type: string }) => p.provider_type)).toEqual(['llm']);

    // Deleted on A: 404 on B.
    const arrived3 = notice(infraB.registry, 'agent', id);
    expect((await api(a, 'DELETE', `/api/v1/agents/${id}`, { token: owner.token })).status).toBe(200);
    await arrived3;
    expect((await get(b, `/api/v1/agents/${id}`, owner.token)).status).toBe(404);
  });

  it('a publish on A is the live configuration B starts sessions with once the notice arrived', async () => {
    const created = await api(a, 'POST', '/api/v1/agents', { token: owner.token, body: { workspace_id: owner.workspaceId, name: 'live', system_prompt: 'First.' } });
    const id = created.body.data.id as string;
    const publish = () => api(a, 'POST', `/api/v1/agents/${id}/versions/publish`, { token: owner.token });
    // The publish's notice first: one arriving while B loads would (rightly) keep B from caching
    // what it loaded, and the read below behind the API's back would then reach the database.
    const published = notice(infraB.registry, 'agent', id);
    expect((await publish()).status).toBe(200);
    await published;
    const v1 = await b.agents.liveConfig(id);
    expect(v1).toMatchObject({ version_number: 1, system_prompt: 'First.' });
    // Cached on B now: a change behind the API's back is not seen; the value is frozen for sharing.
    await infraA.sql`update agents set live_version = null where id = ${id}`;
    expect((await b.agents.liveConfig(id)).version_number).toBe(1);
    expect(Object.isFrozen(v1) && Object.isFrozen(v1.providers)).toBe(true);
    await infraA.sql`update agents set live_version = 1 where id = ${id}`;

    const arrived = notice(infraB.registry, 'agent', id);
    expect((await api(a, 'PUT', `/api/v1/agents/${id}`, { token: owner.token, body: { system_prompt: 'Second.' } })).status).toBe(200);
    expect((await publish()).status).toBe(200);
    await arrived;
    // The notice of the update may arrive before the publish's: wait for the version, bounded.
    const deadline = Date.now() + 5000;
    let seen = await b.agents.liveConfig(id);
    while (seen.version_number !== 2 && Date.now() < deadline) {
      await notice(infraB.registry, 'agent', id, 1000).catch(() => {});
      seen = await b.agents.liveConfig(id);
    }
    expect(seen).toMatchObject({ version_number: 2, system_prompt: 'Second.' });

    const gone = notice(infraB.registry, 'agent', id);
    expect((await api(a, 'DELETE', `/api/v1/agents/${id}`, { token: owner.token })).status).toBe(200);
    await gone;
    await expect(b.agents.liveConfig(id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('removing a member on A fences them on B; adding them back opens it again', async () => {
    const created = await api(a, 'POST', '/api/v1/agents', { token: owner.token, body: { workspace_id: owner.workspaceId, name: 'shared' } });
    const id = created.body.data.id as string;
    const add = () => api(a, 'POST', `/api/v1/auth/workspaces/${owner.workspaceId}/members`, { token: owner.token, body: { email: member.email, role: 'member' } });
    let arrived = notice(infraB.registry, 'user', member.userId);
    expect((await add()).status).toBeLessThan(300);
    await arrived;
    expect((await get(b, `/api/v1/agents/${id}`, member.token)).status).toBe(200);
    expect((await get(b, `/api/v1/conversations?workspace_id=${owner.workspaceId}`, member.token)).status).toBe(200);

    arrived = notice(infraB.registry, 'user', member.userId);
    expect((await api(a, 'DELETE', `/api/v1/auth/workspaces/${owner.workspaceId}/members/${member.userId}`, { token: owner.token })).status).toBe(200);
    await arrived;
    expect((await get(b, `/api/v1/agents/${id}`, member.token)).status).toBe(404);
    expect((await get(b, `/api/v1/conversations?workspace_id=${owner.workspaceId}`, member.token)).status).toBe(404);

    arrived = notice(infraB.registry, 'user', member.userId);
    expect((await add()).status).toBeLessThan(300);
    await arrived;
    expect((await get(b, `/api/v1/agents/${id}`, member.token)).status).toBe(200);
  });

  it('an API key revoked on A is refused by B once the notice arrived', async () => {
    const k = await api(a, 'POST', '/api/v1/auth/api-keys', { token: owner.token, body: { name: 'replica test' } });
    expect(k.status).toBe(201);
    const key = k.body.data.key as string;
    expect((await get(b, '/api/v1/agents', key)).status).toBe(200);
    const arrived = notice(infraB.registry, 'key', sha256(key));
    const del = await api(a, 'DELETE', `/api/v1/auth/api-keys/${k.body.data.api_key}`, { token: owner.token });
    expect(del.status).toBe(200);
    await arrived;
    expect((await get(b, '/api/v1/agents', key)).status).toBe(401);
  });

  it('a reused refresh token on A revokes the session on B once the notice arrived', async () => {
    const u = await createTestUser(a);
    expect((await get(b, '/api/v1/agents', u.token)).status).toBe(200);
    expect((await api(a, 'POST', '/api/v1/auth/refresh', { body: { refresh_token: u.refreshToken } })).status).toBe(200);
    const sid = JSON.parse(Buffer.from(u.token.split('.')[1], 'base64url').toString()).sid as string;
    const arrived = notice(infraB.registry, 'session', sid);
    expect((await api(a, 'POST', '/api/v1/auth/refresh', { body: { refresh_token: u.refreshToken } })).status).toBe(401);
    await arrived;
    expect((await get(b, '/api/v1/agents', u.token)).status).toBe(401);
  });

  it('with A cut off from Redis its notices are lost, and B answers the change within the TTL', async () => {
    const created = await api(a, 'POST', '/api/v1/agents', { token: owner.token, body: { workspace_id: owner.workspaceId, name: 'before' } });
    const id = created.body.data.id as string;
    expect((await get(b, `/api/v1/agents/${id}`, owner.token)).body.data.agent.name).toBe('before');

    proxy.reset();
    // A knows it is cut off once its registry operations fail.
    await expect(infraA.registry.windows.incrWindow(`probe-${randomBytes(4).toString('hex')}`, 1000)).rejects.toThrow(/unavailable/);
    const changedAt = performance.now();
    expect((await api(a, 'PUT', `/api/v1/agents/${id}`, { token: owner.token, body: { name: 'after' } })).status).toBe(200);
    expect((await get(a, `/api/v1/agents/${id}`, owner.token)).body.data.agent.name).toBe('after');
    // B did not hear of it: its cached view is still served...
    expect((await get(b, `/api/v1/agents/${id}`, owner.token)).body.data.agent.name).toBe('before');
    // ...until the entry's TTL ends (polled; bounded by TTL plus a margin for a busy machine).
    let name = 'before';
    while (name === 'before' && performance.now() - changedAt < TTL_MS + 3000) {
      name = (await get(b, `/api/v1/agents/${id}`, owner.token)).body.data.agent.name;
      if (name === 'before') await new Promise((r) => setTimeout(r, 50));
    }
    expect(name).toBe('after');
    expect(performance.now() - changedAt).toBeLessThan(TTL_MS + 3000);
    // A reconnects, and drops everything it cached (its subscription was down: FLUSH_ALL).
    const flushed = notice(infraA.registry, '*', '*', 10_000);
    proxy.restore();
    await flushed;
    expect((await get(a, `/api/v1/agents/${id}`, owner.token)).body.data.agent.name).toBe('after');
  }, 20_000);
});

function sha256(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}
