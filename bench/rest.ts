/**
 * Control plane REST throughput with autocannon, against a raw `node:http` server replaying the
 * same bytes in the same run (bench/http/server-host.ts). The control plane runs in a child
 * process with real Postgres and Redis; autocannon runs here.
 *
 *   npm run build:bench && node dist-bench/bench/rest.js [--connections 32] [--duration 8] [--rounds 2]
 *     [--log-level info] [--only agents] [--profile] [--rate 2000] [--older-conversations 100000] [--no-append]
 *
 * Per endpoint: req/s, latency p50/p99 for the API and for the raw baseline, and API/raw. For the
 * two conversations routes, also the Fastify + postgres.js peer (bench/http/fastify-peer.ts) and
 * API/peer against issue 13's goal (>= 90 %, API p99 < 20 ms). Rounds alternate raw, peer and API
 * so slow drift on a shared machine hits all of them; the mean is shown.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import autocannon from 'autocannon';
import { forkChild } from './lib/child.js';
import type { WindowStats } from './lib/proc-stats.js';
import { appendResults, commandLine, num, renderSection, table, type Section } from './lib/report.js';
import type { Endpoint, ServerInfo } from './http/server-host.js';

export interface RestBenchOptions {
  /** autocannon connections. Default 32. */
  connections: number;
  /** Seconds per measurement. Default 8. */
  durationSec: number;
  /** Raw/API alternations per endpoint. Default 2. */
  rounds: number;
  /** Control plane log level (lines discarded). Default info: one access-log line per request, as in production. */
  logLevel: string;
  /** Only endpoints whose name contains this. Default all. */
  only?: string;
  /** Write a V8 CPU profile of the server process into bench/profiles/. Default false. */
  profile?: boolean;
  /**
   * Fixed offered load (requests/s over all connections, autocannon `overallRate`) instead of as
   * fast as possible: latency below saturation (the p99 goal) and server CPU per request at a rate
   * every server sustains. Default none (saturating).
   */
  rate?: number;
  /** Older conversations in the workspace besides the 25 (bench/http/server-host.ts). Default 0. */
  olderConversations?: number;
}

export const REST_DEFAULTS: RestBenchOptions = { connections: 32, durationSec: 8, rounds: 2, logLevel: 'info' };

export interface RestMeasure {
  rps: number;
  /** Table scans per completed request in the bench schema (a proxy for queries per request). */
  scansPerReq: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  serverCpuPct: number;
  /** Server process CPU per completed request (us): cost per request, less sensitive to the machine's other load than req/s. */
  cpuUsPerReq: number;
}

export interface RestRow {
  endpoint: Endpoint;
  api?: RestMeasure;
  raw?: RestMeasure;
  /** The Fastify + postgres.js peer (conversations routes). */
  peer?: RestMeasure;
}

/** Issue 13: the conversations routes against the Fastify peer. */
export const PEER_GOAL_PCT = 90;
export const PEER_P99_GOAL_MS = 20;

/** `met`, or what missed: the throughput ratio and/or the API's p99. */
export function peerVerdict(api: RestMeasure, peer: RestMeasure): string {
  const pct = (100 * api.rps) / peer.rps;
  const misses = [...(pct >= PEER_GOAL_PCT ? [] : [`${pct.toFixed(0)} % < ${PEER_GOAL_PCT} %`]), ...(api.p99 < PEER_P99_GOAL_MS ? [] : [`p99 ${api.p99.toFixed(1)} ms >= ${PEER_P99_GOAL_MS}`])];
  return misses.length ? `missed (${misses.join(', ')})` : 'met';
}

function mean(ms: RestMeasure[]): RestMeasure {
  const avg = (f: (m: RestMeasure) => number) => ms.reduce((a, m) => a + f(m), 0) / ms.length;
  return { rps: avg((m) => m.rps), scansPerReq: avg((m) => m.scansPerReq), p50: avg((m) => m.p50), p99: avg((m) => m.p99), errors: avg((m) => m.errors), non2xx: avg((m) => m.non2xx), serverCpuPct: avg((m) => m.serverCpuPct), cpuUsPerReq: avg((m) => m.cpuUsPerReq) };
}

