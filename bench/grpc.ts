/**
 * gRPC with a real `@grpc/grpc-js` client (proto-loader, one HTTP/2 channel per server) at 32 and
 * 256 concurrent calls: an agent read (GetAgent), a message write (CreateConversationMessage) and
 * Health.Live (no auth, no database), against
 *   - one-port: the control plane's HTTP listener (connect-node on node:http2),
 *   - grpc-js: its GRPC_PORT listener (@grpc/grpc-js server, control-plane/http/grpc-native.ts),
 *   - bare: the same-run baseline of issue 13, a bare grpc-js server in its own process
 *     (bench/grpc-bare.ts) answering the response bytes the control plane answered, captured at start.
 * Each row reports calls/s and p99 and, for the goal methods, the percentage of bare and the verdict.
 * The same methods over Connect JSON (HTTP/1.1, autocannon) for comparison unless --grpc-only.
 *
 *   npm run build:bench && node dist-bench/bench/grpc.js [--concurrency 32,256] [--duration 6] [--rounds 3] [--only GetAgent]
 *     [--servers one-port,grpc-js,bare] [--grpc-only] [--profile] [--no-append]
 *
 * The control plane runs in a child process (bench/http/server-host.ts); clients run here.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import autocannon from 'autocannon';
import { forkChild, type Child } from './lib/child.js';
import { MachineWindow, ProcessWindow, type WindowStats } from './lib/proc-stats.js';
import { appendResults, commandLine, num, renderSection, table, type Section } from './lib/report.js';
import { Histogram, summarizeHistogram } from './lib/stats.js';
import type { ServerInfo } from './http/server-host.js';

export interface GrpcBenchOptions {
  /** Concurrent calls in flight. Default [32, 256]. */
  concurrency: number[];
  /** Seconds per measurement. Default 6. */
  durationSec: number;
  /** Only methods whose name contains this. Default all. */
  only?: string;
  /** Skip the Connect JSON measurements. Default false. */
  grpcOnly?: boolean;
  /** Write a V8 CPU profile of the server process into bench/profiles/. Default false. */
  profile?: boolean;
  /** Rounds per measurement (each server gets durationSec / rounds per round; the median round is reported). Default 1. */
  rounds: number;
  /** gRPC servers to measure. Default all: one-port, grpc-js (GRPC_PORT), bare (baseline). */
  servers?: ServerKind[];
}

export const GRPC_DEFAULTS: GrpcBenchOptions = { concurrency: [32, 256], durationSec: 6, rounds: 1 };

const PROTO_DIR = path.resolve(import.meta.dirname, '../../proto');

