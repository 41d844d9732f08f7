/**
 * Connect deadlines of started sessions on both registries (in-process and real Redis).
 * `extendConnectDeadline`: an unclaimed session waits longer for its socket; a claimed, ended or
 * expired one is never touched or brought back, and the stored config is unchanged apart from the
 * deadline. `pendingOn`: the sessions placed on a node and still waiting for their socket, which a
 * draining node waits for (an extended deadline included; claimed, ended, expired ones not).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../shared/clock.js';
import { MemoryRegistry, RedisRegistry, type Registry, type StoredSession } from '../../shared/registry/index.js';
import { TEST_REDIS_URL, uniqueName } from '../helpers/infra.js';

const T0 = Date.parse('2026-11-30T12:00:00Z');

function session(id: string, clock: { now(): number }, deadlineInMs: number, nodeId = 'n1'): StoredSession {
  // Empty arrays and nested objects: a Redis script that re-encoded the JSON (cjson) would turn `[]` into `{}`.
  const config = { agent_id: 'a1', tools: [], knowledge: { always: [], on_demand_ids: [] }, metadata: { k: 'v' } };
  return { sessionId: id, agentId: 'a1', nodeId, config, createdAtMs: clock.now(), connectDeadlineMs: clock.now() + deadlineInMs };
}

function contract(name: string, setup: () => Promise<{ reg: Registry; clock: { now(): number }; advance(ms: number): Promise<void>; close(): Promise<void> }>) {
  describe(name, () => {
    let h: Awaited<ReturnType<typeof setup>>;
    beforeAll(async () => {
      h = await setup();
    });
    afterAll(async () => {
      await h?.close();
    });

    it('moves an unclaimed deadline later, keeps the config, and the session outlives its first deadline', async () => {
      const s = session(uniqueName('s'), h.clock, 300);
      await h.reg.sessions.putSession(s);
      expect(await h.reg.sessions.extendConnectDeadline(s.sessionId, h.clock.now() + 5_000)).toBe(true);
      await h.advance(600);
      const stored = await h.reg.sessions.getSession(s.sessionId);
      expect(stored?.config).toEqual(s.config);
      expect(stored!.connectDeadlineMs).toBeGreaterThan(s.connectDeadlineMs);
      expect((await h.reg.sessions.claimSession(s.sessionId, 'n1', 10_000)).status).toBe('claimed');
    });

    it('never moves a deadline earlier', async () => {
      const s = session(uniqueName('s'), h.clock, 5_000);
      await h.reg.sessions.putSession(s);
      expect(await h.reg.sessions.extendConnectDeadline(s.sessionId, h.clock.now() + 1_000)).toBe(false);
      expect((await h.reg.sessions.getSession(s.sessionId))!.connectDeadlineMs).toBe(s.connectDeadlineMs);
    });

    it('leaves a claimed session alone', async () => {
      const s = session(uniqueName('s'), h.clock, 5_000);
      await h.reg.sessions.putSession(s);
      expect((await h.reg.sessions.claimSession(s.sessionId, 'n1', 10_000)).status).toBe('claimed');
      expect(await h.reg.sessions.extendConnectDeadline(s.sessionId, h.clock.now() + 60_000)).toBe(false);
      expect((await h.reg.sessions.getSession(s.sessionId))!.connectDeadlineMs).toBe(s.connectDeadlineMs);
    });

    it('never brings back an ended or expired session', async () => {
      const ended = session(uniqueName('s'), h.clock, 5_000);
      await h.reg.sessions.putSession(ended);
      await h.reg.sessions.deleteSession(ended.sessionId);
      expect(await h.reg.sessions.extendConnectDeadline(ended.sessionId, h.clock.now() + 60_000)).toBe(false);
      expect(await h.reg.sessions.getSession(ended.sessionId)).toBeUndefined();

      const expired = session(uniqueName('s'), h.clock, 200);
      await h.reg.sessions.putSession(expired);
      await h.advance(400);
      expect(await h.reg.sessions.extendConnectDeadline(expired.sessionId, h.clock.now() + 60_000)).toBe(false);
      expect(await h.reg.sessions.getSession(expired.sessionId)).toBeUndefined();
      expect((await h.reg.sessions.claimSession(expired.sessionId, 'n1', 10_000)).status).toBe('not_found');
    });

    it('counts the sessions placed on a node until each is claimed, ended or past its deadline', async () => {
      const node = uniqueName('node');
      const [claimed, ended, expiring, extended, waiting] = [0, 1, 2, 3, 4].map(() => session(uniqueName('s'), h.clock, 5_000, node));
      const short = { ...expiring!, connectDeadlineMs: h.clock.now() + 1000 };
      const extendedShort = { ...extended!, connectDeadlineMs: h.clock.now() + 1000 };
      for (const s of [claimed!, ended!, short, extendedShort, waiting!]) await h.reg.sessions.putSession(s);
      await h.reg.sessions.putSession(session(uniqueName('s'), h.clock, 5_000, uniqueName('other-node')));
      expect(await h.reg.sessions.pendingOn(node)).toHaveLength(5);

      expect((await h.reg.sessions.claimSession(claimed!.sessionId, node, 10_000)).status).toBe('claimed');
      await h.reg.sessions.deleteSession(ended!.sessionId);
      expect(await h.reg.sessions.extendConnectDeadline(extendedShort.sessionId, h.clock.now() + 5_000)).toBe(true);
      expect((await h.reg.sessions.pendingOn(node)).sort()).toEqual([short.sessionId, extendedShort.sessionId, waiting!.sessionId].sort());
      await h.advance(1500);
      // The short one expired; the extended one waits on (an outbound call ringing). Latest deadline first.
      expect(await h.reg.sessions.pendingOn(node)).toEqual([extendedShort.sessionId, waiting!.sessionId]);
      expect(await h.reg.sessions.pendingOn(uniqueName('empty-node'))).toEqual([]);
    });
  });
}

contract('in-process registry', async () => {
  const clock = new SimulatedClock(T0);
  const reg = new MemoryRegistry(clock);
  return { reg, clock, advance: async (ms) => clock.advance(ms), close: () => reg.close() };
});

contract('Redis registry', async () => {
  // Real Redis expiry: real time, short deadlines.
  const reg = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix: uniqueName('vp-test-extend') });
  const clock = { now: () => Date.now() };
  return { reg, clock, advance: (ms) => new Promise<void>((r) => setTimeout(r, ms)), close: () => reg.close() };
});
