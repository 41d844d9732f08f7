/**
 * The load generator, in its own process: N simulated callers against one engine (drivers.ts for
 * the wire formats, scenario.ts for what they say). One 5 ms timer drives every call; each call
 * keeps its own 20 ms schedule (catching up when the timer slips). The generator reports its own
 * CPU, event-loop delay and how late its sends were, so a reader can tell when the generator, not
 * the engine, was the limit.
 */
import { serveParent } from '../lib/child.js';
import { ProcessWindow } from '../lib/proc-stats.js';
import { Histogram } from '../lib/stats.js';
import { connectBrowser, connectTwilioCarrier, connectTwilioLite, type Driver, type DriverContext, type DriverKind } from './drivers.js';
import { CallScript, prng, type CallCounters } from './scenario.js';
import { connectStreamLite } from './stream-drivers.js';

export interface ConnectParams {
  host: string;
  port: number;
  /** Several engine processes: the port of each session (parallel to `sessionIds`); else `port` for all. */
  sessionPorts?: number[];
  driver: DriverKind;
  sessionIds: string[];
  /** New calls per second while ramping up. */
  connectPerSec: number;
  /** One turn in n is interrupted (0 = never). */
  bargeEvery: number;
  /** Telephony: inbound jitter (uniform 0..jitterMs) and loss probability of the carrier link. */
  jitterMs: number;
  lossProb: number;
  seed: number;
}

const TICK_MS = 5;
const drivers: Driver[] = [];
const counters: CallCounters = { turns: 0, bargeIns: 0, noAnswer: 0 };
const win = new ProcessWindow(10);
const sendLate = new Histogram(0, 5000, 0.1);
const counts = { framesSent: 0, framesReceived: 0, errors: 0, clears: 0, closedEarly: 0 };
let closing = false;
let timer: NodeJS.Timeout | undefined;

function tick(): void {
  const now = performance.now();
  for (let i = 0; i < drivers.length; i++) drivers[i]!.tick(now);
}

async function connect(p: ConnectParams): Promise<{ connected: number; failed: number; readyMs: number[]; firstError?: string }> {
  const baseCtx: DriverContext = { host: p.host, port: p.port, jitterMs: p.jitterMs, lossProb: p.lossProb, seed: p.seed, sendLate, counts, closing: () => closing };
  const rand = prng(p.seed);
  if (!timer) timer = setInterval(tick, TICK_MS);
  const gapMs = 1000 / Math.max(1, p.connectPerSec);
  let failed = 0;
  let firstError: string | undefined;
  const started = performance.now();
  const pending: Promise<void>[] = [];
  for (let i = 0; i < p.sessionIds.length; i++) {
    const wait = started + i * gapMs - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const script = new CallScript(counters, p.bargeEvery, prng(Math.floor(rand() * 2 ** 31)));
    const id = p.sessionIds[i]!;
    const ctx = p.sessionPorts ? { ...baseCtx, port: p.sessionPorts[i]! } : baseCtx;
    const opened =
      p.driver === 'browser'
        ? connectBrowser(ctx, id, script)
        : p.driver === 'twilio-lite'
          ? connectTwilioLite(ctx, id, script, i)
          : p.driver === 'twilio-carrier'
            ? connectTwilioCarrier(ctx, id, script, i)
            : connectStreamLite(ctx, id, script, i, p.driver);
    pending.push(
      opened.then(
        (d) => void drivers.push(d),
        (err: Error) => {
          failed++;
          firstError ??= err.message;
        },
      ),
    );
  }
  await Promise.all(pending);
  return { connected: drivers.length, failed, readyMs: drivers.map((d) => d.readyMs), firstError };
}

serveParent(
  {
    connect,
    /** Every connected caller starts its conversation script (staggered by its own think time). */
    begin: () => {
      const now = performance.now();
      for (const d of drivers) d.script.begin(now);
      return drivers.length;
    },
    resetWindow: () => {
      win.reset();
      sendLate.reset();
      counts.framesSent = counts.framesReceived = counts.clears = 0;
      counters.turns = counters.bargeIns = counters.noAnswer = 0;
      return true;
    },
    snapshot: () => ({
      stats: win.read(),
      sendLate: sendLate.toJSON(),
      ...counts,
      ...counters,
      live: drivers.filter((d) => d.ready && !d.closed()).length,
    }),
    closeAll: async () => {
      closing = true;
      if (timer) clearInterval(timer);
      timer = undefined;
      for (const d of drivers) d.close();
      const deadline = Date.now() + 10_000;
      while (drivers.some((d) => !d.closed()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      drivers.length = 0;
      return true;
    },
  },
  () => {
    if (timer) clearInterval(timer);
  },
);
