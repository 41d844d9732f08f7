/** Turn record -> pipeline events: which events, their status and latency (known vectors). */
import { describe, expect, it } from 'vitest';
import { MAX_EVENT_ERROR_CHARS, pipelineEventRows } from '../../../media-engine/records/pipeline-events.js';
import { turnRecord } from './fixtures.js';

const owner = { conversationId: '0193a4c2-7b7e-7cc1-8f00-0000000000c1', agentId: '0193a4c2-7b7e-7cc1-8f00-0000000000a1', workspaceId: '0193a4c2-7b7e-7cc1-8f00-0000000000b1' };
const brief = (rows: ReturnType<typeof pipelineEventRows>) => rows.map((r) => [r.event_type, r.status, r.provider, r.model_id, r.latency_ms]);

describe('pipelineEventRows', () => {
  it('a plain turn: asr, llm (time to first token), tts, owned by the conversation and stamped at the turn start', () => {
    const rec = { ...turnRecord(3, { startedAtMs: 1_700_000_000_000 }), tts: { provider: 'sim', model: 'sim-voice' } };
    const rows = pipelineEventRows(owner, rec);
    expect(brief(rows)).toEqual([
      ['asr', 'success', 'sim', 'sim-asr', 180],
      ['llm', 'success', 'sim', 'sim-llm', 320],
      ['tts', 'success', 'sim', 'sim-voice', 140],
    ]);
    for (const r of rows) {
      expect(r).toMatchObject({ conversation_id: owner.conversationId, agent_id: owner.agentId, workspace_id: owner.workspaceId, turn_number: 3, error_message: null });
      expect(r.created_at.getTime()).toBe(1_700_000_000_000);
    }
    expect(new Set(rows.map((r) => r.id)).size).toBe(3);
  });

  it("the caller's unanswered last words (call ended mid-sentence): only the asr event, no llm or tts", () => {
    const rec = { ...turnRecord(4), assistant_text: '', unanswered: true };
    expect(brief(pipelineEventRows(owner, rec)).map((r) => r[0])).toEqual(['asr']);
  });

  it('a tool turn: llm = the whole tool step + the last step ttfb (tool time excluded), one tool event', () => {
    const rows = pipelineEventRows(owner, turnRecord(2, { tool: true }));
    expect(brief(rows)).toEqual([
      ['asr', 'success', 'sim', 'sim-asr', 180],
      ['llm', 'success', 'sim', 'sim-llm', 400 + 210],
      ['tool', 'success', 'get_weather', '', 90],
      ['tts', 'success', 'sim', '', 140],
    ]);
  });

  it('failures and barge-ins set the status; errors are kept (bounded)', () => {
    const base = turnRecord(1, { tool: true, interrupted: true });
    const rec = {
      ...base,
      llm: { ...base.llm, error: 'x'.repeat(MAX_EVENT_ERROR_CHARS + 50) },
      tool_calls: [{ ...base.tool_calls[0], status: 'error' as const, error_message: 'timeout after 5000 ms' }],
    };
    const rows = pipelineEventRows(owner, rec);
    expect(rows.map((r) => [r.event_type, r.status])).toEqual([
      ['asr', 'success'],
      ['llm', 'error'],
      ['tool', 'error'],
      ['tts', 'interrupted'],
    ]);
    expect(rows[1].error_message).toHaveLength(MAX_EVENT_ERROR_CHARS);
    expect(rows[2].error_message).toBe('timeout after 5000 ms');
    const ttsDown = pipelineEventRows(owner, { ...turnRecord(1), assistant_text: '', tts: { provider: 'elevenlabs', failed: true }, timing: { ...turnRecord(1).timing, tts_ttfb_ms: 0 } });
    expect(ttsDown.find((r) => r.event_type === 'tts')).toMatchObject({ status: 'error', latency_ms: 0, error_message: 'TTS failed after retries' });
  });

  it('injected text (no caller audio, no ASR time) has no asr event; nothing to speak has no tts event', () => {
    const t = turnRecord(1);
    const rec = { ...t, assistant_text: '', timing: { ...t.timing, asr_ms: 0, tts_ttfb_ms: 0 } };
    expect(pipelineEventRows(owner, rec).map((r) => r.event_type)).toEqual(['llm']);
    const spoken = { ...t, timing: { ...t.timing, asr_ms: 0 }, user_audio: new Int16Array(160) };
    expect(pipelineEventRows(owner, spoken).map((r) => r.event_type)).toEqual(['asr', 'llm', 'tts']);
  });

  it('latencies are whole non-negative milliseconds; a missing provider label is `unknown`', () => {
    const t = turnRecord(1);
    const rec = { ...t, asr: { provider: '' }, timing: { ...t.timing, asr_ms: 12.6, tts_ttfb_ms: Number.NaN, steps: [{ step: 1, llm_ttfb_ms: -5, llm_total_ms: 1, tool_ms: 0, tools: [] }] } };
    expect(brief(pipelineEventRows(owner, rec))).toEqual([
      ['asr', 'success', 'unknown', '', 13],
      ['llm', 'success', 'sim', 'sim-llm', 0],
      ['tts', 'success', 'sim', '', 0],
    ]);
  });
});
