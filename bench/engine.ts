/**
 * Engine capacity: N concurrent simulated conversations against one engine process, ramping N,
 * for each caller kind. The engine (bench/engine/host.ts) and the callers (bench/engine/loadgen.ts)
 * run in separate processes; this script drives them and prints the tables.
 *
 *   npm run build:bench && node dist-bench/bench/engine.js [--drivers twilio-lite,browser]
 *     [--calls 100,200,400,600,800,1000] [--window 15] [--warmup 5] [--idle 2] [--connect-rate 200]
 *     [--barge-every 3] [--jitter 20] [--loss 0] [--stop-after 2] [--baseline all|top|none]
 *     [--providers sim-net|sim] [--vad-fix] [--cheap-upsample] [--profile] [--heap-snapshot] [--engine-flags=--trace-gc]
 *     [--engines 2] [--carrier-out-ms 40] [--no-append]
 *
 * Per step: engine CPU (total and per call), memory per call (post-GC, idle and in conversation),
 * outbound frame lateness (vs slot; see bench/engine/probe.ts), drops, engine event-loop delay,
 * turn internal overhead, barge-in reaction, and the load generator's own CPU and send lateness.
 * Same-run baseline: a bare uWS server (bench/engine/bare.ts) driven by the same callers at the
 * same N; "x bare" columns are engine / bare.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import { appendResults, commandLine, renderSection, type Section } from './lib/report.js';
import { runEngineStep, type StepOptions, type StepResult } from './engine/step.js';
import type { ProviderMode } from './engine/providers.js';
import type { DriverKind } from './engine/drivers.js';
import { bareTable, capacityTable, turnsTable } from './engine/tables.js';

export interface EngineBenchOptions {
  /** Caller kinds, each ramped separately (drivers.ts). Default ['twilio-lite', 'browser']. */
  drivers: DriverKind[];
  /** Concurrent calls per step (ascending). Default [100, 200, 300, 400, 600, 800, 1000]. */
  calls: number[];
  /** Telephony link jitter, ms (uniform 0..jitter). Default 20. */
  jitterMs: number;
  /** Telephony link loss probability. Default 0. */
  lossProb: number;
  /** Measurement window per step, seconds. Default 15. */
  windowSec: number;
  /** Conversation warm-up before the window, seconds. Default 5. */
  warmupSec: number;
  /** Idle phase (and idle window), seconds. Default 2. */
  idleSec: number;
  /** Calls connected per second during ramp-up. Default 200. */
  connectPerSec: number;
  /** One turn in n is a barge-in. Default 3. */
  bargeEvery: number;
  /** Stop a ramp after this many consecutive steps that are not real time. Default 2. */
  stopAfter: number;
  /** Bare uWS baseline at every step (`all`), at the largest step run (`top`), or `none`. Default all. */
  baseline: 'all' | 'top' | 'none';
  /** `sim-net` (default): sim providers minus their own DSP artefacts; `sim`: as shipped (providers.ts). */
  providerMode: ProviderMode;
  /** Projection: apply the proposed VAD denormal fix from outside (probe.ts). Default false. */
  vadDenormalFix: boolean;
  /** Projection: carrier 8 -> 16 kHz upsampling by linear interpolation (probe.ts). Default false. */
  cheapUpsample: boolean;
  /** Write a V8 CPU profile of the engine at each step into bench/profiles/. Default false. */
  profile: boolean;
  /** Write heap snapshots (no call, idle calls) of each step into bench/profiles/; summarise with heap-diff.js. */
  heapSnapshot: boolean;
  /** Extra node flags for the engine process (e.g. ['--trace-gc']). Default none. */
  engineFlags: string[];
  /** Engine processes on the node, one engine node each (step.ts); the bare baseline runs as many. Default 1. */
  engines: number;
  /** CARRIER_OUT_MESSAGE_MS of the engine: audio per outgoing carrier message (20-100 ms). Default: the engine's (40). */
  carrierOutMessageMs?: number;
  seed: number;
}

export const ENGINE_DEFAULTS: EngineBenchOptions = {
  drivers: ['twilio-lite', 'browser'],
  calls: [100, 200, 300, 400, 600, 800, 1000],
  jitterMs: 20,
  lossProb: 0,
  windowSec: 15,
  warmupSec: 5,
  idleSec: 2,
  connectPerSec: 200,
  bargeEvery: 3,
  stopAfter: 2,
  baseline: 'all',
  providerMode: 'sim-net',
  vadDenormalFix: false,
  cheapUpsample: false,
  profile: false,
  heapSnapshot: false,
  engineFlags: [],
  engines: 1,
  seed: 1,
};

export interface EngineRamp {
  driver: DriverKind;
  steps: StepResult[];
  bare: StepResult[];
  /** Largest N that stayed real time (0 when none did). */
  maxRealTime: number;
}

export interface EngineBenchResult {
  options: EngineBenchOptions;
  ramps: EngineRamp[];
  sections: Section[];
}

