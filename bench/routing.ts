/**
 * Session routing: session start through the control plane (published agent resolved, least-loaded
 * node picked from the Redis registry, config stored with a connect deadline, prewarm command)
 * and claim on the engine node the socket reaches (atomic Redis claim at WebSocket upgrade), up to
 * `pipeline_ready`, with 2 engine nodes on one Redis prefix, each in its own process.
 *
 *   npm run build:bench && node dist-bench/bench/routing.js [--concurrency 16] [--duration 10] [--profile] [--no-append]
 *
 * Same-run baseline: the registry alone (putSession + claimSession on a RedisRegistry from this
 * process, same concurrency): what start + claim would cost without HTTP, auth, config, sockets.
 */
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import { RedisRegistry } from '../shared/registry/index.js';
import { TEST_REDIS_URL } from '../test/helpers/infra.js';
import { forkChild, type Child } from './lib/child.js';
import { MachineWindow, type WindowStats } from './lib/proc-stats.js';
import { dropRedisPrefix } from './lib/redis-clean.js';
import { appendResults, commandLine, num, renderSection, table, type Section } from './lib/report.js';
import { Histogram, summarizeHistogram, type Summary } from './lib/stats.js';
import { WsLite } from './engine/ws-lite.js';
import { JsonPoster } from './lib/http-post.js';
import type { HostInit } from './engine/host.js';
import type { ServerInfo } from './http/server-host.js';

export interface RoutingBenchOptions {
  /** Sessions started concurrently (each: start, connect, pipeline_ready, close). Default 16. */
  concurrency: number;
  /** Seconds of measurement. Default 10. */
  durationSec: number;
  /** Write V8 CPU profiles of the control plane and the engines into bench/profiles/. Default false. */
  profile?: boolean;
}

export const ROUTING_DEFAULTS: RoutingBenchOptions = { concurrency: 16, durationSec: 10 };

export interface RoutingResult {
  perSec: number;
  count: number;
  errors: number;
  firstError?: string;
  start: Summary;
  ready: Summary;
  total: Summary;
  byNode: Record<string, number>;
  machineCpuPct: number;
  /** The load generator's own CPU (this process), % of one core. */
  clientCpuPct: number;
}

async function startAndClaim(cpPort: number, agentId: string, o: RoutingBenchOptions): Promise<RoutingResult> {
  const start = new Histogram(0, 10_000, 0.05);
  const ready = new Histogram(0, 10_000, 0.05);
  const total = new Histogram(0, 10_000, 0.05);
  const byNode: Record<string, number> = {};
  let errors = 0;
  let firstError: string | undefined;
  const body = JSON.stringify({ agent_id: agentId });
  const poster = new JsonPoster(o.concurrency);
  const one = async (): Promise<void> => {
    const t0 = performance.now();
    const res = await poster.post(cpPort, '/api/v1/voice/sessions/start', body);
    const json = (res.json ?? {}) as { session_id?: string; ws_url?: string };
    if (res.status !== 200 || !json.ws_url) throw new Error(`start: ${res.status} ${JSON.stringify(json).slice(0, 200)}`);
    const t1 = performance.now();
    const url = new URL(json.ws_url);
    await new Promise<void>((resolve, reject) => {
      let ws: WsLite | undefined;
      let done = false;
      const timer = setTimeout(() => reject(new Error('no pipeline_ready in 10 s')), 10_000);
      WsLite.connect(url.hostname, Number(url.port), url.pathname, {
        onText: (t) => {
          if (done || !t.includes('"type":"pipeline_ready"')) return;
          done = true;
          clearTimeout(timer);
          const t2 = performance.now();
          start.record(t1 - t0);
          ready.record(t2 - t1);
          total.record(t2 - t0);
          byNode[url.port] = (byNode[url.port] ?? 0) + 1;
          ws?.close();
          resolve();
        },
        onClose: () => {
          if (!done) reject(new Error('closed before pipeline_ready'));
        },
      }).then((w) => (ws = w), reject);
    });
  };
  // Warm-up (connections, JIT), then the window.
  for (let i = 0; i < 10; i++) await one().catch(() => {});
  const machine = new MachineWindow();
  const cpu0 = process.cpuUsage();
  const end = performance.now() + o.durationSec * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: o.concurrency }, async () => {
      while (performance.now() < end) {
        try {
          await one();
        } catch (err) {
          errors++;
          firstError ??= (err as Error).message;
        }
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  poster.close();
  return { perSec: total.count / secs, count: total.count, errors, firstError, start: summarizeHistogram(start), ready: summarizeHistogram(ready), total: summarizeHistogram(total), byNode, machineCpuPct: machine.read(), clientCpuPct: ((cpu.user + cpu.system) / 1000 / (secs * 1000)) * 100 };
}

/** The registry alone: putSession + claimSession, same concurrency, same Redis. */
async function registryOnly(prefix: string, o: RoutingBenchOptions): Promise<{ perSec: number; p50: number; p99: number }> {
  const reg = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix: `${prefix}x` });
  const h = new Histogram(0, 10_000, 0.01);
  const config = { session_id: 'x', note: 'a stored config of a realistic size '.repeat(40) };
  try {
    const end = performance.now() + Math.min(5, o.durationSec) * 1000;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: o.concurrency }, async () => {
        while (performance.now() < end) {
          const id = randomBytes(18).toString('base64url');
          const s = performance.now();
          await reg.sessions.putSession({ sessionId: id, agentId: 'a', nodeId: 'n1', config, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
          await reg.sessions.claimSession(id, 'n1', 60_000);
          h.record(performance.now() - s);
          void reg.sessions.deleteSession(id);
        }
      }),
    );
    const sum = summarizeHistogram(h);
    return { perSec: h.count / ((performance.now() - t0) / 1000), p50: sum.p50, p99: sum.p99 };
  } finally {
    await reg.close();
    await dropRedisPrefix(TEST_REDIS_URL, `${prefix}x`).catch(() => {});
  }
}

