/**
 * Issue 11, "one carrier frame freezes the node": a `media` frame with chunk `2e8` blocked the
 * event loop ~0.4 s and `1e300` forever (every call on the node stopped). This fuzzes the carrier
 * and browser sockets of a real engine node with hostile and random frames (seeded PRNG, so a
 * failure replays) while a healthy browser call on the same node listens to a long welcome, and
 * checks that `/healthz` answers in < STALL_MS throughout, that the healthy call's agent audio keeps
 * its timing (no added lateness beyond a bound, against a baseline measured in the same run), and
 * that garbage streams are closed with a clear log line.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../../shared/config.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import type { EngineNode } from '../../media-engine/node.js';
import { startSimEngine } from '../helpers/sim-engine.js';
import { mulberry32 } from '../carrier-sim/prng.js';
import { captureLogger } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { VoiceClient } from '../helpers/voice-client.js';

const SEED = 0x5eed11;
/** The values of the finding, as strings and as JSON numbers, plus other wrong types. */
const HOSTILE: unknown[] = ['2e8', '1e300', '-1', 'abc', '9007199254740993', 2e8, 1e300, -1, 9007199254740993, 1.5, '', null, true, [], {}];
const FUZZ_MS = 4000;
const BASELINE_MS = 1500;
/**
 * The bound for "did not stall": well under the 400 ms the finding measured per hostile frame,
 * and three times what a busy 2-core CI machine showed without any fuzzing bug (50 ms).
 */
const STALL_MS = 150;

/** About 340 characters of sim-coded speech at 60 ms each: 20 s of agent audio, longer than the run. */
const WELCOME =
  'this is a long welcome message that keeps the healthy caller listening while the fuzzers try to freeze the node with hostile frames of every kind, ' +
  'and it goes on for a good while longer so that the agent is still speaking when the last hostile frame has been sent and the timing has been measured';

let node: EngineNode;
let registry: MemoryRegistry;
const log = captureLogger('info');
let base = '';

beforeAll(async () => {
  registry = new MemoryRegistry();
  const config = loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 20, maxSockets: 100, maxSocketsPerIp: 100, socketStartTimeoutMs: 5000 });
  node = await startSimEngine({ config, logger: log.logger, registry, llm: { ttftMs: 20, tokensPerSecond: 400 }, tts: { ttfbMs: 10 } });
  base = `ws://127.0.0.1:${node.port}/api/v1/voice/ws`;
});

afterAll(async () => {
  await node?.close();
  await registry?.close();
});

async function newSession(welcome = '') {
  const cfg = sessionConfig({ welcome_message: welcome, silence_timeout_ms: 60_000 });
  await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
  return cfg;
}

// ------------------------------------------------------------------ frame generators (seeded)

type Frame = { data: string | Buffer; binary: boolean };
const text = (v: unknown): Frame => ({ data: typeof v === 'string' ? v : JSON.stringify(v), binary: false });

function validMedia(chunk: number, streamSid = 'MZfuzz'): Frame {
  return text({ event: 'media', sequenceNumber: String(chunk + 1), streamSid, media: { track: 'inbound', chunk: String(chunk), timestamp: String((chunk - 1) * 20), payload: Buffer.alloc(160, 0xff).toString('base64') } });
}

/**
 * Every hostile value in every counter field (chunk, sequenceNumber, timestamp), the other fields
 * plausible for a stream at `chunk`, so each frame tests one field. sequenceNumber is optional in
 * the protocol and left out where it is not the field under test.
 */
function hostileFrames(chunk = 4, streamSid = 'MZfuzz'): Frame[] {
  const out: Frame[] = [];
  const payload = Buffer.alloc(160, 0xff).toString('base64');
  const media = (m: Record<string, unknown>) => ({ track: 'inbound', chunk: String(chunk), timestamp: String((chunk - 1) * 20), payload, ...m });
  for (const v of HOSTILE) {
    out.push(text({ event: 'media', streamSid, media: media({ chunk: v }) }));
    out.push(text({ event: 'media', sequenceNumber: v, streamSid, media: media({}) }));
    out.push(text({ event: 'media', streamSid, media: media({ timestamp: v }) }));
  }
  return out;
}

