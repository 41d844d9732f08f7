/**
 * Issue 11, "socket-cap exhaustion": 2,000 carrier sockets that never sent `start` used to fill
 * MAX_SOCKETS until uWS's 60 s idle timeout while real callers got 503. Now a socket must be live
 * (start received, session claimed) within SOCKET_START_TIMEOUT_MS, sockets per client address
 * are capped (429), a browser claim stuck on the registry is answered 503 at the same deadline,
 * and pre-warmed providers hold a capacity slot until adopted or expired. Real uWS node, real
 * sockets from several loopback addresses (Linux routes all of 127/8 to lo).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../../shared/config.js';
import { realClock } from '../../shared/clock.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import type { ClaimResult } from '../../shared/registry/types.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { startSimEngine } from '../helpers/sim-engine.js';
import { MediaStreamCall } from '../carrier-sim/index.js';
import { captureLogger } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { maskSessionId } from '../../shared/ids.js';
import { VoiceClient } from '../helpers/voice-client.js';

/** The default: filling 2,000 sockets takes ~2 s here, so a shorter deadline would close the first before the last opened. */
const START_TIMEOUT_MS = 5000;
const MAX_SOCKETS = 2000;
const PER_IP = 200;

type Opened = { ws: WebSocket; closed: Promise<{ code: number; atMs: number }> } | { status: number; retryAfter?: string };

/** Opens a socket from `localAddress`; resolves with the socket, or with the refusal's HTTP status. */
function open(url: string, localAddress = '127.0.0.1'): Promise<Opened> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { localAddress });
    const closed = new Promise<{ code: number; atMs: number }>((r) => ws.on('close', (code) => r({ code, atMs: performance.now() })));
    ws.once('open', () => resolve({ ws, closed }));
    ws.once('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined });
      res.resume();
      ws.terminate();
    });
    ws.once('error', reject);
  });
}

async function healthz(port: number): Promise<{ sockets: number; calls: number; prewarmed: number }> {
  const res = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(2000) });
  return (await res.json()) as { sockets: number; calls: number; prewarmed: number };
}

/** A registry whose claims wait until the test lets them through (a registry stuck mid-claim). */
class StallingRegistry extends MemoryRegistry {
  stall = false;
  private readonly held: Array<() => void> = [];
  constructor() {
    super();
    const claim = this.sessions.claimSession.bind(this.sessions);
    this.sessions.claimSession = async (sessionId: string, nodeId: string, ttlMs: number): Promise<ClaimResult> => {
      if (this.stall) await new Promise<void>((r) => this.held.push(r));
      return claim(sessionId, nodeId, ttlMs);
    };
  }
  release(): void {
    for (const r of this.held.splice(0)) r();
  }
}

