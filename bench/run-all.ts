/**
 * `npm run bench`: a quick pass of every benchmark (about 7 minutes on 2 cores), one summary table
 * against the goals, every bench's own table, and one dated section appended to bench/RESULTS.md.
 * Each bench also runs alone with its own options (see docs/benchmarks.md).
 *
 *   npm run bench            (= npm run build:bench --silent && node dist-bench/bench/run-all.js)
 *   node dist-bench/bench/run-all.js [--only engine,rest] [--no-append]
 */
import { benchArgs } from './lib/args.js';
import { appendResults, commandLine, num, renderSection, table, type Section } from './lib/report.js';
import { runDspBaseSection, runOffloadBench } from './dsp-offload.js';
import { runEngineBench, type EngineBenchOptions, type EngineRamp } from './engine.js';
import { runEngineStep, type StepResult } from './engine/step.js';
import type { DriverKind } from './engine/drivers.js';
import { TURNS_DEFAULTS, turnsSection } from './turns.js';
import { PEER_GOAL_PCT, PEER_P99_GOAL_MS, peerVerdict, runRestBench, type RestRow } from './rest.js';
import { runGrpcBench, type GrpcRow } from './grpc.js';
import { runRoutingBench } from './routing.js';
import { GOAL_P95_MS, PIPELINE_DEFAULTS, runPipelineAnalyticsBench } from './pipeline-analytics.js';
import { runAsrFeedBench } from './asr-feed.js';

const { values } = benchArgs({ options: { only: { type: 'string' }, 'no-append': { type: 'boolean' } } });
const only = values.only ? new Set(values.only.split(',')) : undefined;
const want = (name: string): boolean => !only || only.has(name);
const log = (l: string) => console.error(l);
const started = Date.now();
const sections: Section[] = [];
/** area, metric, measured, baseline (same run), ratio, goal, verdict (`met`, `missed (...)`, or `-` where the row is no goal). */
const summary: Array<[string, string, string, string, string, string, string]> = [];
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
/** `met` when `ok`, else `missed (why)`. */
const verdict = (ok: boolean, why: string): string => (ok ? 'met' : `missed (${why})`);
/** Issue 13's engine goals, on one 2-core machine with the load generator beside the engine. */
const ENGINE_CALLS_GOAL = 1000;
const MAIN_CPU_PER_CALL_GOAL_PCT = 0.07;
const IDLE_CALL_MEMORY_GOAL_KB = 100;
const OVERHEAD_P99_GOAL_MS = 5;
const BARGE_P99_GOAL_MS = 20;
const ROUTING_GOAL_PER_SEC = 1500;
const REST_READ_GOAL_PCT = 50;

// ---------------------------------------------------------------- DSP
if (want('dsp')) {
  log(`[${elapsed()}] dsp`);
  const base = await runDspBaseSection({ runs: 3, framesPerRun: 2000, warmupFrames: 500 });
  const off = await runOffloadBench({ frames: 1500, jobs: 60, threads: 1 });
  sections.push(base.section, off.section);
  const row = (name: string) => base.rows.find((r) => r.name.startsWith(name));
  for (const n of ['carrier in: decode + VAD 8k', 'mu-law decode + 8k->16k', '16k->8k + mu-law encode', 'TTS 24k->8k', 'TTS 24k->16k']) {
    const r = row(n);
    if (r) summary.push(['DSP', `${r.name} (ns/frame)`, num(r.nsPerFrame), '-', '-', 'stays inline if a few us', '-']);
  }
  const opus = off.inline.find((r) => r.name.startsWith('Opus encode 20 ms @16'));
  if (opus) summary.push(['DSP', 'Opus encode 20 ms @16 kHz (ns/frame)', num(opus.nsPerFrame), '-', '-', 'worker (batched)', '-']);
  const one = off.offload.find((r) => r.name.startsWith('mu-law') && r.framesPerJob === 1);
  const batch = off.offload.find((r) => r.name.startsWith('mu-law') && r.framesPerJob === 50);
  const inlineUp = row('mu-law decode + 8k->16k');
  if (one && batch && inlineUp)
    summary.push([
      'DSP',
      'mu-law + 8k->16k offloaded to piscina: main-thread ns/frame, 1 frame / 50-frame batch',
      `${num(one.seqMainNsPerFrame)} / ${num(batch.seqMainNsPerFrame)}`,
      `inline ${num(inlineUp.nsPerFrame)} (long-lived filter)`,
      `${num(one.seqMainNsPerFrame / inlineUp.nsPerFrame, 1)}x / ${num(batch.seqMainNsPerFrame / inlineUp.nsPerFrame, 2)}x`,
      'batches only',
      '-',
    ]);
  const vad = off.inline.find((r) => r.name.includes('as shipped'));
  const vadFix = off.inline.find((r) => r.name.includes('flushed'));
  if (vad && vadFix) summary.push(['DSP', 'VAD on silence after speech (ns/frame)', num(vad.nsPerFrame), `state flushed ${num(vadFix.nsPerFrame)}`, `${num(vad.nsPerFrame / vadFix.nsPerFrame, 1)}x`, '~1x (no denormal slowdown)', '-']);
}

