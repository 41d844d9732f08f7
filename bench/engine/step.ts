/**
 * One load step: a fresh engine process and a fresh load-generator process, N calls connected at
 * a bounded rate, an idle phase (calls connected, streaming silence: idle memory and CPU), then a
 * conversation phase (warm-up, then a measurement window). Shared by bench/engine.ts (capacity
 * ramp) and bench/turns.ts (turn latency).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { forkChild, type Child } from '../lib/child.js';
import type { WindowStats } from '../lib/proc-stats.js';
import { Histogram, summarize, summarizeHistogram, type HistogramJson, type Summary } from '../lib/stats.js';
import type { HostInit } from './host.js';
import type { ProbeSnapshot } from './probe.js';
import type { DriverKind } from './drivers.js';
import type { ConnectParams } from './loadgen.js';
import { mergeMemory, mergeProbes, mergeWindowStats } from './merge.js';

export interface StepOptions {
  calls: number;
  /** `engine` (default) or the `bare` uWS baseline (bare.ts) driven by the same callers. */
  server?: 'engine' | 'bare';
  /** Caller wire format (drivers.ts). */
  driver: DriverKind;
  /** Telephony link: inbound jitter, uniform 0..jitterMs, and loss probability. */
  jitterMs: number;
  lossProb: number;
  /** New calls per second during ramp-up. */
  connectPerSec: number;
  /** Seconds of idle (connected, silent) before the idle reading, and the idle window. */
  idleSec: number;
  /** Seconds of conversation before the measurement window opens. */
  warmupSec: number;
  /** Length of the measurement window, seconds. */
  windowSec: number;
  bargeEvery: number;
  seed: number;
  providers: Pick<HostInit, 'llmTtftMs' | 'llmTokensPerSecond' | 'ttsTtfbMs' | 'asrLatencyMs' | 'providerMode' | 'vadDenormalFix' | 'cheapUpsample' | 'carrierOutMessageMs'>;
  /** When set, heap snapshots of the engine with no call and with the idle calls are written here. */
  heapSnapshotDir?: string;
  /** When set, the engine process runs with --cpu-prof and writes its profile here. */
  cpuProfDir?: string;
  /** Extra node flags for the engine process (e.g. --trace-gc). */
  engineFlags?: string[];
  /**
   * Engine processes on the node (default 1), each its own engine node on its own port; calls are
   * dealt round-robin and every reading is their sum (merge.ts). The bare baseline runs as many.
   */
  engines?: number;
}

export interface StepResult {
  calls: number;
  server: 'engine' | 'bare';
  connected: number;
  failed: number;
  /** Connect -> `pipeline_ready` (browser) / socket open + start sent (carrier), client-side. */
  pipelineReady: Summary;
  inbound?: ProbeSnapshot['inbound'];
  idle: { engine: WindowStats; rssPerCallKiB: number; heapPerCallKiB: number; externalPerCallKiB: number; cpuPctPerCall: number };
  active: { engine: WindowStats; rssPerCallKiB: number; heapPerCallKiB: number; externalPerCallKiB: number; cpuPctPerCall: number };
  lateSlot: Summary;
  lateSched: Summary;
  tickLate: Summary;
  framesSent: number;
  /** Pacing restarts inside a run (playout queue ran dry); their frames count as late. */
  underruns: number;
  droppedFrames: number;
  droppedPlayoutFrames: number;
  framesAfterClear: number;
  turnOverhead: Summary;
  turnTotal: Summary;
  bargeToClear: Summary;
  bargeArrivalToClear: Summary;
  bargeToLastFrame: Summary;
  engineTurns: number;
  interruptedTurns: number;
  client: {
    stats: WindowStats;
    sendLate: Summary;
    framesSent: number;
    framesReceived: number;
    turns: number;
    clears: number;
    bargeIns: number;
    noAnswer: number;
    errors: number;
    closedEarly: number;
    live: number;
  };
  /** 1-minute load average when the step started (other work on the machine). */
  loadAvg1: number;
  /** Real time: p99 lateness vs slot < 10 ms and no dropped frames. */
  realTime: boolean;
  cpuProfile?: string;
}