export async function runEngineBench(opts: Partial<EngineBenchOptions> = {}, log: (l: string) => void = console.error): Promise<EngineBenchResult> {
  const o: EngineBenchOptions = { ...ENGINE_DEFAULTS, ...opts };
  const ramps: EngineRamp[] = [];
  for (const driver of o.drivers) {
    const steps: StepResult[] = [];
    const bare: StepResult[] = [];
    let misses = 0;
    const stepOpts = (n: number, server: 'engine' | 'bare'): StepOptions => ({
      calls: n,
      server,
      driver,
      jitterMs: o.jitterMs,
      lossProb: o.lossProb,
      connectPerSec: o.connectPerSec,
      idleSec: o.idleSec,
      warmupSec: o.warmupSec,
      windowSec: o.windowSec,
      bargeEvery: o.bargeEvery,
      seed: o.seed,
      providers: { llmTtftMs: 0, llmTokensPerSecond: 0, ttsTtfbMs: 0, asrLatencyMs: 0, providerMode: o.providerMode, vadDenormalFix: o.vadDenormalFix, cheapUpsample: o.cheapUpsample, carrierOutMessageMs: o.carrierOutMessageMs },
      engineFlags: o.engineFlags,
      engines: o.engines,
      cpuProfDir: o.profile ? path.resolve(import.meta.dirname, '../../bench/profiles') : undefined,
      heapSnapshotDir: o.heapSnapshot ? path.resolve(import.meta.dirname, '../../bench/profiles') : undefined,
    });
    for (const n of o.calls) {
      log(`engine: ${driver} N=${n}`);
      const r = await runEngineStep(stepOpts(n, 'engine'), log);
      steps.push(r);
      log(`  -> lateness p99 ${r.lateSlot.p99.toFixed(2)} ms, drops ${r.droppedFrames + r.droppedPlayoutFrames}, engine cpu ${r.active.engine.cpuPct.toFixed(0)} %, ${r.realTime ? 'real time' : 'NOT real time'}`);
      if (o.baseline === 'all') bare.push(await runEngineStep(stepOpts(n, 'bare'), log));
      misses = r.realTime ? 0 : misses + 1;
      if (misses >= o.stopAfter) break;
    }
    if (o.baseline === 'top' && steps.length) bare.push(await runEngineStep(stepOpts(steps[steps.length - 1]!.calls, 'bare'), log));
    const maxRealTime = Math.max(0, ...steps.filter((s) => s.realTime).map((s) => s.calls));
    ramps.push({ driver, steps, bare, maxRealTime });
  }
  return { options: o, ramps, sections: ramps.map((r) => engineSection(o, r)) };
}

const DRIVER_TEXT: Record<DriverKind, string> = {
  browser: 'browser calls: 16 kHz PCM binary frames on the voice socket (bench/engine/drivers.ts)',
  'twilio-lite': 'telephony calls: Twilio Media Streams JSON, mu-law 8 kHz, through the carrier simulator\'s ImpairedLink',
  'twilio-carrier': 'telephony calls: the full carrier simulator (MediaStreamCall)',
  'telnyx-pcmu': 'telephony calls: Telnyx media streaming JSON, PCMU 8 kHz, through the ImpairedLink',
  'telnyx-pcma': 'telephony calls: Telnyx media streaming JSON, PCMA 8 kHz, through the ImpairedLink',
  plivo: 'telephony calls: Plivo audio streams JSON, mu-law 8 kHz, through the ImpairedLink',
  vonage: 'telephony calls: Vonage websocket, binary 16-bit PCM 8 kHz (the default NCCO), through the ImpairedLink',
  'vonage-16k': 'telephony calls: Vonage websocket, binary 16-bit PCM 16 kHz (sample_rate_hz 16000), through the ImpairedLink',
  exotel: 'telephony calls: Exotel voicebot stream JSON, 16-bit PCM 8 kHz in 100 ms messages, through the ImpairedLink',
};

function projections(o: EngineBenchOptions): string {
  const p = [o.vadDenormalFix ? 'VAD denormal flush' : '', o.cheapUpsample ? 'linear 8->16 kHz carrier upsampling' : ''].filter(Boolean);
  return p.length ? `; PROJECTION with ${p.join(' + ')} applied from outside` : '';
}