// ---------------------------------------------------------------- ASR feed (vendor socket)
if (want('asr-feed')) {
  log(`[${elapsed()}] asr-feed`);
  const feed = await runAsrFeedBench({ streams: 200, seconds: 3, chunks: [20, 40], rounds: 1 }, log);
  sections.push(feed.section);
  const one = feed.rows.find((r) => r.chunkMs === 20);
  const batched = feed.rows.find((r) => r.chunkMs === 40);
  summary.push([
    'ASR feed',
    'Deepgram stream, % of a core per call: 40 ms messages (default) / 20 ms frames',
    one && batched ? `${batched.pctPerStream.toFixed(3)} / ${one.pctPerStream.toFixed(3)}` : '-',
    '20 ms frames, same run',
    one && batched ? `${((batched.usPerFrame / one.usPerFrame) * 100).toFixed(0)} %` : '-',
    '- (part of a real call\'s per-call cost; sim providers have no socket)',
    '-',
  ]);
}

/**
 * Idle memory each added call costs: the growth between the two largest steps whose calls all
 * connected (each step is a fresh engine process), so the engine's one-time growth (JIT code, heap
 * pages sized up by the first calls) is not charged to the calls, as it is in the per-step figure.
 */
function marginalIdleMemory(steps: StepResult[]): { from: number; to: number; rssKiB: number; heapExtKiB: number } | undefined {
  const full = steps.filter((s) => s.failed === 0 && s.connected === s.calls);
  if (full.length < 2) return undefined;
  const [a, b] = full.slice(-2) as [StepResult, StepResult];
  const total = (s: StepResult) => ({ rss: s.idle.rssPerCallKiB * s.calls, heapExt: (s.idle.heapPerCallKiB + s.idle.externalPerCallKiB) * s.calls });
  const ta = total(a);
  const tb = total(b);
  return { from: a.calls, to: b.calls, rssKiB: (tb.rss - ta.rss) / (b.calls - a.calls), heapExtKiB: (tb.heapExt - ta.heapExt) / (b.calls - a.calls) };
}

