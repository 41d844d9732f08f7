/**
 * Registry hardening (issue 11):
 * - "in-process registry sweep": sessions that never connected, ended claims, dead nodes, calls
 *   and rate-limit windows leave the in-process registry once expired (they stayed forever).
 * - "Redis outage hangs the API" at the registry level: every operation fails within the command
 *   timeout with RegistryUnavailableError (503) while Redis is unreachable, and after Redis comes
 *   back EMPTY the registry writes again what this process owns (node, claims, live calls with
 *   their seats and sid index); pub/sub command channels work again.
 * - the replay journal is bounded.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { SimulatedClock } from '../../../shared/clock.js';
import { MemoryRegistry, RedisRegistry, RegistryUnavailableError, type StoredCall, type StoredSession } from '../../../shared/registry/index.js';
import { RegistryJournal } from '../../../shared/registry/journal.js';
import { SWEEP_EVERY_MS } from '../../../shared/registry/memory/index.js';
import { TEST_REDIS_URL, uniqueName } from '../../helpers/infra.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';

function session(id: string, nowMs: number, connectWindowMs = 30_000): StoredSession {
  return { sessionId: id, agentId: 'a1', nodeId: 'n1', config: { id }, createdAtMs: nowMs, connectDeadlineMs: nowMs + connectWindowMs };
}

function call(id: string, nowMs: number, over: Partial<StoredCall> = {}): StoredCall {
  return { callId: id, userId: 'u1', poolId: 'ws1', data: { status: 'in_progress' }, createdAtMs: nowMs, expiresAtMs: nowMs + 60_000, ...over };
}

describe('in-process registry sweep', () => {
  it('drops sessions that never connected, ended claims, dead nodes, calls and windows once expired', async () => {
    const clock = new SimulatedClock();
    const reg = new MemoryRegistry(clock);
    const now = clock.now();
    for (let i = 0; i < 50; i++) await reg.sessions.putSession(session(`never-${i}`, now));
    await reg.sessions.putSession(session('claimed', now));
    expect((await reg.sessions.claimSession('claimed', 'n1', 120_000)).status).toBe('claimed');
    await reg.nodes.heartbeat({ nodeId: 'n1', wsUrl: 'ws://x', capacity: 1, load: 0, updatedAtMs: now }, 6000);
    await reg.calls.putCall(call('c1', now, { providerCallSid: 'CA1' }));
    await reg.windows.incrWindow('login:x', 60_000);
    expect(reg.sizes).toMatchObject({ sessions: 51, owners: 1, nodes: 1, calls: 1, callSids: 1, windows: 1 });

    // Past the connect window: the 50 unclaimed sessions go on the next write; the claim stays.
    clock.advance(30_000 + SWEEP_EVERY_MS);
    await reg.nodes.heartbeat({ nodeId: 'n2', wsUrl: 'ws://y', capacity: 1, load: 0, updatedAtMs: clock.now() }, 600_000);
    expect(reg.sizes).toMatchObject({ sessions: 1, owners: 1, nodes: 1, windows: 1, calls: 1 });
    expect(await reg.sessions.sessionOwner('claimed')).toBe('n1');

    // Past the call expiry, the window and the claim: everything but the fresh node is gone.
    clock.advance(120_000);
    reg.sweep();
    expect(reg.sizes).toEqual({ nodes: 1, sessions: 0, owners: 0, calls: 0, callSids: 0, windows: 0 });
    expect(await reg.sessions.getSession('claimed')).toBeUndefined();
  });

  it('does not sweep what is still live', async () => {
    const clock = new SimulatedClock();
    const reg = new MemoryRegistry(clock);
    await reg.sessions.putSession(session('s1', clock.now()));
    clock.advance(29_000);
    reg.sweep();
    expect((await reg.sessions.getSession('s1'))?.sessionId).toBe('s1');
  });
});

describe('registry journal bound', () => {
  it('keeps at most maxEntries and drops expired ones first', () => {
    const clock = new SimulatedClock();
    const j = new RegistryJournal(clock, 3);
    for (let i = 0; i < 5; i++) j.putSession(session(`s${i}`, clock.now()));
    expect(j.size.sessions).toBe(3);
    expect(j.snapshot().sessions.map((s) => s.session.sessionId)).toEqual(['s2', 's3', 's4']);
    clock.advance(31_000);
    expect(j.snapshot().sessions).toEqual([]);
  });

  it('a call another replica placed is not journalled by a patch here (it would come back after its deletion elsewhere)', () => {
    const clock = new SimulatedClock();
    const j = new RegistryJournal(clock);
    j.updateCall(call('foreign', clock.now()));
    expect(j.size.calls).toBe(0);
    j.putCall(call('own', clock.now()));
    j.updateCall({ ...call('own', clock.now()), data: { status: 'answered' } });
    expect(j.snapshot().calls.map((c) => [c.callId, c.data])).toEqual([['own', { status: 'answered' }]]);
  });

  it('a call adopted by the process that placed it stays journaled when it is released (ROLE=all: control plane and engine share one registry)', () => {
    const clock = new SimulatedClock();
    const j = new RegistryJournal(clock);
    j.putCall(call('placed-here', clock.now()));
    j.adoptCall(call('placed-here', clock.now()));
    j.adoptCall(call('carried-only', clock.now()));
    j.releaseCall('placed-here');
    j.releaseCall('carried-only');
    expect(j.snapshot().calls.map((c) => c.callId)).toEqual(['placed-here']);
  });

  it('sessions that never connect leave the journal as later writes come in, long before the cap', () => {
    const clock = new SimulatedClock();
    const j = new RegistryJournal(clock);
    for (let i = 0; i < 1000; i++) j.putSession(session(`old${i}`, clock.now()));
    clock.advance(31_000); // every connect deadline has passed
    for (let i = 0; i < 300; i++) j.putSession(session(`new${i}`, clock.now()));
    // 1,000 expired entries swept at 4 per write: gone after 250 writes, the 300 live ones kept.
    expect(j.size.sessions).toBe(300);
  });
});

describe('Redis registry through an outage', () => {
  const direct = createClient({ url: TEST_REDIS_URL });
  let proxy: TcpProxy;
  let reg: RedisRegistry;
  let other: RedisRegistry;
  const prefix = uniqueName('vpt');

  afterAll(async () => {
    await reg?.close();
    await other?.close();
    await proxy?.close();
    if (direct.isOpen) {
      for await (const keys of direct.scanIterator({ MATCH: `${prefix}:*` })) if (keys.length) await direct.del(keys);
      await direct.quit();
    }
  });

  it('fails fast while Redis is unreachable and replays what it owns when Redis is back empty', async () => {
    await direct.connect();
    const target = new URL(TEST_REDIS_URL);
    proxy = await TcpProxy.start(target.hostname, Number(target.port || 6379));
    reg = await RedisRegistry.connect({ url: proxy.urlFor(TEST_REDIS_URL), prefix, commandTimeoutMs: 500 });
    // A second process (not behind the proxy) observes and sends commands.
    other = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix });
    const now = Date.now();
    await reg.nodes.heartbeat({ nodeId: 'node-1', wsUrl: 'ws://n1', capacity: 5, load: 1, updatedAtMs: now }, 60_000);
    await reg.commands.serveCommands('node-1', async (cmd) => ({ echoed: cmd.kind }));
    await reg.sessions.putSession(session('s-claimed', now));
    expect((await reg.sessions.claimSession('s-claimed', 'node-1', 600_000)).status).toBe('claimed');
    await reg.sessions.putSession(session('s-waiting', now));
    await reg.calls.putCall(call('call-1', now, { providerCallSid: 'CA-1' }), { seatLimit: 1 });
    await reg.calls.patchCall('call-1', { status: 'answered' });

    proxy.reset();
    for (const op of [() => reg.nodes.listNodes(), () => reg.calls.getCall('call-1'), () => reg.windows.incrWindow('k', 1000), () => reg.sessions.putSession(session('s-new', now))]) {
      const t = performance.now();
      await expect(op()).rejects.toBeInstanceOf(RegistryUnavailableError);
      expect(performance.now() - t).toBeLessThan(1000);
    }

    // Redis "restarts" empty.
    for await (const keys of direct.scanIterator({ MATCH: `${prefix}:*` })) if (keys.length) await direct.del(keys);
    expect(await other.nodes.listNodes()).toEqual([]);
    proxy.restore();

    const deadline = performance.now() + 8000;
    // The replay writes the node, then sessions, then calls: wait for the last of them, or a
    // check could run between two of its batches.
    while ((await other.sessions.sessionOwner('s-claimed')) !== 'node-1' || !(await other.calls.getCall('call-1'))) {
      if (performance.now() > deadline) throw new Error('claim and call not replayed');
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await other.nodes.listNodes()).map((n) => n.nodeId)).toEqual(['node-1']);
    expect((await other.sessions.getSession('s-claimed'))?.config).toEqual({ id: 's-claimed' });
    expect((await other.sessions.getSession('s-waiting'))?.sessionId).toBe('s-waiting');
    expect(await other.calls.getCall('call-1')).toMatchObject({ callId: 'call-1', providerCallSid: 'CA-1', data: { status: 'answered' } });
    expect((await other.calls.findCallBySid('CA-1'))?.callId).toBe('call-1');
    // The seat is taken again: the pool (limit 1) refuses a second call.
    expect(await other.calls.putCall(call('call-2', Date.now()), { seatLimit: 1 })).toBe(false);
    // The command channel is resubscribed. The subscriber client reconnects on its own schedule
    // (independent of the command client that replayed the keys above), so allow it the same window.
    let echoed: unknown;
    while (echoed === undefined) {
      if (performance.now() > deadline) throw new Error('command channel not resubscribed');
      echoed = await other.commands.sendCommand('node-1', { kind: 'ping' }, 300).catch(() => undefined);
    }
    expect(echoed).toEqual({ echoed: 'ping' });
    // Ended state is not replayed: a deleted call stays deleted after the next reconnect.
    await reg.calls.deleteCall('call-1');
    await reg.sessions.deleteSession('s-claimed');
    await reg.replay();
    expect(await other.calls.getCall('call-1')).toBeUndefined();
    expect(await other.sessions.sessionOwner('s-claimed')).toBeUndefined();
  }, 20_000);
});
