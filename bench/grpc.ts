/**
 * gRPC with a real `@grpc/grpc-js` client (proto-loader, one HTTP/2 channel) against the control
 * plane's one-port server, at 32 and 256 concurrent calls: an agent read (GetAgent) and a message
 * write (CreateConversationMessage), plus Health.Live (no auth, no database) as the same-run
 * baseline of what the transport alone sustains. The same methods over Connect JSON (HTTP/1.1,
 * autocannon, one connection per concurrent call) for comparison.
 *
 *   npm run build && node dist/bench/grpc.js [--concurrency 32,256] [--duration 6] [--only Health]
 *     [--grpc-only] [--profile] [--no-append]
 *
 * The control plane runs in a child process (bench/http/server-host.ts); clients run here.
 */
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
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
}

export const GRPC_DEFAULTS: GrpcBenchOptions = { concurrency: [32, 256], durationSec: 6 };

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

export interface GrpcRow {
  method: string;
  concurrency: number;
  g: Measure;
  c: Measure;
}

export async function runGrpcBench(opts: Partial<GrpcBenchOptions> = {}, log: (l: string) => void = console.error): Promise<{ section: Section; rows: GrpcRow[] }> {
  const o = { ...GRPC_DEFAULTS, ...opts };
  const server = await forkChild('http/server-host.js', [], {
    execArgv: o.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(import.meta.dirname, '../../bench/profiles')}`, '--cpu-prof-name=control-plane-grpc.cpuprofile'] : [],
  });
  const clients: grpc.Client[] = [];
  try {
    const info = await server.call<ServerInfo>('init', { logLevel: 'info', messages: 0 });
    const health = clientFor(info.port, 'voiceplane/v1/health.proto', 'HealthService');
    const agents = clientFor(info.port, 'voiceplane/v1/agents.proto', 'AgentService');
    const convs = clientFor(info.port, 'voiceplane/v1/conversations.proto', 'ConversationService');
    clients.push(health, agents, convs);
    const msg = { conversation_id: info.conversationId ?? '', role: 'user', content: 'what time do you open on friday night?', turn_number: 1 };
    const methods: Method[] = [
      { name: 'Health.Live (baseline: no auth, no DB)', grpc: { client: health, method: 'Live', req: () => ({}), auth: false }, connect: { path: '/voiceplane.v1.HealthService/Live', body: '{}', auth: false } },
      { name: 'AgentService.GetAgent', grpc: { client: agents, method: 'GetAgent', req: () => ({ id: info.agentId }), auth: true }, connect: { path: '/voiceplane.v1.AgentService/GetAgent', body: JSON.stringify({ id: info.agentId }), auth: true } },
      ...(info.conversationId
        ? [
            {
              name: 'ConversationService.CreateConversationMessage',
              grpc: { client: convs, method: 'CreateConversationMessage', req: () => msg, auth: true },
              connect: { path: '/voiceplane.v1.ConversationService/CreateConversationMessage', body: JSON.stringify({ conversationId: msg.conversation_id, role: 'user', content: msg.content, turnNumber: 1 }), auth: true },
            },
          ]
        : []),
    ];
    const rows: GrpcRow[] = [];
    const nothing: Measure = { callsPerSec: NaN, p50: NaN, p99: NaN, errors: 0, serverCpuPct: NaN, clientCpuPct: NaN, machineCpuPct: NaN };
    for (const m of methods) {
      if (o.only && !m.name.includes(o.only)) continue;
      for (const conc of o.concurrency) {
        log(`grpc: ${m.name} x${conc}: grpc-js${o.grpcOnly ? '' : ', connect json'}`);
        const g = await runGrpc(m, info.token, conc, o.durationSec, server);
        const c = o.grpcOnly ? nothing : await runConnect(m, info.port, info.token, conc, o.durationSec, server);
        rows.push({ method: m.name, concurrency: conc, g, c });
      }
    }
    const base = new Map(rows.filter((r) => r.method.startsWith('Health')).map((r) => [r.concurrency, r]));
    const section: Section = {
      title: 'gRPC (@grpc/grpc-js client) vs Connect JSON, control plane one-port server',
      settings: {
        grpc: 'one @grpc/grpc-js channel (HTTP/2, h2c), proto-loader, N calls kept in flight for the duration; 50 warm-up calls',
        'connect json': 'POST /<service>/<method> application/json over HTTP/1.1 keep-alive, autocannon with N connections',
        duration: `${o.durationSec} s per measurement`,
        server: 'startControlPlane in a child process, real Postgres and Redis, log level info to /dev/null',
        baseline: 'Health.Live over the same transports in the same run ("x live" = calls/s relative to it)',
        cpu: 'srv = control plane process, cli = this (client) process, machine = all processes (200 % = 2 cores)',
      },
      blocks: [
        table(
          ['method', 'in flight', 'grpc calls/s', 'p50 ms', 'p99 ms', 'x live', 'srv cpu %', 'cli cpu %', 'machine %', 'errors', 'connect calls/s', 'p50 ms', 'p99 ms', 'grpc/connect'],
          rows.map((r) => {
            const b = base.get(r.concurrency);
            return [
              r.method,
              r.concurrency,
              num(r.g.callsPerSec),
              num(r.g.p50, 2),
              num(r.g.p99, 2),
              b ? num(r.g.callsPerSec / b.g.callsPerSec, 2) : '-',
              num(r.g.serverCpuPct),
              num(r.g.clientCpuPct),
              num(r.g.machineCpuPct),
              r.g.errors ? `${r.g.errors} (${r.g.firstError})` : 0,
              num(r.c.callsPerSec),
              num(r.c.p50, 1),
              num(r.c.p99, 1),
              num(r.g.callsPerSec / r.c.callsPerSec, 2),
            ];
          }),
        ),
      ],
      notes: ['Goal: gRPC unary >= 10,000 calls/s with 32 concurrent calls.', ...(info.conversationId ? [] : ['CreateConversationMessage skipped: the conversations routes did not answer.'])],
    };
    return { section, rows };
  } finally {
    for (const c of clients) c.close();
    await server.stop(30_000);
  }
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values } = parseArgs({
    options: { concurrency: { type: 'string' }, duration: { type: 'string' }, only: { type: 'string' }, 'grpc-only': { type: 'boolean' }, profile: { type: 'boolean' }, 'no-append': { type: 'boolean' } },
  });
  const r = await runGrpcBench({
    ...(values.concurrency ? { concurrency: values.concurrency.split(',').map(Number) } : {}),
    ...(values.duration ? { durationSec: Number(values.duration) } : {}),
    ...(values.only ? { only: values.only } : {}),
    ...(values['grpc-only'] ? { grpcOnly: true } : {}),
    ...(values.profile ? { profile: true } : {}),
  });
  console.log(renderSection(r.section));
  if (!values['no-append']) appendResults('gRPC', [r.section], { command: commandLine() });
}
