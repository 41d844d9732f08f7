/**
 * The engine-side record writer against real Postgres and Redis: a simulated call (recorder driven
 * with turn records shaped like the actor's) produces the conversation, messages, tool calls and
 * audio files; Postgres taken away mid-call (TCP proxy) and restored leaves every row exactly once;
 * a full queue refuses turns loudly; a row the database rejects does not block the others; the
 * live transcript reaches a Redis subscriber.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import postgres from 'postgres';
import type { Sql } from '../../shared/db/client.js';
import { createAudioStore } from '../../media-engine/records/audio-store.js';
import { createRedisTranscriptBus, type TranscriptEvent } from '../../shared/records/bus.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import { newId } from '../../shared/ids.js';
import { captureLogger, startTestInfra, TEST_DATABASE_URL, TEST_REDIS_URL, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { endRecord, TcpProxy, turnRecord } from '../unit/records/fixtures.js';

let infra: TestInfra;
let proxy: TcpProxy;
let proxiedSql: Sql;

beforeAll(async () => {
  infra = await startTestInfra();
  const target = new URL(TEST_DATABASE_URL);
  proxy = await TcpProxy.start(target.hostname, Number(target.port || 5432));
  target.host = `127.0.0.1:${proxy.port}`;
  // fetch_types off: postgres.js leaves a rejection unhandled when a connection dies during its
  // start-up type query, which dropping connections can provoke (see media-engine/records/NOTES.md).
  proxiedSql = postgres(target.toString(), {
    max: 2,
    fetch_types: false,
    onnotice: () => {},
    connection: { search_path: `${infra.schema},public` },
  }) as unknown as Sql;
});

afterAll(async () => {
  await proxiedSql?.end({ timeout: 1 }).catch(() => {});
  await proxy?.close();
  await infra?.close();
  if (infra) fs.rmSync(infra.config.dataDir, { recursive: true, force: true });
});

const ids = () => ({ agent_id: newId(), workspace_id: newId() });

function startInfo(sc: ReturnType<typeof sessionConfig>, startedAtMs: number) {
  return { session_id: sc.session_id, agent_id: sc.agent_id, workspace_id: sc.workspace_id, user_id: sc.user_id, metadata: { call_direction: 'inbound' }, started_at_ms: startedAtMs };
}

async function until(pred: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('conversation writer', () => {
  it('a simulated call produces the conversation, paired messages with latency fields, tool calls and audio', async () => {
    const dataDir = path.join(infra.config.dataDir, 'w1');
    const audio = createAudioStore({ dataDir, logger: infra.logger });
    const writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, audio });
    const sc = sessionConfig({ ...ids(), user_id: 'caller-42' });
    const rec = writer.recorderFor(sc);
    const t0 = Date.now();
    rec.start(startInfo(sc, t0));
    rec.agentMessage!({ kind: 'welcome', turn: 0, text: 'hello caller', interrupted: false, tts: { provider: 'local', model: 'slt' }, started_at_ms: t0 + 100 });
    rec.turn(turnRecord(1, { audioSeconds: 1.2, startedAtMs: t0 + 2000 }));
    rec.turn(turnRecord(2, { tool: true, audioSeconds: 0.8, startedAtMs: t0 + 6000 }));
    rec.end(endRecord(2, t0));
    expect(writer.queued()).toBeGreaterThan(0); // nothing was written on the caller's stack
    await writer.flush();

    const [conv] = await infra.sql`select * from conversations where id = ${rec.conversationId}`;
    expect(conv).toMatchObject({ session_id: sc.session_id, user_id: 'caller-42', status: 'completed', total_turns: 2, total_duration_ms: 12_345, avg_response_latency_ms: 675, segment_kind: 'ai' });
    expect(conv.metadata).toMatchObject({ call_direction: 'inbound', end_reason: 'client_disconnected' });
    expect((conv.ended_at as Date).getTime()).toBe(t0 + 12_345);
    const msgs = await infra.sql`select * from messages where conversation_id = ${rec.conversationId} order by turn_number, (role = 'assistant')`;
    // The welcome is an agent message of turn 0 (issue 22), marked as a prompt, not a reply.
    const welcome = msgs.shift()!;
    expect(welcome).toMatchObject({ turn_number: 0, role: 'assistant', content: 'hello caller', tts_provider: 'local', llm_provider: null, metadata: { prompt: 'welcome', interrupted: false } });
    expect(msgs.map((m) => `${m.turn_number}:${m.role}`)).toEqual(['1:user', '1:assistant', '2:user', '2:assistant']);
    for (const m of msgs.filter((x) => x.role === 'assistant')) {
      expect(m.total_latency_ms).toBeGreaterThan(0);
      expect(m.asr_latency_ms + m.llm_latency_ms + m.tts_latency_ms + m.internal_overhead_ms).toBe(m.total_latency_ms);
      expect(m).toMatchObject({ llm_provider: 'sim', llm_model: 'sim-llm', tts_provider: 'sim', tokens_output: 12 });
    }
    expect(msgs[0]).toMatchObject({ asr_provider: 'sim', asr_latency_ms: 180, asr_confidence: 0.93 });
    const tcs = await infra.sql`select * from tool_calls where conversation_id = ${rec.conversationId}`;
    expect(tcs).toHaveLength(1);
    expect(tcs[0]).toMatchObject({ message_id: msgs[3].id, tool_name: 'get_weather', tool_input: { city: 'Paris' }, status: 'success', latency_ms: 90 });
    expect(tcs[0].tool_output.forecast.detail).toHaveLength(500);
    expect(msgs[3].tool_calls).toEqual([{ id: tcs[0].id, name: 'get_weather' }]);
    // Caller audio of both turns as Ogg files under <day>/<message_id>.ogg; agent replies had none.
    for (const m of msgs) {
      if (m.role === 'assistant') expect(m.audio_path).toBeNull();
      else {
        expect(m.audio_path).toBe(`${new Date(m.created_at).toISOString().slice(0, 10)}/${m.id}.ogg`);
        expect(fs.readFileSync(path.join(dataDir, 'audio', m.audio_path)).subarray(0, 4).toString('latin1')).toBe('OggS');
      }
    }
    expect(writer.stats()).toMatchObject({ queued: 0, refusedOps: 0, rejected: 0 });
    await writer.close();
    await writer.close();
  });

  it('Postgres going away mid-call and coming back: every row lands exactly once', { timeout: 30_000 }, async () => {
    const { logger, lines } = captureLogger();
    const writer = createConversationWriter({ sql: proxiedSql, logger, clock: infra.clock, flushMs: 10, batchSize: 7, retryBaseMs: 20, retryMaxMs: 150, statsLogMs: 100 });
    const calls = [0, 1, 2].map(() => sessionConfig(ids()));
    const recs = calls.map((sc) => writer.recorderFor(sc));
    const t0 = Date.now();
    recs.forEach((r, i) => r.start(startInfo(calls[i], t0)));
    for (let t = 1; t <= 3; t++) recs.forEach((r) => r.turn(turnRecord(t, { tool: t === 2, startedAtMs: t0 + t * 1000 })));
    await writer.flush();

    await proxy.pause();
    for (let t = 4; t <= 9; t++) recs.forEach((r) => r.turn(turnRecord(t, { tool: t % 3 === 0, startedAtMs: t0 + t * 1000 })));
    // Retry waits are fully jittered (0 to the ceiling): wait for a moment between attempts.
    await until(() => writer.stats().retries >= 2 && writer.stats().backingOff);
    expect(writer.queued()).toBeGreaterThan(0);
    const [{ n: during }] = await infra.sql`select count(*)::int as n from messages where conversation_id = any(${recs.map((r) => r.conversationId)}::uuid[])`;
    expect(during).toBe(3 * 3 * 2);

    await proxy.resume();
    await writer.flush();

    // Commits that land but whose acknowledgement is lost: the retried batch must be a no-op.
    proxy.trapCommits(2);
    for (let t = 10; t <= 14; t++) {
      recs.forEach((r) => r.turn(turnRecord(t, { tool: t === 12, startedAtMs: t0 + t * 1000 })));
      await new Promise((r) => setTimeout(r, 30));
    }
    recs.forEach((r) => r.end(endRecord(14, t0)));
    await writer.flush();
    expect(proxy.trappedCommits).toBe(2);

    for (const r of recs) {
      const rows = await infra.sql`select turn_number, role from messages where conversation_id = ${r.conversationId} order by turn_number, role`;
      expect(rows).toHaveLength(14 * 2);
      for (let t = 1; t <= 14; t++) expect(rows.filter((m) => m.turn_number === t).map((m) => m.role).sort()).toEqual(['assistant', 'user']);
      const [{ n: tools }] = await infra.sql`select count(*)::int as n from tool_calls where conversation_id = ${r.conversationId}`;
      expect(tools).toBe(4); // turns 2, 6, 9, 12
      const [conv] = await infra.sql`select status, total_turns from conversations where id = ${r.conversationId}`;
      expect(conv).toEqual({ status: 'completed', total_turns: 14 });
    }
    const st = writer.stats();
    expect(st).toMatchObject({ queued: 0, refusedOps: 0, rejected: 0, backingOff: false });
    expect(st.retries).toBeGreaterThan(0);
    expect(lines.some((l) => l.includes('records write failed; retrying'))).toBe(true);
    await until(() => lines.some((l) => l.includes('"msg":"records queue"') && l.includes('"retries"')));
    await writer.close();
  });

  it('a full queue refuses whole turns loudly; starts and ends use the reserve', async () => {
    const { logger, lines } = captureLogger();
    await proxy.pause();
    const writer = createConversationWriter({ sql: proxiedSql, logger, clock: infra.clock, maxQueue: 13, retryBaseMs: 20, retryMaxMs: 50 });
    const sc = sessionConfig(ids());
    const rec = writer.recorderFor(sc);
    const t0 = Date.now();
    rec.start(startInfo(sc, t0));
    for (let t = 1; t <= 6; t++) rec.turn(turnRecord(t, { startedAtMs: t0 + t }));
    rec.end(endRecord(6, t0));
    const st = writer.stats();
    // 1 start + 4 turns x (2 messages + 1 pipeline-events op) = 13; the 5th turn would need 16 > 13;
    // the end fits the reserve (14 queued).
    expect(st.refusedTurns).toBe(2);
    expect(st.refusedOps).toBe(6);
    expect(writer.queued()).toBe(14);
    expect(lines.some((l) => l.includes('records queue full'))).toBe(true);
    await proxy.resume();
    await writer.flush();
    const [{ n }] = await infra.sql`select count(*)::int as n from messages where conversation_id = ${rec.conversationId}`;
    expect(n).toBe(8);
    const [conv] = await infra.sql`select status, total_turns from conversations where id = ${rec.conversationId}`;
    expect(conv).toEqual({ status: 'completed', total_turns: 6 });
    await writer.close();
  });

  it('a record the database rejects is logged and dropped without blocking the rest', async () => {
    const { logger, lines } = captureLogger();
    const writer = createConversationWriter({ sql: infra.sql, logger, clock: infra.clock, flushMs: 1000 });
    const good = sessionConfig(ids());
    // unique (session_id, workspace_id) violation: a session id is unique per workspace (migration 0024)
    const dup = sessionConfig({ ...ids(), workspace_id: good.workspace_id, session_id: good.session_id });
    const r1 = writer.recorderFor(good);
    const r2 = writer.recorderFor(dup);
    const t0 = Date.now();
    r1.start(startInfo(good, t0));
    r2.start(startInfo(dup, t0));
    r1.turn(turnRecord(1, { startedAtMs: t0 }));
    r2.turn(turnRecord(1, { startedAtMs: t0 }));
    r1.end(endRecord(1, t0));
    await writer.flush();
    expect(writer.stats().rejected).toBeGreaterThanOrEqual(3); // dup's start and its two messages
    const [{ n }] = await infra.sql`select count(*)::int as n from messages where conversation_id = ${r1.conversationId}`;
    expect(n).toBe(2);
    expect(lines.filter((l) => l.includes('conversation record rejected by the database')).length).toBeGreaterThanOrEqual(3);
    await writer.close();
  });

  it('publishes each turn and the end on the Redis transcript bus', async () => {
    const prefix = `${infra.registryPrefix}:w`;
    const pubBus = await createRedisTranscriptBus({ url: TEST_REDIS_URL, prefix });
    const subBus = await createRedisTranscriptBus({ url: TEST_REDIS_URL, prefix });
    const writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, bus: pubBus });
    const sc = sessionConfig(ids());
    const rec = writer.recorderFor(sc);
    const got: TranscriptEvent[] = [];
    const unsub = await subBus.subscribe(rec.conversationId, (e) => got.push(e));
    const t0 = Date.now();
    rec.start(startInfo(sc, t0));
    rec.turn(turnRecord(1, { tool: true, startedAtMs: t0 }));
    rec.end(endRecord(1, t0));
    await until(() => got.length === 3);
    expect(got.map((e) => e.type)).toEqual(['start', 'turn', 'end']);
    const turn = got[1] as Extract<TranscriptEvent, { type: 'turn' }>;
    expect(turn.messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(turn.tool_calls[0]).toMatchObject({ tool_name: 'get_weather' });
    expect(got[2]).toMatchObject({ status: 'completed', total_turns: 1 });
    await unsub();
    await writer.close();
    await pubBus.close();
    await subBus.close();
  });

  it('an end arriving after the row already ended (PUT, a sweeper) keeps that status and ended_at; the totals land', async () => {
    const writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, flushMs: 10 });
    try {
      const t0 = Date.now();
      for (const [first, engine] of [['completed', 'failed'], ['failed', 'completed']] as const) {
        const sc = sessionConfig(ids());
        const rec = writer.recorderFor(sc);
        rec.start(startInfo(sc, t0));
        rec.turn(turnRecord(1, { startedAtMs: t0 + 1000 }));
        await writer.flush();
        // Ended elsewhere first (as PUT /conversations/{id} or the node sweeper write it).
        const endedAt = new Date(t0 + 5000);
        await infra.sql`update conversations set status = ${first}, ended_at = ${endedAt} where id = ${rec.conversationId}`;
        rec.end(endRecord(1, t0, engine));
        await writer.flush();
        const [conv] = await infra.sql`select status, ended_at, total_turns, total_duration_ms from conversations where id = ${rec.conversationId}`;
        expect(conv, `${first} then the engine's ${engine}`).toMatchObject({ status: first, total_turns: 1, total_duration_ms: 12_345 });
        expect((conv.ended_at as Date).getTime()).toBe(endedAt.getTime());
      }
    } finally {
      await writer.close();
    }
  });

  it('refuses sessions whose ids are not UUIDs instead of poisoning the queue', async () => {
    const writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock });
    const rec = writer.recorderFor(sessionConfig({ agent_id: 'not-a-uuid' }));
    rec.start(startInfo(sessionConfig({ agent_id: 'not-a-uuid' }), Date.now()));
    expect(writer.queued()).toBe(0);
    await writer.close();
  });
});