// ---------------------------------------------------------------- engine + turn latency
const ramps: EngineRamp[] = [];
if (want('engine')) {
  const quick: Partial<EngineBenchOptions> = { windowSec: 6, warmupSec: 3, idleSec: 1.5, stopAfter: 1, baseline: 'top' };
  for (const [driver, calls] of [
    ['twilio-lite', [100, 400, 1000]],
    ['browser', [100, 400, 1000]],
  ] as Array<[DriverKind, number[]]>) {
    log(`[${elapsed()}] engine ${driver}`);
    const r = await runEngineBench({ ...quick, drivers: [driver], calls }, log);
    ramps.push(...r.ramps);
    sections.push(...r.sections);
  }
  for (const ramp of ramps) {
    const top = ramp.steps[ramp.steps.length - 1];
    const best = ramp.steps.filter((s) => s.realTime).pop();
    const bare = ramp.bare[0];
    // The largest step whose calls all connected: the load the per-call CPU goal is judged at.
    const full = ramp.steps.filter((s) => s.failed === 0 && s.connected === s.calls).pop();
    summary.push([
      'Engine',
      `${ramp.driver}: largest real-time N (p99 lateness < 10 ms, no drops)`,
      String(ramp.maxRealTime || 'none'),
      [bare ? `bare uWS at N=${bare.calls}: p99 ${num(bare.lateSlot.p99, 1)} ms, cpu ${num(bare.active.engine.cpuPct)} %` : '', top ? `load generator at N=${top.calls}: ${num(top.client.stats.cpuPct)} % cpu, engine ${num(top.active.engine.cpuPct)} %` : ''].filter(Boolean).join('; ') || '-',
      top && bare ? `cpu x${num(top.active.engine.cpuPct / bare.active.engine.cpuPct, 1)} at N=${top.calls}` : '-',
      `>= ${num(ENGINE_CALLS_GOAL)}`,
      verdict(ramp.maxRealTime >= ENGINE_CALLS_GOAL, `largest ${ramp.maxRealTime || 'none'}`),
    ]);
    if (full) {
      const mainPerCall = full.active.engine.mainCpuPct / Math.max(1, full.connected);
      summary.push([
        'Engine',
        `${ramp.driver}: main-thread CPU per call at N=${full.calls} (% of a core; all threads in brackets)`,
        `${num(mainPerCall, 3)} (${num(full.active.cpuPctPerCall, 3)})`,
        bare ? `bare ${num(bare.active.cpuPctPerCall, 3)} (all threads)` : '-',
        bare ? `x${num(full.active.cpuPctPerCall / bare.active.cpuPctPerCall, 1)}` : '-',
        `<= ${MAIN_CPU_PER_CALL_GOAL_PCT}`,
        verdict(mainPerCall <= MAIN_CPU_PER_CALL_GOAL_PCT, `${num(mainPerCall, 3)} > ${MAIN_CPU_PER_CALL_GOAL_PCT}`),
      ]);
    }
    if (best) {
      const kb = best.idle.rssPerCallKiB * 1.024;
      summary.push([
        'Engine',
        `${ramp.driver}: memory per idle call at N=${best.calls} (KiB rss / heap+ext)`,
        `${num(best.idle.rssPerCallKiB)} / ${num(best.idle.heapPerCallKiB + best.idle.externalPerCallKiB)}`,
        bare ? `bare rss ${num(bare.idle.rssPerCallKiB)}` : '-',
        '-',
        `<= ${IDLE_CALL_MEMORY_GOAL_KB} KB`,
        verdict(kb <= IDLE_CALL_MEMORY_GOAL_KB, `${num(kb)} KB`),
      ]);
    }
    const marginal = marginalIdleMemory(ramp.steps);
    if (marginal) {
      const kb = marginal.rssKiB * 1.024;
      summary.push(['Engine', `${ramp.driver}: memory per added idle call, N=${marginal.from} -> ${marginal.to} (KiB rss / heap+ext)`, `${num(marginal.rssKiB)} / ${num(marginal.heapExtKiB)}`, '-', '-', `<= ${IDLE_CALL_MEMORY_GOAL_KB} KB`, verdict(kb <= IDLE_CALL_MEMORY_GOAL_KB, `${num(kb)} KB`)]);
    }
  }
}
if (want('turns') || want('engine')) {
  for (const driver of ['twilio-lite', 'browser'] as DriverKind[]) {
    log(`[${elapsed()}] turns ${driver} N=1`);
    const one = await runEngineStep(
      {
        calls: 1,
        driver,
        jitterMs: 20,
        lossProb: 0,
        connectPerSec: 200,
        idleSec: 0.5,
        warmupSec: 1,
        windowSec: 18,
        bargeEvery: 2,
        seed: 3,
        providers: { llmTtftMs: 0, llmTokensPerSecond: 0, ttsTtfbMs: 0, asrLatencyMs: 0, providerMode: 'sim-net', vadDenormalFix: false },
      },
      log,
    );
    const ramp = ramps.find((r) => r.driver === driver);
    const rows: StepResult[] = [one];
    const at100 = ramp?.steps.find((s) => s.calls === 100);
    if (at100) rows.push(at100);
    const max = ramp?.steps.filter((s) => s.realTime && s.calls > 100).pop() ?? ramp?.steps.filter((s) => s.calls > 100)[0];
    if (max) rows.push(max);
    sections.push(turnsSection({ ...TURNS_DEFAULTS, windowSec: 6, windowOneSec: 18 }, driver, rows));
    const fmt = (s: StepResult) => `N=${s.calls}: ${num(s.turnOverhead.p50)} / ${num(s.turnOverhead.p99)}`;
    const top = rows[rows.length - 1]!;
    summary.push([
      'Turns',
      `${driver}: internal_overhead_ms p50 / p99`,
      rows.map(fmt).join('; '),
      'N=1 row',
      '-',
      `p99 <= ${OVERHEAD_P99_GOAL_MS} at the largest N`,
      // Judged at the goal's load: a run that stopped below it has not shown the goal.
      top.calls >= ENGINE_CALLS_GOAL
        ? verdict(top.turnOverhead.p99 <= OVERHEAD_P99_GOAL_MS, `p99 ${num(top.turnOverhead.p99)}`)
        : `missed (measured up to N=${top.calls}: p99 ${num(top.turnOverhead.p99)})`,
    ]);
    const barge = rows.filter((s) => s.bargeToClear.count > 0);
    if (barge.length)
      summary.push([
        'Turns',
        `${driver}: barge-in confirming frame -> clear p99, from its socket arrival p99, -> last agent frame max (ms)`,
        barge.map((s) => `N=${s.calls}: ${num(s.bargeToClear.p99, 1)}, ${num(s.bargeArrivalToClear.p99, 1)}, ${num(s.bargeToLastFrame.max, 1)}`).join('; '),
        '-',
        '-',
        `arrival -> clear p99 <= ${BARGE_P99_GOAL_MS} ms`,
        verdict(
          barge.every((s) => s.bargeArrivalToClear.p99 <= BARGE_P99_GOAL_MS),
          barge.filter((s) => s.bargeArrivalToClear.p99 > BARGE_P99_GOAL_MS).map((s) => `N=${s.calls}: ${num(s.bargeArrivalToClear.p99, 1)} ms`).join(', '),
        ),
      ]);
    if (driver === 'browser') summary.push(['Turns', 'browser: connect -> pipeline_ready p50 / p99 (ms)', rows.map((s) => `N=${s.calls}: ${num(s.pipelineReady.p50, 1)} / ${num(s.pipelineReady.p99, 1)}`).join('; '), '-', '-', '-', '-']);
  }
}

