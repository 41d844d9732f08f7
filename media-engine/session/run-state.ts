/**
 * Book-keeping of one agent run (a reply turn, the welcome, a nudge): timing marks, steps, tool
 * calls and token counts, turned into `turn_complete.timing` and the turn record.
 */
import type { TurnTiming, TurnTimingStep } from '../../shared/protocol/voice-socket.js';
import type { LlmMessage, LlmToolCall } from '../../shared/providers/types.js';
import type { PlatformNotice, ToolCallRecord } from './recorder.js';

/** What a tool that was cut before its result can be said to have returned: nobody knows. */
export const INTERRUPTED_TOOL_RESULT = JSON.stringify({ status: 'interrupted', note: 'The caller interrupted before this finished; its outcome is unknown.' });

export type RunKind = 'reply' | 'welcome' | 'nudge' | 'goodbye';

/** A tool call's arguments (JSON text from the model) as the record and the socket show them: parsed, or the text as it came. */
export function toolInput(args: string): unknown {
  try {
    return args.trim() ? JSON.parse(args) : {};
  } catch {
    return args;
  }
}

export class RunState {
  readonly abort = new AbortController();
  /** The runner reported `run_done`. */
  runnerDone = false;
  assistantText = '';
  appended: LlmMessage[] = [];
  /**
   * The tool calls this run made and their results, as history messages, kept as they happen:
   * a run cut before `run_done` still leaves them in the history (the tools ran, perhaps with
   * effects), so the next request neither forgets nor repeats them.
   */
  private readonly toolExchange: LlmMessage[] = [];
  /** Calls of `toolExchange` still waiting for their result, with their step and start (monotonic ms). */
  private readonly pendingToolCalls = new Map<string, { call: LlmToolCall; step: number; startedAtMs: number }>();
  llmText = '';
  steps: TurnTimingStep[] = [];
  /** Monotonic start of each LLM step (index 0 = step 1): trace spans are placed from it. */
  stepStartedAt: number[] = [];
  toolCalls: ToolCallRecord[] = [];
  /** The LLM step of each entry of `toolCalls`. */
  toolSteps: number[] = [];
  tokensIn = 0;
  tokensOut = 0;
  llmTtfbMs = -1;
  llmTotalMs = 0;
  toolMs = 0;
  ttsRequestAt = 0;
  ttsFirstAudioAt = 0;
  firstFrameSentAt = 0;
  audioStarted = false;
  interrupted = false;
  /** The caller's text came from speech (ASR), not an injection. */
  spoken = false;
  /** The ASR's confidence in the caller's text, when it gives one (the record's `asr_confidence`). */
  asrConfidence: number | undefined = undefined;
  /** The model failed this run (`llm_error`); kept for the turn's pipeline events. */
  llmError: string | undefined = undefined;
  /** TTS gave up after its retries in this run (`tts_retry_exhausted`). */
  ttsFailed = false;
  /** Not a reply at all: the caller's last words, taken when the call ended (actor.recordUnfinishedWords). */
  unanswered = false;
  /** A goodbye the platform says on its own (credit ran out, node shutdown): recorded, not metered. */
  notice: PlatformNotice | undefined = undefined;

  constructor(
    readonly id: number,
    readonly kind: RunKind,
    readonly turn: number,
    /** When the caller stopped speaking (or the text was injected): the latency origin. */
    readonly originMs: number,
    readonly asrMs: number,
    readonly userText: string,
    readonly startedAtMs: number,
  ) {}

  toolsStarted(calls: LlmToolCall[], step: number, atMs: number): void {
    this.toolExchange.push({ role: 'assistant', content: null, toolCalls: calls });
    for (const call of calls) this.pendingToolCalls.set(call.id, { call, step, startedAtMs: atMs });
  }

  toolFinished(callId: string, content: string): void {
    if (!this.pendingToolCalls.delete(callId)) return;
    this.toolExchange.push({ role: 'tool', toolCallId: callId, content });
  }

  /**
   * The tool exchange of a run that was cut: every call gets a result (providers refuse a call
   * without one); those still running are marked interrupted, in the history and in the record
   * (status `interrupted`): the request may have reached the tool's endpoint, with its effects.
   */
  cutToolExchange(sessionId: string, nowMs: number): LlmMessage[] {
    for (const [id, { call, step, startedAtMs }] of this.pendingToolCalls) {
      this.toolExchange.push({ role: 'tool', toolCallId: id, content: INTERRUPTED_TOOL_RESULT });
      this.recordToolCall(sessionId, call, step, {
        output: JSON.parse(INTERRUPTED_TOOL_RESULT) as unknown,
        status: 'interrupted',
        latencyMs: Math.max(0, Math.round(nowMs - startedAtMs)),
        error: 'the turn was cut before the tool answered; its outcome is unknown',
      });
    }
    this.pendingToolCalls.clear();
    return this.toolExchange;
  }

  /** A tool call for the turn's record (its id unique per session, turn and call), with its LLM step. */
  recordToolCall(sessionId: string, call: LlmToolCall, step: number, r: { output: unknown; status: ToolCallRecord['status']; latencyMs: number; error?: string }): void {
    this.toolSteps.push(step);
    this.toolCalls.push({
      id: `${sessionId}:${this.turn}:${call.id}`,
      tool_call_id: call.id,
      tool_name: call.name,
      tool_input: toolInput(call.arguments),
      tool_output: r.output,
      status: r.status,
      latency_ms: r.latencyMs,
      error_message: r.error,
    });
  }

  timing(): TurnTiming {
    const ttsTtfb = this.ttsFirstAudioAt && this.ttsRequestAt ? Math.max(0, Math.round(this.ttsFirstAudioAt - this.ttsRequestAt)) : 0;
    const total = this.firstFrameSentAt ? Math.max(0, Math.round(this.firstFrameSentAt - this.originMs)) : 0;
    const llmTtfb = Math.max(0, this.llmTtfbMs);
    // Model time before the first audio: whole steps that ended in tool calls, then the last step's TTFB.
    let llmBeforeAudio = 0;
    this.steps.forEach((s, i) => (llmBeforeAudio += i < this.steps.length - 1 ? s.llm_total_ms : s.llm_ttfb_ms));
    const provider = this.asrMs + llmBeforeAudio + this.toolMs + ttsTtfb;
    return {
      asr_ms: this.asrMs,
      llm_ttfb_ms: llmTtfb,
      llm_total_ms: this.llmTotalMs,
      tool_ms: this.toolMs,
      tts_ttfb_ms: ttsTtfb,
      total_ms: total,
      internal_overhead_ms: total ? Math.max(0, total - provider) : 0,
      interrupted: this.interrupted,
      steps: this.steps,
    };
  }
}