function randomValue(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 3 || r < 0.3) return [rand() * 1e308, -rand(), Math.floor(rand() * 2 ** 60), 'x'.repeat(Math.floor(rand() * 50)), null, true][Math.floor(rand() * 6)];
  if (r < 0.6) return Array.from({ length: Math.floor(rand() * 4) }, () => randomValue(rand, depth + 1));
  const keys = ['event', 'media', 'chunk', 'payload', 'start', 'streamSid', 'sequenceNumber', 'timestamp', 'mark', '__proto__', 'constructor'];
  return Object.fromEntries(Array.from({ length: Math.floor(rand() * 5) }, () => [keys[Math.floor(rand() * keys.length)]!, randomValue(rand, depth + 1)]));
}

/** One random adversarial frame for either socket kind. */
function randomFrame(rand: () => number): Frame {
  const r = rand();
  const n = 1 + Math.floor(rand() * 4000);
  if (r < 0.15) return text('['.repeat(n) + ']'.repeat(n)); // deep nesting (within 16 KiB)
  if (r < 0.25) return text({ event: 'media', media: { chunk: String(Math.floor(rand() * 1e9)), timestamp: '0', payload: 'A'.repeat(4 * Math.floor(rand() * 3500)) } }); // huge payload
  if (r < 0.35) return { data: randomBytes(rand, Math.floor(rand() * 2000)), binary: true };
  if (r < 0.45) return text({ event: ['media', 'start', 'mark', 'stop', 'dtmf', 'bogus', 7][Math.floor(rand() * 7)], media: randomValue(rand, 1), start: randomValue(rand, 1), mark: randomValue(rand, 1) });
  if (r < 0.55) return text({ type: 'text_inject', text: randomValue(rand, 2), role: randomValue(rand, 3) });
  if (r < 0.65) return text('{"event":"media","media":{"chunk":' + '9'.repeat(1 + Math.floor(rand() * 400)) + '}}'); // numbers beyond 2^53
  if (r < 0.75) return text(String.fromCharCode(...Array.from({ length: 50 }, () => Math.floor(rand() * 0xd7ff)))); // not JSON
  return text(randomValue(rand, 0));
}

/** `n` seeded random bytes: a 4 KiB random block repeated (cheap to make, still noise to the engine). */
function randomBytes(rand: () => number, n: number): Buffer {
  const block = Buffer.from(Array.from({ length: 4096 }, () => Math.floor(rand() * 256)));
  const out = Buffer.allocUnsafe(n);
  for (let o = 0; o < n; o += block.length) block.copy(out, o, 0, Math.min(block.length, n - o));
  return out;
}

/** A text frame whose bytes are not UTF-8 (uWS closes such a socket). */
const invalidUtf8: Frame = { data: Buffer.from([0x7b, 0xff, 0xfe, 0xc0, 0x80, 0x7d]), binary: false };

// ------------------------------------------------------------------ socket helpers

interface Fuzzer {
  ws: WebSocket;
  closed: Promise<number>;
  send(f: Frame): void;
}

function connect(url: string): Promise<Fuzzer> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.on('message', () => {}); // agent audio and events: not read
    const closed = new Promise<number>((r) => ws.on('close', (code) => r(code)));
    ws.once('open', () =>
      resolve({
        ws,
        closed,
        send: (f) => {
          if (ws.readyState === WebSocket.OPEN) ws.send(f.data, { binary: f.binary });
        },
      }),
    );
    ws.once('error', reject);
  });
}

/** Sends `frames` spread over `durationMs` (a few per 5 ms tick), then resolves. */
function play(f: Fuzzer, frames: Frame[], durationMs: number): Promise<void> {
  return new Promise((resolve) => {
    const perTick = Math.max(1, Math.ceil(frames.length / (durationMs / 5)));
    let i = 0;
    const timer = setInterval(() => {
      for (let k = 0; k < perTick && i < frames.length; k++) f.send(frames[i++]!);
      if (i >= frames.length || f.ws.readyState !== WebSocket.OPEN) {
        clearInterval(timer);
        resolve();
      }
    }, 5);
  });
}

