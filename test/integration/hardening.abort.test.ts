/**
 * Finding "client hang-ups wedge the pool" (issue 11, defect 4): clients that disconnect with a
 * request in flight must never leave a pooled connection in an unknown state. 200 requests (an
 * authenticated read and a write) whose sockets are destroyed at a seeded random point 0-30 ms
 * into the request, on the machine's Postgres and on the embedded database; afterwards every
 * route answers normally and the pool serves more concurrent requests than it has connections.
 * And a query that blocks past the statement timeout (a lock held by another session) answers
 * 503 with Retry-After within the timeout and gives its connection back.
 */
import http from 'node:http';
import http2 from 'node:http2';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, TEST_DATABASE_URL, type TestInfra } from '../helpers/infra.js';
import { mulberry32 as prng } from '../carrier-sim/prng.js';

const STATEMENT_TIMEOUT_MS = 1500;

/** Sends a request and destroys the socket after `afterMs` (whatever state the request is in). */
function hangUp(port: number, method: string, path: string, token: string, body: unknown, afterMs: number): Promise<void> {
  return new Promise((resolve) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request({ method, host: '127.0.0.1', port, path, agent: false, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } });
    req.on('error', () => resolve());
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve());
      res.on('error', () => resolve());
    });
    req.on('close', () => resolve());
    setTimeout(() => req.destroy(), afterMs);
    req.end(text);
  });
}

interface Harness {
  infra: TestInfra;
  app: ControlPlane;
  user: TestUser;
  agentId: string;
  close(): Promise<void>;
}

async function start(embedded: boolean): Promise<Harness> {
  const orgKey = `org_${randomBytes(18).toString('hex')}`;
  const overrides = { orgApiKey: orgKey, dbStatementTimeoutMs: STATEMENT_TIMEOUT_MS, ...(embedded ? { databaseUrl: undefined } : {}) };
  const infra = await startTestInfra(overrides);
  const app = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  const user = await createTestUser(app);
  const created = await api(app, 'POST', '/api/v1/agents', { token: user.token, body: { workspace_id: user.workspaceId, name: 'Hang-up target', system_prompt: 'p' } });
  if (created.status !== 201) throw new Error(`create agent: ${created.status} ${JSON.stringify(created.body)}`);
  return {
    infra,
    app,
    user,
    agentId: created.body.data.id,
    async close() {
      await app.close();
      await infra.close();
      if (embedded) await fs.rm(infra.config.dataDir, { recursive: true, force: true });
    },
  };
}

/** 200 requests, 16 at a time, each abandoned at a random point. */
async function hangUps(h: Harness, seed: number): Promise<void> {
  const rnd = prng(seed);
  const jobs = Array.from({ length: 200 }, (_, i) => {
    const afterMs = Math.floor(rnd() * 31);
    return i % 2 === 0
      ? () => hangUp(h.app.port, 'GET', dbRead(h), h.user.token, undefined, afterMs)
      : () => hangUp(h.app.port, 'PUT', `/api/v1/agents/${h.agentId}`, h.user.token, { name: `renamed ${i}` }, afterMs);
  });
  const lanes = Array.from({ length: 16 }, async () => {
    for (let job = jobs.shift(); job; job = jobs.shift()) await job();
  });
  await Promise.all(lanes);
}

/**
 * A read that needs the database every time (the agent's tools; `GET /agents/{id}` is answered
 * from the agent view cache once loaded, docs/caching.md).
 */
const dbRead = (h: Harness) => `/api/v1/agents/${h.agentId}/tools`;

/** Every route answers normally, and 3x the pool size at once all succeed. */
async function expectHealthy(h: Harness): Promise<void> {
  const get = await api(h.app, 'GET', `/api/v1/agents/${h.agentId}`, { token: h.user.token });
  expect(get.status).toBe(200);
  const put = await api(h.app, 'PUT', `/api/v1/agents/${h.agentId}`, { token: h.user.token, body: { name: 'after the storm' } });
  expect(put.status).toBe(200);
  expect((await api(h.app, 'GET', `/api/v1/agents/${h.agentId}`, { token: h.user.token })).body.data.agent.name).toBe('after the storm');
  expect((await api(h.app, 'GET', '/api/v1/agents', { token: h.user.token })).status).toBe(200);
  expect((await api(h.app, 'GET', '/ready')).status).toBe(200);
  const burst = await Promise.all(Array.from({ length: 30 }, () => api(h.app, 'GET', dbRead(h), { token: h.user.token })));
  expect(burst.map((r) => r.status)).toEqual(burst.map(() => 200));
}

