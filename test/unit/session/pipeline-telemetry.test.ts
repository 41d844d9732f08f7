/**
 * What the actor hands to the record for pipeline analytics: a model failure is kept on the turn
 * record (`llm.error`) and becomes an `llm` event with status `error`; a normal reply carries the
 * configured models and becomes success events (sim providers, simulated clock).
 */
import { describe, expect, it } from 'vitest';
import { pipelineEventRows } from '../../../media-engine/records/pipeline-events.js';
import type { LlmProvider } from '../../../shared/providers/types.js';
import { actorHarness } from './actor-harness.js';

const owner = { conversationId: '0193a4c2-7b7e-7cc1-8f00-0000000000c1', agentId: '0193a4c2-7b7e-7cc1-8f00-0000000000a1', workspaceId: '0193a4c2-7b7e-7cc1-8f00-0000000000b1' };

describe('turn telemetry for pipeline events', () => {
  it('a failing LLM: the turn record carries the error and its llm event is `error`', async () => {
    const failing = (sim: LlmProvider): LlmProvider => ({
      ...sim,
      // eslint-disable-next-line require-yield
      async *stream() {
        throw new Error('upstream 503');
      },
    });
    const h = actorHarness({}, { wrapLlm: failing });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'what are your opening hours', role: 'user' });
    await h.runUntil(() => h.recorder.turns.length === 1, 10_000);
    expect(h.transport.of('llm_error')).toHaveLength(1);
    const rec = h.recorder.turns[0]!;
    expect(rec.llm.error).toContain('upstream 503');
    const events = pipelineEventRows(owner, rec);
    expect(events.find((e) => e.event_type === 'llm')).toMatchObject({ status: 'error', error_message: expect.stringContaining('upstream 503') });
  });

  it('a normal reply: no error, models from the session config, success events', async () => {
    const h = actorHarness();
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'what are your opening hours', role: 'user' });
    await h.runUntil(() => h.recorder.turns.length === 1, 10_000);
    const rec = h.recorder.turns[0]!;
    expect(rec.llm.error).toBeUndefined();
    expect(rec.tts.failed).toBeUndefined();
    const events = pipelineEventRows(owner, rec);
    expect(events.map((e) => [e.event_type, e.status])).toEqual([
      ['llm', 'success'],
      ['tts', 'success'],
    ]);
  });
});
