/**
 * The peer baseline of issue 13 for the conversations routes: a minimal Fastify 5 + postgres.js
 * server doing the same two operations as the control plane, against the same database and bench
 * schema, with the same SQL and the same JSON bytes. It runs inside bench/http/server-host.ts (the
 * same child process as the control plane and the raw replay server, like the raw baseline).
 *
 * What it does per request, and what it skips (docs/benchmarks.md says the same):
 * - Auth: the same bearer (JWT, HS256, same key) verified with jose; the token's session,
 *   memberships and default workspace read with the same SQL as control-plane/accounts/auth.ts and
 *   kept per token for 4 s (our CACHE_TTL_MS default), bounded. Skipped: change notices over
 *   Redis, API keys, scopes, per-call principal memo.
 * - GET /api/v1/conversations: limit/offset checked (1..500), then the folded list page with its
 *   total in one query (a count query only for a page past the end), the SQL of control-plane/conversations/store.ts `listConversations` with
 *   no filters (copied, parameters identical, so postgres.js prepares the same statements).
 *   Filters (agent_id, user_id, status, workspace_id) are not implemented: the bench sends none.
 * - POST /api/v1/conversations/messages: the fields the bench sends checked as ours checks them,
 *   the conversation's workspace fenced (remembered per conversation, as ours does), the same
 *   `insert .. on conflict do nothing returning *` and the same conflict comparison.
 * - Responses: the envelope and proto-JSON field order of our REST edge built as plain objects and
 *   `JSON.stringify` (no protobuf runtime); one access-log line per request at the same level to
 *   /dev/null, like ours. server-host.ts checks the bodies equal ours before measuring.
 */
import { createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import net from 'node:net';
import Fastify, { LogController, type FastifyInstance, type FastifyReply } from 'fastify';
import { jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';
import { pino } from 'pino';
import postgres from 'postgres';
import { v7 as uuidv7 } from 'uuid';
import { createSql } from '../../shared/db/client.js';

export interface PeerOptions {
  databaseUrl: string;
  /** Bench schema (first on the search path, as the control plane's pool has it). */
  schema: string;
  /** The control plane's JWT key (infra.jwtKey). */
  jwtKey: Uint8Array;
  /** pino level of the one access-log line per request (to /dev/null). */
  logLevel: string;
  /** Pool size; the control plane's is 10. */
  poolMax?: number;
  /** TCP_NODELAY on the pool's sockets, as the control plane's pool sets it (postgres.js leaves Nagle on). Default false. */
  pgNoDelay?: boolean;
  /**
   * `control-plane`: the control plane's own pool (shared/db/client.ts: gate of 10 queries in
   * flight, no pipelining, TCP_NODELAY, socket watchdog) instead of plain postgres.js. A
   * diagnostic (BENCH_PEER_POOL=control-plane): it shows what the pool costs. Default `postgres.js`.
   */
  pool?: 'postgres.js' | 'control-plane';
}

export interface RunningPeer {
  port: number;
  close(): Promise<void>;
}

interface Caller {
  userId: string;
  ws: string[];
  defaultWs?: string;
  expiresAtMs: number;
}

const MAX_LIMIT = 500;
const MAX_TEXT_CHARS = 100_000;
const INT32_MAX = 2_147_483_647;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

const int32 = (n: unknown) => Math.min(INT32_MAX, Math.max(0, Math.round(Number(n ?? 0))));
const iso = (d: Date) => d.toISOString();

type Row = Record<string, unknown>;

/** A conversation list row in proto field order (optional fields null when unset, as the API's NULL_WHEN_UNSET records). */
function conversationJson(r: Row): Row {
  const out: Row = {
    id: r.id,
    session_id: r.session_id,
    user_id: r.user_id ?? '',
    agent_id: r.agent_id,
    workspace_id: r.workspace_id,
    status: r.status,
    total_turns: int32(r.total_turns),
    total_duration_ms: int32(r.total_duration_ms),
    avg_response_latency_ms: int32(r.avg_response_latency_ms),
  };
  out.summary = r.summary ?? null;
  out.metadata = r.metadata ?? {};
  out.started_at = iso(r.started_at as Date);
  out.ended_at = r.ended_at ? iso(r.ended_at as Date) : null;
  out.created_at = iso(r.created_at as Date);
  out.updated_at = iso(r.updated_at as Date);
  const sessions = r.g_sessions as number | null;
  // The spec's folded-row fields are present only on folded rows (control-plane/http/json-writer.ts ABSENT_WHEN_UNSET).
  if (!r.call_id || !sessions || sessions < 2) return out;
  // A transferred call folded into its first stint (control-plane/conversations/views.ts listView).
  const turns = Number(r.g_turns ?? 0);
  const segments: string[] = [];
  for (const k of (r.g_kinds as string[] | null) ?? []) if (segments[segments.length - 1] !== k) segments.push(k);
  out.status = r.g_any_active ? 'active' : (r.g_last_status ?? r.status);
  out.total_turns = int32(turns);
  out.total_duration_ms = int32(r.g_duration);
  out.avg_response_latency_ms = int32(turns > 0 ? Number(r.g_latency_weighted ?? 0) / turns : (r.g_latency_avg ?? 0));
  out.ended_at = r.g_all_ended && r.g_ended_at ? iso(r.g_ended_at as Date) : null;
  return {
    ...out,
    call_id: r.call_id,
    session_count: sessions,
    segment_count: segments.length,
    segment_pattern: segments.join(' -> '),
  };
}

const MESSAGE_OPTIONAL = ['tool_call_id', 'reasoning_content', 'audio_url', 'asr_provider', 'asr_model', 'asr_latency_ms', 'asr_confidence', 'llm_provider', 'llm_model', 'llm_latency_ms', 'tokens_input', 'tokens_output', 'tts_provider', 'tts_latency_ms', 'total_latency_ms', 'internal_overhead_ms'] as const;

/** A message in proto field order. Audio links are not signed here: the bench's messages have no audio. */
function messageJson(m: Row): Row {
  const out: Row = {
    id: m.id,
    conversation_id: m.conversation_id,
    turn_number: m.turn_number,
    role: m.role,
    content: m.content,
    tool_calls: ((m.tool_calls as Row[] | null) ?? []).map((t) => ({ id: String(t.id ?? ''), name: String(t.name ?? '') })),
  };
  for (const k of MESSAGE_OPTIONAL) out[k] = m[k] ?? null;
  out.metadata = m.metadata ?? {};
  out.created_at = iso(m.created_at as Date);
  return out;
}

function envelope(data: unknown, meta?: unknown): string {
  return JSON.stringify(meta === undefined ? { success: true, data, error: null, timestamp: new Date().toISOString() } : { success: true, data, error: null, meta, timestamp: new Date().toISOString() });
}

function fail(reply: FastifyReply, status: number, code: string, message: string): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send(JSON.stringify({ success: false, data: null, error: { code, message }, timestamp: new Date().toISOString() }));
}

class PeerError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const nonNegativeInt = (field: string, v: unknown): number | undefined => {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > INT32_MAX) throw new PeerError(400, 'INVALID_ARGUMENT', `${field} must be a non-negative integer`);
  return v;
};