export async function runRoutingBench(opts: Partial<RoutingBenchOptions> = {}, log: (l: string) => void = console.error): Promise<{ section: Section; result: RoutingResult; registryPerSec: number }> {
  const o = { ...ROUTING_DEFAULTS, ...opts };
  const prefix = `vpbench_${randomBytes(4).toString('hex')}`;
  const engines: Child[] = [];
  let cp: Child | undefined;
  try {
    const profDir = path.resolve(import.meta.dirname, '../../bench/profiles');
    const prof = (name: string) => (o.profile ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${name}.cpuprofile`] : []);
    cp = await forkChild('http/server-host.js', [], { execArgv: prof('routing-control-plane') });
    const info = await cp.call<ServerInfo>('init', { logLevel: 'info', redisPrefix: prefix, messages: 0 });
    const agentId = await cp.call<string>('publishSimAgent');
    // Capacity 4,000 a node: each session here lasts ~10 ms, but a control plane counts its
    // placements against a node until that node's next heartbeat (every 2 s; sessions.ts
    // `placed`), so at ~800 starts/s a node of 2,000 would read as full and answer 503 although
    // it holds a handful of calls. Calls that last minutes never meet this.
    for (const id of ['bench-node-a', 'bench-node-b']) {
      const e = await forkChild('engine/host.js', [], { execArgv: ['--expose-gc', ...prof(`routing-${id}`)] });
      engines.push(e);
      await e.call('init', { registry: 'redis', redisUrl: TEST_REDIS_URL, redisPrefix: prefix, nodeId: id, llmTtftMs: 0, llmTokensPerSecond: 0, ttsTtfbMs: 0, asrLatencyMs: 0, capacity: 4000, providerMode: 'sim-net', vadDenormalFix: false } satisfies HostInit);
    }
    log(`routing: ${o.concurrency} concurrent start+claim loops for ${o.durationSec} s`);
    for (const e of engines) await e.call('resetWindow');
    await cp.call('resetWindow');
    const r = await startAndClaim(info.port, agentId, o);
    const cpStats = await cp.call<WindowStats>('snapshot');
    const engStats = await Promise.all(engines.map((e) => e.call<{ stats: WindowStats }>('snapshot')));
    log('routing: registry-only baseline');
    const base = await registryOnly(prefix, o);
    const section: Section = {
      title: 'Session routing: start (control plane) + claim (engine) through Redis, 2 engine nodes',
      settings: {
        loop: `${o.concurrency} concurrent loops of: POST /api/v1/voice/sessions/start (published sim agent) -> WebSocket to ws_url -> pipeline_ready -> close; ${o.durationSec} s after 10 warm-up sessions`,
        processes: 'control plane, engine node A, engine node B: one process each, one Redis prefix; client here (node:http keep-alive + ws-lite)',
        baseline: 'registry alone: RedisRegistry putSession + claimSession from this process, same concurrency, same run',
        'start / ready': 'ms; start = HTTP start request; ready = WebSocket connect (claim at upgrade) -> pipeline_ready',
      },
      blocks: [
        table(
          ['path', 'sessions/s', 'start p50', 'start p99', 'ready p50', 'ready p99', 'total p50', 'total p99', 'x registry', 'errors', 'per node', 'cp cpu %', 'engines cpu %', 'client cpu %', 'machine %'],
          [
            [
              'start + claim + pipeline_ready',
              num(r.perSec),
              num(r.start.p50, 1),
              num(r.start.p99, 1),
              num(r.ready.p50, 1),
              num(r.ready.p99, 1),
              num(r.total.p50, 1),
              num(r.total.p99, 1),
              num(r.perSec / base.perSec, 3),
              r.errors ? `${r.errors} (${r.firstError})` : 0,
              Object.values(r.byNode).join(' / '),
              num(cpStats.cpuPct),
              engStats.map((s) => num(s.stats.cpuPct)).join(' + '),
              num(r.clientCpuPct),
              num(r.machineCpuPct),
            ],
            ['registry only (put + claim)', num(base.perSec), '-', '-', '-', '-', num(base.p50, 2), num(base.p99, 2), '1.000', 0, '-', '-', '-', '-', '-'],
          ],
        ),
      ],
    };
    return { section, result: r, registryPerSec: base.perSec };
  } finally {
    for (const e of engines) await e.stop(20_000);
    await cp?.stop(30_000);
    await dropRedisPrefix(TEST_REDIS_URL, prefix).catch(() => {});
  }
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values } = benchArgs({ options: { concurrency: { type: 'string' }, duration: { type: 'string' }, profile: { type: 'boolean' }, 'no-append': { type: 'boolean' } } });
  const r = await runRoutingBench({
    ...(values.concurrency ? { concurrency: Number(values.concurrency) } : {}),
    ...(values.duration ? { durationSec: Number(values.duration) } : {}),
    ...(values.profile ? { profile: true } : {}),
  });
  console.log(renderSection(r.section));
  if (!values['no-append']) appendResults('session routing', [r.section], { command: commandLine() });
}
