/**
 * The browser voice socket protocol (spec document 2, "Events"): typed, decoded only at the edge.
 * Audio travels as binary frames (16 kHz 16-bit LE mono PCM, no header), control as JSON text.
 */
import { unstorableProblem } from '../unstorable.js';

export interface TurnTimingStep {
  step: number;
  llm_ttfb_ms: number;
  llm_total_ms: number;
  tool_ms: number;
  tools: string[];
}

export interface TurnTiming {
  asr_ms: number;
  llm_ttfb_ms: number;
  llm_total_ms: number;
  tool_ms: number;
  tts_ttfb_ms: number;
  /** Speech end (or injection) to first agent audio frame sent. */
  total_ms: number;
  /** Everything in total_ms that is not a provider's time. */
  internal_overhead_ms: number;
  interrupted: boolean;
  steps: TurnTimingStep[];
}

export interface ToolBrief {
  id: string;
  name: string;
  arguments: unknown;
}

/** Every server event; `server_ts` (epoch ms) is added when sent. */
export type ServerEvent =
  | { type: 'pipeline_ready'; providers: { asr: string; llm: string; tts: string } }
  | { type: 'user_started_speaking' }
  | { type: 'interim_transcription'; text: string }
  | { type: 'transcription'; text: string; turn: number; speech_duration_ms: number; asr_latency_ms: number }
  | { type: 'llm_start'; turn: number; step: number }
  | { type: 'llm_step_start'; turn: number; step: number }
  | { type: 'llm_chunk'; text: string; turn: number }
  | { type: 'llm_end'; turn: number; text: string; llm_ttfb_ms: number; llm_total_ms: number }
  /** `code`: the provider error's stable code (FIRST_BYTE_TIMEOUT, AUTH_FAILED, TOO_MANY_TOOL_STEPS ...), when there is one. */
  | { type: 'llm_error'; text: string; turn: number; code?: string }
  | { type: 'tool_calls_started'; turn: number; tools: ToolBrief[]; step: number; parallel: boolean; timing: { llm_ms: number } }
  | { type: 'tool_call_in_progress'; turn: number; tool_name: string; tool_call_id: string; tool_input: unknown; step: number }
  | { type: 'tool_call_result'; turn: number; tool_name: string; tool_call_id: string; result: string; tool_execution_ms: number; step: number }
  | { type: 'tts_audio_start'; turn: number }
  | { type: 'tts_complete'; tts_gen_ms: number; tts_api_ttfb_ms: number; tts_streaming_saved_ms: number; turn: number; step: number }
  | { type: 'tts_retry'; attempt: number; backoff_ms: number }
  | { type: 'tts_retry_exhausted'; attempt: number }
  | { type: 'turn_complete'; turn: number; user_text: string; assistant_text: string; timing: TurnTiming }
  | { type: 'phase_idle' }
  | { type: 'idle_check'; text: string; attempt: number; max_attempts: number }
  | { type: 'idle_disconnect'; text: string; reason: string; total_attempts: number }
  | { type: 'call_ended'; reason: string }
  /** Carrier calls: a key the caller pressed (its text `[caller pressed 4]` is answered as the caller's turn). */
  | { type: 'dtmf'; digit: string }
  /** Addition (issue 19, docs/flows.md): a `flow` agent's call entered a node (the start node at call start). */
  | { type: 'flow_node_entered'; node_id: string; label: string; node_type: string; turn: number }
  /** `provider_code` and `partial`: a `tts_failed` error's provider code (TTS_TOO_SLOW ...) and whether part of the sentence was heard. */
  | { type: 'error'; message: string; code?: string; fatal?: boolean; provider_code?: string; partial?: boolean };

export type ServerEventType = ServerEvent['type'];

/**
 * `invalid`: a frame the call must answer with a non-fatal INVALID_REQUEST error rather than
 * ignore (a `text_inject` that the HTTP text route would refuse with 400, or a frame too large to
 * read): the spec gives `text_inject` the HTTP route's effect, and a silently dropped text is a
 * caller waiting for an answer that never comes.
 */
export type ClientMessage = { type: 'playback_done' } | { type: 'text_inject'; text: string; role: 'user' | 'system' } | { type: 'invalid'; message: string };

/** Longest client text frame read, in characters (a 4,000-character text_inject fits with room). */
export const MAX_CLIENT_MESSAGE_CHARS = 16_384;

/** Parses a client text frame; an unknown type or malformed JSON is `undefined` (ignored, per spec). */
export function parseClientMessage(text: string): ClientMessage | undefined {
  if (text.length > MAX_CLIENT_MESSAGE_CHARS) return { type: 'invalid', message: `a client message must be at most ${MAX_CLIENT_MESSAGE_CHARS} characters` };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!v || typeof v !== 'object') return undefined;
  const m = v as Record<string, unknown>;
  if (m.type === 'playback_done') return { type: 'playback_done' };
  if (m.type === 'text_inject') {
    // Checked as POST /voice/sessions/{id}/text checks them; blank or too long text is the call's
    // admission's to refuse (INVALID_REQUEST, the same messages as the route's).
    if (typeof m.text !== 'string') return { type: 'invalid', message: 'text_inject: text must be a string' };
    // As the HTTP text route refuses it (it was stored with the NUL dropped).
    const problem = unstorableProblem(m.text);
    if (problem) return { type: 'invalid', message: `text_inject: text ${problem}` };
    if (m.role !== undefined && m.role !== null && m.role !== 'user' && m.role !== 'system') return { type: 'invalid', message: 'text_inject: role must be user or system' };
    return { type: 'text_inject', text: m.text, role: m.role === 'system' ? 'system' : 'user' };
  }
  return undefined;
}

export const SOCKET_ERRORS = {
  sessionNotFound: 'session not found, start a session first',
  /** Not in the spec's table (which covers unknown or expired sessions): a live session's second socket. */
  sessionInUse: 'session already has a socket: one socket per session',
  atCapacity: 'server at capacity',
  insufficientBalance: 'insufficient credit balance: top up the workspace to call',
} as const;

/** `code` of the failure frame for a second socket to a live session (`SOCKET_ERRORS.sessionInUse`). */
export const SESSION_IN_USE = 'session_in_use';

/** `code` of the failure frame for an empty credit balance (spec doc 2, socket failure frames). */
export const INSUFFICIENT_BALANCE = 'insufficient_balance';
