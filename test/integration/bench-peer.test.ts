/**
 * The Fastify peer of bench/rest.ts (bench/http/fastify-peer.ts) against the real control plane on
 * the same schema: the ratio the bench reports means something only while both servers answer the
 * same requests with the same JSON and the same refusals. Real Postgres and Redis, real sockets.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../shared/clock.js';
import { newId } from '../../shared/ids.js';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { startFastifyPeer, type RunningPeer } from '../../bench/http/fastify-peer.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, TEST_DATABASE_URL, type TestInfra } from '../helpers/infra.js';

let infra: TestInfra;
let app: ControlPlane;
let peer: RunningPeer;
let alice: TestUser;
let bob: TestUser;
let conversationId: string;
const C = '/api/v1/conversations';

/** The body without what differs per request: `timestamp`; for a created row, `id` and `created_at`. */
function comparable(body: Record<string, any>, created = false): Record<string, any> {
  const { timestamp, ...rest } = body;
  expect(typeof timestamp).toBe('string');
  if (created && rest.data) {
    const { id, created_at, ...data } = rest.data;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number.isNaN(Date.parse(created_at))).toBe(false);
    return { ...rest, data };
  }
  return rest;
}

beforeAll(async () => {
  infra = await startTestInfra();
  app = await startControlPlane({ ...infra, config: infra.config, logger: infra.logger, clock: realClock }, { port: 0, host: '127.0.0.1' });
  alice = await createTestUser(app);
  bob = await createTestUser(app);
  const agent = await api(app, 'POST', '/api/v1/agents', { token: alice.token, body: { workspace_id: alice.workspaceId, name: 'Peer agent', system_prompt: 'Be brief.', welcome_message: '' } });
  expect(agent.status).toBe(201);
  const agentId = agent.body.data.id as string;
  const make = async (body: Record<string, unknown>) => {
    const r = await api(app, 'POST', C, { token: alice.token, body: { session_id: `s-${newId()}`, agent_id: agentId, ...body } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.data.id as string;
  };
  conversationId = await make({ metadata: { channel: 'web' } });
  for (let i = 0; i < 3; i++) await make({ metadata: { n: i } });
  // A transferred call: two stints sharing call_id fold into one list row with call fields.
  const callId = newId();
  await make({ call_id: callId, segment_kind: 'ai' });
  await make({ call_id: callId, segment_kind: 'human' });
  peer = await startFastifyPeer({ databaseUrl: TEST_DATABASE_URL, schema: infra.schema, jwtKey: infra.jwtKey, logLevel: 'info' });
});

afterAll(async () => {
  await peer?.close();
  await app?.close();
  await infra?.close();
});

describe('Fastify peer vs the control plane', () => {
  it('lists the same page, total and folded call rows as GET /api/v1/conversations', async () => {
    for (const q of ['?limit=20', '?limit=2&offset=1', '?limit=2&offset=10', '']) {
      const ours = await api(app, 'GET', `${C}${q}`, { token: alice.token });
      const theirs = await api(`http://127.0.0.1:${peer.port}`, 'GET', `${C}${q}`, { token: alice.token });
      expect(ours.status).toBe(200);
      expect(theirs.status).toBe(200);
      expect(comparable(theirs.body)).toEqual(comparable(ours.body));
      expect(Object.keys(theirs.body.data[0] ?? {})).toEqual(Object.keys(ours.body.data[0] ?? {}));
    }
    const all = await api(`http://127.0.0.1:${peer.port}`, 'GET', `${C}?limit=20`, { token: alice.token });
    expect(all.body.meta).toEqual({ page: 1, per_page: 20, total: 5, total_pages: 1 });
    const folded = all.body.data.filter((r: Record<string, unknown>) => r.call_id);
    expect(folded).toHaveLength(1);
    expect(folded[0]).toMatchObject({ session_count: 2, segment_count: 2, segment_pattern: 'ai -> human' });
  });

  it('creates the same message body as POST /api/v1/conversations/messages, and both rows are stored', async () => {
    const body = { conversation_id: conversationId, role: 'user', content: 'what time do you open?', turn_number: 3, total_latency_ms: 420, metadata: { k: 'v' } };
    const ours = await api(app, 'POST', `${C}/messages`, { token: alice.token, body });
    const theirs = await api(`http://127.0.0.1:${peer.port}`, 'POST', `${C}/messages`, { token: alice.token, body });
    expect(ours.status).toBe(201);
    expect(theirs.status).toBe(201);
    expect(comparable(theirs.body, true)).toEqual(comparable(ours.body, true));
    expect(JSON.stringify(theirs.body).length).toBe(JSON.stringify(ours.body).length);
    const stored = await api(app, 'GET', `${C}/${conversationId}/messages`, { token: alice.token });
    const ids = stored.body.data.map((m: { id: string }) => m.id);
    expect(ids).toEqual(expect.arrayContaining([ours.body.data.id, theirs.body.data.id]));
  });

  it('refuses what the control plane refuses: no bearer 401, another workspace 404, bad limit and role 400', async () => {
    const peerUrl = `http://127.0.0.1:${peer.port}`;
    for (const target of [app, peerUrl] as const) {
      expect((await api(target, 'GET', `${C}?limit=20`)).status).toBe(401);
      expect((await api(target, 'GET', `${C}?limit=20`, { token: 'not-a-token' })).status).toBe(401);
      expect((await api(target, 'GET', `${C}?limit=0`, { token: alice.token })).status).toBe(400);
      expect((await api(target, 'GET', `${C}?limit=501`, { token: alice.token })).status).toBe(400);
      const bobs = await api(target, 'POST', `${C}/messages`, { token: bob.token, body: { conversation_id: conversationId, role: 'user', content: 'x' } });
      expect(bobs.status).toBe(404);
      const noRole = await api(target, 'POST', `${C}/messages`, { token: alice.token, body: { conversation_id: conversationId, content: 'x' } });
      expect(noRole.status).toBe(400);
      // Bob's own list is empty: the page is fenced to his workspace.
      const bobList = await api(target, 'GET', `${C}?limit=20`, { token: bob.token });
      expect(bobList.status).toBe(200);
      expect(bobList.body.meta.total).toBe(0);
    }
  });
});