export async function startFastifyPeer(o: PeerOptions): Promise<RunningPeer> {
  // The control plane's pool settings (shared/db/client.ts) without its gate and socket watchdog.
  const sql = o.pool === 'control-plane' ? (createSql(o.databaseUrl, { schema: o.schema, max: o.poolMax ?? 10 }) as unknown as postgres.Sql<Record<string, unknown>>) : postgres(o.databaseUrl, {
    max: o.poolMax ?? 10,
    idle_timeout: 30,
    connect_timeout: 3,
    onnotice: () => {},
    connection: { statement_timeout: '10000', jit: 'off', search_path: `${o.schema},public` },
    types: { bigint: { to: 20, from: [20], serialize: (x: number) => x.toString(), parse: (x: string) => Number(x) } },
    ...(o.pgNoDelay ? { socket: (t: { host: string[]; port: number[] }) => net.connect(t.port[0] ?? 5432, t.host[0] ?? 'localhost').setNoDelay(true) } : {}),
  } as never) as unknown as postgres.Sql<Record<string, unknown>>;
  const key: KeyObject = createSecretKey(Buffer.from(o.jwtKey));
  const callers = new LRUCache<string, Caller>({ max: 10_000, ttl: 4000 });
  const convWorkspace = new LRUCache<string, string>({ max: 10_000 });

  async function load(token: string): Promise<Caller> {
    let sub: string;
    let sid: string;
    let exp: number;
    try {
      const { payload } = await jwtVerify(token, key, { algorithms: ['HS256'], issuer: 'voiceplane', requiredClaims: ['sub', 'exp', 'sid', 'jti'] });
      if (payload.typ !== 'access' || typeof payload.sid !== 'string' || typeof payload.sub !== 'string') throw new Error('not an access token');
      sub = payload.sub;
      sid = payload.sid;
      exp = payload.exp! * 1000;
    } catch {
      throw new PeerError(401, 'UNAUTHORIZED', 'invalid or expired token');
    }
    const [u] = await sql<{ user_id: string; is_org_owner: boolean }[]>`
      select u.id as user_id, u.email, u.is_org_owner
      from sessions s join users u on u.id = s.user_id
      where s.id = ${sid} and s.revoked_at is null`;
    if (!u || u.user_id !== sub) throw new PeerError(401, 'UNAUTHORIZED', 'session revoked');
    const [members, [def]] = await Promise.all([
      u.is_org_owner
        ? sql<{ id: string }[]>`select id from workspaces order by created_at, id`
        : sql<{ id: string }[]>`select workspace_id as id from workspace_members where user_id = ${sub} order by created_at, workspace_id`,
      sql<{ id: string }[]>`select id from workspaces where user_id = ${sub} order by created_at, id limit 1`,
    ]);
    return { userId: sub, ws: members.map((r) => r.id), defaultWs: def?.id, expiresAtMs: exp };
  }

  async function caller(authorization: string | undefined): Promise<Caller> {
    const m = BEARER.exec(authorization ?? '');
    if (!m) throw new PeerError(401, 'UNAUTHORIZED', 'missing or malformed Authorization header');
    const token = m[1];
    let c = callers.get(token);
    if (!c) callers.set(token, (c = await load(token)));
    if (c.expiresAtMs <= Date.now()) throw new PeerError(401, 'UNAUTHORIZED', 'invalid or expired token');
    return c;
  }

  const app: FastifyInstance = Fastify({
    logger: { level: o.logLevel, stream: pino.destination({ dest: '/dev/null', sync: false }) },
    // One line per request, like the control plane's access log (Fastify's default writes two).
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => randomUUID(),
  });
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
  });
  app.addHook('onResponse', async (req, reply) => {
    req.log.info({ method: req.method, path: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });
  app.setErrorHandler((err, _req, reply) => {
    if (err instanceof PeerError) return fail(reply, err.status, err.code, err.message);
    const status = (err as { statusCode?: number }).statusCode ?? 500;
    return fail(reply, status, status === 500 ? 'INTERNAL' : 'INVALID_ARGUMENT', status === 500 ? 'internal error' : String((err as Error).message));
  });

  app.get<{ Querystring: { limit?: string; offset?: string } }>('/api/v1/conversations', async (req, reply) => {
    const c = await caller(req.headers.authorization);
    const limit = req.query.limit === undefined ? 20 : Number(req.query.limit);
    const offset = req.query.offset === undefined ? 0 : Number(req.query.offset);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new PeerError(400, 'INVALID_ARGUMENT', `limit must be between 1 and ${MAX_LIMIT}`);
    if (!Number.isInteger(offset) || offset < 0) throw new PeerError(400, 'INVALID_ARGUMENT', 'offset must be 0 or more');
    const ws = c.defaultWs ? [c.defaultWs] : c.ws;
    const meta = (total: number) => ({ page: Math.floor(offset / limit) + 1, per_page: limit, total, total_pages: Math.ceil(total / limit) });
    reply.type('application/json; charset=utf-8');
    if (!ws.length) return envelope([], meta(0));
    // control-plane/conversations/store.ts listConversations, no filters (agent_id, user_id, status).
    const inWs = (alias: 'c' | 's' | 'e') => (ws.length === 1 ? sql`${sql(`${alias}.workspace_id`)} = ${ws[0]}::uuid` : sql`${sql(`${alias}.workspace_id`)} = any(${ws}::uuid[])`);
    const matching = () => sql`
    from conversations c
    where ${inWs('c')}
      and (c.call_id is null or not exists (
        select 1 from conversations e
        where e.call_id = c.call_id and ${inWs('e')}
          and (e.started_at < c.started_at or (e.started_at = c.started_at and e.id < c.id))))
      ${sql``}
      ${sql``}
      ${sql``}`;
    const rows = await sql<Row[]>`
    with page as (select c.* ${matching()} order by c.started_at desc, c.id desc limit ${limit} offset ${offset})
    select c.*, g.g_sessions, g.g_any_active, g.g_last_status, g.g_kinds, g.g_turns, g.g_duration,
           g.g_latency_weighted, g.g_latency_avg, g.g_ended_at, g.g_all_ended,
           ((select count(*)::int from conversations c where ${inWs('c')} and c.call_id is null)
            + (select count(distinct c.call_id)::int from conversations c where ${inWs('c')} and c.call_id is not null)) as g_total
    from page c
    left join lateral (
      select count(*)::int as g_sessions,
             bool_or(s.status = 'active') as g_any_active,
             (array_agg(s.status order by s.started_at desc, s.id desc))[1] as g_last_status,
             array_agg(s.segment_kind order by s.started_at, s.id) as g_kinds,
             sum(s.total_turns)::bigint as g_turns,
             sum(s.total_duration_ms)::bigint as g_duration,
             sum(s.avg_response_latency_ms::bigint * s.total_turns)::bigint as g_latency_weighted,
             avg(s.avg_response_latency_ms)::float8 as g_latency_avg,
             max(s.ended_at) as g_ended_at,
             bool_and(s.ended_at is not null) as g_all_ended
      from conversations s
      where s.call_id = c.call_id and ${inWs('s')}
    ) g on c.call_id is not null
    order by c.started_at desc, c.id desc`;
    let total = rows.length ? (rows[0].g_total as number) : 0;
    if (!rows.length && offset > 0) [{ n: total }] = await sql<{ n: number }[]>`select count(*)::int as n ${matching()}`;
    return envelope(rows.map(conversationJson), meta(total));
  });

  app.post<{ Body: Record<string, unknown> | undefined }>('/api/v1/conversations/messages', async (req, reply) => {
    const c = await caller(req.headers.authorization);
    const b = req.body ?? {};
    const conversationId = typeof b.conversation_id === 'string' && UUID.test(b.conversation_id) ? b.conversation_id.toLowerCase() : undefined;
    if (!conversationId) throw new PeerError(400, 'INVALID_ARGUMENT', 'conversation_id must be a UUID');
    let convWs = convWorkspace.get(conversationId);
    if (convWs === undefined) {
      const [row] = await sql<{ workspace_id: string }[]>`select * from conversations where id = ${conversationId} and workspace_id = any(${c.ws}::uuid[])`;
      if (row) convWorkspace.set(conversationId, (convWs = row.workspace_id));
    }
    if (convWs === undefined || !c.ws.includes(convWs)) throw new PeerError(404, 'NOT_FOUND', 'conversation not found');
    const id = b.id === undefined ? uuidv7() : typeof b.id === 'string' && UUID.test(b.id) ? b.id.toLowerCase() : undefined;
    if (!id) throw new PeerError(400, 'INVALID_ARGUMENT', 'id must be a UUID');
    if (b.role !== 'user' && b.role !== 'assistant') throw new PeerError(400, 'INVALID_ARGUMENT', 'role is required (user or assistant)');
    const content = typeof b.content === 'string' ? b.content : '';
    if (content.length > MAX_TEXT_CHARS) throw new PeerError(400, 'INVALID_ARGUMENT', `content must be at most ${MAX_TEXT_CHARS} characters`);
    const metadata = b.metadata && typeof b.metadata === 'object' && !Array.isArray(b.metadata) ? b.metadata : {};
    // Column order as the control plane's row object: the same insert statement text.
    const row = {
      id,
      conversation_id: conversationId,
      turn_number: nonNegativeInt('turn_number', b.turn_number) ?? 0,
      role: b.role,
      content,
      tool_calls: [],
      tool_call_id: null,
      reasoning_content: null,
      asr_provider: null,
      asr_model: null,
      asr_confidence: null,
      llm_provider: null,
      llm_model: null,
      tts_provider: null,
      asr_latency_ms: nonNegativeInt('asr_latency_ms', b.asr_latency_ms) ?? null,
      llm_latency_ms: nonNegativeInt('llm_latency_ms', b.llm_latency_ms) ?? null,
      tokens_input: nonNegativeInt('tokens_input', b.tokens_input) ?? null,
      tokens_output: nonNegativeInt('tokens_output', b.tokens_output) ?? null,
      tts_latency_ms: nonNegativeInt('tts_latency_ms', b.tts_latency_ms) ?? null,
      total_latency_ms: nonNegativeInt('total_latency_ms', b.total_latency_ms) ?? null,
      internal_overhead_ms: nonNegativeInt('internal_overhead_ms', b.internal_overhead_ms) ?? null,
      metadata,
      billable: false,
      created_at: new Date(),
    };
    const [inserted] = await sql<Row[]>`insert into messages ${sql(row as never)} on conflict do nothing returning *`;
    reply.code(201).type('application/json; charset=utf-8');
    if (inserted) return envelope(messageJson(inserted));
    const [existing] = await sql<Row[]>`select * from messages where id = ${id}`;
    const same = existing && existing.conversation_id === row.conversation_id && existing.turn_number === row.turn_number && existing.role === row.role && existing.content === row.content && JSON.stringify(existing.metadata) === JSON.stringify(row.metadata);
    if (same) return envelope(messageJson(existing));
    throw new PeerError(409, 'CONFLICT', 'a message with this id already exists with a different body');
  });

  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  return {
    port,
    async close() {
      await app.close();
      await sql.end({ timeout: 5 });
    },
  };
}