describe.each([
  ['machine Postgres', false],
  ['embedded database', true],
])('client hang-ups wedge the pool (%s)', (_name, embedded) => {
  let h: Harness;
  beforeAll(async () => {
    h = await start(embedded);
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  it('200 requests abandoned mid-flight leave every route answering and the pool healthy', async () => {
    await hangUps(h, embedded ? 11 : 7);
    await expectHealthy(h);
  }, 60_000);

  it('HTTP/2 streams abandoned mid-body are client hang-ups, not server errors in the log', async () => {
    const session = http2.connect(`http://127.0.0.1:${h.app.port}`);
    const streams = Array.from({ length: 50 }, () => {
      const st = session.request({ ':method': 'PUT', ':path': `/api/v1/agents/${h.agentId}`, authorization: `Bearer ${h.user.token}`, 'content-type': 'application/json' }, { endStream: false });
      st.on('error', () => {});
      st.write('{"name":"ha');
      return st;
    });
    await new Promise((r) => setTimeout(r, 200));
    session.destroy();
    await Promise.all(streams.map((st) => new Promise((r) => (st.closed ? r(undefined) : st.once('close', r)))));
    await expectHealthy(h);
    expect(h.infra.logLines.filter((l) => l.includes('request failed'))).toEqual([]);
  }, 30_000);

  it('a query blocked past the statement timeout answers 503 with Retry-After and frees its connection', async () => {
    // Another session holds a lock the route's query needs, so that query blocks in Postgres.
    const url = embedded ? await embeddedUrl(h) : TEST_DATABASE_URL;
    const locker = postgres(url, { max: 1, onnotice: () => {} });
    const held = locker.reserve();
    const conn = await held;
    try {
      await conn.unsafe('begin');
      await conn.unsafe(`lock table "${h.infra.schema}".agents in access exclusive mode`);
      const started = performance.now();
      const res = await api(h.app, 'GET', dbRead(h), { token: h.user.token });
      const tookMs = performance.now() - started;
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      expect(tookMs).toBeLessThan(STATEMENT_TIMEOUT_MS + 1500);
    } finally {
      await conn.unsafe('rollback').catch(() => {});
      conn.release();
      await locker.end({ timeout: 5 });
    }
    await expectHealthy(h);
  }, 30_000);

  it('/ready reports a wedged pool (every connection stuck) as database down, and recovers', async () => {
    const url = embedded ? await embeddedUrl(h) : TEST_DATABASE_URL;
    const locker = postgres(url, { max: 1, onnotice: () => {} });
    const conn = await locker.reserve();
    try {
      await conn.unsafe('begin');
      await conn.unsafe(`lock table "${h.infra.schema}".agents in access exclusive mode`);
      // As many blocked reads as the pool has connections (10): nothing else gets one.
      const stuck = Array.from({ length: 10 }, () => api(h.app, 'GET', dbRead(h), { token: h.user.token }));
      await new Promise((r) => setTimeout(r, 200));
      const started = performance.now();
      const ready = await api(h.app, 'GET', '/ready');
      expect(performance.now() - started).toBeLessThan(1300);
      expect(ready.status).toBe(503);
      expect(ready.body.error.details).toEqual([{ field: 'database', problem: 'down' }]);
      expect((await api(h.app, 'GET', '/healthz')).status).toBe(200);
      for (const r of await Promise.all(stuck)) expect(r.status).toBe(503);
    } finally {
      await conn.unsafe('rollback').catch(() => {});
      conn.release();
      await locker.end({ timeout: 5 });
    }
    await expectHealthy(h);
  }, 30_000);
});

/** The embedded database's URL, as the control plane's own pool sees it. */
async function embeddedUrl(h: Harness): Promise<string> {
  const o = (h.infra.sql as unknown as { options: { host: string[]; port: number[]; user: string; pass: string; database: string } }).options;
  return `postgres://${encodeURIComponent(o.user)}:${encodeURIComponent(o.pass)}@${o.host[0]}:${o.port[0]}/${o.database}`;
}