export function engineSection(o: EngineBenchOptions, r: EngineRamp): Section {
  const bareByN = new Map(r.bare.map((b) => [b.calls, b]));
  const telephony = r.driver !== 'browser';
  return {
    title: `Engine capacity: ${r.driver}${o.engines > 1 ? `, ${o.engines} engine processes` : ''}${o.carrierOutMessageMs && telephony ? `, ${o.carrierOutMessageMs} ms per outgoing message` : ''} (${o.providerMode} providers, zero latency${projections(o)})`,
    settings: {
      callers: DRIVER_TEXT[r.driver] + (telephony ? `; link jitter 0..${o.jitterMs} ms, loss ${o.lossProb}` : ''),
      steps: r.steps.map((s) => s.calls).join(', ') + (r.steps.length < o.calls.length ? ` (ramp stopped after ${o.stopAfter} steps not real time)` : ''),
      'window / warm-up / idle': `${o.windowSec} s / ${o.warmupSec} s / ${o.idleSec} s; connect rate ${o.connectPerSec} calls/s`,
      script: `think 0.3-1.2 s, say a phrase, agent answers; 1 turn in ${o.bargeEvery} asks for a long answer and interrupts it 0.6-1.4 s in`,
      providers: o.providerMode === 'sim' ? 'sim, as shipped (their DSP runs in the engine process)' : 'sim-net: sim minus its DSP artefacts (ASR not fed digital silence; TTS cached, one chunk per macrotask)',
      processes:
        o.engines > 1
          ? `${o.engines} engine processes (each its own engine node and port, calls dealt round-robin; CPU, memory and counts summed, event-loop delay the worst process's) and the load generator, separate processes on the same 2 cores`
          : 'engine and load generator in separate processes (child_process.fork) on the same 2 cores',
      lateness: "ms; departure minus the frame's slot on the pacer's 10 ms tick (probe.ts); sched = vs the ideal 20 ms schedule incl. 0-10 ms tick quantisation",
      cpu: "eng cpu % = the engine process (all threads) as % of one core; per call: / N. main %/call = the main thread alone (event loop: JavaScript, uWS, socket system calls; issue 13's goal is <= 0.07), without V8's GC/compiler threads",
      memory: 'post-GC deltas over the engine with no call (its young generation made resident first, a fixed ~15 MiB any engine carrying calls has; host.ts), per call; heap+ext counts typed arrays at full size even where pages are untouched',
      'eld / gen': 'engine event-loop delay (ms beyond its 10 ms sampling interval); load generator CPU and how late its sends were',
      baseline: `bare uWS server (bare.ts), same callers, same N, same run: ${r.bare.length ? r.bare.map((b) => b.calls).join(', ') : 'not run'}`,
      'real time': 'lateness p99 < 10 ms, no dropped frames, no underruns (the far end ran dry mid-answer)',
    },
    blocks: [
      capacityTable(r.steps, bareByN),
      'Turns, barge-in, session start (engine-side ms; ready = at the client, browser: connect -> pipeline_ready, carrier: connect -> start sent):',
      turnsTable(r.steps),
      ...(r.bare.length ? ['Baseline: bare uWS server, same callers:', bareTable(r.bare)] : []),
    ],
    notes: [`Largest N that stayed real time (${r.driver}): ${r.maxRealTime || 'none'}.`],
  };
}

function parseList(v: string | undefined): number[] | undefined {
  return v ? v.split(',').map((x) => Number(x.trim())).filter((x) => x > 0) : undefined;
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values } = benchArgs({
    options: {
      drivers: { type: 'string' },
      calls: { type: 'string' },
      jitter: { type: 'string' },
      loss: { type: 'string' },
      window: { type: 'string' },
      warmup: { type: 'string' },
      idle: { type: 'string' },
      'connect-rate': { type: 'string' },
      'barge-every': { type: 'string' },
      'stop-after': { type: 'string' },
      baseline: { type: 'string' },
      providers: { type: 'string' },
      'vad-fix': { type: 'boolean' },
      'cheap-upsample': { type: 'boolean' },
      profile: { type: 'boolean' },
      'heap-snapshot': { type: 'boolean' },
      'engine-flags': { type: 'string' },
      engines: { type: 'string' },
      'carrier-out-ms': { type: 'string' },
      seed: { type: 'string' },
      'no-append': { type: 'boolean' },
    },
  });
  const opts: Partial<EngineBenchOptions> = {};
  if (values.drivers) opts.drivers = values.drivers.split(',') as DriverKind[];
  if (values.calls) opts.calls = parseList(values.calls);
  if (values.jitter) opts.jitterMs = Number(values.jitter);
  if (values.loss) opts.lossProb = Number(values.loss);
  if (values.window) opts.windowSec = Number(values.window);
  if (values.warmup) opts.warmupSec = Number(values.warmup);
  if (values.idle) opts.idleSec = Number(values.idle);
  if (values['connect-rate']) opts.connectPerSec = Number(values['connect-rate']);
  if (values['barge-every']) opts.bargeEvery = Number(values['barge-every']);
  if (values['stop-after']) opts.stopAfter = Number(values['stop-after']);
  if (values.baseline) opts.baseline = values.baseline as EngineBenchOptions['baseline'];
  if (values.providers) opts.providerMode = values.providers as ProviderMode;
  if (values['vad-fix']) opts.vadDenormalFix = true;
  if (values['cheap-upsample']) opts.cheapUpsample = true;
  if (values.profile) opts.profile = true;
  if (values['heap-snapshot']) opts.heapSnapshot = true;
  if (values['engine-flags']) opts.engineFlags = values['engine-flags'].split(' ').filter(Boolean);
  if (values.engines) opts.engines = Math.max(1, Math.floor(Number(values.engines)) || 1);
  if (values['carrier-out-ms']) opts.carrierOutMessageMs = Number(values['carrier-out-ms']);
  if (values.seed) opts.seed = Number(values.seed);
  const r = await runEngineBench(opts);
  for (const s of r.sections) console.log(renderSection(s) + '\n');
  if (!values['no-append']) appendResults('engine capacity', r.sections, { command: commandLine() });
}
