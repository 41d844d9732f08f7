/**
 * What a call hands to the durable record (conversation rows). The actor calls these
 * synchronously; implementations must only enqueue (never await Postgres on the call path).
 */
import type { TurnTiming } from '../../shared/protocol/voice-socket.js';

export interface ToolCallRecord {
  id: string;
  tool_call_id: string;
  tool_name: string;
  tool_input: unknown;
  tool_output: unknown;
  /** `interrupted`: the turn was cut while the tool ran (its request may have been sent). */
  status: 'success' | 'error' | 'interrupted';
  latency_ms: number;
  error_message?: string;
}

export interface TurnRecord {
  turn: number;
  user_text: string;
  assistant_text: string;
  interrupted: boolean;
  timing: TurnTiming;
  asr: { provider: string; model?: string; confidence?: number };
  /** `error`: the model failed in this turn (message of its `llm_error`). */
  llm: { provider: string; model?: string; tokens_input: number; tokens_output: number; error?: string };
  /** `failed`: TTS gave up after its retries in this turn. */
  tts: { provider: string; model?: string; failed?: boolean };
  tool_calls: ToolCallRecord[];
  /** Caller audio of the turn (PCM at `user_audio_rate_hz`) and the agent audio actually played (transport rate). */
  user_audio?: Int16Array;
  /** Rate of `user_audio`: the transport's inbound rate (8000 carrier, 16000 browser). Absent: 16000. */
  user_audio_rate_hz?: number;
  agent_audio?: { samples: Int16Array; sampleRateHz: number };
  started_at_ms: number;
  /** Extra telemetry of the turn, e.g. `transport` (carrier jitter-buffer counters). */
  metadata?: Record<string, unknown>;
  /** The call ended before the turn was answered (the caller hung up mid-sentence): only the caller's message is stored. */
  unanswered?: boolean;
}

/**
 * What the agent said on its own, outside a caller turn: the welcome, an idle nudge, a goodbye
 * (idle, credit, drain). `turn` is the caller turn it followed (0 = before any). Only what the
 * caller heard is stored; `interrupted` when it was cut.
 */
/** Why the platform spoke on its own: the workspace's credit ran out, or the node shut down. */
export type PlatformNotice = 'credit_exhausted' | 'shutdown';

export interface AgentMessageRecord {
  kind: 'welcome' | 'nudge' | 'goodbye';
  turn: number;
  text: string;
  interrupted: boolean;
  /** Said by the platform, not the agent's configuration: not metered (`metadata.platform_notice`). */
  notice?: PlatformNotice;
  tts: { provider: string; model?: string };
  started_at_ms: number;
  /** What the caller was played of it, at the transport rate (only when the recorder keepsAgentAudio). */
  agent_audio?: { samples: Int16Array; sampleRateHz: number };
}

export interface CallEndRecord {
  status: 'completed' | 'failed';
  reason: string;
  total_turns: number;
  total_duration_ms: number;
  avg_response_latency_ms: number;
  ended_at_ms: number;
  /** Merged into the conversation's metadata (flow mode: `flow: {node_path, variables, ...}`). */
  metadata?: Record<string, unknown>;
}

export interface CallRecorder {
  /**
   * The recorder stores the agent's audio (`agent_audio` of each reply and agent message): only then does the call
   * keep what it sends (a reply's audio held until its turn ends costs allocations and GC, ~10 %
   * of an engine's CPU at 400 carrier calls, for nothing when no one stores it).
   */
  readonly keepsAgentAudio?: boolean;
  start(info: { session_id: string; agent_id: string; user_id?: string; workspace_id: string; call_id?: string; metadata: Record<string, unknown>; started_at_ms: number }): void;
  turn(rec: TurnRecord): void;
  /** Optional so recorders that only count turns need not care. */
  agentMessage?(rec: AgentMessageRecord): void;
  end(rec: CallEndRecord): void;
}
