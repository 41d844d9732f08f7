/**
 * Row shapes of the durable conversation record (migrations 0003 and 0005): one definition for
 * the media engine, which writes them (`media-engine/records/`), and the control plane, which
 * reads and annotates them (`control-plane/conversations/`). Column names are the SQL ones.
 */

/** `conversations.status` (check constraint in migration 0003). */
export type ConversationStatus = 'active' | 'completed' | 'failed';
/** `conversations.segment_kind`: an AI stint or a human one after a transfer. */
export type SegmentKind = 'ai' | 'human';

/**
 * Every column of a conversation the engine's record writer sets (its builders set every one:
 * postgres.js multi-row inserts take the first row's keys). The summary columns are not among
 * them: the post-call pipeline writes those after the call.
 */
export interface ConversationRecordRow {
  id: string;
  session_id: string;
  user_id: string | null;
  agent_id: string;
  workspace_id: string;
  call_id: string | null;
  segment_kind: SegmentKind;
  status: ConversationStatus;
  total_turns: number;
  total_duration_ms: number;
  avg_response_latency_ms: number;
  metadata: Record<string, unknown>;
  started_at: Date;
  ended_at: Date | null;
  created_at: Date;
  updated_at: Date;
  /** The engine node running the call (migration 0017): its loss finalizes the row (`node_lost`). */
  engine_node_id: string | null;
}

/** A stored conversation as the control plane reads it (`select *`). */
export interface ConversationRow extends ConversationRecordRow {
  summary: string | null;
}

export interface MessageRow {
  id: string;
  conversation_id: string;
  turn_number: number;
  role: 'user' | 'assistant';
  content: string;
  tool_calls: Array<{ id: string; name: string }>;
  tool_call_id: string | null;
  reasoning_content: string | null;
  audio_path: string | null;
  asr_provider: string | null;
  asr_model: string | null;
  asr_latency_ms: number | null;
  asr_confidence: number | null;
  llm_provider: string | null;
  llm_model: string | null;
  llm_latency_ms: number | null;
  tokens_input: number | null;
  tokens_output: number | null;
  tts_provider: string | null;
  tts_latency_ms: number | null;
  total_latency_ms: number | null;
  internal_overhead_ms: number | null;
  metadata: Record<string, unknown>;
  /**
   * Counted by usage metering (migration 0026): true on what our engine's pipeline produced for
   * the caller; false on platform notices (credit ran out, node shutdown) and on messages written
   * over REST or by the human stint's transcription, which our LLM and TTS never made (those
   * writers set it: the column defaults to true for engines of the previous release). Not in the API.
   */
  billable: boolean;
  created_at: Date;
}

export interface ToolCallRow {
  id: string;
  message_id: string;
  conversation_id: string;
  tool_name: string;
  tool_input: unknown;
  tool_output: unknown;
  status: string;
  latency_ms: number;
  error_message: string | null;
  /** Counted by usage metering: the engine's own tool calls only (migration 0026). Not in the API. */
  billable: boolean;
  created_at: Date;
}

/** `pipeline_events.event_type` / `.status` (check constraints in migration 0009). */
export type PipelineEventType = 'asr' | 'llm' | 'tts' | 'tool';
export type PipelineEventStatus = 'success' | 'error' | 'interrupted';

/** One provider step of a turn (migration 0009), written by the engine with the turn's messages. */
export interface PipelineEventRow {
  id: string;
  conversation_id: string;
  agent_id: string;
  workspace_id: string;
  turn_number: number;
  event_type: PipelineEventType;
  status: PipelineEventStatus;
  provider: string;
  model_id: string;
  latency_ms: number;
  error_message: string | null;
  created_at: Date;
}