export async function runRestBench(opts: Partial<RestBenchOptions> = {}, log: (l: string) => void = console.error): Promise<{ section: Section; rows: RestRow[] }> {
  const o = { ...REST_DEFAULTS, ...opts };
  const server = await forkChild('http/server-host.js', [], {
    execArgv: o.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(import.meta.dirname, '../../bench/profiles')}`, '--cpu-prof-name=control-plane-rest.cpuprofile'] : [],
  });
  try {
    const info = await server.call<ServerInfo>('init', { logLevel: o.logLevel, olderConversations: o.olderConversations ?? 0 });
    const rows: RestRow[] = [];
    for (const ep of info.endpoints) {
      const row: RestRow = { endpoint: ep };
      rows.push(row);
      if (o.only && !ep.name.includes(o.only)) continue;
      if (!ep.available) {
        log(`rest: ${ep.name} answered ${ep.status}: skipped`);
        continue;
      }
      const run = async (port: number): Promise<RestMeasure> => {
        const counted = port !== info.rawPort;
        const scans0 = counted ? await server.call<number>('dbScans') : 0;
        await server.call('resetWindow');
        const r = await autocannon({
          url: `http://127.0.0.1:${port}${ep.path}`,
          method: ep.method,
          connections: o.connections,
          duration: o.durationSec,
          ...(o.rate ? { overallRate: o.rate } : {}),
          headers: { authorization: `Bearer ${info.token}`, ...(ep.body ? { 'content-type': 'application/json' } : {}) },
          body: ep.body,
        });
        const s = await server.call<WindowStats>('snapshot');
        let scansPerReq = 0;
        if (counted) {
          await new Promise((res) => setTimeout(res, 1500));
          scansPerReq = ((await server.call<number>('dbScans')) - scans0) / Math.max(1, r['2xx']);
        }
        const done = r['2xx'] + r.non2xx;
        return { scansPerReq, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts, non2xx: r.non2xx, serverCpuPct: s.cpuPct, cpuUsPerReq: done > 0 ? (1000 * s.cpuMs) / done : NaN };
      };
      const raws: RestMeasure[] = [];
      const apis: RestMeasure[] = [];
      const peers: RestMeasure[] = [];
      const withPeer = ep.peer !== undefined && ep.peer.status >= 200 && ep.peer.status < 300;
      if (ep.peer && !withPeer) log(`rest: ${ep.name}: the Fastify peer answered ${ep.peer.status}: peer skipped`);
      for (let i = 0; i < o.rounds; i++) {
        log(`rest: ${ep.name} round ${i + 1}: raw, ${withPeer ? 'peer, ' : ''}api`);
        raws.push(await run(info.rawPort));
        if (withPeer) peers.push(await run(info.peerPort));
        apis.push(await run(info.port));
      }
      row.raw = mean(raws);
      row.api = mean(apis);
      if (withPeer) row.peer = mean(peers);
    }
    const unhandled = await server.call<Record<string, number>>('unhandledRejections');
    return { section: restSection(o, rows, unhandled), rows };
  } finally {
    await server.stop(30_000);
  }
}