type Unary = (req: unknown, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;

function clientFor(port: number, file: string, service: string): grpc.Client & Record<string, Unary> {
  const def = protoLoader.loadSync(path.join(PROTO_DIR, file), { includeDirs: [PROTO_DIR], keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { voiceplane: { v1: Record<string, grpc.ServiceClientConstructor> } };
  return new pkg.voiceplane.v1[service]!(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & Record<string, Unary>;
}

interface Method {
  name: string;
  grpc: { client: grpc.Client & Record<string, Unary>; method: string; req: () => unknown; auth: boolean };
  connect: { path: string; body: string; auth: boolean };
}

export interface Measure {
  callsPerSec: number;
  p50: number;
  p99: number;
  errors: number;
  firstError?: string;
  serverCpuPct: number;
  clientCpuPct: number;
  machineCpuPct: number;
}

async function runGrpc(m: Method, token: string, concurrency: number, durationSec: number, server: Child): Promise<Measure> {
  const md = new grpc.Metadata();
  if (m.grpc.auth) md.set('authorization', `Bearer ${token}`);
  const fn = m.grpc.client[m.grpc.method]!.bind(m.grpc.client);
  const lat = new Histogram(0, 10_000, 0.05);
  let errors = 0;
  let firstError: string | undefined;
  const call = () =>
    new Promise<void>((resolve) => {
      const t0 = performance.now();
      fn(m.grpc.req(), md, { deadline: Date.now() + 30_000 }, (err) => {
        if (err) {
          errors++;
          firstError ??= `${err.code} ${err.details}`;
        } else lat.record(performance.now() - t0);
        resolve();
      });
    });
  // Warm-up: channel connected, JIT warm.
  for (let i = 0; i < 50; i++) await call();
  lat.reset();
  errors = 0;
  const me = new ProcessWindow(10);
  const machine = new MachineWindow();
  await server.call('resetWindow');
  const end = performance.now() + durationSec * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) await call();
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  const s = await server.call<WindowStats>('snapshot');
  const c = me.read();
  me.close();
  const h = summarizeHistogram(lat);
  return { callsPerSec: lat.count / elapsed, p50: h.p50, p99: h.p99, errors, firstError, serverCpuPct: s.cpuPct, clientCpuPct: c.cpuPct, machineCpuPct: machine.read() };
}

async function runConnect(m: Method, port: number, token: string, concurrency: number, durationSec: number, server: Child): Promise<Measure> {
  const me = new ProcessWindow(10);
  const machine = new MachineWindow();
  await server.call('resetWindow');
  const r = await autocannon({
    url: `http://127.0.0.1:${port}${m.connect.path}`,
    method: 'POST',
    connections: concurrency,
    duration: durationSec,
    headers: { 'content-type': 'application/json', ...(m.connect.auth ? { authorization: `Bearer ${token}` } : {}) },
    body: m.connect.body,
  });
  const s = await server.call<WindowStats>('snapshot');
  const c = me.read();
  me.close();
  return { callsPerSec: r['2xx'] / r.duration, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.timeouts + r.non2xx, serverCpuPct: s.cpuPct, clientCpuPct: c.cpuPct, machineCpuPct: machine.read() };
}

export const SERVERS = ['one-port', 'grpc-js', 'bare'] as const;
export type ServerKind = (typeof SERVERS)[number];

export interface GrpcRow {
  method: string;
  concurrency: number;
  /** gRPC on the one-port listener (connect-node over node:http2). */
  g: Measure;
  /** gRPC on the GRPC_PORT listener (@grpc/grpc-js server, control-plane/http/grpc-native.ts). */
  native: Measure;
  /** The bare grpc-js server answering the same bytes (no baseline for Health.Live). */
  bare: Measure;
  /** Connect JSON over HTTP/1.1. */
  c: Measure;
  /** The issue's goal, as a fraction of `bare` (undefined: none). */
  goal?: number;
}

const NOTHING: Measure = { callsPerSec: NaN, p50: NaN, p99: NaN, errors: 0, serverCpuPct: NaN, clientCpuPct: NaN, machineCpuPct: NaN };
const GOALS: Record<string, number> = { GetAgent: 0.5, CreateConversationMessage: 0.3 };

/** One call through `client` returning the raw response bytes (the bare server replays them). */
function captureBytes(client: grpc.Client & Record<string, Unary>, ctor: grpc.ServiceClientConstructor, method: string, req: unknown, token: string): Promise<Buffer> {
  const def = ctor.service[method]!;
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(def.path, (x: Buffer) => x, (b: Buffer) => b, def.requestSerialize(req), md, (err, res) => (err ? reject(new Error(`capture ${def.path}: ${err.message}`)) : resolve(res!))),
  );
}

/** The measure of the median round by calls/s, errors summed over the rounds. */
function median(ms: Measure[] | undefined): Measure {
  if (!ms?.length) return NOTHING;
  const sorted = [...ms].sort((a, b) => a.callsPerSec - b.callsPerSec);
  const m = sorted[(sorted.length - 1) >> 1]!;
  const errors = ms.reduce((n, x) => n + x.errors, 0);
  return { ...m, errors, firstError: ms.find((x) => x.firstError)?.firstError };
}

function verdict(r: GrpcRow, m: Measure): string {
  if (r.goal === undefined || !Number.isFinite(r.bare.callsPerSec)) return '-';
  const ratio = m.callsPerSec / r.bare.callsPerSec;
  return `${num(100 * ratio, 1)} % ${ratio >= r.goal ? 'MET' : 'missed'} (>= ${100 * r.goal} %)`;
}

export async function runGrpcBench(opts: Partial<GrpcBenchOptions> = {}, log: (l: string) => void = console.error): Promise<{ section: Section; rows: GrpcRow[] }> {
  const o = { ...GRPC_DEFAULTS, ...opts };
  const servers = new Set<ServerKind>(o.servers ?? SERVERS);
  const server = await forkChild('http/server-host.js', [], {
    execArgv: o.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(import.meta.dirname, '../../bench/profiles')}`, '--cpu-prof-name=control-plane-grpc.cpuprofile'] : [],
  });
  const bare = await forkChild('grpc-bare.js');
  const clients: grpc.Client[] = [];
  try {
    const info = await server.call<ServerInfo>('init', { logLevel: 'info', messages: 0, grpcNative: true });
    const set = (port: number) => {
      const c = {
        health: clientFor(port, 'voiceplane/v1/health.proto', 'HealthService'),
        agents: clientFor(port, 'voiceplane/v1/agents.proto', 'AgentService'),
        convs: clientFor(port, 'voiceplane/v1/conversations.proto', 'ConversationService'),
      };
      clients.push(c.health, c.agents, c.convs);
      return c;
    };
    const onePort = set(info.port);
    const msg = { conversation_id: info.conversationId ?? '', role: 'user', content: 'what time do you open on friday night?', turn_number: 1 };
    // The baseline's bytes are the control plane's own answers, captured once over gRPC.
    const responses: Record<string, string> = {};
    const agentsCtor = onePort.agents.constructor as grpc.ServiceClientConstructor;
    const convsCtor = onePort.convs.constructor as grpc.ServiceClientConstructor;
    responses['/voiceplane.v1.AgentService/GetAgent'] = (await captureBytes(onePort.agents, agentsCtor, 'GetAgent', { id: info.agentId }, info.token)).toString('base64');
    if (info.conversationId) responses['/voiceplane.v1.ConversationService/CreateConversationMessage'] = (await captureBytes(onePort.convs, convsCtor, 'CreateConversationMessage', msg, info.token)).toString('base64');
    const bareInfo = await bare.call<{ port: number }>('init', { responses });
    const native = set(info.grpcPort!);
    const bareC = set(bareInfo.port);
    type Clients = typeof onePort;
    const defs: Array<{ name: string; pick: (c: Clients) => grpc.Client & Record<string, Unary>; method: string; req: () => unknown; auth: boolean; connect: Method['connect']; baseline: boolean }> = [
      { name: 'Health.Live (no auth, no DB)', pick: (c) => c.health, method: 'Live', req: () => ({}), auth: false, connect: { path: '/voiceplane.v1.HealthService/Live', body: '{}', auth: false }, baseline: false },
      { name: 'AgentService.GetAgent', pick: (c) => c.agents, method: 'GetAgent', req: () => ({ id: info.agentId }), auth: true, connect: { path: '/voiceplane.v1.AgentService/GetAgent', body: JSON.stringify({ id: info.agentId }), auth: true }, baseline: true },
      ...(info.conversationId
        ? [
            {
              name: 'ConversationService.CreateConversationMessage',
              pick: (c: Clients) => c.convs,
              method: 'CreateConversationMessage',
              req: () => msg,
              auth: true,
              connect: { path: '/voiceplane.v1.ConversationService/CreateConversationMessage', body: JSON.stringify({ conversationId: msg.conversation_id, role: 'user', content: msg.content, turnNumber: 1 }), auth: true },
              baseline: true,
            },
          ]
        : []),
    ];
    const rows: GrpcRow[] = [];
    const on = (c: Clients, d: (typeof defs)[number]): Method => ({ name: d.name, grpc: { client: d.pick(c), method: d.method, req: d.req, auth: d.auth }, connect: d.connect });
    for (const d of defs) {
      if (o.only && !d.name.includes(o.only)) continue;
      for (const conc of o.concurrency) {
        log(`grpc: ${d.name} x${conc}: ${[...servers].join(', ')}${o.grpcOnly ? '' : ', connect json'}`);
        // Rounds of short windows, the servers' order rotated per round, and the median round per
        // server: on a shared machine a burst of someone else's load then moves one round of each
        // server instead of deciding a ratio on its own.
        const plan: Array<[ServerKind, Clients, Child]> = [];
        if (d.baseline && servers.has('bare')) plan.push(['bare', bareC, bare]);
        if (servers.has('one-port')) plan.push(['one-port', onePort, server]);
        if (servers.has('grpc-js')) plan.push(['grpc-js', native, server]);
        const got = new Map<ServerKind, Measure[]>(plan.map(([k]) => [k, []]));
        for (let round = 0; round < o.rounds; round++) {
          for (let i = 0; i < plan.length; i++) {
            const [kind, cl, proc] = plan[(i + round) % plan.length]!;
            got.get(kind)!.push(await runGrpc(on(cl, d), info.token, conc, o.durationSec / o.rounds, proc));
          }
        }
        const med = (k: ServerKind) => median(got.get(k));
        const b = med('bare');
        const g = med('one-port');
        const n = med('grpc-js');
        const c = o.grpcOnly ? NOTHING : await runConnect(on(onePort, d), info.port, info.token, conc, o.durationSec, server);
        rows.push({ method: d.name, concurrency: conc, g, native: n, bare: b, c, goal: GOALS[d.method] });
      }
    }
    const cols = (m: Measure, r: GrpcRow) => [num(m.callsPerSec), num(m.p50, 2), num(m.p99, 2), verdict(r, m), num(m.serverCpuPct), num(m.clientCpuPct), num(m.machineCpuPct), m.errors ? `${m.errors} (${m.firstError})` : 0];
    const section: Section = {
      title: 'gRPC (@grpc/grpc-js client): one-port (connect-node) and GRPC_PORT (grpc-js server) vs a bare grpc-js server, Connect JSON',
      settings: {
        grpc: 'one @grpc/grpc-js channel (HTTP/2, h2c) per server, proto-loader, N calls kept in flight for the duration; 50 warm-up calls',
        servers: 'one-port = the HTTP listener (connect-node on node:http2); grpc-js = GRPC_PORT listener (control-plane/http/grpc-native.ts, same ServiceImpls); both in the control plane process',
        baseline: 'bare = @grpc/grpc-js server in its own process answering the bytes the control plane answered (captured at start), pass-through serializers; "% of bare" is the goal ratio',
        'connect json': 'POST /<service>/<method> application/json over HTTP/1.1 keep-alive, autocannon with N connections',
        duration: `${o.durationSec} s per server and method${o.rounds > 1 ? ` in ${o.rounds} rounds (order rotated per round; the median round by calls/s is shown, errors summed)` : ''}`,
        server: 'startControlPlane in a child process, real Postgres and Redis, log level info to /dev/null',
        cpu: 'srv = the measured server process, cli = this (client) process, machine = all processes (200 % = 2 cores)',
      },
      blocks: [
        table(
          ['method', 'in flight', 'server', 'calls/s', 'p50 ms', 'p99 ms', '% of bare (goal)', 'srv cpu %', 'cli cpu %', 'machine %', 'errors'],
          rows.flatMap((r) => {
            const out: Array<Array<string | number>> = [];
            if (Number.isFinite(r.bare.callsPerSec)) out.push([r.method, r.concurrency, 'bare grpc-js', ...cols(r.bare, r).map((v, i) => (i === 3 ? '100 %' : v))]);
            if (Number.isFinite(r.g.callsPerSec)) out.push([r.method, r.concurrency, 'one-port', ...cols(r.g, r)]);
            if (Number.isFinite(r.native.callsPerSec)) out.push([r.method, r.concurrency, 'grpc-js', ...cols(r.native, r)]);
            if (Number.isFinite(r.c.callsPerSec)) out.push([r.method, r.concurrency, 'connect json', num(r.c.callsPerSec), num(r.c.p50, 1), num(r.c.p99, 1), '-', num(r.c.serverCpuPct), num(r.c.clientCpuPct), num(r.c.machineCpuPct), r.c.errors]);
            return out;
          }),
        ),
      ],
      notes: [
        'Goals (issue 13): GetAgent >= 50 % and CreateConversationMessage >= 30 % of the bare grpc-js server, at 32 and 256 in flight.',
        ...(info.conversationId ? [] : ['CreateConversationMessage skipped: the conversations routes did not answer.']),
      ],
    };
    return { section, rows };
  } finally {
    for (const c of clients) c.close();
    await bare.stop(10_000);
    await server.stop(30_000);
  }
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values } = benchArgs({
    options: { concurrency: { type: 'string' }, duration: { type: 'string' }, rounds: { type: 'string' }, servers: { type: 'string' }, only: { type: 'string' }, 'grpc-only': { type: 'boolean' }, profile: { type: 'boolean' }, 'no-append': { type: 'boolean' } },
  });
  const r = await runGrpcBench({
    ...(values.concurrency ? { concurrency: values.concurrency.split(',').map(Number) } : {}),
    ...(values.duration ? { durationSec: Number(values.duration) } : {}),
    ...(values.rounds ? { rounds: Number(values.rounds) } : {}),
    ...(values.only ? { only: values.only } : {}),
    ...(values['grpc-only'] ? { grpcOnly: true } : {}),
    ...(values.profile ? { profile: true } : {}),
    ...(values.servers ? { servers: values.servers.split(',') as ServerKind[] } : {}),
  });
  console.log(renderSection(r.section));
  if (!values['no-append']) appendResults('gRPC', [r.section], { command: commandLine() });
}
