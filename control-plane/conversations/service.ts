/**
 * ConversationService: the spec's Conversations routes, one implementation for REST, Connect and
 * gRPC. Bearer required (except liveness). Fencing: a conversation, message, tool call, agent or
 * workspace outside the caller's workspaces is NOT_FOUND, never FORBIDDEN.
 */
import { toJson, type JsonObject } from '@bufbuild/protobuf';
import { LRUCache } from 'lru-cache';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import type { ConversationService } from '../../shared/gen/voiceplane/v1/conversations_pb.js';
import { AppError, alreadyExists, conflict, invalid, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Auth, Principal } from '../http/auth.js';
import type { Sql } from '../../shared/db/client.js';
import type { AudioLinks } from './audio-links.js';
import * as store from './store.js';
import type { Summarizer } from './summary.js';
import { pageMeta, pageOf } from '../http/pagination.js';
import { canonicalJson, longerThan, MAX_TEXT_CHARS, nonNegativeInt, oneOf, pathId, text, uuidField } from '../http/validate.js';
import { DEFAULT_LIMIT, MAX_LIMIT, ROLES, SEGMENT_KINDS, STATUSES } from './fields.js';
import { conversationView, listView, messageView, toolCallView } from './views.js';

export interface ConversationServiceDeps {
  sql: Sql;
  auth: Auth;
  links: AudioLinks;
  summarizer: Summarizer;
  clock: Clock;
  logger: Logger;
}

/** Conversations whose workspace is remembered (bounded; least recently used dropped first). */
const MAX_KNOWN_CONVERSATIONS = 10_000;

