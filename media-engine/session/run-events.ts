/**
 * Book-keeping for the model and tool results of an agent run, and the socket event each one
 * becomes. Pure with respect to the call: updates the run's own record, returns the event.
 * Audio results (`tts_*` pieces and chunks, `run_done`) are the actor's business.
 */
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import type { TurnMsg } from './messages.js';
import { type RunState, toolInput } from './run-state.js';

/** Longest tool result in the live `tool_call_result` event (spec Limits); the record keeps all. */
export const LIVE_TOOL_RESULT_CHARS = 200;

type ModelMsg = Exclude<TurnMsg, { kind: 'tts_piece_start' | 'tts_audio' | 'tts_piece_end' | 'run_done' }>;

export function isModelMsg(m: TurnMsg): m is ModelMsg {
  return m.kind !== 'tts_piece_start' && m.kind !== 'tts_audio' && m.kind !== 'tts_piece_end' && m.kind !== 'run_done';
}

export function recordRunMsg(run: RunState, m: ModelMsg, sessionId: string): ServerEvent | undefined {
  const turn = run.turn;
  switch (m.kind) {
    case 'llm_started':
      return m.step === 1 ? { type: 'llm_start', turn, step: 1 } : { type: 'llm_step_start', turn, step: m.step };
    case 'llm_delta':
      run.llmText += m.text;
      return { type: 'llm_chunk', text: m.text, turn };
    case 'llm_step_done':
      if (run.llmTtfbMs < 0) run.llmTtfbMs = m.ttfbMs;
      run.llmTotalMs += m.totalMs;
      run.tokensIn += m.inputTokens;
      run.tokensOut += m.outputTokens;
      run.steps.push({ step: m.step, llm_ttfb_ms: m.ttfbMs, llm_total_ms: m.totalMs, tool_ms: 0, tools: [] });
      return m.toolCalls === 0 ? { type: 'llm_end', turn, text: run.llmText, llm_ttfb_ms: Math.max(0, run.llmTtfbMs), llm_total_ms: run.llmTotalMs } : undefined;
    case 'llm_error':
      run.llmError = m.message;
      if (m.ttfbMs !== undefined && m.totalMs !== undefined) {
        // Text arrived before the failure and was spoken: the turn's timing counts the step.
        if (run.llmTtfbMs < 0) run.llmTtfbMs = m.ttfbMs;
        run.llmTotalMs += m.totalMs;
        run.steps.push({ step: m.step, llm_ttfb_ms: m.ttfbMs, llm_total_ms: m.totalMs, tool_ms: 0, tools: [] });
      }
      return { type: 'llm_error', text: m.message, turn, ...(m.code ? { code: m.code } : {}) };
    case 'tools_started': {
      run.toolsStarted(m.calls, m.step, m.atMs);
      const step = run.steps.find((s) => s.step === m.step);
      if (step) step.tools = m.calls.map((c) => c.name);
      const tools = m.calls.map((c) => ({ id: c.id, name: c.name, arguments: toolInput(c.arguments) }));
      return { type: 'tool_calls_started', turn, tools, step: m.step, parallel: m.calls.length > 1, timing: { llm_ms: m.llmMs } };
    }
    case 'tool_progress':
      return { type: 'tool_call_in_progress', turn, tool_name: m.call.name, tool_call_id: m.call.id, tool_input: toolInput(m.call.arguments), step: m.step };
    case 'tool_result': {
      const r = m.result;
      run.toolFinished(m.call.id, r.content);
      const step = run.steps.find((s) => s.step === m.step);
      // Parallel tools overlap: a step's tool time is its slowest tool.
      if (step) step.tool_ms = Math.max(step.tool_ms, r.latencyMs);
      run.toolMs = run.steps.reduce((a, s) => a + s.tool_ms, 0);
      run.recordToolCall(sessionId, m.call, m.step, r);
      return { type: 'tool_call_result', turn, tool_name: m.call.name, tool_call_id: m.call.id, result: r.content.slice(0, LIVE_TOOL_RESULT_CHARS), tool_execution_ms: r.latencyMs, step: m.step };
    }
    case 'tts_retry':
      return { type: 'tts_retry', attempt: m.attempt, backoff_ms: m.backoffMs };
    case 'tts_exhausted':
      run.ttsFailed = true;
      return { type: 'tts_retry_exhausted', attempt: m.attempt };
    case 'tts_failed':
      run.ttsFailed = true;
      return {
        type: 'error',
        code: 'tts_failed',
        message: m.partial ? `speech synthesis stopped mid-sentence: ${m.message}` : `speech synthesis failed: ${m.message}`,
        fatal: false,
        ...(m.code ? { provider_code: m.code } : {}),
        partial: m.partial,
      };
    case 'tts_done':
      return { type: 'tts_complete', tts_gen_ms: m.genMs, tts_api_ttfb_ms: m.apiTtfbMs, tts_streaming_saved_ms: Math.max(0, m.genMs - m.apiTtfbMs), turn, step: m.step };
  }
}

