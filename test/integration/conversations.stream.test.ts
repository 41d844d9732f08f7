/**
 * The live transcript (SSE, `GET /api/v1/conversations/{id}/stream`) across "processes": the
 * engine's writer publishes on its own Redis connection, the control plane subscribes on another.
 * A simulated call streams stored and live turns, then `end`; fencing and heartbeats; and one real
 * engine call (sim providers, browser socket) whose records and live turns come through the writer.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import { newId } from '../../shared/ids.js';
import { createRedisTranscriptBus, type TranscriptBus } from '../../shared/records/bus.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { createSimAsr } from '../../shared/providers/asr/sim.js';
import { createSimLlm } from '../../shared/providers/llm/sim.js';
import { createSimTts } from '../../shared/providers/tts/sim.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, TEST_REDIS_URL, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { VoiceClient } from '../helpers/voice-client.js';
import { createAgent, startConversationsServer, type Harness } from '../unit/records/control-plane.js';
import { endRecord, turnRecord } from '../unit/records/fixtures.js';

let infra: TestInfra;
let h: Harness;
let engineBus: TranscriptBus;
let writer: ConversationWriter;
let alice: TestUser;
let bob: TestUser;
let agent: string;

beforeAll(async () => {
  infra = await startTestInfra();
  h = await startConversationsServer(infra, { options: { heartbeatMs: 300 } });
  // The engine side: its own Redis connections, same channel prefix as the control plane's bus.
  engineBus = await createRedisTranscriptBus({ url: TEST_REDIS_URL, prefix: infra.registryPrefix });
  writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, bus: engineBus, flushMs: 20 });
  alice = await createTestUser(h);
  bob = await createTestUser(h);
  agent = await createAgent(h, infra, alice, alice.workspaceId);
});

afterAll(async () => {
  await writer?.close();
  await engineBus?.close();
  await h?.close();
  await infra?.close();
});

interface SseEvent {
  event: string;
  id?: string;
  data: any;
}

/** A minimal SSE client: collects events and comments; `next(pred)` waits for a matching event. */
function sse(path: string, token?: string) {
  const events: SseEvent[] = [];
  const comments: string[] = [];
  let status = 0;
  let closed = false;
  let body = '';
  let buf = '';
  const waiters: Array<() => void> = [];
  const notify = () => waiters.splice(0).forEach((w) => w());
  let stop = () => {};
  const ready = new Promise<void>((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: h.port, path, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      status = res.statusCode ?? 0;
      resolve();
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const ev: SseEvent = { event: 'message', data: undefined };
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments.push(line);
            else if (line.startsWith('event: ')) ev.event = line.slice(7);
            else if (line.startsWith('id: ')) ev.id = line.slice(4);
            else if (line.startsWith('data: ')) ev.data = JSON.parse(line.slice(6));
          }
          if (ev.data !== undefined) events.push(ev);
        }
        notify();
      });
      res.on('end', () => {
        closed = true;
        notify();
      });
    });
    req.on('error', reject);
    stop = () => req.destroy();
  });
  async function next(pred: (e: SseEvent) => boolean, timeoutMs = 10_000): Promise<SseEvent> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const found = events.find(pred);
      if (found) return found;
      if (closed || Date.now() > end) throw new Error(`no matching event; got ${events.map((e) => e.event).join(',')} closed=${closed}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 100);
      });
    }
  }
  return {
    ready,
    events,
    comments,
    next,
    get status() {
      return status;
    },
    get closed() {
      return closed;
    },
    body: () => body,
    close: () => stop(),
  };
}

async function until(pred: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('live transcript stream (SSE)', () => {
  it('replays stored turns, delivers live turns of the running call, then end; closes', async () => {
    const sc = sessionConfig({ agent_id: agent, workspace_id: alice.workspaceId });
    const rec = writer.recorderFor(sc);
    const t0 = Date.now();
    rec.start({ session_id: sc.session_id, agent_id: agent, workspace_id: alice.workspaceId, metadata: {}, started_at_ms: t0 });
    rec.turn(turnRecord(1, { startedAtMs: t0 }));
    await writer.flush();

    const s = sse(`/api/v1/conversations/${rec.conversationId}/stream`, alice.token);
    await s.ready;
    expect(s.status).toBe(200);
    const first = await s.next(() => true);
    expect(first).toMatchObject({ event: 'conversation', data: { id: rec.conversationId, status: 'active' } });
    const t1 = await s.next((e) => e.event === 'turn' && e.data.turn_number === 1);
    expect(t1.id).toBe('1');
    expect(t1.data.messages.map((m: any) => m.role)).toEqual(['user', 'assistant']);

    rec.turn(turnRecord(2, { tool: true, startedAtMs: t0 + 1000 }));
    const t2 = await s.next((e) => e.event === 'turn' && e.data.turn_number === 2);
    expect(t2.data.messages[0]).toMatchObject({ role: 'user', content: 'caller says thing 2', turn_number: 2 });
    expect(t2.data.messages[1]).toMatchObject({ role: 'assistant', total_latency_ms: expect.any(Number), internal_overhead_ms: 35 });
    expect(t2.data.tool_calls[0]).toMatchObject({ tool_name: 'get_weather', status: 'success' });
    // A live turn has the replayed turn's shape: every field of the record, unset ones null.
    expect(Object.keys(t2.data.messages[0]).sort()).toEqual(Object.keys(t1.data.messages[0]).sort());
    expect(t2.data.messages[0]).toMatchObject({ audio_url: null, tool_call_id: null, reasoning_content: null });
    expect(t2.data.tool_calls[0]).toMatchObject({ error_message: null, message_id: t2.data.messages[1].id });
    const stored = await api(h, 'GET', `/api/v1/conversations/${rec.conversationId}/messages`, { token: alice.token });
    const storedKeys = Object.keys(stored.body.data[0]).sort();
    expect(Object.keys(t2.data.messages[1]).sort()).toEqual(storedKeys);
    // The agent's own prompts after a turn (an idle nudge, then the goodbye) come under that turn's
    // number: each is sent once, live, though turn 2 was already sent.
    for (const [kind, text] of [['nudge', 'Are you still there?'], ['goodbye', 'Goodbye!']] as const) {
      rec.agentMessage!({ kind, turn: 2, text, interrupted: false, tts: { provider: 'sim' }, started_at_ms: t0 + 5000 });
      const prompt = await s.next((e) => e.event === 'turn' && e.data.messages[0]?.content === text);
      expect(prompt.data).toMatchObject({ turn_number: 2, messages: [{ role: 'assistant', content: text, metadata: { prompt: kind } }], tool_calls: [] });
    }
    await until(() => s.comments.some((c) => c.startsWith(': heartbeat')));

    rec.end(endRecord(2, t0));
    const end = await s.next((e) => e.event === 'end');
    expect(end.data).toMatchObject({ conversation_id: rec.conversationId, status: 'completed', total_turns: 2 });
    await until(() => s.closed);
    expect(s.events.filter((e) => e.event === 'turn').map((e) => e.data.turn_number)).toEqual([1, 2, 2, 2]);
    await until(() => h.conversations.openStreams === 0);
  });

  it('an ended conversation replays its turns and ends at once', async () => {
    const sc = sessionConfig({ agent_id: agent, workspace_id: alice.workspaceId });
    const rec = writer.recorderFor(sc);
    const t0 = Date.now();
    rec.start({ session_id: sc.session_id, agent_id: agent, workspace_id: alice.workspaceId, metadata: {}, started_at_ms: t0 });
    rec.turn(turnRecord(1, { startedAtMs: t0 }));
    rec.end(endRecord(1, t0, 'failed'));
    await writer.flush();
    const s = sse(`/api/v1/conversations/${rec.conversationId}/stream`, alice.token);
    await until(() => s.closed);
    expect(s.events.map((e) => e.event)).toEqual(['conversation', 'turn', 'end']);
    expect(s.events[2].data).toMatchObject({ status: 'failed', total_turns: 1 });
  });

  it('needs a bearer and is fenced: another workspace or an unknown id is 404', async () => {
    const sc = sessionConfig({ agent_id: agent, workspace_id: alice.workspaceId });
    const rec = writer.recorderFor(sc);
    rec.start({ session_id: sc.session_id, agent_id: agent, workspace_id: alice.workspaceId, metadata: {}, started_at_ms: Date.now() });
    await writer.flush();
    const path = `/api/v1/conversations/${rec.conversationId}/stream`;
    expect((await api(h, 'GET', path)).status).toBe(401);
    const other = await api(h, 'GET', path, { token: bob.token });
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
    expect((await api(h, 'GET', `/api/v1/conversations/${newId()}/stream`, { token: alice.token })).status).toBe(404);
    rec.end(endRecord(0, Date.now()));
  });
});

describe('transcript stream bounds', () => {
  it('a burst of requests cannot pass the process bound together; a user holds at most maxStreamsPerUser', async () => {
    const small = await startConversationsServer(infra, { options: { heartbeatMs: 300, maxStreams: 3, maxStreamsPerUser: 2 } });
    try {
      const carol = await createTestUser(small);
      const dave = await createTestUser(small);
      const conv = async (u: TestUser) => {
        const sc = sessionConfig({ agent_id: await createAgent(small, infra, u, u.workspaceId), workspace_id: u.workspaceId });
        const rec = writer.recorderFor(sc);
        rec.start({ session_id: sc.session_id, agent_id: sc.agent_id, workspace_id: u.workspaceId, metadata: {}, started_at_ms: Date.now() });
        await writer.flush();
        return `/api/v1/conversations/${rec.conversationId}/stream`;
      };
      const [pc, pd] = [await conv(carol), await conv(dave)];
      const get = (path: string, token: string) =>
        new Promise<{ status: number; retryAfter?: string; req: http.ClientRequest }>((resolve, reject) => {
          const req = http.get({ host: '127.0.0.1', port: small.port, path, headers: { authorization: `Bearer ${token}` } }, (res) =>
            resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined, req }),
          );
          req.on('error', reject);
        });
      // Carol: three at once, two admitted (per user), one 429.
      const carols = await Promise.all([get(pc, carol.token), get(pc, carol.token), get(pc, carol.token)]);
      expect(carols.map((r) => r.status).sort()).toEqual([200, 200, 429]);
      // Dave: four at once against the one slot left: exactly one gets in, the others 503.
      const daves = await Promise.all([get(pd, dave.token), get(pd, dave.token), get(pd, dave.token), get(pd, dave.token)]);
      expect(daves.map((r) => r.status).sort()).toEqual([200, 503, 503, 503]);
      // Both refusals say when to come back.
      expect([...carols, ...daves].filter((r) => r.status !== 200).map((r) => r.retryAfter)).toEqual(['5', '5', '5', '5']);
      // Closing streams gives their slots back.
      for (const r of [...carols, ...daves]) r.req.destroy();
      await until(() => small.conversations.openStreams === 0);
      const again = await get(pc, carol.token);
      expect(again.status).toBe(200);
      again.req.destroy();
    } finally {
      await small.close();
    }
  });
});

describe('a real engine call', () => {
  let node: EngineNode;
  let registry: MemoryRegistry;

  afterAll(async () => {
    await node?.close();
    await registry?.close();
  });

  it('records the call through recorderFactory and streams its turns live', { timeout: 60_000 }, async () => {
    registry = new MemoryRegistry();
    const ids = new Map<string, string>();
    node = await startEngineNode({
      config: loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 4, maxSockets: 4 }),
      logger: infra.logger,
      clock: infra.clock,
      registry,
      port: 0,
      providerFactory: () => ({ asr: createSimAsr(), llm: createSimLlm({ ttftMs: 30, tokensPerSecond: 200 }), tts: createSimTts({ ttfbMs: 20 }) }),
      recorderFactory: (sc) => {
        const r = writer.recorderFor(sc);
        ids.set(sc.session_id, r.conversationId);
        return r;
      },
    });
    const sc = sessionConfig({ agent_id: agent, workspace_id: alice.workspaceId, user_id: alice.userId, welcome_message: '' });
    await registry.sessions.putSession({ sessionId: sc.session_id, agentId: agent, nodeId: node.nodeId, config: sc, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${sc.session_id}`);
    try {
      await c.waitForType('pipeline_ready');
      const byId = () => ids.get(sc.session_id)!;
      await until(async () => (await api(h, 'GET', `/api/v1/conversations/by-session/${sc.session_id}`, { token: alice.token })).status === 200);
      const s = sse(`/api/v1/conversations/${byId()}/stream`, alice.token);
      await s.next((e) => e.event === 'conversation');
      await c.say('hello there');
      const tc = await c.waitFor((e) => e.type === 'turn_complete' && e.turn === 1, 20_000);
      const live = await s.next((e) => e.event === 'turn' && e.data.turn_number === 1, 15_000);
      expect(live.data.messages[0]).toMatchObject({ role: 'user', content: 'hello there' });
      expect(live.data.messages[1]).toMatchObject({ role: 'assistant', content: tc.assistant_text, llm_provider: 'sim', tts_provider: 'sim' });
      c.close();
      const end = await s.next((e) => e.event === 'end', 15_000);
      expect(end.data).toMatchObject({ status: 'completed', total_turns: 1 });
      await writer.flush();
      const d = await api(h, 'GET', `/api/v1/conversations/${byId()}`, { token: alice.token });
      const conv = d.body.data.conversation;
      expect(conv).toMatchObject({ session_id: sc.session_id, agent_id: agent, status: 'completed', total_turns: 1, user_id: alice.userId });
      expect(conv.avg_response_latency_ms).toBeGreaterThan(0);
      const [u, a] = d.body.data.messages;
      expect(u).toMatchObject({ role: 'user', turn_number: 1, content: 'hello there', asr_provider: 'sim' });
      expect(a).toMatchObject({ role: 'assistant', turn_number: 1, llm_provider: 'sim' });
      expect(a.total_latency_ms).toBeGreaterThan(0);
      expect(a.internal_overhead_ms).toBeLessThanOrEqual(a.total_latency_ms);
    } finally {
      c.close();
    }
  });
});