export function createConversationService(deps: ConversationServiceDeps): ServiceImpl<typeof ConversationService> {
  const { sql, auth, links } = deps;
  // conversation id -> workspace id. A conversation never moves to another workspace, so the
  // fence of a message write needs no read once it is known (issue 13: one query per request);
  // the caller's workspaces (`ws`) are checked on every call. A deleted workspace is no longer in
  // anyone's `ws`, and its conversations are gone with it.
  const knownWorkspace = new LRUCache<string, string>({ max: MAX_KNOWN_CONVERSATIONS });

  async function caller(ctx: Parameters<Auth['principal']>[0]): Promise<{ p: Principal; ws: string[] }> {
    const p = await auth.principal(ctx);
    return { p, ws: await auth.workspaceIds(p) };
  }

  async function visibleConversation(ws: string[], id: string | undefined): Promise<store.ConversationRow> {
    const row = await store.getConversation(sql, ws, pathId('conversation', id));
    if (!row) throw notFound('conversation');
    return row;
  }

  return {
    async listConversations(req, ctx) {
      const { p, ws } = await caller(ctx);
      const pg = pageOf(req, MAX_LIMIT, DEFAULT_LIMIT);
      const agentId = uuidField('agent_id', req.agentId);
      const userId = text('user_id', req.userId);
      // proto3 strings are '' when unset: an empty filter is no filter (`|| undefined`).
      const status = oneOf('status', req.status || undefined, STATUSES);
      let scope: string[];
      if (req.workspaceId !== undefined && req.workspaceId !== '') {
        const wsId = uuidField('workspace_id', req.workspaceId)!;
        await auth.requireWorkspace(p, wsId);
        scope = [wsId];
      } else {
        // Spec rule 1: scoped to the caller's own workspace; a caller owning none sees every
        // workspace they belong to.
        const own = await auth.defaultWorkspaceId(p);
        scope = own ? [own] : ws;
      }
      if (!scope.length) return { conversations: [], meta: pageMeta(pg, 0) };
      const { rows, total } = await store.listConversations(sql, { ws: scope, agentId, userId, status }, pg);
      return { conversations: rows.map(listView), meta: pageMeta(pg, total) };
    },

    async getConversation(req, ctx) {
      const { ws } = await caller(ctx);
      const conv = await visibleConversation(ws, req.id);
      const [messages, toolCalls] = await Promise.all([store.listMessages(sql, conv.id), store.listToolCalls(sql, conv.id)]);
      return {
        conversation: conversationView(conv),
        messages: messages.map((m) => messageView(m, links)),
        toolCalls: toolCalls.map(toolCallView),
      };
    },

    async listConversationMessages(req, ctx) {
      const { ws } = await caller(ctx);
      const conv = await visibleConversation(ws, req.id);
      return { messages: (await store.listMessages(sql, conv.id)).map((m) => messageView(m, links)) };
    },

    async getConversationBySession(req, ctx) {
      const { p, ws } = await caller(ctx);
      const sessionId = (req.sessionId ?? '').trim();
      if (!sessionId || sessionId.length > 256) throw notFound('conversation');
      // A session id is unique per workspace (migration 0024): a caller in several workspaces may
      // match more than one row. Their own workspace's row wins, as the list defaults to it.
      const row = await store.getConversationBySession(sql, ws, sessionId, await auth.defaultWorkspaceId(p));
      if (!row) throw notFound('conversation');
      return conversationView(row);
    },

    async getConversationSummary(req, ctx) {
      const p = await auth.principal(ctx);
      const wsId = uuidField('workspace_id', req.workspaceId, true)!;
      const status = oneOf('status', req.status || undefined, STATUSES);
      const agentId = uuidField('agent_id', req.agentId);
      await auth.requireWorkspace(p, wsId);
      const s = await store.summarize(sql, wsId, { status, agentId });
      return {
        total: s.total,
        active: s.active,
        completed: s.completed,
        failed: s.failed,
        totalTurns: s.total_turns,
        totalDurationMs: s.total_duration_ms,
        avgLatencyMs: s.avg_latency_ms,
      };
    },

    async countAgentConversations(req, ctx) {
      const { ws } = await caller(ctx);
      const agentId = pathId('agent', req.agentId);
      const [visible, count] = await Promise.all([store.agentWorkspace(sql, ws, agentId), store.countForAgent(sql, ws, agentId)]);
      // Records outlive a deleted agent: an agent we cannot see but whose records we can still counts.
      if (!visible && count === 0) throw notFound('agent');
      return { count };
    },

    async createConversation(req, ctx) {
      const { p, ws } = await caller(ctx);
      const id = uuidField('id', req.id) ?? newId();
      const sessionId = text('session_id', req.sessionId, { required: true, maxChars: 256 })!;
      const agentId = uuidField('agent_id', req.agentId, true)!;
      const userId = text('user_id', req.userId) ?? p.userId;
      const callId = uuidField('call_id', req.callId) ?? null;
      const segmentKind = oneOf('segment_kind', req.segmentKind || undefined, SEGMENT_KINDS) ?? 'ai';
      const metadata = (req.metadata ?? {}) as JsonObject;
      const workspaceId = await store.agentWorkspace(sql, ws, agentId);
      if (!workspaceId) throw notFound('agent');
      // A call's stints share its id: another workspace's call id would fold this record into
      // that tenant's call (its event, its usage counts).
      if (callId && (await sql`select 1 from conversations where call_id = ${callId} and workspace_id <> ${workspaceId} limit 1`).length) {
        throw invalid('call_id', "is another workspace's call");
      }
      const now = new Date(deps.clock.now());
      const [row] = await sql<store.ConversationRow[]>`
        insert into conversations (id, session_id, user_id, agent_id, workspace_id, call_id, segment_kind, status, metadata, started_at, created_at, updated_at)
        values (${id}, ${sessionId}, ${userId}, ${agentId}, ${workspaceId}, ${callId}, ${segmentKind}, 'active', ${metadata as never}, ${now}, ${now}, ${now})
        on conflict do nothing
        returning *`;
      if (row) return conversationView(row);
      // Conflict: the same request again returns the stored row; anything else is 409.
      const [existing] = await sql<store.ConversationRow[]>`select * from conversations where id = ${id}`;
      const same =
        existing &&
        existing.workspace_id === workspaceId &&
        existing.session_id === sessionId &&
        existing.agent_id === agentId &&
        existing.user_id === userId &&
        existing.call_id === callId &&
        existing.segment_kind === segmentKind &&
        canonicalJson(existing.metadata) === canonicalJson(metadata);
      if (same) return conversationView(existing);
      // One answer whether the id is this workspace's (with another body) or another tenant's: ids
      // are primary keys across tenants, so a taken id is a 409 either way, but it must not tell
      // whose. A session conflict is always within this workspace (unique per workspace).
      if (existing) throw alreadyExists('id is already taken');
      throw alreadyExists('session_id already has a conversation in this workspace');
    },

    async updateConversation(req, ctx) {
      const { ws } = await caller(ctx);
      const conv = await visibleConversation(ws, req.id);
      const status = oneOf('status', req.status || undefined, STATUSES);
      const totalTurns = nonNegativeInt('total_turns', req.totalTurns);
      const totalDurationMs = nonNegativeInt('total_duration_ms', req.totalDurationMs);
      const avgLatencyMs = nonNegativeInt('avg_response_latency_ms', req.avgResponseLatencyMs);
      const agentId = uuidField('agent_id', req.agentId);
      const userId = text('user_id', req.userId);
      if (agentId && agentId !== conv.agent_id) throw invalid('agent_id', "is not this conversation's agent");
      const now = new Date(deps.clock.now());
      const update = (q: typeof sql) => q<{ id: string; status: string }[]>`
        update conversations set
          status = coalesce(${status ?? null}::text, status),
          total_turns = coalesce(${totalTurns ?? null}::int, total_turns),
          total_duration_ms = coalesce(${totalDurationMs ?? null}::bigint, total_duration_ms),
          avg_response_latency_ms = coalesce(${avgLatencyMs ?? null}::int, avg_response_latency_ms),
          user_id = coalesce(${userId ?? null}::text, user_id),
          -- Spec: with agent_id, a summary is asked for explicitly (whatever generate_call_summary says).
          summary_status = case when ${agentId ?? null}::uuid is not null and summary_status is distinct from 'completed'
            then 'pending' else summary_status end,
          summary_requests = summary_requests + case when ${agentId ?? null}::uuid is not null then 1 else 0 end,
          -- Set once, by the end: never moved or cleared afterwards (a terminal status stays).
          ended_at = case
            when ended_at is null and ${status ?? null}::text in ('completed', 'failed') then ${now}::timestamptz
            else ended_at end,
          updated_at = ${now}
        where id = ${conv.id}
          -- The state machine (spec: active -> completed, failed also counted): completed and
          -- failed are terminal. Guarded here, not only on the row read above, so a concurrent
          -- end (engine, sweeper, another PUT) cannot be reopened or turned into the other end.
          and (${status ?? null}::text is null or status = 'active' or status = ${status ?? null}::text)
          -- A call live on an engine is ended by its engine (which records its real usage, the
          -- basis of billing), not by a PUT: POST /voice/sessions/{id}/end ends it.
          -- (coalesce: with no status sent the test is NULL, and not NULL refused every such PUT.)
          and not coalesce(engine_node_id is not null and status = 'active' and ${status ?? null}::text in ('completed', 'failed'), false)
        returning id, status`;
      // Spec (Conversation state machine): an end without agent_id has no post-call processing.
      // The outbox trigger reads this transaction-local setting (migration 0031).
      const [row] = agentId
        ? await update(sql)
        : ((await sql.begin(async (tx) => {
            await tx`select set_config('voiceplane.skip_post_call', 'on', true)`;
            return update(tx as unknown as typeof sql);
          })) as { id: string; status: string }[]);
      if (!row) {
        const [current] = await sql<{ status: string; engine_node_id: string | null }[]>`select status, engine_node_id from conversations where id = ${conv.id}`;
        if (!current) throw notFound('conversation'); // its workspace was deleted meanwhile
        const problem =
          current.status === 'active' && current.engine_node_id
            ? `cannot end a call that is live on a voice engine: end it with POST /voice/sessions/{session_id}/end, and its engine records the end`
            : `cannot change from ${current.status} to ${status}: completed and failed are final`;
        throw new AppError('CONFLICT', `status: ${problem}`, { details: [{ field: 'status', problem }] });
      }
      // Spec: with agent_id, post-call processing (summary) runs asynchronously, as a durable job.
      // The transition to completed also reaches the post-call jobs through the outbox (deduplicated).
      if (agentId) await deps.summarizer.request(conv.id);
      return { id: row.id, status: row.status };
    },

    async createConversationMessage(req, ctx) {
      const { ws } = await caller(ctx);
      const conversationId = uuidField('conversation_id', req.conversationId, true)!;
      let convWs = knownWorkspace.get(conversationId);
      if (convWs === undefined) {
        const row = await store.getConversation(sql, ws, conversationId);
        if (row) knownWorkspace.set(conversationId, (convWs = row.workspace_id));
      }
      if (convWs === undefined || !ws.includes(convWs)) throw notFound('conversation');
      const conv = { id: conversationId };
      const id = uuidField('id', req.id) ?? newId();
      const role = oneOf('role', req.role || undefined, ROLES);
      if (!role) throw invalid('role', 'is required (user or assistant)');
      const turnNumber = nonNegativeInt('turn_number', req.turnNumber) ?? 0;
      const content = req.content ?? '';
      if (longerThan(content, MAX_TEXT_CHARS)) throw invalid('content', `must be at most ${MAX_TEXT_CHARS} characters`);
      const ints = {
        asr_latency_ms: nonNegativeInt('asr_latency_ms', req.asrLatencyMs) ?? null,
        llm_latency_ms: nonNegativeInt('llm_latency_ms', req.llmLatencyMs) ?? null,
        tokens_input: nonNegativeInt('tokens_input', req.tokensInput) ?? null,
        tokens_output: nonNegativeInt('tokens_output', req.tokensOutput) ?? null,
        tts_latency_ms: nonNegativeInt('tts_latency_ms', req.ttsLatencyMs) ?? null,
        total_latency_ms: nonNegativeInt('total_latency_ms', req.totalLatencyMs) ?? null,
        internal_overhead_ms: nonNegativeInt('internal_overhead_ms', req.internalOverheadMs) ?? null,
      };
      if (req.asrConfidence !== undefined && !(req.asrConfidence >= 0 && req.asrConfidence <= 1)) throw invalid('asr_confidence', 'must be between 0 and 1');
      const row = {
        id,
        conversation_id: conv.id,
        turn_number: turnNumber,
        role,
        content,
        tool_calls: req.toolCalls.map((t) => ({ id: t.id, name: t.name })),
        tool_call_id: text('tool_call_id', req.toolCallId) ?? null,
        reasoning_content: req.reasoningContent || null,
        asr_provider: text('asr_provider', req.asrProvider) ?? null,
        asr_model: text('asr_model', req.asrModel) ?? null,
        asr_confidence: req.asrConfidence ?? null,
        llm_provider: text('llm_provider', req.llmProvider) ?? null,
        llm_model: text('llm_model', req.llmModel) ?? null,
        tts_provider: text('tts_provider', req.ttsProvider) ?? null,
        ...ints,
        metadata: (req.metadata ?? {}) as JsonObject,
        // Written by the client's own systems, not our pipeline: never metered (migration 0026).
        billable: false,
        created_at: new Date(deps.clock.now()),
      };
      const [inserted] = await sql<store.MessageRow[]>`insert into messages ${sql(row as never)} on conflict do nothing returning *`;
      if (inserted) return messageView(inserted, links);
      const [existing] = await sql<store.MessageRow[]>`select * from messages where id = ${id}`;
      const same =
        existing &&
        existing.conversation_id === row.conversation_id &&
        existing.turn_number === row.turn_number &&
        existing.role === row.role &&
        existing.content === row.content &&
        canonicalJson(existing.metadata) === canonicalJson(row.metadata);
      if (same) return messageView(existing, links);
      throw alreadyExists('a message with this id already exists with a different body');
    },

    async updateConversationMessage(req, ctx) {
      const { ws } = await caller(ctx);
      const messageId = pathId('message', req.messageId);
      // Spec: `metadata` required and non-null (a JSON null arrives here as "not sent").
      if (req.metadata === undefined) throw invalid('metadata', 'is required and must be an object');
      const metadata = req.metadata as JsonObject;
      const [msg] = await sql<{ id: string; conversation_id: string }[]>`
        select m.id, m.conversation_id from messages m join conversations c on c.id = m.conversation_id
        where m.id = ${messageId} and c.workspace_id = any(${ws}::uuid[])`;
      if (!msg) throw notFound('message');
      const claimed = metadata.conversation_id;
      if (claimed !== undefined && claimed !== null && String(claimed).toLowerCase() !== msg.conversation_id) throw notFound('message');
      await sql`update messages set metadata = metadata || ${metadata as never}::jsonb where id = ${messageId}`;
      return { id: messageId, status: 'updated' };
    },

    async createToolCall(req, ctx) {
      const { ws } = await caller(ctx);
      const conversationId = uuidField('conversation_id', req.conversationId, true)!;
      const messageId = uuidField('message_id', req.messageId, true)!;
      const conv = await store.getConversation(sql, ws, conversationId);
      if (!conv) throw notFound('conversation');
      const [msg] = await sql`select 1 from messages where id = ${messageId} and conversation_id = ${conv.id}`;
      if (!msg) throw notFound('message');
      const row = {
        id: uuidField('id', req.id) ?? newId(),
        message_id: messageId,
        conversation_id: conv.id,
        tool_name: text('tool_name', req.toolName, { required: true })!,
        tool_input: req.toolInput ? toJson(ValueSchema, req.toolInput) : {},
        tool_output: req.toolOutput ? toJson(ValueSchema, req.toolOutput) : null,
        status: text('status', req.status, { maxChars: 50 }) ?? 'success',
        latency_ms: nonNegativeInt('latency_ms', req.latencyMs) ?? 0,
        error_message: text('error_message', req.errorMessage, { maxChars: 4000 }) ?? null,
        billable: false,
        created_at: new Date(deps.clock.now()),
      };
      const [inserted] = await sql<store.ToolCallRow[]>`insert into tool_calls ${sql(row as never)} on conflict do nothing returning *`;
      if (inserted) return toolCallView(inserted);
      const [existing] = await sql<store.ToolCallRow[]>`select * from tool_calls where id = ${row.id}`;
      const same =
        existing &&
        existing.message_id === row.message_id &&
        existing.tool_name === row.tool_name &&
        canonicalJson(existing.tool_input) === canonicalJson(row.tool_input) &&
        canonicalJson(existing.tool_output) === canonicalJson(row.tool_output);
      if (same) return toolCallView(existing);
      throw alreadyExists('a tool call with this id already exists with a different body');
    },

    async live() {
      return { status: 'ok' };
    },

    async ready() {
      try {
        await sql`select 1 from conversations limit 1`;
      } catch {
        throw new AppError('SERVICE_UNAVAILABLE', 'database unavailable');
      }
      return { status: 'ok' };
    },
  };
}
