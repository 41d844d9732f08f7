/**
 * Everything that reaches a CallActor goes through its mailbox as one of these (one
 * actor per call: a FIFO mailbox processed to completion). Results of a turn's async work carry the turn number; results of a superseded turn are dropped.
 */
import type { PcmChunk, LlmMessage, LlmToolCall } from '../../shared/providers/types.js';
import type { AsrEvent } from '../../shared/providers/types.js';
import type { ToolResult } from './tools.js';

export type TurnMsg =
  /** `atMs`: the runner's clock when the request started (the message may wait in the mailbox). */
  | { kind: 'llm_started'; step: number; atMs: number }
  | { kind: 'llm_delta'; step: number; text: string }
  | { kind: 'llm_step_done'; step: number; text: string; ttfbMs: number; totalMs: number; inputTokens: number; outputTokens: number; toolCalls: number }
  | { kind: 'tools_started'; step: number; calls: LlmToolCall[]; llmMs: number }
  | { kind: 'tool_progress'; step: number; call: LlmToolCall }
  | { kind: 'tool_result'; step: number; call: LlmToolCall; result: ToolResult }
  | { kind: 'llm_error'; step: number; message: string }
  | { kind: 'tts_piece_start'; text: string; step: number }
  | { kind: 'tts_audio'; chunk: PcmChunk }
  | { kind: 'tts_piece_end' }
  | { kind: 'tts_retry'; attempt: number; backoffMs: number }
  | { kind: 'tts_exhausted'; attempt: number }
  | { kind: 'tts_done'; genMs: number; apiTtfbMs: number; step: number }
  | { kind: 'run_done'; appended: LlmMessage[]; assistantText: string };

export type CallMsg =
  | { kind: 'asr'; event: AsrEvent }
  | { kind: 'asr_closed'; error?: string }
  /** `runId` identifies the agent run that produced it; stale runs are dropped. */
  | { kind: 'turn'; runId: number; msg: TurnMsg }
  | { kind: 'timer'; name: 'barge_confirm' | 'idle' | 'endpoint' | 'hangup' | 'credit' }
  | { kind: 'playback_done' }
  /** `admitted`: already passed `CallActor.injectText()` (rate limit charged); absent: admitted on arrival. */
  | { kind: 'text_inject'; text: string; role: 'user' | 'system'; admitted?: boolean }
  | { kind: 'end'; reason: string }
  | { kind: 'transport_closed' }
  | { kind: 'mark'; name: string };
