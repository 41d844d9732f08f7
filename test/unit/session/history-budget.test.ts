/**
 * Issue 11, "bounded history (token budget)": the history sent to the LLM stays under an estimated
 * token budget and a message cap; oldest turns go first, whole (a tool call never loses its result),
 * the system prompt and the current turn always stay.
 */
import { describe, expect, it } from 'vitest';
import { CallHistory, estimateTokens } from '../../../media-engine/session/history.js';
import type { LlmMessage, LlmProvider, LlmRequest } from '../../../shared/providers/types.js';
import { actorHarness } from './actor-harness.js';

const SYSTEM: LlmMessage = { role: 'system', content: 'You are a careful agent. '.repeat(40) };

/** Turn i: a question, then every third turn a tool call and its result, then the answer. */
function turn(i: number): LlmMessage[] {
  const msgs: LlmMessage[] = [{ role: 'user', content: `question number ${i} about the opening hours of the shop on a weekday` }];
  if (i % 3 === 0) {
    msgs.push({ role: 'assistant', content: null, toolCalls: [{ id: `call_${i}`, name: 'lookup', arguments: JSON.stringify({ day: i }) }] });
    msgs.push({ role: 'tool', toolCallId: `call_${i}`, content: JSON.stringify({ open: '09:00', close: '17:00', note: 'x'.repeat(200) }) });
  }
  msgs.push({ role: 'assistant', content: `Answer ${i}: we open at nine and close at five on weekdays, and later on Thursdays.` });
  return msgs;
}

function total(msgs: LlmMessage[]): number {
  return msgs.reduce((n, m) => n + estimateTokens(m), 0);
}

/** Every assistant tool call is directly followed by its results, and every result has its call. */
function toolPairsIntact(msgs: LlmMessage[]): boolean {
  for (let i = 0; i < msgs.length; i++) {
    const m = msgs[i]!;
    if (m.role === 'assistant' && m.toolCalls) {
      if (!m.toolCalls.every((c, k) => { const r = msgs[i + 1 + k]; return r?.role === 'tool' && r.toolCallId === c.id; })) return false;
    }
    if (m.role === 'tool') {
      const call = msgs.slice(0, i).reverse().find((x) => x.role === 'assistant' && x.toolCalls);
      if (!(call?.role === 'assistant' && call.toolCalls?.some((c) => c.id === m.toolCallId))) return false;
    }
  }
  return true;
}

describe('bounded history (token budget)', () => {
  it('a 200-turn history is trimmed under the budget: system prompt kept, newest turns kept, tool pairs intact', () => {
    const h = new CallHistory({ tokenBudget: 2000, maxMessages: 10_000 });
    h.push(SYSTEM);
    for (let i = 1; i <= 200; i++) h.push(...turn(i));
    const sent = h.forModel();
    expect(total(sent)).toBeLessThanOrEqual(2000);
    expect(h.estimatedTokens).toBe(total(sent));
    expect(sent[0]).toBe(SYSTEM);
    expect(sent[1]!.role).toBe('user');
    expect(sent.slice(-turn(200).length)).toEqual(turn(200));
    expect(toolPairsIntact(sent)).toBe(true);
    // Oldest dropped first: what is kept is a contiguous run of the newest turns.
    const firstKept = Number(/question number (\d+)/.exec(sent[1]!.content as string)![1]);
    const expected = [SYSTEM, ...Array.from({ length: 200 - firstKept + 1 }, (_, k) => turn(firstKept + k)).flat()];
    expect(sent).toEqual(expected);
    expect(firstKept).toBeGreaterThan(150);
    expect(h.droppedMessages).toBe(Array.from({ length: firstKept - 1 }, (_, k) => turn(k + 1).length).reduce((a, b) => a + b, 0));
  });

  it('the message cap bounds memory by whole turns too', () => {
    const h = new CallHistory({ tokenBudget: 1_000_000, maxMessages: 50 });
    h.push(SYSTEM);
    for (let i = 1; i <= 200; i++) h.push(...turn(i));
    expect(h.length).toBeLessThanOrEqual(50);
    const sent = h.forModel();
    expect(sent[0]).toBe(SYSTEM);
    expect(sent[1]!.role).toBe('user');
    expect(toolPairsIntact(sent)).toBe(true);
  });

  it('the system prompt and the current turn stay even when they alone exceed the budget', () => {
    const h = new CallHistory({ tokenBudget: 300, maxMessages: 200 });
    h.push(SYSTEM, ...turn(1), ...turn(2));
    const huge: LlmMessage = { role: 'user', content: 'y'.repeat(4000) };
    h.push(huge);
    expect(h.forModel()).toEqual([SYSTEM, huge]);
  });

  it('a long call sends the LLM at most the budget on every request', async () => {
    const seen: LlmRequest['messages'][] = [];
    const recording = (sim: LlmProvider): LlmProvider => ({ ...sim, stream: (req) => (seen.push(req.messages), sim.stream(req)) });
    const h = actorHarness({ max_turns: 0, system_prompt: 'Be brief.', call_limits: { inject_burst: 1000, history_token_budget: 400 } }, { wrapLlm: recording });
    h.actor.start();
    for (let i = 1; i <= 60; i++) {
      h.actor.post({ kind: 'text_inject', text: `turn ${i}: ${'please remember this detail. '.repeat(3)}`, role: 'user' });
      expect(await h.runUntil(() => h.transport.of('turn_complete').length === i)).toBe(true);
    }
    expect(seen).toHaveLength(60);
    for (const msgs of seen) {
      expect(msgs[0]).toEqual({ role: 'system', content: 'Be brief.' });
      expect(msgs.at(-1)!.role).toBe('user');
      expect(total(msgs)).toBeLessThanOrEqual(400);
    }
    expect(seen.at(-1)!.length).toBeLessThan(20);
  });
});
