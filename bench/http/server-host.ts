/**
 * The control plane under test, in its own process (forked by bench/rest.ts, bench/grpc.ts and
 * bench/routing.ts): real Postgres (own schema, dropped at exit) and Redis (own key prefix), the
 * full `startControlPlane` wiring, a verified user, an agent, and (when the conversations routes
 * answer) a conversation with messages. Beside it, on another port, a raw `node:http` server that
 * replays the exact bytes and headers the real routes answered: the same-run baseline. For the
 * two conversations routes of issue 13 a third server answers too: the Fastify + postgres.js peer
 * (fastify-peer.ts) on the same schema, checked to answer the same body before it is measured.
 */
import fs from 'node:fs';
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../shared/config.js';
import { realClock } from '../../shared/clock.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import { startInfra, type Infra } from '../../control-plane/infra.js';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { api, createTestUser, type TestUser } from '../../test/helpers/accounts.js';
import { dropSchema, TEST_DATABASE_URL, TEST_REDIS_URL } from '../../test/helpers/infra.js';
import { serveParent } from '../lib/child.js';
import { ProcessWindow } from '../lib/proc-stats.js';
import { dropRedisPrefix } from '../lib/redis-clean.js';
import { startFastifyPeer, type RunningPeer } from './fastify-peer.js';

export interface Endpoint {
  name: string;
  method: 'GET' | 'POST';
  path: string;
  body?: string;
  /** Status the real route answered when probed; `available` = 2xx. */
  status: number;
  available: boolean;
  bytes: number;
  /** The Fastify peer's answer to the same request, for the routes it implements. */
  peer?: PeerProbe;
}

export interface PeerProbe {
  status: number;
  bytes: number;
  /** Same JSON as the control plane's once `timestamp` (and, for a created message, `id` and `created_at`) are set aside. */
  sameBody: boolean;
}

export interface ServerInit {
  /** Redis key prefix (engines of bench/routing.ts share it). Default: a fresh one. */
  redisPrefix?: string;
  /** pino level of the control plane; lines go to /dev/null. Default info (one line per request). */
  logLevel?: string;
  /** Messages created in the conversation listed by the read benchmark. Default 25. */
  messages?: number;
  /** Also serve gRPC through @grpc/grpc-js on an ephemeral port (control-plane/http/grpc-native.ts). Default false. */
  grpcNative?: boolean;
  /** Conversations in the workspace: the list reads a full page of 20. Default 25. */
  conversations?: number;
  /**
   * Older conversations written straight into the table (a workspace with history; the page stays
   * the API-created ones): one in five is a stint of a two-stint call. Default 0.
   */
  olderConversations?: number;
}

export interface ServerInfo {
  port: number;
  rawPort: number;
  /** The grpc-js listener (init `grpcNative`). */
  grpcPort?: number;
  /** The Fastify + postgres.js peer (conversations routes only). */
  peerPort: number;
  token: string;
  workspaceId: string;
  agentId: string;
  conversationId?: string;
  redisPrefix: string;
  schema: string;
  endpoints: Endpoint[];
}

let infra: Infra | undefined;
let app: ControlPlane | undefined;
let raw: http.Server | undefined;
let peer: RunningPeer | undefined;
let schema = '';
let prefix = '';
let ownPrefix = false;
let user: TestUser | undefined;
const win = new ProcessWindow(10);

/**
 * Unhandled rejections are counted and reported instead of crashing the host: a load tool that
 * closes connections with requests in flight (autocannon at the end of every run) must not end
 * the benchmark. Each one is a control-plane bug the report names (see docs/benchmarks.md).
 */
const unhandled = new Map<string, number>();
process.on('unhandledRejection', (err) => {
  const e = err as { code?: string; message?: string };
  const key = `${e?.code ?? ''} ${e?.message ?? String(err)}`.trim().slice(0, 120);
  if (!unhandled.has(key)) console.error(`server-host: unhandled rejection (counted, not fatal): ${(err as Error)?.stack ?? err}`);
  unhandled.set(key, (unhandled.get(key) ?? 0) + 1);
});

