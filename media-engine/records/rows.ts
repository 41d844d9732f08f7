/**
 * How a call's recorder callbacks turn into rows of the durable record (the row types are in
 * `shared/records/rows.ts`). Every row carries its final id (UUID v7, chosen here) so a retried insert is a no-op.
 * Every builder sets every column (postgres.js multi-row inserts take the first row's keys).
 */
import { newId } from '../../shared/ids.js';
import { storableText } from '../../shared/unstorable.js';
import type { AgentMessageRecord, CallEndRecord, TurnRecord } from '../session/recorder.js';
import type { TranscriptMessage } from '../../shared/records/bus.js';
import type { ConversationRecordRow, MessageRow, ToolCallRow } from '../../shared/records/rows.js';

export interface StartInfo {
  session_id: string;
  agent_id: string;
  user_id?: string;
  workspace_id: string;
  call_id?: string;
  metadata: Record<string, unknown>;
  started_at_ms: number;
  /** The engine node running the call (node-loss sweeper). */
  engine_node_id?: string;
}

export function conversationStartRow(id: string, info: StartInfo, nowMs: number, segmentKind: 'ai' | 'human' = 'ai'): ConversationRecordRow {
  return {
    id,
    session_id: info.session_id,
    user_id: info.user_id || null,
    agent_id: info.agent_id,
    workspace_id: info.workspace_id,
    call_id: info.call_id || null,
    segment_kind: segmentKind,
    status: 'active',
    total_turns: 0,
    total_duration_ms: 0,
    avg_response_latency_ms: 0,
    metadata: info.metadata ?? {},
    started_at: new Date(info.started_at_ms),
    ended_at: null,
    created_at: new Date(nowMs),
    updated_at: new Date(nowMs),
    engine_node_id: info.engine_node_id || null,
  };
}

/** The whole row in its final state: the end is an upsert, so it lands even if the start was lost. */
export function conversationEndRow(start: ConversationRecordRow, rec: CallEndRecord): ConversationRecordRow {
  return {
    ...start,
    status: rec.status,
    total_turns: rec.total_turns,
    total_duration_ms: Math.max(0, Math.round(rec.total_duration_ms)),
    avg_response_latency_ms: Math.max(0, Math.round(rec.avg_response_latency_ms)),
    metadata: { ...start.metadata, ...rec.metadata, end_reason: rec.reason },
    ended_at: new Date(rec.ended_at_ms),
    updated_at: new Date(rec.ended_at_ms),
  };
}

export interface TurnRows {
  user: MessageRow;
  assistant: MessageRow;
  toolCalls: ToolCallRow[];
}

const EMPTY_MESSAGE = {
  tool_calls: [],
  tool_call_id: null,
  reasoning_content: null,
  audio_path: null,
  asr_provider: null,
  asr_model: null,
  asr_latency_ms: null,
  asr_confidence: null,
  llm_provider: null,
  llm_model: null,
  llm_latency_ms: null,
  tokens_input: null,
  tokens_output: null,
  tts_provider: null,
  tts_latency_ms: null,
  total_latency_ms: null,
  internal_overhead_ms: null,
} as const;

/**
 * One turn: the caller message (ASR fields) and the agent reply (LLM, TTS, total and overhead;
 * `asr_latency_ms` repeated so `asr + llm + tts + internal_overhead = total` holds on the reply row
 * whenever audio was played). `llm_latency_ms` is the model's share of the wait before the first
 * audio: every whole step that ended in tool calls plus the last step's time to first token, plus
 * tool execution time (the breakdown is in the reply's metadata).
 */
