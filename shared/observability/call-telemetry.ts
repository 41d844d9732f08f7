/**
 * What a call reports to observability, and when: only at turn boundaries, barge-ins, provider
 * failures and the call's end, never per audio frame. The engine's per-frame counters stay in
 * the transports and are read at scrape time (`engine-metrics.ts`).
 */

/** One finished agent reply, in the call's monotonic milliseconds (`Clock.monotonicMs`). */
export interface TurnObservation {
  turn: number;
  interrupted: boolean;
  /** Caller speech end (or injection): the latency origin. */
  originMs: number;
  /** When the reply ended (played, cut, or abandoned at the call's end). */
  endMs: number;
  asrMs: number;
  /** The caller's text came from speech: the turn has an ASR final (else it was injected). */
  spoken: boolean;
  /** Start of each LLM step (index 0 = step 1); absent entries: the step never started. */
  stepStartedAt: readonly number[];
  steps: ReadonlyArray<{ step: number; llm_ttfb_ms: number; llm_total_ms: number; tool_ms: number }>;
  tools: ReadonlyArray<{ step: number; name: string; status: string; latencyMs: number }>;
  /** First TTS request and first audio from it (0: none). */
  ttsRequestAt: number;
  ttsFirstAudioAt: number;
  /** `turn_complete.timing` as sent to the client. */
  timing: { asr_ms: number; llm_ttfb_ms: number; tool_ms: number; tts_ttfb_ms: number; total_ms: number; internal_overhead_ms: number };
  llmError?: string;
  ttsFailed: boolean;
}

export type ProviderComponent = 'asr' | 'llm' | 'tts';

export interface CallTelemetry {
  turn(t: TurnObservation): void;
  /** A barge-in was confirmed (the agent's answer was cut by the caller). */
  bargeIn(): void;
  providerError(component: ProviderComponent): void;
  /** Idempotent. */
  end(reason: string): void;
}

/**
 * Model time before the first audio: whole steps that ended in tool calls, then the last step's
 * TTFB (the same sum `internal_overhead_ms` subtracts, `media-engine/session/run-state.ts`).
 */
export function llmBeforeAudioMs(steps: TurnObservation['steps']): number {
  let ms = 0;
  steps.forEach((s, i) => (ms += i < steps.length - 1 ? s.llm_total_ms : s.llm_ttfb_ms));
  return ms;
}