// ---------------------------------------------------------------- control plane
if (want('rest')) {
  log(`[${elapsed()}] rest`);
  const r = await runRestBench({ durationSec: 4, rounds: 1 }, log);
  sections.push(r.section);
  for (const row of r.rows as RestRow[]) {
    if (!row.api || !row.raw) {
      summary.push(['REST', row.endpoint.name, `not available (HTTP ${row.endpoint.status})`, '-', '-', '-', 'missed (not measured)']);
      continue;
    }
    const isRead = row.endpoint.method === 'GET';
    const rawRatio = (100 * row.api.rps) / row.raw.rps;
    const rawPct = `${num(rawRatio, 1)} %`;
    if (row.peer) {
      // Issue 13: the conversations routes are judged against the Fastify + postgres.js peer.
      summary.push([
        'REST',
        `${row.endpoint.name} (req/s, p99 ms)`,
        `${num(row.api.rps)}, ${num(row.api.p99, 1)}`,
        `peer ${num(row.peer.rps)}, ${num(row.peer.p99, 1)}; raw ${num(row.raw.rps)}`,
        `${num((100 * row.api.rps) / row.peer.rps, 1)} % of peer (${rawPct} of raw)`,
        `>= ${PEER_GOAL_PCT} % of peer, p99 < ${PEER_P99_GOAL_MS} ms`,
        peerVerdict(row.api, row.peer),
      ]);
      continue;
    }
    summary.push([
      'REST',
      `${row.endpoint.name} (req/s, p99 ms)`,
      `${num(row.api.rps)}, ${num(row.api.p99)}`,
      `raw ${num(row.raw.rps)}, ${num(row.raw.p99)}`,
      rawPct,
      isRead ? `>= ${REST_READ_GOAL_PCT} % of raw` : '-',
      isRead ? verdict(rawRatio >= REST_READ_GOAL_PCT, `${num(rawRatio, 1)} %`) : '-',
    ]);
  }
}
if (want('grpc')) {
  log(`[${elapsed()}] grpc`);
  const r = await runGrpcBench({ durationSec: 3, rounds: 3 }, log);
  sections.push(r.section);
  for (const row of r.rows as GrpcRow[]) {
    if (row.goal === undefined) continue;
    const pct = (m: { callsPerSec: number }) => `${num((100 * m.callsPerSec) / row.bare.callsPerSec, 1)} %`;
    summary.push([
      'gRPC',
      `${row.method} x${row.concurrency} (calls/s, p99 ms)`,
      `GRPC_PORT ${num(row.native.callsPerSec)}, ${num(row.native.p99, 1)}; one-port ${num(row.g.callsPerSec)}, ${num(row.g.p99, 1)}`,
      `bare grpc-js ${num(row.bare.callsPerSec)}`,
      `${pct(row.native)} (one-port ${pct(row.g)})`,
      `>= ${100 * row.goal} % of bare`,
      verdict(row.native.callsPerSec >= row.goal * row.bare.callsPerSec, `GRPC_PORT ${pct(row.native)}`),
    ]);
  }
}
if (want('routing')) {
  log(`[${elapsed()}] routing`);
  const r = await runRoutingBench({ durationSec: 6, concurrency: 16 }, log);
  sections.push(r.section);
  summary.push([
    'Routing',
    'start + claim + pipeline_ready, 2 nodes (sessions/s, p99 ms)',
    `${num(r.result.perSec)}, ${num(r.result.total.p99)}`,
    `registry only ${num(r.registryPerSec)}/s`,
    `${num(r.result.perSec / r.registryPerSec, 3)}x`,
    `>= ${num(ROUTING_GOAL_PER_SEC)}/s`,
    verdict(r.result.perSec >= ROUTING_GOAL_PER_SEC, `${num(r.result.perSec)}/s`),
  ]);
}
if (want('pipeline')) {
  log(`[${elapsed()}] pipeline analytics`);
  // Seeding the million events is most of the time (tens of seconds); fewer timed runs than alone.
  const r = await runPipelineAnalyticsBench({ ...PIPELINE_DEFAULTS, runs: 20 }, log);
  sections.push(r.section);
  for (const row of r.rows) {
    summary.push(['Analytics', `${row.route}, ${row.agent} agent, ${row.rangeDays} d (p50 / p95 ms)`, `${num(row.p50, 1)} / ${num(row.p95, 1)}`, `${num(row.eventsInRange)} events in range`, '-', `p95 < ${GOAL_P95_MS} ms`, verdict(row.p95 < GOAL_P95_MS, `p95 ${num(row.p95, 1)} ms`)]);
  }
}

const summarySection: Section = {
  title: 'npm run bench: quick pass, summary against the goals',
  settings: {
    duration: elapsed(),
    note: 'quick settings (short windows); run each bench alone for longer windows and more steps (docs/benchmarks.md)',
    baseline: 'each row\'s baseline was measured in this same run',
  },
  blocks: [table(['area', 'metric', 'measured', 'baseline (same run)', 'ratio', 'goal', 'verdict'], summary, 7)],
};
console.log('\n' + renderSection(summarySection) + '\n');
for (const s of sections) console.log(renderSection(s) + '\n');
if (!values['no-append']) appendResults('npm run bench (quick pass)', [summarySection, ...sections], { command: commandLine() });