export function turnRows(conversationId: string, rec: TurnRecord): TurnRows {
  const t = rec.timing;
  let llmBeforeAudioMs = 0;
  t.steps.forEach((s, i) => (llmBeforeAudioMs += i < t.steps.length - 1 ? s.llm_total_ms : s.llm_ttfb_ms));
  if (t.steps.length === 0) llmBeforeAudioMs = t.llm_ttfb_ms;
  const assistantId = newId();
  const at = rec.started_at_ms;
  const toolCalls: ToolCallRow[] = rec.tool_calls.map((c, i) => ({
    id: newId(),
    message_id: assistantId,
    conversation_id: conversationId,
    tool_name: c.tool_name,
    tool_input: jsonSafe(c.tool_input ?? {}),
    tool_output: c.tool_output === undefined ? null : jsonSafe(c.tool_output),
    status: c.status,
    latency_ms: Math.max(0, Math.round(c.latency_ms)),
    error_message: c.error_message ?? null,
    billable: true,
    created_at: new Date(at + 1 + i),
  }));
  const user: MessageRow = {
    ...EMPTY_MESSAGE,
    tool_calls: [],
    id: newId(),
    conversation_id: conversationId,
    turn_number: rec.turn,
    role: 'user',
    content: storableText(rec.user_text),
    asr_provider: rec.asr.provider,
    asr_model: rec.asr.model ?? null,
    asr_latency_ms: Math.round(t.asr_ms),
    asr_confidence: rec.asr.confidence ?? null,
    metadata: {},
    billable: true,
    created_at: new Date(at),
  };
  const assistant: MessageRow = {
    ...EMPTY_MESSAGE,
    id: assistantId,
    conversation_id: conversationId,
    turn_number: rec.turn,
    role: 'assistant',
    content: storableText(rec.assistant_text),
    tool_calls: toolCalls.map((c) => ({ id: c.id, name: c.tool_name })),
    asr_latency_ms: Math.round(t.asr_ms),
    llm_provider: rec.llm.provider,
    llm_model: rec.llm.model ?? null,
    llm_latency_ms: Math.round(llmBeforeAudioMs + t.tool_ms),
    tokens_input: rec.llm.tokens_input,
    tokens_output: rec.llm.tokens_output,
    tts_provider: rec.tts.provider,
    tts_latency_ms: Math.round(t.tts_ttfb_ms),
    total_latency_ms: Math.round(t.total_ms),
    internal_overhead_ms: Math.round(t.internal_overhead_ms),
    metadata: {
      // Transport telemetry of the turn (carrier jitter-buffer stats: loss, late, reordered, depth).
      ...rec.metadata,
      interrupted: rec.interrupted,
      llm_ttfb_ms: t.llm_ttfb_ms,
      llm_total_ms: t.llm_total_ms,
      tool_ms: t.tool_ms,
      steps: t.steps,
      tool_call_ids: Object.fromEntries(rec.tool_calls.map((c, i) => [toolCalls[i].id, c.tool_call_id])),
      // Why a reply is empty or cut short (also the turn's `llm` pipeline event).
      ...(rec.llm.error !== undefined ? { llm_error: rec.llm.error } : {}),
    },
    billable: true,
    created_at: new Date(at + 1 + toolCalls.length),
  };
  return { user, assistant, toolCalls };
}

/**
 * The agent's own prompt (welcome, idle nudge, goodbye) as one assistant message: no caller
 * message, no LLM. `metadata.prompt` says which, so analytics that pair user and assistant
 * messages per turn can tell it from a reply.
 */
export function agentMessageRow(conversationId: string, rec: AgentMessageRecord): MessageRow {
  return {
    ...EMPTY_MESSAGE,
    tool_calls: [],
    id: newId(),
    conversation_id: conversationId,
    turn_number: rec.turn,
    role: 'assistant',
    content: storableText(rec.text),
    tts_provider: rec.tts.provider,
    metadata: { prompt: rec.kind, interrupted: rec.interrupted, ...(rec.notice ? { platform_notice: rec.notice } : {}) },
    // A platform notice is not the customer's usage (docs/billing.md).
    billable: !rec.notice,
    created_at: new Date(rec.started_at_ms),
  };
}


/**
 * A plain JSON copy of a tool's input or output (turn-level cost, not per frame): drops what
 * jsonb cannot hold (NUL characters, BigInt as text, cycles as a marker) so the row is accepted.
 */
export function jsonSafe(v: unknown): unknown {
  const seen = new WeakSet<object>();
  try {
    return JSON.parse(
      JSON.stringify(v, (_k, x: unknown) => {
        if (typeof x === 'bigint') return x.toString();
        if (typeof x === 'string') return storableText(x);
        if (x && typeof x === 'object') {
          if (seen.has(x)) return '[circular]';
          seen.add(x);
        }
        return x;
      }) ?? 'null',
    );
  } catch {
    return String(v);
  }
}

/** API JSON of a message row (nulls dropped, as the API leaves them absent). */
export function messageEventJson(m: MessageRow): TranscriptMessage {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(m)) {
    if (v === null || k === 'audio_path') continue;
    out[k] = v instanceof Date ? v.toISOString() : v;
  }
  return out as TranscriptMessage;
}

export function toolCallEventJson(c: ToolCallRow): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(c)) {
    if (v === null && k === 'error_message') continue;
    out[k] = v instanceof Date ? v.toISOString() : v;
  }
  return out;
}