async function until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!pred()) {
    if (performance.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function startCarrier(f: Fuzzer, sessionId: string, agentId: string, streamSid = 'MZfuzz'): void {
  f.send(text({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
  f.send(text({ event: 'start', sequenceNumber: '1', streamSid, start: { streamSid, accountSid: 'AC1', callSid: 'CAfuzz', customParameters: { session_id: sessionId, agent_id: agentId } } }));
}

/**
 * Agent audio lateness of the healthy call: frame n is due at T0 + n * 20 ms; T0 is the earliest
 * such origin over the steady frames (the first 10 arrive in the lead burst). Returns the worst
 * lateness of the frames that arrived within [fromMs, toMs).
 */
function worstLatenessMs(times: number[], fromMs: number, toMs: number): { worstMs: number; frames: number } {
  const steady = times.map((t, n) => ({ t, origin: t - n * 20 })).slice(10);
  const t0 = Math.min(...steady.map((s) => s.origin));
  const inWindow = steady.filter((s) => s.t >= fromMs && s.t < toMs);
  return { worstMs: Math.max(0, ...inWindow.map((s) => s.origin - t0)), frames: inWindow.length };
}

// ------------------------------------------------------------------ the test

describe('one carrier frame freezes the node', () => {
  it('hostile and random carrier/browser frames, before and after start, never stall /healthz or a healthy call', { timeout: 60_000 }, async () => {
    const rand = mulberry32(SEED);
    const healthyCfg = await newSession(WELCOME);
    const healthy = await VoiceClient.connect(`${base}/${healthyCfg.session_id}`);
    await healthy.waitForType('tts_audio_start', 10_000);
    await until(() => healthy.audioFrames > 20, 5000, 'healthy call audio');

    // Every script is generated and every socket opened before the measurement starts, so the
    // test's own work does not show up as the engine's lateness.
    // 1. Carrier sockets that never send a valid start: hostile media first, then random frames.
    const preStart = await Promise.all([0, 1].map(() => connect(`${base}/twilio/CApre`)));
    const preStartScripts = preStart.map(() => [...hostileFrames(), ...Array.from({ length: 400 }, () => randomFrame(rand))]);
    // 2. Live carrier calls: valid media every 20 ms with a hostile frame after every 5 (1 in 6, so
    //    the stream is kept), then pure garbage at the end (the stream must be closed for it).
    const live = await Promise.all(
      [0, 1].map(async (i) => {
        const cfg = await newSession();
        const f = await connect(`${base}/twilio/CAlive${i}`);
        startCarrier(f, cfg.session_id, cfg.agent_id);
        await until(() => node.calls.has(cfg.session_id), 5000, 'carrier call claimed');
        return { f, sessionId: cfg.session_id };
      }),
    );
    const liveScripts = live.map(() => {
      const frames: Frame[] = [];
      let chunk = 0;
      let h = 0;
      for (let i = 0; i < FUZZ_MS / 20; i++) {
        frames.push(validMedia(++chunk));
        const hostile = hostileFrames(chunk);
        if (i % 5 === 2) frames.push(hostile[h++ % hostile.length]!);
      }
      return { frames, garbage: Array.from({ length: 100 }, () => randomFrame(rand)) };
    });
    // 3. Browser calls: random binary audio chunks (any size up to 64 KiB, odd lengths) and random
    //    text frames.
    const browsers = await Promise.all(
      [0, 1].map(async () => {
        const cfg = await newSession();
        return connect(`${base}/${cfg.session_id}`);
      }),
    );
    const browserScripts = browsers.map(() =>
      Array.from({ length: 600 }, () => (rand() < 0.5 ? { data: randomBytes(rand, Math.floor(rand() * 64 * 1024)), binary: true } : randomFrame(rand))),
    );
    // 4. A browser socket for a session that does not exist, and carrier sockets that end with
    //    invalid UTF-8 and an oversized frame (uWS closes those itself).
    const unknown = await connect(`${base}/no-such-session`);
    const edges = await Promise.all([0, 1].map(() => connect(`${base}/twilio/CAedge`)));
    const edgeScripts = edges.map((_, i) => [...Array.from({ length: 50 }, () => randomFrame(rand)), i === 0 ? invalidUtf8 : text('x'.repeat(20 * 1024))]);

    // /healthz latency, sampled every 50 ms from the baseline to the end.
    const probes: Array<{ atMs: number; ms: number }> = [];
    let probing = true;
    const prober = (async () => {
      while (probing) {
        const t = performance.now();
        const res = await fetch(`http://127.0.0.1:${node.port}/healthz`, { signal: AbortSignal.timeout(5000) });
        expect(res.status).toBe(200);
        await res.json();
        probes.push({ atMs: t, ms: performance.now() - t });
        await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const baselineFromMs = performance.now();
    await new Promise((r) => setTimeout(r, BASELINE_MS));
    const fuzzFromMs = performance.now();
    node.pacer.resetStats();
    const preStartRuns = preStart.map((f, i) => play(f, preStartScripts[i]!, FUZZ_MS));
    const liveRuns = live.map(async ({ f }, i) => {
      await play(f, liveScripts[i]!.frames, FUZZ_MS - 500);
      await play(f, liveScripts[i]!.garbage, 200);
    });
    const browserRuns = browsers.map((f, i) => play(f, browserScripts[i]!, FUZZ_MS));
    const edgeRuns = edges.map((f, i) => play(f, edgeScripts[i]!, 500));
    await Promise.all([...preStartRuns, ...liveRuns, ...browserRuns, ...edgeRuns]);
    const fuzzToMs = performance.now();
    const pacerLateMs = node.pacer.maxTickLateMs;
    probing = false;
    await prober;

    // /healthz answered in < STALL_MS throughout.
    const fuzzProbes = probes.filter((p) => p.atMs >= fuzzFromMs);
    expect(fuzzProbes.length).toBeGreaterThan(FUZZ_MS / 100);
    const worstProbeMs = Math.max(...probes.map((p) => p.ms));
    // The healthy call kept its timing: no added lateness beyond STALL_MS over its own baseline
    // (the finding's freeze was 400 ms per frame, or forever). Measured on a quiet machine:
    // probes < 20 ms, +20..30 ms lateness from processing the fuzzers' 2 s audio messages on the
    // same event loop; a busy CI machine adds its own scheduling noise, hence the margin.
    const baseline = worstLatenessMs(healthy.audioFrameTimes, baselineFromMs, fuzzFromMs);
    const during = worstLatenessMs(healthy.audioFrameTimes, fuzzFromMs, fuzzToMs);
    const report = { worstProbeMs, pacerLateMs, baseline, during, fuzzMs: Math.round(fuzzToMs - fuzzFromMs), probes: probes.length };
    if (process.env.FUZZ_REPORT) console.log(JSON.stringify(report));
    // The garbage streams were closed by the node (1008), uWS closed the invalid UTF-8 and the
    // oversized frame; the unknown session got its error frame and close.
    expect(await Promise.all(preStart.map((f) => f.closed))).toEqual([1008, 1008]);
    expect(await Promise.all(live.map(({ f }) => f.closed))).toEqual([1008, 1008]);
    expect(await unknown.closed).toBe(1008);
    for (const code of await Promise.all(edges.map((f) => f.closed))) expect([1006, 1007, 1008, 1009]).toContain(code);
    expect(log.lines.filter((l) => l.includes('carrier stream closed: too many invalid frames')).length).toBeGreaterThanOrEqual(4);
    const dropped = log.lines.filter((l) => l.includes('carrier stream input dropped')).map((l) => JSON.parse(l) as { invalidFrames: number; invalidReasons: Record<string, number> });
    if (process.env.FUZZ_REPORT) console.log(JSON.stringify(dropped));
    expect(dropped.some((d) => (d.invalidReasons.chunk_out_of_window ?? 0) > 0 && (d.invalidReasons.bad_chunk ?? 0) > 0)).toBe(true);
    expect(dropped.some((d) => (d.invalidReasons.media_before_start ?? 0) > 0)).toBe(true);

    expect(during.frames, JSON.stringify(report)).toBeGreaterThan((0.8 * (fuzzToMs - fuzzFromMs)) / 20);
    // The bound (< 50 ms) for the typical probe; every probe within the stall margin.
    const sortedProbes = probes.map((p) => p.ms).sort((a, b) => a - b);
    expect(sortedProbes[Math.floor(sortedProbes.length / 2)], JSON.stringify(report)).toBeLessThan(50);
    expect(worstProbeMs, JSON.stringify(report)).toBeLessThan(STALL_MS);
    expect(during.worstMs, JSON.stringify(report)).toBeLessThan(baseline.worstMs + STALL_MS);
    expect(pacerLateMs, JSON.stringify(report)).toBeLessThan(STALL_MS);

    // The healthy call is still live and still hearing its welcome.
    expect(healthy.types()).not.toContain('call_ended');
    expect(node.calls.has(healthyCfg.session_id)).toBe(true);
    for (const f of browsers) f.ws.close();
    await Promise.all(browsers.map((f) => f.closed));
    healthy.close();
    await healthy.closed();
    await until(() => node.calls.size === 0, 5000, 'calls ended');
  });
});