describe('socket-cap exhaustion', () => {
  let node: EngineNode;
  let registry: StallingRegistry;
  const log = captureLogger('info');
  let carrierUrl = '';

  beforeAll(async () => {
    registry = new StallingRegistry();
    const config = loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10, maxSockets: MAX_SOCKETS, maxSocketsPerIp: PER_IP, socketStartTimeoutMs: START_TIMEOUT_MS });
    node = await startSimEngine({ config, logger: log.logger, registry });
    carrierUrl = `ws://127.0.0.1:${node.port}/api/v1/voice/ws/twilio/CAidle`;
  });

  afterAll(async () => {
    await node?.close();
    await registry?.close();
  });

  async function putSession(welcome = 'hello caller') {
    const cfg = sessionConfig({ welcome_message: welcome, silence_timeout_ms: 20_000, connection_type: 'twilio' });
    await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    return cfg;
  }

  it('2,000 carrier sockets that never send start fill the node, are closed at the deadline, and a real caller then gets in', { timeout: 60_000 }, async () => {
    const addresses = Array.from({ length: MAX_SOCKETS / PER_IP }, (_, i) => `127.0.0.${i + 2}`);
    const openedAtMs = performance.now();
    const idle: Array<Extract<Opened, { ws: WebSocket }>> = [];
    // In batches of 100: the handshakes are cheap, but 2,000 at once only measures the backlog.
    const plan = addresses.flatMap((a) => Array.from({ length: PER_IP }, () => a));
    for (let i = 0; i < plan.length; i += 100) {
      const batch = await Promise.all(plan.slice(i, i + 100).map((a) => open(carrierUrl, a)));
      for (const b of batch) {
        if (!('ws' in b)) throw new Error(`idle socket ${idle.length} refused with ${b.status}`);
        idle.push(b);
      }
    }
    const filledMs = performance.now() - openedAtMs;
    expect(idle.length).toBe(MAX_SOCKETS);
    expect(filledMs, 'the node must be full before the first deadline passes').toBeLessThan(START_TIMEOUT_MS - 500);
    // Full: a real caller is refused now (this is what the finding observed for 65 s and more).
    const refused = await open(carrierUrl, '127.0.0.200');
    expect(refused).toMatchObject({ status: 503, retryAfter: '5' });

    // Every idle socket is closed by the node at the deadline (not before it, not 60 s later).
    const closes = await Promise.all(idle.map((s) => s.closed));
    expect(closes.every((c) => c.code === 1008)).toBe(true);
    const lastCloseMs = Math.max(...closes.map((c) => c.atMs)) - openedAtMs;
    expect(Math.min(...closes.map((c) => c.atMs)) - openedAtMs).toBeGreaterThanOrEqual(START_TIMEOUT_MS - 50);
    expect(lastCloseMs).toBeLessThan(filledMs + START_TIMEOUT_MS + 3000);
    expect((await healthz(node.port)).sockets).toBe(0);
    expect(log.lines.some((l) => l.includes('carrier socket closed: no start within the deadline'))).toBe(true);

    // A real caller now connects, sends start, is claimed and hears the agent.
    const cfg = await putSession();
    const media = new MediaStreamCall({ url: carrierUrl, callSid: 'CAreal', accountSid: 'AC1', customParameters: { session_id: cfg.session_id, agent_id: cfg.agent_id } });
    await media.connect();
    try {
      await media.waitUntil(() => media.mediaReceived > 10, 10_000, 'agent audio');
      // Live calls are not subject to the start deadline.
      await new Promise((r) => setTimeout(r, START_TIMEOUT_MS + 200));
      expect(media.closeCode).toBeUndefined();
      expect(node.calls.has(cfg.session_id)).toBe(true);
    } finally {
      media.hangup();
      await media.closed();
    }
  });

  it('a stream stopped before its start is closed at once, not at the start deadline', { timeout: 30_000 }, async () => {
    const s = await open(carrierUrl, '127.0.0.230');
    if (!('ws' in s)) throw new Error(`refused with ${s.status}`);
    const sentAt = performance.now();
    s.ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
    s.ws.send(JSON.stringify({ event: 'stop', sequenceNumber: '1', streamSid: 'MZstop', stop: { accountSid: 'AC1', callSid: 'CAidle' } }));
    const closed = await s.closed;
    expect(closed.code).toBe(1000);
    // It held its slot until the deadline (START_TIMEOUT_MS) and closed with 1008.
    expect(closed.atMs - sentAt).toBeLessThan(START_TIMEOUT_MS / 2);
  });

  it('caps sockets per client address with 429 and Retry-After; other addresses are unaffected', { timeout: 30_000 }, async () => {
    const mine = await Promise.all(Array.from({ length: PER_IP }, () => open(carrierUrl, '127.0.1.1')));
    expect(mine.every((m) => 'ws' in m)).toBe(true);
    expect(await open(carrierUrl, '127.0.1.1')).toMatchObject({ status: 429, retryAfter: '5' });
    // The browser route shares the same per-address count.
    expect(await open(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/some-session`, '127.0.1.1')).toMatchObject({ status: 429 });
    const other = await open(carrierUrl, '127.0.1.2');
    expect('ws' in other).toBe(true);
    // Freed slots are given back at once.
    const first = mine[0] as Extract<Opened, { ws: WebSocket }>;
    first.ws.close();
    await first.closed;
    const again = await open(carrierUrl, '127.0.1.1');
    expect('ws' in again).toBe(true);
    for (const s of [...mine.slice(1), other, again]) if ('ws' in s) s.ws.terminate();
    await Promise.all([...mine.slice(1), other, again].map((s) => ('ws' in s ? s.closed : undefined)));
    await waitFor(async () => (await healthz(node.port)).sockets === 0, 5000);
  });

  it('SOCKET_OPENS_PER_IP_PER_S sets how fast one address may open sockets (a burst of 4x, then 429)', { timeout: 30_000 }, async () => {
    const config = loadConfig({ SOCKET_OPENS_PER_IP_PER_S: '2' }, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10, maxSockets: MAX_SOCKETS, maxSocketsPerIp: PER_IP });
    expect(config.socketOpensPerIpPerS).toBe(2);
    const slow = await startSimEngine({ config, logger: log.logger, registry });
    try {
      const url = `ws://127.0.0.1:${slow.port}/api/v1/voice/ws/twilio/CArate`;
      const burst = [];
      for (let i = 0; i < 8; i++) burst.push(await open(url, '127.0.3.1'));
      expect(burst.every((m) => 'ws' in m)).toBe(true);
      expect(await open(url, '127.0.3.1')).toMatchObject({ status: 429 });
      for (const s of burst) if ('ws' in s) s.ws.terminate();
      await Promise.all(burst.map((s) => ('ws' in s ? s.closed : undefined)));
    } finally {
      await slow.close();
    }
  });

  it('a browser socket whose claim does not complete by the deadline gets an error frame and 1013 and frees its slot', { timeout: 30_000 }, async () => {
    const cfg = await putSession();
    registry.stall = true;
    const t0 = performance.now();
    // The handshake completes at once (synchronous upgrade); the session is claimed on the open socket.
    const res = await open(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${cfg.session_id}`);
    if (!('ws' in res)) throw new Error(`refused with ${res.status}`);
    const frames: string[] = [];
    res.ws.on('message', (m) => frames.push(m.toString()));
    const { code, atMs } = await res.closed;
    const waitedMs = atMs - t0;
    registry.stall = false;
    expect(code).toBe(1013);
    expect(frames.map((f) => JSON.parse(f))).toEqual([expect.objectContaining({ type: 'error', fatal: true, message: expect.stringMatching(/claim timed out/) })]);
    expect(waitedMs).toBeGreaterThanOrEqual(START_TIMEOUT_MS - 50);
    expect(waitedMs).toBeLessThan(START_TIMEOUT_MS + 2000);
    await waitFor(async () => (await healthz(node.port)).sockets === 0, 5000);
    // The claim that lands after the refusal gives the session back instead of holding it.
    registry.release();
    await waitFor(async () => (await registry.sessions.getSession(cfg.session_id)) === undefined, 5000);
  });

  it('a carrier socket whose start is received but whose claim hangs is closed at the deadline', { timeout: 30_000 }, async () => {
    const cfg = await putSession();
    registry.stall = true;
    const media = new MediaStreamCall({ url: carrierUrl, callSid: 'CAstall', accountSid: 'AC1', customParameters: { session_id: cfg.session_id, agent_id: cfg.agent_id } });
    await media.connect();
    try {
      expect(await media.closed()).toBe(1008);
      expect(node.calls.has(cfg.session_id)).toBe(false);
    } finally {
      registry.stall = false;
      registry.release();
    }
    await waitFor(async () => (await registry.sessions.getSession(cfg.session_id)) === undefined, 5000);
  });

  it('one session, one stream: a second carrier stream naming a live call is refused and the call goes on', { timeout: 30_000 }, async () => {
    const cfg = await putSession();
    const params = { session_id: cfg.session_id, agent_id: cfg.agent_id };
    const first = new MediaStreamCall({ url: carrierUrl, callSid: 'CAfirst', accountSid: 'AC1', customParameters: params });
    await first.connect();
    try {
      await first.waitUntil(() => first.mediaReceived > 5, 10_000, 'agent audio');
      // The claim is idempotent for the owning node, so only the live-call check can refuse this.
      const second = new MediaStreamCall({ url: carrierUrl, callSid: 'CAsecond', accountSid: 'AC1', customParameters: params });
      await second.connect();
      expect(await second.closed()).toBe(1008);
      expect(second.mediaReceived).toBe(0);
      const before = first.mediaReceived;
      await first.waitUntil(() => first.mediaReceived > before + 5, 10_000, 'the first stream still hears the agent');
      expect(first.closeCode).toBeUndefined();
      expect(node.calls.has(cfg.session_id)).toBe(true);
    } finally {
      first.hangup();
      await first.closed();
    }
  });

  it('a live stream the node closes for garbage frames ends as invalid_stream, not as a caller hang-up', { timeout: 30_000 }, async () => {
    const cfg = await putSession();
    const media = new MediaStreamCall({ url: carrierUrl, callSid: 'CAgarbage', accountSid: 'AC1', customParameters: { session_id: cfg.session_id, agent_id: cfg.agent_id } });
    await media.connect();
    await media.waitUntil(() => media.mediaReceived > 0, 10_000, 'agent audio');
    for (let i = 0; i < 40; i++) media.sendRaw('{"event":"media","media":{"payload":"!!not base64!!"}}');
    expect(await media.closed()).toBe(1008);
    const endedLine = () => log.lines.find((l) => l.includes('"call ended"') && l.includes(maskSessionId(cfg.session_id)));
    await waitFor(async () => endedLine() !== undefined, 5000);
    const ended = endedLine()!;
    expect(JSON.parse(ended).reason).toBe('invalid_stream');
  });

  it('a carrier message over 16 KiB gets close 1009 and a log line, and the call ends as invalid_stream', { timeout: 30_000 }, async () => {
    const cfg = await putSession();
    const media = new MediaStreamCall({ url: carrierUrl, callSid: 'CAbigframe', accountSid: 'AC1', customParameters: { session_id: cfg.session_id, agent_id: cfg.agent_id } });
    await media.connect();
    await media.waitUntil(() => media.mediaReceived > 0, 10_000, 'agent audio');
    media.sendRaw(`{"event":"media","media":{"payload":"${'A'.repeat(20 * 1024)}"}}`);
    expect(await media.closed()).toBe(1009);
    expect(log.lines.some((l) => l.includes('carrier stream closed: message too big'))).toBe(true);
    const endedLine = () => log.lines.find((l) => l.includes('"call ended"') && l.includes(maskSessionId(cfg.session_id)));
    await waitFor(async () => endedLine() !== undefined, 5000);
    expect(JSON.parse(endedLine()!).reason).toBe('invalid_stream');
  });

  it('a start naming another agent is refused and the session given back (no seat held past the connect window)', { timeout: 30_000 }, async () => {
    const cfg = await putSession();
    const media = new MediaStreamCall({ url: carrierUrl, callSid: 'CAwrong', accountSid: 'AC1', customParameters: { session_id: cfg.session_id, agent_id: '01a00000-0000-7000-8000-000000000000' } });
    await media.connect();
    expect(await media.closed()).toBe(1008);
    await waitFor(async () => (await registry.sessions.getSession(cfg.session_id)) === undefined, 5000);
    expect(log.lines.some((l) => l.includes('agent_id does not match the session'))).toBe(true);
  });
});

describe('socket-cap exhaustion: pre-warmed providers count against node capacity', () => {
  let node: EngineNode;
  let registry: MemoryRegistry;
  const PREWARM_TTL_MS = 1500;

  beforeAll(async () => {
    registry = new MemoryRegistry();
    const config = loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 2, maxSockets: 100 });
    // No providerFactory: pre-warm creates the real (sim) providers, as in production.
    node = await startEngineNode({ config, logger: captureLogger('warn').logger, clock: realClock, registry, port: 0, prewarmTtlMs: PREWARM_TTL_MS, heartbeatMs: 100 });
  });

  afterAll(async () => {
    await node?.close();
    await registry?.close();
  });

  async function putSession() {
    const cfg = sessionConfig({ welcome_message: '' });
    await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    return cfg;
  }
  const prewarm = (sessionId: string) => registry.commands.sendCommand(node.nodeId, { kind: 'prewarm', sessionId }, 5000);
  const wsUrl = (sessionId: string) => `ws://127.0.0.1:${node.port}/api/v1/voice/ws/${sessionId}`;

  it('a prewarmed-but-unclaimed session holds a slot until it is adopted or expires', { timeout: 20_000 }, async () => {
    const [a, b, c] = [await putSession(), await putSession(), await putSession()];
    expect(await prewarm(a.session_id)).toEqual({ status: 'warm' });
    expect(await prewarm(b.session_id)).toEqual({ status: 'warm' });
    expect(await prewarm(c.session_id)).toEqual({ status: 'at_capacity' });
    expect(await healthz(node.port)).toMatchObject({ calls: 0, prewarmed: 2 });
    // ... and the node advertises them as load, so placement sends new sessions elsewhere.
    await waitFor(async () => (await registry.nodes.listNodes()).find((n) => n.nodeId === node.nodeId)?.load === 2, 2000);

    // Two warm sessions fill a node of capacity 2: a third caller is refused ...
    const third = await VoiceClient.connect(wsUrl(c.session_id), { sendAudio: false });
    expect((await third.waitForType('error')).message).toBe('server at capacity');
    await third.closed();
    // ... while a warm session's own socket adopts its slot.
    const first = await VoiceClient.connect(wsUrl(a.session_id), { sendAudio: false });
    await first.waitForType('pipeline_ready');
    expect(await healthz(node.port)).toMatchObject({ calls: 1, prewarmed: 1 });

    // b never connects: its slot is freed when the pre-warm window expires.
    await waitFor(async () => (await healthz(node.port)).prewarmed === 0, PREWARM_TTL_MS + 3000);
    const d = await putSession();
    const fourth = await VoiceClient.connect(wsUrl(d.session_id), { sendAudio: false });
    await fourth.waitForType('pipeline_ready');
    first.close();
    fourth.close();
    await Promise.all([first.closed(), fourth.closed()]);
  });
});

async function waitFor(pred: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const until = performance.now() + timeoutMs;
  while (!(await pred())) {
    if (performance.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
