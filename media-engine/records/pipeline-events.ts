/**
 * A turn record -> its pipeline events (migration 0009; docs/analytics.md): one row per provider
 * step, so the control plane can answer "how fast and how reliable was each provider/model" with
 * one grouped query. Pure and synchronous (called on the recorder's enqueue path, no I/O); ids
 * are chosen here (UUID v7) so a retried batch is a no-op like the turn's other rows.
 *
 * What each event measures (the same clocks as the turn's message rows):
 * - `asr`: `timing.asr_ms` (speech end -> final transcript). Left out for a turn with neither
 *   caller audio nor ASR time: injected text never went through ASR.
 * - `llm`: model time before the reply started to stream: every whole step that ended in tool
 *   calls plus the last step's time to first token (tool time excluded: tools have their own
 *   events). `error` when the model failed (`llm_error`), else `interrupted` when the caller
 *   barged in, else `success`.
 * - `tts`: `timing.tts_ttfb_ms` (request -> first audio). Only when there was something to speak
 *   or TTS failed; `error` when it gave up after its retries, else `interrupted` / `success`.
 * - `tool`: one per tool call; provider = the tool's name, its own status and latency.
 */
import { newId } from '../../shared/ids.js';
import type { PipelineEventRow, PipelineEventStatus } from '../../shared/records/rows.js';
import type { TurnRecord } from '../session/recorder.js';

/** Longest error message kept on an event (the full text is in the logs). */
export const MAX_EVENT_ERROR_CHARS = 500;

export interface EventOwner {
  conversationId: string;
  agentId: string;
  workspaceId: string;
}

export function pipelineEventRows(owner: EventOwner, rec: TurnRecord): PipelineEventRow[] {
  const t = rec.timing;
  const at = new Date(rec.started_at_ms);
  const row = (type: PipelineEventRow['event_type'], status: PipelineEventStatus, provider: string, model: string | undefined, latencyMs: number, error?: string): PipelineEventRow => ({
    id: newId(),
    conversation_id: owner.conversationId,
    agent_id: owner.agentId,
    workspace_id: owner.workspaceId,
    turn_number: rec.turn,
    event_type: type,
    status,
    provider: provider || 'unknown',
    model_id: model ?? '',
    latency_ms: ms(latencyMs),
    error_message: error ? error.slice(0, MAX_EVENT_ERROR_CHARS) : null,
    created_at: at,
  });
  const cut = (failed: boolean): PipelineEventStatus => (failed ? 'error' : rec.interrupted ? 'interrupted' : 'success');
  const out: PipelineEventRow[] = [];

  if (t.asr_ms > 0 || (rec.user_audio?.length ?? 0) > 0) out.push(row('asr', 'success', rec.asr.provider, rec.asr.model, t.asr_ms));
  // The caller's last words, never answered: no model or voice ran for them.
  if (rec.unanswered) return out;

  let llmMs = 0;
  t.steps.forEach((s, i) => (llmMs += i < t.steps.length - 1 ? s.llm_total_ms : s.llm_ttfb_ms));
  if (t.steps.length === 0) llmMs = t.llm_ttfb_ms;
  out.push(row('llm', cut(rec.llm.error !== undefined), rec.llm.provider, rec.llm.model, llmMs, rec.llm.error));

  for (const c of rec.tool_calls) out.push(row('tool', c.status === 'error' ? 'error' : 'success', c.tool_name, undefined, c.latency_ms, c.error_message));

  const ttsFailed = rec.tts.failed === true;
  if (ttsFailed || rec.assistant_text.length > 0 || t.tts_ttfb_ms > 0) {
    out.push(row('tts', cut(ttsFailed), rec.tts.provider, rec.tts.model, t.tts_ttfb_ms, ttsFailed ? 'TTS failed after retries' : undefined));
  }
  return out;
}

/** Whole non-negative milliseconds (the column is an integer with a check >= 0). */
function ms(v: number): number {
  return Number.isFinite(v) && v > 0 ? Math.round(v) : 0;
}
