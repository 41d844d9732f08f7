/** Turn records -> rows: shared turn number, latency composition, tool call linkage, end upsert row. */
import { describe, expect, it } from 'vitest';
import { agentMessageRow, conversationEndRow, conversationStartRow, jsonSafe, messageEventJson, turnRows } from '../../../media-engine/records/rows.js';
import { isUuid } from '../../../shared/ids.js';
import { endRecord, turnRecord } from './fixtures.js';

describe('turnRows', () => {
  it('splits a turn into a caller message and an agent reply sharing the turn number', () => {
    const r = turnRows('0190a000-0000-7000-8000-000000000001', turnRecord(3));
    expect(r.user).toMatchObject({ role: 'user', turn_number: 3, content: 'caller says thing 3', asr_provider: 'sim', asr_model: 'sim-asr', asr_latency_ms: 180, asr_confidence: 0.93, llm_provider: null, total_latency_ms: null });
    expect(r.assistant).toMatchObject({ role: 'assistant', turn_number: 3, content: 'agent answers thing 3', llm_provider: 'sim', llm_model: 'sim-llm', tokens_input: 43, tokens_output: 12, tts_provider: 'sim', tts_latency_ms: 140 });
    expect(isUuid(r.user.id) && isUuid(r.assistant.id)).toBe(true);
    expect(r.assistant.created_at.getTime()).toBeGreaterThan(r.user.created_at.getTime());
  });

  it('composes total latency from ASR, LLM (incl. tool steps), TTS and internal overhead', () => {
    for (const tool of [false, true]) {
      const a = turnRows('0190a000-0000-7000-8000-000000000001', turnRecord(1, { tool })).assistant;
      expect(a.asr_latency_ms! + a.llm_latency_ms! + a.tts_latency_ms! + a.internal_overhead_ms!).toBe(a.total_latency_ms);
      expect(a.internal_overhead_ms).toBe(35);
    }
  });

  it('links tool call records to the reply and keeps the full output', () => {
    const r = turnRows('0190a000-0000-7000-8000-000000000001', turnRecord(2, { tool: true }));
    expect(r.toolCalls).toHaveLength(1);
    const tc = r.toolCalls[0];
    expect(tc).toMatchObject({ message_id: r.assistant.id, tool_name: 'get_weather', tool_input: { city: 'Paris' }, status: 'success', latency_ms: 90, error_message: null });
    expect((tc.tool_output as { forecast: { detail: string } }).forecast.detail).toHaveLength(500);
    expect(r.assistant.tool_calls).toEqual([{ id: tc.id, name: 'get_weather' }]);
    expect(r.assistant.metadata.tool_call_ids).toEqual({ [tc.id]: 'call_2' });
  });

  it('event JSON drops nulls and the storage path', () => {
    const r = turnRows('0190a000-0000-7000-8000-000000000001', turnRecord(1));
    const j = messageEventJson({ ...r.user, audio_path: '2026-01-01/x.ogg' });
    expect(j).not.toHaveProperty('audio_path');
    expect(j).not.toHaveProperty('llm_provider');
    expect(typeof j.created_at).toBe('string');
  });
});

describe('agentMessageRow', () => {
  const base = { kind: 'goodbye' as const, turn: 3, text: 'Bye!', interrupted: false, tts: { provider: 'sim' }, started_at_ms: 1_700_000_000_000 };

  it("the agent's own prompts are metered; a platform notice is recorded, marked and not metered", () => {
    const own = agentMessageRow('c1', base);
    expect([own.billable, own.metadata]).toEqual([true, { prompt: 'goodbye', interrupted: false }]);
    const notice = agentMessageRow('c1', { ...base, notice: 'credit_exhausted' });
    expect([notice.billable, notice.metadata]).toEqual([false, { prompt: 'goodbye', interrupted: false, platform_notice: 'credit_exhausted' }]);
    expect(notice).toMatchObject({ role: 'assistant', content: 'Bye!', turn_number: 3, tts_provider: 'sim' });
  });

  it("turn rows are metered", () => {
    const { user, assistant } = turnRows('c1', turnRecord(1));
    expect([user.billable, assistant.billable]).toEqual([true, true]);
  });

  it('a reply the model failed carries the error in its metadata', () => {
    const rec = turnRecord(1);
    expect(turnRows('c1', rec).assistant.metadata).not.toHaveProperty('llm_error');
    const failed = { ...rec, assistant_text: '', llm: { ...rec.llm, error: 'openai: HTTP 500: overloaded' } };
    expect(turnRows('c1', failed).assistant.metadata).toMatchObject({ llm_error: 'openai: HTTP 500: overloaded' });
  });
});

describe('conversation rows', () => {
  it('the end row is the whole final row (upsert), keeping start metadata', () => {
    const start = conversationStartRow('0190a000-0000-7000-8000-000000000001', { session_id: 's', agent_id: 'a', workspace_id: 'w', metadata: { call_direction: 'inbound' }, started_at_ms: 1000 }, 2000);
    expect(start).toMatchObject({ status: 'active', user_id: null, call_id: null, segment_kind: 'ai', ended_at: null });
    const end = conversationEndRow(start, endRecord(4, 1000, 'failed'));
    expect(end).toMatchObject({ id: start.id, status: 'failed', total_turns: 4, total_duration_ms: 12_345, avg_response_latency_ms: 675, metadata: { call_direction: 'inbound', end_reason: 'error' } });
    expect(end.ended_at!.getTime()).toBe(13_345);
  });

  it('the end record\'s metadata (flow path and variables) is merged into the conversation metadata', () => {
    const start = conversationStartRow('0190a000-0000-7000-8000-000000000002', { session_id: 's', agent_id: 'a', workspace_id: 'w', metadata: { call_direction: 'inbound' }, started_at_ms: 1000 }, 2000);
    const flow = { node_path: ['greet', 'end'], variables: { date: 'tomorrow' }, current_node_id: 'end' };
    const end = conversationEndRow(start, { ...endRecord(2, 500, 'completed'), metadata: { flow } });
    expect(end.metadata).toEqual({ call_direction: 'inbound', flow, end_reason: 'client_disconnected' });
  });
});

describe('jsonSafe', () => {
  it('keeps plain JSON and repairs what jsonb would refuse', () => {
    expect(jsonSafe({ a: [1, 'x'], b: null })).toEqual({ a: [1, 'x'], b: null });
    const cyc: Record<string, unknown> = { n: 10n, s: 'a\u0000b' };
    cyc.self = cyc;
    expect(jsonSafe(cyc)).toEqual({ n: '10', s: 'ab', self: '[circular]' });
    expect(jsonSafe(undefined)).toBeNull();
  });

  it('replaces unpaired UTF-16 surrogates (jsonb refuses their escapes) and keeps real pairs', () => {
    expect(jsonSafe({ s: 'a\uD800b', t: 'x\uDC00', ok: 'emoji \uD83D\uDE00' })).toEqual({ s: 'a\uFFFDb', t: 'x\uFFFD', ok: 'emoji \uD83D\uDE00' });
  });
});