function restSection(o: RestBenchOptions, rows: RestRow[], unhandled: Record<string, number>): Section {
  const peerRows = rows.filter((r) => r.api && r.raw && r.peer && r.endpoint.peer);
  return {
    title: 'Control plane REST (autocannon, HTTP/1.1 keep-alive)',
    settings: {
      load: `${o.connections} connections, ${o.rate ? `fixed offered rate ${o.rate} req/s (autocannon overallRate), ` : ''}${o.durationSec} s per measurement, ${o.rounds} rounds alternating raw/peer/API (mean shown)`,
      server: `startControlPlane in a child process, real Postgres (own schema) and Redis (own prefix), log level ${o.logLevel} to /dev/null`,
      auth: 'Bearer access token (JWT) of a verified user; the agent and conversation belong to their workspace',
      baseline: 'raw node:http server in the same child process replaying the exact status, headers and bytes of each route (same run)',
      'srv cpu': 'server process CPU (% of one core) during the measurement; autocannon shares the machine. us/req: that CPU per completed request (the cost of a request; req/s also moves with the machine\'s other load)',
      'tbl scans/req': 'seq + index scans in the bench schema per completed request (pg_stat_user_tables): a proxy for SQL queries per request; Postgres may publish a backend\'s counters up to 10 s late, so adjacent peer/API windows can trade a few (both issue 27 per list request when measured apart)',
      peer: 'conversations routes only: Fastify 5 + postgres.js in the same child, same schema and SQL, same response JSON; bearer verified (jose) and its session/workspaces read once per token, kept 4 s; no cross-replica invalidation, API keys or scopes (bench/http/fastify-peer.ts)',
      data: `the workspace holds 25 conversations (a full page of 20)${o.olderConversations ? ` and ${o.olderConversations} older ones written by SQL (one in five a stint of a two-stint call)` : ', total 25'}; messages are inserted into the first`,
    },
    blocks: [
      table(
        ['endpoint', 'bytes', 'api req/s', 'api p50 ms', 'api p99 ms', 'srv cpu %', 'api us/req', 'tbl scans/req', 'raw req/s', 'raw p50 ms', 'raw p99 ms', 'raw us/req', 'api/raw', 'errors', 'non-2xx'],
        rows.map((r) =>
          r.api && r.raw
            ? [r.endpoint.name, r.endpoint.bytes, num(r.api.rps), num(r.api.p50, 1), num(r.api.p99, 1), num(r.api.serverCpuPct), num(r.api.cpuUsPerReq), num(r.api.scansPerReq, 1), num(r.raw.rps), num(r.raw.p50, 1), num(r.raw.p99, 1), num(r.raw.cpuUsPerReq), `${num((100 * r.api.rps) / r.raw.rps)} %`, num(r.api.errors), num(r.api.non2xx)]
            : [r.endpoint.name, r.endpoint.bytes, r.endpoint.available ? 'not measured (--only)' : `not available (HTTP ${r.endpoint.status})`],
        ),
      ),
      ...(peerRows.length
        ? [
            table(
              ['endpoint (vs Fastify peer)', 'peer bytes', 'same body', 'api req/s', 'api p99 ms', 'api us/req', 'peer req/s', 'peer p50 ms', 'peer p99 ms', 'peer srv cpu %', 'peer us/req', 'peer scans/req', 'api/peer', 'api/raw', 'peer errors', 'peer non-2xx', 'verdict'],
              peerRows.map((r) => [r.endpoint.name, r.endpoint.peer!.bytes, r.endpoint.peer!.sameBody ? 'yes' : 'NO', num(r.api!.rps), num(r.api!.p99, 1), num(r.api!.cpuUsPerReq), num(r.peer!.rps), num(r.peer!.p50, 1), num(r.peer!.p99, 1), num(r.peer!.serverCpuPct), num(r.peer!.cpuUsPerReq), num(r.peer!.scansPerReq, 1), `${num((100 * r.api!.rps) / r.peer!.rps)} %`, `${num((100 * r.api!.rps) / r.raw!.rps)} %`, num(r.peer!.errors), num(r.peer!.non2xx), peerVerdict(r.api!, r.peer!)]),
            ),
          ]
        : []),
    ],
    notes: [
      'Goal: REST reads >= 50 % of the raw baseline\'s throughput (api/raw column).',
      ...(peerRows.length ? [`Goal (issue 13): the conversations routes >= ${PEER_GOAL_PCT} % of the Fastify + postgres.js peer (api/peer) with the API's p99 < ${PEER_P99_GOAL_MS} ms at that throughput. "same body": the peer's JSON equals ours apart from timestamp (and a created message's id, created_at).`] : []),
      ...Object.entries(unhandled).map(([k, n]) => `Server: ${n} unhandled promise rejection(s) "${k}" (would have crashed the process; counted by the bench host).`),
    ],
  };
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values } = benchArgs({ options: { connections: { type: 'string' }, duration: { type: 'string' }, rounds: { type: 'string' }, 'log-level': { type: 'string' }, only: { type: 'string' }, profile: { type: 'boolean' }, rate: { type: 'string' }, 'older-conversations': { type: 'string' }, 'no-append': { type: 'boolean' } } });
  const r = await runRestBench({
    ...(values.connections ? { connections: Number(values.connections) } : {}),
    ...(values.duration ? { durationSec: Number(values.duration) } : {}),
    ...(values.rounds ? { rounds: Number(values.rounds) } : {}),
    ...(values['log-level'] ? { logLevel: values['log-level'] } : {}),
    ...(values.only ? { only: values.only } : {}),
    ...(values.profile ? { profile: true } : {}),
    ...(values.rate ? { rate: Number(values.rate) } : {}),
    ...(values['older-conversations'] ? { olderConversations: Number(values['older-conversations']) } : {}),
  });
  console.log(renderSection(r.section));
  if (!values['no-append']) appendResults('control plane REST', [r.section], { command: commandLine() });
}