const KiB = 1024;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface HostSnapshot {
  stats: WindowStats;
  probe: ProbeSnapshot;
  calls: number;
  mem: NodeJS.MemoryUsage;
}

/** Per-call memory between two post-GC readings. */
function perCall(mem: NodeJS.MemoryUsage, base: NodeJS.MemoryUsage, n: number) {
  return {
    rssPerCallKiB: (mem.rss - base.rss) / n / KiB,
    heapPerCallKiB: (mem.heapUsed - base.heapUsed) / n / KiB,
    externalPerCallKiB: (mem.external - base.external) / n / KiB,
  };
}

function profileName(o: StepOptions, index = 0): string {
  return `${o.server ?? 'engine'}-${o.driver}-${o.calls}${index ? `-p${index + 1}` : ''}.cpuprofile`;
}

/** The same call on every engine process. */
function allOf<T>(hosts: Child[], method: string, params?: unknown, timeoutMs?: number): Promise<T[]> {
  return Promise.all(hosts.map((h) => h.call<T>(method, params, timeoutMs)));
}

async function snapshotAll(hosts: Child[]): Promise<HostSnapshot> {
  const all = await allOf<HostSnapshot>(hosts, 'snapshot', { gc: true });
  return { stats: mergeWindowStats(all.map((s) => s.stats)), probe: mergeProbes(all.map((s) => s.probe)), calls: all.reduce((n, s) => n + s.calls, 0), mem: mergeMemory(all.map((s) => s.mem)) };
}

