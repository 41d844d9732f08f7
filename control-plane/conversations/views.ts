/**
 * Rows -> API shapes (proto init objects; REST renders them with proto field names). Nullable
 * columns become absent fields. Folding of transferred calls happens here (`listView`).
 */
import { fromJson, type JsonObject, type JsonValue, type MessageInitShape } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { ConversationMessageSchema, ConversationSchema, ToolCallRecordSchema } from '../../shared/gen/voiceplane/v1/conversations_pb.js';
import { isoTime } from '../../shared/iso-time.js';
import type { AudioLinks } from './audio-links.js';
import type { ConversationRow, ListRow, MessageRow, ToolCallRow } from './store.js';

/** Separator of `segment_pattern`: kinds in call order, e.g. "ai -> human -> ai". */
export const SEGMENT_SEPARATOR = ' -> ';

const INT32_MAX = 2_147_483_647;
const int32 = (n: number | null | undefined) => Math.min(INT32_MAX, Math.max(0, Math.round(Number(n ?? 0))));
const iso = (d: Date) => isoTime(d.getTime());
const opt = <T>(v: T | null | undefined): T | undefined => (v === null ? undefined : v);

export function conversationView(r: ConversationRow): MessageInitShape<typeof ConversationSchema> {
  return {
    id: r.id,
    sessionId: r.session_id,
    userId: r.user_id ?? '',
    agentId: r.agent_id,
    workspaceId: r.workspace_id,
    status: r.status,
    totalTurns: int32(r.total_turns),
    totalDurationMs: int32(r.total_duration_ms),
    avgResponseLatencyMs: int32(r.avg_response_latency_ms),
    summary: opt(r.summary),
    metadata: (r.metadata ?? {}) as JsonObject,
    startedAt: iso(r.started_at),
    endedAt: r.ended_at ? iso(r.ended_at) : undefined,
    createdAt: iso(r.created_at),
    updatedAt: iso(r.updated_at),
  };
}

/** Consecutive stints of the same kind are one segment (an AI reconnect is not a new segment). */
export function segmentsOf(kinds: string[]): string[] {
  const out: string[] = [];
  for (const k of kinds) if (out[out.length - 1] !== k) out.push(k);
  return out;
}

/**
 * A list row. Stints sharing `call_id` fold into the earliest stint's row (its id, session_id,
 * user_id, agent_id, metadata, summary, started_at) with call-level aggregates: turns and durations
 * summed, latency turn-weighted, status `active` while any stint is, else the latest stint's;
 * `ended_at` the last end once every stint ended. Only multi-stint calls carry the call fields.
 */
export function listView(r: ListRow): MessageInitShape<typeof ConversationSchema> {
  const base = conversationView(r);
  if (!r.call_id || !r.g_sessions || r.g_sessions < 2) return base;
  const turns = Number(r.g_turns ?? 0);
  const segments = segmentsOf(r.g_kinds ?? []);
  return {
    ...base,
    status: r.g_any_active ? 'active' : (r.g_last_status ?? r.status),
    totalTurns: int32(turns),
    totalDurationMs: int32(r.g_duration),
    avgResponseLatencyMs: int32(turns > 0 ? Number(r.g_latency_weighted ?? 0) / turns : (r.g_latency_avg ?? 0)),
    endedAt: r.g_all_ended && r.g_ended_at ? iso(r.g_ended_at) : undefined,
    callId: r.call_id,
    sessionCount: r.g_sessions,
    segmentCount: segments.length,
    segmentPattern: segments.join(SEGMENT_SEPARATOR),
  };
}

export function messageView(m: MessageRow, links: AudioLinks): MessageInitShape<typeof ConversationMessageSchema> {
  return {
    id: m.id,
    conversationId: m.conversation_id,
    turnNumber: m.turn_number,
    role: m.role,
    content: m.content,
    toolCalls: (m.tool_calls ?? []).map((t) => ({ id: String(t.id ?? ''), name: String(t.name ?? '') })),
    toolCallId: opt(m.tool_call_id),
    reasoningContent: opt(m.reasoning_content),
    audioUrl: m.audio_path ? links.urlFor(m.id) : undefined,
    asrProvider: opt(m.asr_provider),
    asrModel: opt(m.asr_model),
    asrLatencyMs: opt(m.asr_latency_ms),
    asrConfidence: opt(m.asr_confidence),
    llmProvider: opt(m.llm_provider),
    llmModel: opt(m.llm_model),
    llmLatencyMs: opt(m.llm_latency_ms),
    tokensInput: opt(m.tokens_input),
    tokensOutput: opt(m.tokens_output),
    ttsProvider: opt(m.tts_provider),
    ttsLatencyMs: opt(m.tts_latency_ms),
    totalLatencyMs: opt(m.total_latency_ms),
    internalOverheadMs: opt(m.internal_overhead_ms),
    metadata: (m.metadata ?? {}) as JsonObject,
    createdAt: iso(m.created_at),
  };
}

export function toolCallView(t: ToolCallRow): MessageInitShape<typeof ToolCallRecordSchema> {
  return {
    id: t.id,
    messageId: t.message_id,
    conversationId: t.conversation_id,
    toolName: t.tool_name,
    toolInput: fromJson(ValueSchema, (t.tool_input ?? {}) as JsonValue),
    toolOutput: fromJson(ValueSchema, (t.tool_output ?? null) as JsonValue),
    status: t.status,
    latencyMs: int32(t.latency_ms),
    errorMessage: opt(t.error_message),
    createdAt: iso(t.created_at),
  };
}
