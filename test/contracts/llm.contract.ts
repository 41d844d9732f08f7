/**
 * The LLM contract (one contract suite per provider kind): the same assertions against any LlmProvider, sim or real
 * (against its fake, or the vendor when a key is set). Every assertion can fail: each checks a
 * value the provider produced, awaited inside the test.
 */
import { describe, expect, it } from 'vitest';
import type { LlmEvent, LlmProvider, LlmToolSpec } from '../../shared/providers/types.js';

export interface LlmContractSetup {
  provider: LlmProvider;
  /** Answered with plain text. */
  textPrompt: string;
  /** Substring the reply to `textPrompt` must contain (when the provider is scripted). */
  expectText?: string;
  /** Makes the model call at least one of `tools`. Omit to skip the tool assertions. */
  toolPrompt?: string;
  tools?: LlmToolSpec[];
  /** Answered with a reply long enough to abort part-way through. */
  longPrompt: string;
}

const isAbortLike = (e: any): boolean => e?.code === 'ABORTED' || e?.name === 'AbortError';

async function run(p: LlmProvider, prompt: string, tools: LlmToolSpec[], signal: AbortSignal, onEvent?: (e: LlmEvent) => void) {
  const events: LlmEvent[] = [];
  let error: any;
  try {
    for await (const e of p.stream({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: prompt }], tools, signal })) {
      events.push(e);
      onEvent?.(e);
    }
  } catch (e) {
    error = e;
  }
  return { events, error };
}

export function describeLlmContract(name: string, setup: () => LlmContractSetup | Promise<LlmContractSetup>): void {
  describe(`LLM contract: ${name}`, () => {
    it('streams text deltas and ends with exactly one done', async () => {
      const s = await setup();
      const { events, error } = await run(s.provider, s.textPrompt, [], new AbortController().signal);
      expect(error).toBeUndefined();
      const text = events.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join('');
      expect(text.length).toBeGreaterThan(0);
      if (s.expectText) expect(text).toContain(s.expectText);
      expect(events.filter((e) => e.type === 'done')).toHaveLength(1);
      const last = events[events.length - 1]!;
      expect(last.type).toBe('done');
      if (last.type === 'done' && last.usage) {
        expect(last.usage.inputTokens).toBeGreaterThanOrEqual(0);
        expect(last.usage.outputTokens).toBeGreaterThan(0);
      }
    });

    it('returns tool calls with ids, known names and JSON-object arguments, before done', async () => {
      const s = await setup();
      if (!s.toolPrompt || !s.tools) return expect(s.provider.capabilities.tools).toBe(false);
      const { events, error } = await run(s.provider, s.toolPrompt, s.tools, new AbortController().signal);
      expect(error).toBeUndefined();
      const callsIdx = events.findIndex((e) => e.type === 'tool_calls');
      expect(callsIdx).toBeGreaterThanOrEqual(0);
      expect(callsIdx).toBeLessThan(events.findIndex((e) => e.type === 'done'));
      const calls = events.flatMap((e) => (e.type === 'tool_calls' ? e.calls : []));
      expect(new Set(calls.map((c) => c.id)).size).toBe(calls.length);
      for (const c of calls) {
        expect(c.id).not.toBe('');
        expect(s.tools.map((t) => t.name)).toContain(c.name);
        expect(typeof JSON.parse(c.arguments)).toBe('object');
      }
    });

    it('stops promptly when the signal aborts mid-stream', async () => {
      const s = await setup();
      const ac = new AbortController();
      let textAfterAbort = 0;
      const started = performance.now();
      const { error } = await run(s.provider, s.longPrompt, [], ac.signal, (e) => {
        if (ac.signal.aborted && e.type === 'text') textAfterAbort++;
        if (e.type === 'text' && !ac.signal.aborted) ac.abort();
      });
      expect(performance.now() - started).toBeLessThan(3000);
      expect(error === undefined || isAbortLike(error)).toBe(true);
      // Already-buffered deltas may still drain, but the stream must not keep generating.
      expect(textAfterAbort).toBeLessThan(3);
    });

    it('yields no text for an already-aborted signal', async () => {
      const s = await setup();
      const ac = new AbortController();
      ac.abort();
      const { events, error } = await run(s.provider, s.textPrompt, [], ac.signal);
      expect(events.filter((e) => e.type === 'text')).toHaveLength(0);
      expect(error === undefined || isAbortLike(error)).toBe(true);
    });
  });
}
