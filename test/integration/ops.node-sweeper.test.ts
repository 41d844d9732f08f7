/**
 * Issue 23, the node sweeper's judgement against real Postgres and Redis, on a simulated clock:
 * a node missing from the registry for NODE_LOST_AFTER_S is lost and only its active
 * conversations are finalized (`failed`, `node_lost`, turns kept, the post-call outbox fed once);
 * a node that is missing once and comes back (a Redis restart) is never judged; a registry that
 * does not answer judges nothing. The whole process-level story (SIGKILL of a real engine node) is
 * `ops.engine-nodes.test.ts`.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../shared/clock.js';
import { newId } from '../../shared/ids.js';
import { RegistryUnavailableError, type EngineNode } from '../../shared/registry/index.js';
import type { Jobs } from '../../control-plane/jobs/index.js';
import { createNodeSweeper, type NodeSweeper } from '../../control-plane/ops/node-sweeper.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';

const LOST_AFTER_MS = 4000;
let infra: TestInfra;
let clock: SimulatedClock;
let sweeper: NodeSweeper;
let ended: string[];
let listFails = false;

const node = (nodeId: string): EngineNode => ({ nodeId, wsUrl: 'ws://127.0.0.1:1', capacity: 10, load: 0, updatedAtMs: clock.now() });

async function conversation(nodeId: string | null, callId: string | null = null, status = 'active'): Promise<string> {
  const id = newId();
  await infra.sql`
    insert into conversations (id, session_id, agent_id, workspace_id, call_id, status, metadata, engine_node_id)
    values (${id}, ${`s-${id}`}, ${newId()}, ${newId()}, ${callId}, ${status}, ${infra.sql.json({ keep: 'me' })}, ${nodeId})`;
  await infra.sql`insert into messages (id, conversation_id, turn_number, role, content) values (${newId()}, ${id}, 1, 'user', 'hello')`;
  return id;
}

async function row(id: string) {
  const [r] = await infra.sql<Array<{ status: string; metadata: Record<string, unknown>; ended_at: Date | null }>>`select status, metadata, ended_at from conversations where id = ${id}`;
  return r!;
}

beforeAll(async () => {
  infra = await startTestInfra();
});

afterAll(async () => {
  await infra?.close();
});

beforeEach(async () => {
  clock = new SimulatedClock(Date.now());
  ended = [];
  listFails = false;
  await infra.sql`delete from conversations`;
  await infra.sql`delete from engine_node_watch`;
  const registry = {
    nodes: {
      ...infra.registry.nodes,
      listNodes: () => (listFails ? Promise.reject(new RegistryUnavailableError('test: Redis down')) : infra.registry.nodes.listNodes()),
    },
    sessions: infra.registry.sessions,
  } as typeof infra.registry;
  sweeper = createNodeSweeper({
    sql: infra.sql,
    // sweep() never touches the queue; run()/kick() are exercised by the process-level suite.
    jobs: {} as Jobs,
    clock,
    logger: infra.logger,
    registry,
    lostAfterMs: LOST_AFTER_MS,
    endLostCall: async (callId) => {
      ended.push(callId);
      return true;
    },
  });
});

describe('node sweeper', () => {
  it('finalizes only the lost node conversations, after NODE_LOST_AFTER_S of absence', async () => {
    await infra.registry.nodes.heartbeat(node('alive'), 60_000);
    const callId = newId();
    const lostCall = await conversation('gone', callId);
    const lostBrowser = await conversation('gone');
    const other = await conversation('alive');
    const legacy = await conversation(null);

    expect((await sweeper.sweep()).lostNodes).toEqual([]);
    clock.advance(LOST_AFTER_MS - 1);
    expect((await sweeper.sweep()).lostNodes).toEqual([]);
    clock.advance(1);
    const r = await sweeper.sweep();
    expect(r).toEqual({ lostNodes: ['gone'], finalized: 2, callsEnded: 1 });
    expect(ended).toEqual([callId]);

    for (const id of [lostCall, lostBrowser]) {
      const c = await row(id);
      expect(c.status).toBe('failed');
      expect(c.metadata).toEqual({ keep: 'me', end_reason: 'node_lost' });
      expect(c.ended_at).not.toBeNull();
      // Turns already written stay.
      expect((await infra.sql`select id from messages where conversation_id = ${id}`).length).toBe(1);
    }
    expect((await row(other)).status).toBe('active');
    expect((await row(legacy)).status).toBe('active');
    // The post-call trigger fed the outbox once per finalized conversation; a second pass adds nothing.
    expect(await sweeper.sweep()).toEqual({ lostNodes: [], finalized: 0, callsEnded: 0 });
    const events = await infra.sql<Array<{ conversation_id: string; status: string }>>`select conversation_id, status from post_call_events where conversation_id = any(${infra.sql.array([lostCall, lostBrowser, other])}::uuid[])`;
    expect(events.map((e) => e.conversation_id).sort()).toEqual([lostCall, lostBrowser].sort());
    expect(events.every((e) => e.status === 'failed')).toBe(true);
    expect(await infra.sql`select * from engine_node_watch`).toHaveLength(0);
  });

  it('a lost call keeps the totals its written turns show, not the zeros of its start row', async () => {
    const id = await conversation('gone-2');
    const t0 = Date.now();
    const at = (ms: number) => new Date(t0 + ms);
    await infra.sql`update conversations set started_at = ${at(0)} where id = ${id}`;
    await infra.sql`insert into messages (id, conversation_id, turn_number, role, content, total_latency_ms, created_at) values
      (${newId()}, ${id}, 1, 'assistant', 'hi', 400, ${at(2000)}),
      (${newId()}, ${id}, 2, 'user', 'and then', null, ${at(5000)}),
      (${newId()}, ${id}, 2, 'assistant', 'sure', 600, ${at(7000)})`;
    await sweeper.sweep();
    clock.advance(LOST_AFTER_MS);
    expect((await sweeper.sweep()).finalized).toBe(1);
    const [c] = await infra.sql<Array<{ status: string; total_turns: number; total_duration_ms: number; avg_response_latency_ms: number }>>`
      select status, total_turns, total_duration_ms, avg_response_latency_ms from conversations where id = ${id}`;
    expect(c).toEqual({ status: 'failed', total_turns: 2, total_duration_ms: 7000, avg_response_latency_ms: 500 });
  });

  it('never judges a node that was missing once and came back (a Redis restart)', async () => {
    const id = await conversation('flaky');
    await sweeper.sweep();
    expect(await infra.sql`select node_id from engine_node_watch`).toEqual([{ node_id: 'flaky' }]);
    // Redis came back empty; the node's registry replay and next heartbeat write it again.
    await infra.registry.nodes.heartbeat(node('flaky'), 60_000);
    clock.advance(LOST_AFTER_MS * 3);
    expect((await sweeper.sweep()).lostNodes).toEqual([]);
    expect(await infra.sql`select node_id from engine_node_watch`).toHaveLength(0);
    await infra.registry.nodes.removeNode('flaky');
    // Missing again: the clock starts over from this listing.
    await sweeper.sweep();
    clock.advance(LOST_AFTER_MS - 1);
    expect((await sweeper.sweep()).lostNodes).toEqual([]);
    expect((await row(id)).status).toBe('active');
  });

  it('judges nothing while the registry does not answer', async () => {
    const id = await conversation('silent');
    listFails = true;
    for (let i = 0; i < 3; i++) {
      expect(await sweeper.sweep()).toEqual({ lostNodes: [], finalized: 0, callsEnded: 0 });
      clock.advance(LOST_AFTER_MS);
    }
    expect(await infra.sql`select * from engine_node_watch`).toHaveLength(0);
    expect((await row(id)).status).toBe('active');
    // Answering again: the absence counts from the first answered listing.
    listFails = false;
    await sweeper.sweep();
    expect((await row(id)).status).toBe('active');
    clock.advance(LOST_AFTER_MS);
    expect((await sweeper.sweep()).finalized).toBe(1);
  });

  it('leaves a conversation active when ending its live call failed, and retries it next pass', async () => {
    const callId = newId();
    const id = await conversation('gone2', callId);
    let fail = true;
    const s = createNodeSweeper({
      sql: infra.sql,
      jobs: {} as Jobs,
      clock,
      logger: infra.logger,
      registry: infra.registry,
      lostAfterMs: LOST_AFTER_MS,
      endLostCall: async () => {
        if (fail) throw new RegistryUnavailableError('test');
        return true;
      },
    });
    await s.sweep();
    clock.advance(LOST_AFTER_MS);
    expect((await s.sweep()).finalized).toBe(0);
    expect((await row(id)).status).toBe('active');
    fail = false;
    expect(await s.sweep()).toEqual({ lostNodes: ['gone2'], finalized: 1, callsEnded: 1 });
  });
});