interface Captured {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** One request with node:http returning the raw bytes and the headers worth replaying. */
function capture(port: number, method: string, path: string, token: string, body?: string): Promise<Captured> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string' && !['date', 'connection', 'keep-alive', 'transfer-encoding'].includes(k)) headers[k] = v;
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Rows a day and more older than the API-created ones; pairs of stints share a call_id (the older
 * one `ai`, then `human`). History, not new calls: the post-call events the insert trigger writes
 * are dropped in the same transaction, so no summary or webhook work runs during the measurement.
 */
async function seedOlderConversations(n: number, agentId: string, workspaceId: string): Promise<void> {
  await infra!.sql.begin(async (tx) => {
    await tx`set local statement_timeout = 0`;
    await tx`
      insert into conversations (id, session_id, agent_id, workspace_id, call_id, segment_kind, status, total_turns, total_duration_ms,
                                 started_at, ended_at, created_at, updated_at, metadata)
      select gen_random_uuid(), 'bench-old-' || g, ${agentId}::uuid, ${workspaceId}::uuid,
             case when g % 10 in (1, 2) then md5('call-' || (g / 10))::uuid end, case when g % 10 = 1 then 'human' else 'ai' end, 'completed', 4, 60000,
             t, t + interval '1 minute', t, t, jsonb_build_object('channel', 'bench-history', 'n', g)
      from generate_series(1, ${n}::int) g, lateral (select now() - interval '1 day' - g * interval '1 minute' as t) at`;
    await tx`delete from post_call_events where conversation_id in (select id from conversations where session_id like 'bench-old-%')`;
  });
  await infra!.sql`vacuum analyze conversations`;
}

async function init(p: ServerInit = {}): Promise<ServerInfo> {
  schema = `bench_${randomBytes(5).toString('hex')}`;
  const redisPrefix = p.redisPrefix ?? `vpbench_${randomBytes(4).toString('hex')}`;
  prefix = redisPrefix;
  ownPrefix = !p.redisPrefix;
  const config = loadConfig(
    { DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL, SECRETS_KEY: randomBytes(32).toString('hex'), LOG_LEVEL: p.logLevel ?? 'info', NODE_ENV: 'test', ...(process.env.DB_PIPELINE_DEPTH ? { DB_PIPELINE_DEPTH: process.env.DB_PIPELINE_DEPTH } : {}) },
    { httpPort: 0, enginePort: 0, host: '127.0.0.1', dataDir: `/tmp/${schema}`, seedDemo: false },
  );
  const logger: Logger = createLogger({ level: p.logLevel ?? 'info', file: '/dev/null' });
  infra = await startInfra(config, logger, realClock, { schema, registryPrefix: redisPrefix });
  app = await startControlPlane({ ...infra, config, logger, clock: realClock }, { port: 0, host: '127.0.0.1', ...(p.grpcNative ? { grpcPort: 0 } : {}) });
  user = await createTestUser(app);
  const token = user.token;
  const agent = await api(app, 'POST', '/api/v1/agents', { token, body: { workspace_id: user.workspaceId, name: 'Bench agent', system_prompt: 'You are a benchmark agent.', welcome_message: '' } });
  if (agent.status !== 201) throw new Error(`create agent: ${agent.status} ${JSON.stringify(agent.body)}`);
  const agentId = agent.body.data.id as string;
  // Conversations: created through the API when its routes are wired (another issue may still be landing).
  let conversationId: string | undefined;
  const conv = await api(app, 'POST', '/api/v1/conversations', { token, body: { session_id: `bench-${randomBytes(6).toString('hex')}`, agent_id: agentId } });
  if (conv.status === 201 || conv.status === 200) {
    conversationId = (conv.body.data?.id ?? conv.body.id) as string;
    for (let i = 0; i < (p.messages ?? 25); i++) {
      await api(app, 'POST', '/api/v1/conversations/messages', { token, body: { conversation_id: conversationId, role: i % 2 ? 'assistant' : 'user', content: `message ${i}: what time do you open on friday night?`, turn_number: 1 + (i >> 1) } });
    }
    // More conversations, so `?limit=20` reads a full page (and the total counts past it).
    for (let i = 1; i < (p.conversations ?? 25); i++) {
      const more = await api(app, 'POST', '/api/v1/conversations', { token, body: { session_id: `bench-${randomBytes(6).toString('hex')}`, agent_id: agentId, metadata: { channel: 'bench', n: i } } });
      if (more.status !== 201 && more.status !== 200) throw new Error(`create conversation: ${more.status} ${JSON.stringify(more.body)}`);
    }
    if (p.olderConversations) await seedOlderConversations(p.olderConversations, agentId, user.workspaceId);
  }
  const port = app.port;
  const messageBody = JSON.stringify({ conversation_id: conversationId ?? '00000000-0000-7000-8000-000000000000', role: 'user', content: 'what time do you open on friday night?', turn_number: 1 });
  const specs: Array<Omit<Endpoint, 'status' | 'available' | 'bytes'>> = [
    { name: 'GET /api/v1/agents/{id}', method: 'GET', path: `/api/v1/agents/${agentId}` },
    { name: 'GET /api/v1/conversations?limit=20', method: 'GET', path: '/api/v1/conversations?limit=20' },
    { name: 'POST /api/v1/conversations/messages', method: 'POST', path: '/api/v1/conversations/messages', body: messageBody },
  ];
  const replies = new Map<string, Captured>();
  const endpoints: Endpoint[] = [];
  for (const s of specs) {
    const c = await capture(port, s.method, s.path, token, s.body);
    replies.set(`${s.method} ${s.path}`, c);
    endpoints.push({ ...s, status: c.status, available: c.status >= 200 && c.status < 300, bytes: c.body.length });
  }
  // The baseline: the same bytes and headers, no auth, no database, no router.
  raw = http.createServer((req, res) => {
    const c = replies.get(`${req.method} ${req.url}`);
    const send = () => {
      if (!c) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(c.status, c.headers);
      res.end(c.body);
    };
    if (req.method === 'POST') {
      req.on('data', () => {});
      req.on('end', send);
    } else send();
  });
  await new Promise<void>((r) => raw!.listen(0, '127.0.0.1', r));
  const rawPort = (raw.address() as { port: number }).port;
  // The peer: same database and schema, same JWT key, same log level; probed like the real routes.
  peer = await startFastifyPeer({ databaseUrl: TEST_DATABASE_URL, schema, jwtKey: infra.jwtKey, logLevel: p.logLevel ?? 'info', pgNoDelay: process.env.BENCH_PEER_PG_NODELAY === '1', pool: process.env.BENCH_PEER_POOL === 'control-plane' ? 'control-plane' : 'postgres.js' });
  for (const ep of endpoints) {
    if (!ep.available || !ep.name.includes('conversations')) continue;
    const ours = replies.get(`${ep.method} ${ep.path}`)!;
    const c = await capture(peer.port, ep.method, ep.path, token, ep.body);
    ep.peer = { status: c.status, bytes: c.body.length, sameBody: c.status === ours.status && comparable(c.body) === comparable(ours.body) };
  }
  return { port, rawPort, grpcPort: app.grpcPort, peerPort: peer.port, token, workspaceId: user.workspaceId, agentId, conversationId, redisPrefix, schema, endpoints };
}

/** A response body with what differs per request set aside: `timestamp`; for a created row, `id` and `created_at`. */
function comparable(body: Buffer): string {
  try {
    const j = JSON.parse(body.toString('utf8')) as { timestamp?: string; data?: unknown };
    delete j.timestamp;
    if (j.data && typeof j.data === 'object' && !Array.isArray(j.data)) {
      const d = j.data as Record<string, unknown>;
      delete d.id;
      delete d.created_at;
    }
    return JSON.stringify(j);
  } catch {
    return `not JSON: ${body.toString('utf8')}`;
  }
}

/** A published agent on the sim providers (voice sessions can start on it). */
async function publishSimAgent(): Promise<string> {
  if (!app || !user) throw new Error('not initialised');
  const token = user.token;
  const a = await api(app, 'POST', '/api/v1/agents', { token, body: { workspace_id: user.workspaceId, name: 'Routing agent', system_prompt: 'Be brief.', welcome_message: '', silence_timeout_ms: 600000 } });
  if (a.status !== 201) throw new Error(`create agent: ${a.status} ${JSON.stringify(a.body)}`);
  const id = a.body.data.id as string;
  for (const kind of ['asr', 'llm', 'tts']) {
    const r = await api(app, 'POST', `/api/v1/agents/${id}/providers`, { token, body: { provider_type: kind, provider_name: 'sim' } });
    if (r.status >= 300) throw new Error(`provider ${kind}: ${r.status} ${JSON.stringify(r.body)}`);
  }
  const pub = await api(app, 'POST', `/api/v1/agents/${id}/versions/publish`, { token });
  if (pub.status >= 300) throw new Error(`publish: ${pub.status} ${JSON.stringify(pub.body)}`);
  return id;
}

serveParent(
  {
    init,
    publishSimAgent,
    resetWindow: () => {
      win.reset();
      return true;
    },
    snapshot: () => win.read(),
    unhandledRejections: () => Object.fromEntries(unhandled),
    /**
     * Table scans (seq + index) in this bench's schema so far: a proxy for queries per request.
     * Postgres publishes backend counters at most once a second: read it after a pause.
     */
    dbScans: async () => {
      const rows = await infra!.sql.unsafe(`select coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0)::text as n from pg_stat_user_tables where schemaname = $1`, [schema]);
      return Number((rows[0] as unknown as { n: string }).n);
    },
  },
  async () => {
    await new Promise((r) => (raw ? raw.close(r) : r(undefined)));
    await peer?.close();
    await app?.close();
    await infra?.close();
    if (schema) await dropSchema(schema).catch(() => {});
    if (ownPrefix) await dropRedisPrefix(TEST_REDIS_URL, prefix).catch(() => {});
    fs.rmSync(`/tmp/${schema}`, { recursive: true, force: true });
  },
);