export async function runEngineStep(o: StepOptions, log: (line: string) => void = () => {}): Promise<StepResult> {
  const engines = Math.max(1, o.engines ?? 1);
  const execArgvOf = (index: number) => {
    const argv = ['--expose-gc', ...(o.engineFlags ?? [])];
    if (o.cpuProfDir) {
      fs.mkdirSync(o.cpuProfDir, { recursive: true });
      argv.push('--cpu-prof', `--cpu-prof-dir=${o.cpuProfDir}`, `--cpu-prof-name=${profileName(o, index)}`);
    }
    return argv;
  };
  const loadAvg1 = os.loadavg()[0]!;
  const hosts: Child[] = [];
  let gen: Child | undefined;
  try {
    for (let i = 0; i < engines; i++) hosts.push(await forkChild('engine/host.js', [], { execArgv: execArgvOf(i) }));
    gen = await forkChild('engine/loadgen.js', [], { execArgv: ['--max-semi-space-size=32'] });
    // Calls dealt round-robin: process i carries calls i, i + engines, ...
    const share = (i: number) => Math.floor(o.calls / engines) + (i < o.calls % engines ? 1 : 0);
    const ports = (
      o.server === 'bare'
        ? await allOf<{ port: number }>(hosts, 'initBare')
        : await Promise.all(hosts.map((h, i) => h.call<{ port: number }>('init', { registry: 'memory', capacity: share(i), ...o.providers } satisfies HostInit)))
    ).map((r) => r.port);
    const base = mergeMemory(await allOf<NodeJS.MemoryUsage>(hosts, 'memory'));
    const snapshotTo = (phase: string) =>
      o.heapSnapshotDir
        ? Promise.all(hosts.map((h, i) => h.call('heapSnapshot', { file: path.join(o.heapSnapshotDir!, `${o.server ?? 'engine'}-${o.driver}-${o.calls}${i ? `-p${i + 1}` : ''}-${phase}.heapsnapshot`) }, 120_000)))
        : undefined;
    await snapshotTo('base');
    const idsByHost = await Promise.all(hosts.map((h, i) => h.call<string[]>('createSessions', { count: share(i) })));
    const ids: string[] = [];
    const sessionPorts: number[] = [];
    for (let k = 0; k < o.calls; k++) {
      const i = k % engines;
      ids.push(idsByHost[i]![Math.floor(k / engines)]!);
      sessionPorts.push(ports[i]!);
    }
    log(`  ${o.calls} ${o.driver} calls (${o.server ?? 'engine'}${engines > 1 ? `, ${engines} processes` : ''}): connecting at ${o.connectPerSec}/s`);
    const conn = await gen.call<{ connected: number; failed: number; readyMs: number[]; firstError?: string }>(
      'connect',
      { host: '127.0.0.1', port: ports[0]!, sessionPorts: engines > 1 ? sessionPorts : undefined, driver: o.driver, sessionIds: ids, connectPerSec: o.connectPerSec, bargeEvery: o.bargeEvery, jitterMs: o.jitterMs, lossProb: o.lossProb, seed: o.seed } satisfies ConnectParams,
      60_000 + (o.calls / o.connectPerSec) * 2000,
    );
    if (conn.failed) log(`  ${conn.failed} calls failed to connect: ${conn.firstError}`);
    // Idle: connected, streaming silence, no turn.
    await sleep(o.idleSec * 1000);
    // Carrier sockets open before the engine claims the session: count the calls it actually holds.
    const engineCalls = (await allOf<number>(hosts, 'calls')).reduce((n, c) => n + c, 0);
    if (engineCalls < conn.connected) {
      log(`  the engine holds ${engineCalls} of ${conn.connected} connected calls (refused or closed: see the engine log)`);
      conn.failed += conn.connected - engineCalls;
      conn.connected = engineCalls;
    }
    await allOf(hosts, 'resetWindow');
    await sleep(o.idleSec * 1000);
    const idleSnap = await snapshotAll(hosts);
    await snapshotTo('idle');
    const idle = { engine: idleSnap.stats, ...perCall(idleSnap.mem, base, o.calls), cpuPctPerCall: idleSnap.stats.cpuPct / Math.max(1, conn.connected) };
    log(`  idle: engine cpu ${idleSnap.stats.cpuPct.toFixed(0)} %, rss/call ${idle.rssPerCallKiB.toFixed(0)} KiB; conversations for ${o.warmupSec + o.windowSec} s`);
    // Conversation.
    await gen.call('begin');
    await sleep(o.warmupSec * 1000);
    await Promise.all([allOf(hosts, 'resetWindow'), gen.call('resetWindow')]);
    await sleep(o.windowSec * 1000);
    const [snap, client] = await Promise.all([
      snapshotAll(hosts),
      gen.call<StepResult['client'] & { stats: WindowStats; sendLate: HistogramJson }>('snapshot'),
    ]);
    const p = snap.probe;
    const lateSlot = summarizeHistogram(Histogram.fromJSON(p.lateSlot));
    const droppedFrames = p.droppedFrames;
    const result: StepResult = {
      calls: o.calls,
      server: o.server ?? 'engine',
      loadAvg1,
      connected: conn.connected,
      failed: conn.failed,
      pipelineReady: summarize(conn.readyMs.filter((x) => Number.isFinite(x))),
      idle,
      active: { engine: snap.stats, ...perCall(snap.mem, base, o.calls), cpuPctPerCall: snap.stats.cpuPct / Math.max(1, conn.connected) },
      lateSlot,
      lateSched: summarizeHistogram(Histogram.fromJSON(p.lateSched)),
      tickLate: summarizeHistogram(Histogram.fromJSON(p.tickLate)),
      framesSent: p.framesSent,
      underruns: p.underruns,
      droppedFrames,
      droppedPlayoutFrames: p.droppedPlayoutFrames,
      framesAfterClear: p.framesAfterClear,
      inbound: p.inbound,
      turnOverhead: summarize(p.turnOverheadMs),
      turnTotal: summarize(p.turnTotalMs),
      bargeToClear: summarize(p.bargeToClearMs),
      bargeArrivalToClear: summarize(p.bargeArrivalToClearMs),
      bargeToLastFrame: summarize(p.bargeToLastFrameMs),
      engineTurns: p.turns,
      interruptedTurns: p.interruptedTurns,
      client: { ...client, sendLate: summarizeHistogram(Histogram.fromJSON(client.sendLate)) },
      // Issue 13: p99 outbound frame lateness < 10 ms, no drops, no underruns.
      realTime: conn.failed === 0 && lateSlot.count > 0 && lateSlot.p99 < 10 && droppedFrames + p.droppedPlayoutFrames === 0 && p.underruns === 0,
    };
    await gen.call('closeAll', undefined, 30_000);
    if (o.cpuProfDir) result.cpuProfile = path.join(o.cpuProfDir, profileName(o));
    return result;
  } finally {
    await gen?.stop();
    await Promise.all(hosts.map((h) => h.stop(30_000)));
  }
}
