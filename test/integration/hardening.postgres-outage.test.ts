/**
 * Finding "Postgres outage" (issue 11): the control plane talks to the machine's Postgres through
 * a TCP proxy that the test breaks. Connections reset -> database routes answer 503 with
 * Retry-After (REST and Connect), not 500; a partition (nothing forwarded, no error) -> 503 within
 * a few seconds, not a 30 s hang; `/ready` names the database as down; after the network heals
 * the first requests succeed within a second (no 5-7 s reconnect backoff).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { api, createTestUser, type ApiResponse, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, TEST_DATABASE_URL, type TestInfra } from '../helpers/infra.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/** Small, so a partition is detected fast: the response watchdog is statement timeout + 1 s. */
const STATEMENT_TIMEOUT_MS = 1500;
const CONNECT_TIMEOUT_MS = 1000;
/**
 * The first request after a partition heals: connections resume or reconnect at once (backoff
 * capped at 500 ms, db/client.ts); connect timeout + that cap + 1 s for a loaded machine.
 */
const PARTITION_RECOVERY_BOUND_MS = CONNECT_TIMEOUT_MS + 500 + 1000;

let proxy: TcpProxy;
let infra: TestInfra;
let app: ControlPlane;
let user: TestUser;
let agentId = '';

beforeAll(async () => {
  const target = new URL(TEST_DATABASE_URL);
  proxy = await TcpProxy.start(target.hostname, Number(target.port || 5432));
  infra = await startTestInfra(
    { orgApiKey: `org_${randomBytes(18).toString('hex')}`, dbStatementTimeoutMs: STATEMENT_TIMEOUT_MS, dbConnectTimeoutMs: CONNECT_TIMEOUT_MS },
    { DATABASE_URL: proxy.urlFor(TEST_DATABASE_URL) },
  );
  app = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  user = await createTestUser(app);
  const created = await api(app, 'POST', '/api/v1/agents', { token: user.token, body: { workspace_id: user.workspaceId, name: 'Outage', system_prompt: 'p' } });
  agentId = created.body.data.id;
}, 60_000);

afterAll(async () => {
  await app?.close();
  await infra?.close();
  await proxy?.close();
});

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t };
}

/**
 * A read that needs the database every time: the agent's tools (`GET /agents/{id}` itself is
 * answered from the agent view cache once loaded, docs/caching.md).
 */
const getAgent = () => api(app, 'GET', `/api/v1/agents/${agentId}/tools`, { token: user.token });
const agentDetail = () => api(app, 'GET', `/api/v1/agents/${agentId}`, { token: user.token });
const putAgent = (name: string) => api(app, 'PUT', `/api/v1/agents/${agentId}`, { token: user.token, body: { name } });
/** The same read over Connect (JSON over HTTP/1.1). */
const connectGetAgent = () =>
  api(app, 'POST', '/voiceplane.v1.AgentConfigService/ListTools', { token: user.token, body: { agentId }, headers: { 'connect-protocol-version': '1' } });

function expect503(res: ApiResponse): void {
  expect(res.status, JSON.stringify(res.body)).toBe(503);
  expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
}

describe('Postgres outage', () => {
  it('reset connections: database routes answer 503 with Retry-After (REST and Connect), /ready says database down', async () => {
    expect((await getAgent()).status).toBe(200);
    proxy.reset();
    const get = await timed(getAgent);
    expect503(get.value);
    expect(get.ms).toBeLessThan(2000);
    expect503(await putAgent('during reset'));
    const rpc = await connectGetAgent();
    expect(rpc.status).toBe(503);
    expect(rpc.body.code).toBe('unavailable');
    expect(Number(rpc.headers['retry-after'])).toBeGreaterThan(0);
    const ready = await api(app, 'GET', '/ready');
    expect(ready.status).toBe(503);
    expect(ready.body.error.details).toEqual([{ field: 'database', problem: 'down' }]);
    expect((await api(app, 'GET', '/healthz')).status).toBe(200);
  });

  it('after the reset heals, the first requests succeed within a second', async () => {
    // Let the pool fail a few more reconnects first (postgres.js's backoff grows with each).
    for (let i = 0; i < 5; i++) expect((await getAgent()).status).toBe(503);
    proxy.restore();
    const first = await timed(getAgent);
    expect(first.value.status).toBe(200);
    expect(first.ms).toBeLessThan(1000);
    const write = await timed(() => putAgent('after reset'));
    expect(write.value.status).toBe(200);
    expect(write.ms).toBeLessThan(1000);
    expect((await api(app, 'GET', '/ready')).status).toBe(200);
  });

  it('partition: 503 within a few seconds instead of hanging, then prompt recovery', async () => {
    expect((await getAgent()).status).toBe(200);
    proxy.partition();
    const during = await timed(() => Promise.all([getAgent(), putAgent('during partition'), getAgent()]));
    for (const r of during.value) expect503(r);
    expect(during.ms).toBeLessThan(STATEMENT_TIMEOUT_MS + 1000 + 1500);
    const ready = await timed(() => api(app, 'GET', '/ready'));
    expect(ready.value.status).toBe(503);
    expect(ready.ms).toBeLessThan(1500);
    proxy.restore();
    const first = await timed(getAgent);
    expect(first.value.status).toBe(200);
    // Here ~100 ms (also with both cores busy); a loaded CI machine measured 1.0-1.8 s. The bound
    // still catches what this guards against: postgres.js's own reconnect backoff (5-7 s).
    expect(first.ms, `first request after the partition healed (the partition's 503s took ${Math.round(during.ms)} ms)`).toBeLessThan(PARTITION_RECOVERY_BOUND_MS);
    const burst = await Promise.all(Array.from({ length: 25 }, () => getAgent()));
    expect(burst.map((r) => r.status)).toEqual(burst.map(() => 200));
    expect((await putAgent('after partition')).status).toBe(200);
    expect((await agentDetail()).body.data.agent.name).toBe('after partition');
  }, 30_000);
});
