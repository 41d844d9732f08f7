/**
 * Records written by the engine's writer as the API serves them: folding of transferred calls in
 * the list, per-turn audio behind fresh signed links (valid until expiry, then 403; tampered 403;
 * purged 404), and the retention sweeper.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listConversations } from '../../control-plane/conversations/store.js';
import { createAudioStore } from '../../media-engine/records/audio-store.js';
import { createConversationWriter } from '../../media-engine/records/writer.js';
import { newId } from '../../shared/ids.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { createAgent, offsetClock, startConversationsServer, type Harness } from '../unit/records/control-plane.js';
import { endRecord, turnRecord } from '../unit/records/fixtures.js';

let infra: TestInfra;
let h: Harness;
let alice: TestUser;
let bob: TestUser;
let agent: string;
let ws: string;
const clock = offsetClock();
const C = '/api/v1/conversations';

beforeAll(async () => {
  infra = await startTestInfra();
  h = await startConversationsServer(infra, { clock });
  alice = await createTestUser(h);
  bob = await createTestUser(h);
  // A workspace of its own so the list holds only this suite's calls.
  ws = (await api(h, 'POST', '/api/v1/auth/workspaces', { token: alice.token, body: { name: 'calls' } })).body.data.id;
  agent = await createAgent(h, infra, alice, ws, 'Transfer agent');
});

afterAll(async () => {
  await h?.close();
  await infra?.close();
  if (infra) fs.rmSync(infra.config.dataDir, { recursive: true, force: true });
});

const get = (p: string, u = alice) => api(h, 'GET', p, { token: u.token });

async function stint(callId: string, kind: 'ai' | 'human', totals?: { turns: number; durationMs: number; latencyMs: number; status?: string }) {
  const r = await api(h, 'POST', C, { token: alice.token, body: { session_id: `s-${newId()}`, agent_id: agent, call_id: callId, segment_kind: kind } });
  expect(r.status).toBe(201);
  if (totals) {
    await api(h, 'PUT', `${C}/${r.body.data.id}`, {
      token: alice.token,
      body: { status: totals.status ?? 'completed', total_turns: totals.turns, total_duration_ms: totals.durationMs, avg_response_latency_ms: totals.latencyMs },
    });
  }
  await new Promise((res) => setTimeout(res, 5)); // distinct started_at per stint
  return r.body.data as { id: string; session_id: string };
}

describe('folding of transferred calls', () => {
  it('stints sharing call_id fold into the earliest stint with call-level aggregates', async () => {
    const single = (await api(h, 'POST', C, { token: alice.token, body: { session_id: `s-${newId()}`, agent_id: agent } })).body.data;
    const callId = newId();
    const s1 = await stint(callId, 'ai', { turns: 2, durationMs: 10_000, latencyMs: 600 });
    const s2 = await stint(callId, 'human', { turns: 3, durationMs: 30_000, latencyMs: 0 });
    const s3 = await stint(callId, 'ai'); // still running
    const reconnect = newId();
    const r1 = await stint(reconnect, 'ai', { turns: 1, durationMs: 1000, latencyMs: 400 });
    await stint(reconnect, 'ai', { turns: 1, durationMs: 1000, latencyMs: 800 });
    await stint(reconnect, 'human', { turns: 0, durationMs: 5000, latencyMs: 0, status: 'failed' });

    const list = await get(`${C}?workspace_id=${ws}`);
    expect(list.body.meta.total).toBe(3);
    const rows = list.body.data as Array<Record<string, any>>;
    const call = rows.find((r) => r.call_id === callId)!;
    expect(call).toMatchObject({
      id: s1.id,
      session_id: s1.session_id,
      call_id: callId,
      session_count: 3,
      segment_count: 3,
      segment_pattern: 'ai -> human -> ai',
      status: 'active',
      total_turns: 5,
      total_duration_ms: 40_000,
      avg_response_latency_ms: 240, // (2*600 + 3*0) / 5
    });
    expect(call).toHaveProperty('ended_at', null);
    const rc = rows.find((r) => r.call_id === reconnect)!;
    expect(rc).toMatchObject({ id: r1.id, session_count: 3, segment_count: 2, segment_pattern: 'ai -> human', status: 'failed', total_turns: 2, avg_response_latency_ms: 600 });
    expect(typeof rc.ended_at).toBe('string');
    const plain = rows.find((r) => r.id === single.id)!;
    // "present only on folded multi-segment rows" (the spec): absent on a plain row, not null.
    for (const k of ['call_id', 'session_count', 'segment_count', 'segment_pattern']) expect(plain).not.toHaveProperty(k);
    // Newest call first (by the start of its earliest stint).
    expect(rows.map((r) => r.id)).toEqual([r1.id, s1.id, single.id]);
    // Status filters match the folded status; other stints stay reachable by their session id.
    expect((await get(`${C}?workspace_id=${ws}&status=active`)).body.data.map((r: any) => r.id)).toEqual([s1.id, single.id]);
    expect((await get(`${C}?workspace_id=${ws}&status=completed`)).body.data.map((r: any) => r.id)).toEqual([]);
    expect((await get(`${C}/by-session/${encodeURIComponent(s2.session_id)}`)).body.data.id).toBe(s2.id);
    // The folded id's detail is its own stint.
    expect((await get(`${C}/${s1.id}`)).body.data.conversation).toMatchObject({ id: s1.id, total_turns: 2 });
    await api(h, 'PUT', `${C}/${s3.id}`, { token: alice.token, body: { status: 'completed', total_turns: 1, avg_response_latency_ms: 900 } });
    const after = (await get(`${C}?workspace_id=${ws}&status=completed`)).body.data;
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ id: s1.id, status: 'completed', total_turns: 6, avg_response_latency_ms: 350 });
  });
});

describe('folded list filters and pages', () => {
  it('agent_id matches a call through any stint; pages and totals count calls; one workspace or several give the same rows', async () => {
    const second = await createAgent(h, infra, alice, ws, 'Second agent');
    const callId = newId();
    const first = await stint(callId, 'ai', { turns: 1, durationMs: 1000, latencyMs: 300 });
    const taken = await api(h, 'POST', C, { token: alice.token, body: { session_id: `s-${newId()}`, agent_id: second, call_id: callId, segment_kind: 'ai' } });
    expect(taken.status).toBe(201);

    const bySecond = await get(`${C}?workspace_id=${ws}&agent_id=${second}`);
    expect(bySecond.body.data.map((r: any) => [r.id, r.agent_id, r.session_count])).toEqual([[first.id, agent, 2]]);
    expect(bySecond.body.meta).toMatchObject({ total: 1, total_pages: 1 });
    const byFirst = (await get(`${C}?workspace_id=${ws}&agent_id=${agent}`)).body.data.map((r: any) => r.id);
    expect(byFirst).toContain(first.id);
    expect(byFirst).not.toContain(taken.body.data.id); // a later stint is never a row of its own

    const all = await get(`${C}?workspace_id=${ws}`);
    const ids = all.body.data.map((r: any) => r.id) as string[];
    const total = all.body.meta.total as number;
    expect(ids).toHaveLength(total);
    for (let offset = 0; offset < total; offset++) {
      const one = await get(`${C}?workspace_id=${ws}&limit=1&offset=${offset}`);
      expect(one.body.data.map((r: any) => r.id)).toEqual([ids[offset]]);
      expect(one.body.meta).toMatchObject({ total, per_page: 1, total_pages: total });
    }
    const past = await get(`${C}?workspace_id=${ws}&limit=5&offset=${total + 5}`);
    expect(past.body).toMatchObject({ data: [], meta: { total } });

    // Several workspaces (`= any`) and one (`=`) are the same query but for the comparison.
    const several = await listConversations(infra.sql, { ws: [ws, newId()] }, { limit: 50, offset: 0 });
    const single = await listConversations(infra.sql, { ws: [ws] }, { limit: 50, offset: 0 });
    expect(several.rows.map((r) => r.id)).toEqual(ids);
    expect(single.rows.map((r) => r.id)).toEqual(ids);
    expect([several.total, single.total]).toEqual([total, total]);
    const filtered = await listConversations(infra.sql, { ws: [newId(), ws], agentId: second, status: 'active' }, { limit: 50, offset: 0 });
    expect(filtered.rows.map((r) => r.id)).toEqual([first.id]);
  });
});

describe('per-turn audio', () => {
  it('signed links work until they expire (then 403); tampering is 403; purged audio is 404; retention sweeps', async () => {
    const audio = createAudioStore({ dataDir: infra.config.dataDir, logger: infra.logger });
    const writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, audio });
    const sc = sessionConfig({ agent_id: agent, workspace_id: ws, user_id: alice.userId });
    const rec = writer.recorderFor(sc);
    const t0 = Date.now();
    rec.start({ session_id: sc.session_id, agent_id: agent, workspace_id: ws, metadata: {}, started_at_ms: t0 });
    rec.turn(turnRecord(1, { audioSeconds: 1, startedAtMs: t0 }));
    rec.turn({ ...turnRecord(2, { startedAtMs: t0 + 1 }), agent_audio: { samples: new Int16Array(8000).fill(1000), sampleRateHz: 8000 } });
    // An agent message (welcome, nudge, goodbye) keeps what the caller heard of it too.
    const goodbye = { samples: new Int16Array(4000).fill(500), sampleRateHz: 8000 };
    rec.agentMessage!({ kind: 'goodbye', turn: 2, text: 'goodbye', interrupted: false, tts: { provider: 'sim' }, started_at_ms: t0 + 2, agent_audio: goodbye });
    rec.end(endRecord(2, t0));
    await writer.close();

    const detail = await get(`${C}/${rec.conversationId}`);
    const msgs = detail.body.data.messages as Array<Record<string, any>>;
    expect(msgs.map((m) => Boolean(m.audio_url))).toEqual([true, false, false, true, true]);
    expect(msgs[4]).toMatchObject({ role: 'assistant', content: 'goodbye' });
    const goodbyeAudio = await fetch(`http://127.0.0.1:${h.port}${new URL(msgs[4].audio_url).pathname}${new URL(msgs[4].audio_url).search}`);
    expect(goodbyeAudio.status).toBe(200);
    expect(Buffer.from(await goodbyeAudio.arrayBuffer()).subarray(0, 4).toString('latin1')).toBe('OggS');
    const url = new URL(msgs[0].audio_url);
    expect(url.pathname).toBe(`${C}/audio/${msgs[0].id}.ogg`);
    expect(url.searchParams.get('exp')).toMatch(/^\d+$/);
    const exp = Number(url.searchParams.get('exp'));
    expect(exp * 1000 - clock.now()).toBeGreaterThan(14 * 60_000);
    expect(exp * 1000 - clock.now()).toBeLessThanOrEqual(15 * 60_000);
    const local = `${url.pathname}${url.search}`;
    // A fresh link on every read.
    await new Promise((r) => setTimeout(r, 1100));
    expect((await get(`${C}/${rec.conversationId}/messages`)).body.data[0].audio_url).not.toBe(msgs[0].audio_url);

    const ok = await fetch(`http://127.0.0.1:${h.port}${local}`);
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toBe('audio/ogg');
    const bytes = Buffer.from(await ok.arrayBuffer());
    expect(bytes.subarray(0, 4).toString('latin1')).toBe('OggS');
    expect(bytes.length).toBe(Number(ok.headers.get('content-length')));
    const agentAudio = await fetch(`http://127.0.0.1:${h.port}${new URL(msgs[3].audio_url).pathname}${new URL(msgs[3].audio_url).search}`);
    expect(agentAudio.status).toBe(200);

    const tampered = local.replace(/sig=[^&]+/, 'sig=AAAA');
    expect((await fetch(`http://127.0.0.1:${h.port}${tampered}`)).status).toBe(403);
    const otherId = local.replace(msgs[0].id, msgs[1].id);
    const forbidden = await fetch(`http://127.0.0.1:${h.port}${otherId}`);
    expect(forbidden.status).toBe(403);
    expect(await forbidden.json()).toMatchObject({ success: false, error: { code: 'FORBIDDEN' } });
    expect((await fetch(`http://127.0.0.1:${h.port}${url.pathname}`)).status).toBe(403);

    clock.advance(16 * 60_000);
    expect((await fetch(`http://127.0.0.1:${h.port}${local}`)).status).toBe(403);
    const fresh = new URL((await get(`${C}/${rec.conversationId}/messages`)).body.data[0].audio_url);
    expect((await fetch(`http://127.0.0.1:${h.port}${fresh.pathname}${fresh.search}`)).status).toBe(200);

    // Retention: messages older than AUDIO_RETENTION_DAYS lose file and path; the link then 404s.
    const file = path.join(infra.config.dataDir, 'audio', (await infra.sql`select audio_path from messages where id = ${msgs[0].id}`)[0].audio_path);
    expect(fs.existsSync(file)).toBe(true);
    const orphanDir = path.join(infra.config.dataDir, 'audio', '2001-01-01');
    fs.mkdirSync(orphanDir, { recursive: true });
    fs.writeFileSync(path.join(orphanDir, 'orphan.ogg'), 'x');
    await infra.sql`update messages set created_at = created_at - interval '31 days' where id = ${msgs[0].id}`;
    const swept = await h.conversations.sweeper.sweepOnce();
    expect(swept.files).toBeGreaterThanOrEqual(1);
    expect(swept.dirs).toBeGreaterThanOrEqual(1);
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.existsSync(orphanDir)).toBe(false);
    expect((await get(`${C}/${rec.conversationId}/messages`)).body.data[0]).toHaveProperty('audio_url', null);
    expect((await fetch(`http://127.0.0.1:${h.port}${fresh.pathname}${fresh.search}`)).status).toBe(404);
    expect((await get(`${C}/${rec.conversationId}`, bob)).status).toBe(404);
  });
});

describe("the caller's unanswered last words", () => {
  it('are stored as the last user message, with no assistant message and only an asr pipeline event', async () => {
    const writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock });
    const sc = sessionConfig({ agent_id: agent, workspace_id: ws, user_id: alice.userId });
    const rec = writer.recorderFor(sc);
    const t0 = Date.now();
    rec.start({ session_id: sc.session_id, agent_id: agent, workspace_id: ws, metadata: {}, started_at_ms: t0 });
    rec.turn(turnRecord(1, { startedAtMs: t0 }));
    rec.turn({ ...turnRecord(2, { startedAtMs: t0 + 1 }), user_text: 'and one more thing', assistant_text: '', unanswered: true });
    rec.end(endRecord(2, t0));
    await writer.close();
    const msgs = (await get(`${C}/${rec.conversationId}`)).body.data.messages as Array<Record<string, any>>;
    expect(msgs.map((m) => [m.turn_number, m.role])).toEqual([[1, 'user'], [1, 'assistant'], [2, 'user']]);
    expect(msgs.at(-1)!.content).toBe('and one more thing');
    const events = await infra.sql<{ event_type: string }[]>`select event_type from pipeline_events where conversation_id = ${rec.conversationId} and turn_number = 2`;
    expect(events.map((e) => e.event_type)).toEqual(['asr']);
  });
});

describe('post-call summary through the agents domain', () => {
  it('PUT with agent_id uses the agent\'s published LLM (sim) and fills summary asynchronously', async () => {
    const pub = await createAgent(h, infra, alice, ws, 'Published');
    const prov = await api(h, 'POST', `/api/v1/agents/${pub}/providers`, { token: alice.token, body: { provider_type: 'llm', provider_name: 'sim' } });
    expect(prov.status, JSON.stringify(prov.body)).toBeLessThan(300);
    const published = await api(h, 'POST', `/api/v1/agents/${pub}/versions/publish`, { token: alice.token });
    expect(published.status, JSON.stringify(published.body)).toBeLessThan(300);
    const conv = (await api(h, 'POST', C, { token: alice.token, body: { session_id: `s-${newId()}`, agent_id: pub } })).body.data;
    await api(h, 'POST', `${C}/messages`, { token: alice.token, body: { conversation_id: conv.id, turn_number: 1, role: 'user', content: 'my parcel never arrived' } });
    const put = await api(h, 'PUT', `${C}/${conv.id}`, { token: alice.token, body: { status: 'completed', agent_id: pub } });
    expect(put.body.data).toEqual({ id: conv.id, status: 'completed' });
    expect((await h.conversations.summarizer.waitFor(conv.id, (o) => o.status === 'completed')).status).toBe('completed');
    const got = (await get(`${C}/${conv.id}`)).body.data.conversation;
    expect(got.summary).toContain('parcel never arrived');
    // Never published: no summary, and the PUT itself still succeeds.
    const draft = await createAgent(h, infra, alice, ws, 'Draft');
    const c2 = (await api(h, 'POST', C, { token: alice.token, body: { session_id: `s-${newId()}`, agent_id: draft } })).body.data;
    await api(h, 'POST', `${C}/messages`, { token: alice.token, body: { conversation_id: c2.id, role: 'user', content: 'hello' } });
    expect((await api(h, 'PUT', `${C}/${c2.id}`, { token: alice.token, body: { status: 'completed', agent_id: draft } })).status).toBe(200);
    expect((await h.conversations.summarizer.waitFor(c2.id)).status).toBe('skipped');
    expect((await get(`${C}/${c2.id}`)).body.data.conversation).toHaveProperty('summary', null);
  });
});
