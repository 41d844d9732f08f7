/**
 * Turn accounting of one call: every completed or interrupted reply is counted (turns, average
 * latency for the call-end record) and becomes a turn record for the durable conversation.
 */
import type { TurnTiming } from '../../shared/protocol/voice-socket.js';
import type { TurnObservation } from '../../shared/observability/call-telemetry.js';
import type { CallActorDeps } from './actor-deps.js';
import type { CallEndRecord, TurnRecord } from './recorder.js';
import type { RunState } from './run-state.js';

export class TurnAccounting {
  private completed = 0;
  private latencySumMs = 0;
  private latencyCount = 0;

  constructor(private readonly startedAtMs: number) {}

  /** Counts a finished reply (interrupted or not) and returns its timing. */
  count(run: RunState): TurnTiming {
    const timing = run.timing();
    this.completed++;
    // A reply cut before any audio has no latency: it would pull the average towards zero.
    if (timing.total_ms > 0) {
      this.latencySumMs += timing.total_ms;
      this.latencyCount++;
    }
    return timing;
  }

  /** The call-end record; `error` is the only reason that marks the call failed. */
  endRecord(reason: string, nowMs: number): CallEndRecord {
    return {
      status: reason === 'error' ? 'failed' : 'completed',
      reason,
      total_turns: this.completed,
      total_duration_ms: nowMs - this.startedAtMs,
      avg_response_latency_ms: this.latencyCount ? Math.round(this.latencySumMs / this.latencyCount) : 0,
      ended_at_ms: nowMs,
    };
  }
}

/** The durable record of one reply: what was said and heard, timing, providers, tools, audio. */
export function turnRecord(
  d: CallActorDeps,
  run: RunState,
  assistantText: string,
  timing: TurnTiming,
  userAudio: Int16Array | undefined,
  agentAudio?: { samples: Int16Array; sampleRateHz: number },
): TurnRecord {
  const { asr, llm, tts } = d.providers;
  return {
    turn: run.turn,
    user_text: run.userText,
    assistant_text: assistantText,
    interrupted: run.interrupted,
    timing,
    asr: { provider: asr.label, model: d.config.providers.asr.model_name, ...(run.asrConfidence !== undefined ? { confidence: run.asrConfidence } : {}) },
    llm: { provider: llm.label, model: llm.model, tokens_input: run.tokensIn, tokens_output: run.tokensOut, error: run.llmError },
    tts: { provider: tts.label, model: d.config.providers.tts.model_name, failed: run.ttsFailed || undefined },
    tool_calls: run.toolCalls,
    user_audio: userAudio,
    user_audio_rate_hz: d.transport.inRateHz,
    ...(agentAudio ? { agent_audio: agentAudio } : {}),
    started_at_ms: run.startedAtMs,
    metadata: d.transportStats ? { transport: d.transportStats() } : undefined,
    ...(run.unanswered ? { unanswered: true } : {}),
  };
}

/** The reply as metrics and traces see it (shared/observability): timing and its marks. */
export function turnObservation(run: RunState, timing: TurnTiming, endMs: number): TurnObservation {
  return {
    turn: run.turn,
    interrupted: run.interrupted,
    originMs: run.originMs,
    endMs,
    asrMs: run.asrMs,
    spoken: run.spoken,
    stepStartedAt: run.stepStartedAt,
    steps: run.steps,
    tools: run.toolCalls.map((t, i) => ({ step: run.toolSteps[i] ?? 0, name: t.tool_name, status: t.status, latencyMs: t.latency_ms })),
    ttsRequestAt: run.ttsRequestAt,
    ttsFirstAudioAt: run.ttsFirstAudioAt,
    timing,
    llmError: run.llmError,
    ttsFailed: run.ttsFailed,
  };
}
