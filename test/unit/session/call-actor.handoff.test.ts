/**
 * Portal hand-off in the engine (issue 21): on a `human_handoff` call a flow `transfer` node asks
 * for a person once and keeps the call; without it the node ends the call (`transfer`). The
 * `transfer_to_human` function is offered only on hand-off calls and asks once. A reply cut after
 * its tool ran (the fallback cuts it when nobody is free) keeps the tool exchange in the history.
 */
import { describe, expect, it } from 'vitest';
import { BOOKING_FLOW } from '../../fixtures/flows/booking.js';
import type { SimLlmScript } from '../../../shared/providers/llm/sim.js';
import type { LlmProvider, LlmRequest } from '../../../shared/providers/types.js';
import { INTERRUPTED_TOOL_RESULT, RunState } from '../../../media-engine/session/run-state.js';
import { recordRunMsg } from '../../../media-engine/session/run-events.js';
import { actorHarness, type ActorHarness } from './actor-harness.js';

const TRANSFER_FLOW = { ...BOOKING_FLOW, nodes: BOOKING_FLOW.nodes.map((n) => (n.id === 'end' ? { ...n, type: 'transfer' as const, label: 'Hand over' } : n)) };
const SCRIPT: SimLlmScript = {
  rules: [
    { when: 'book a table', toolCalls: [{ name: 'go_to_collect', arguments: {} }], afterTool: 'For which date?' },
    { when: 'tomorrow', toolCalls: [{ name: 'go_to_confirm', arguments: {} }], afterTool: 'Tomorrow, right?' },
    { when: 'yes', toolCalls: [{ name: 'go_to_end', arguments: {} }], afterTool: 'Connecting you to a colleague.' },
    { when: 'person', toolCalls: [{ name: 'transfer_to_human', arguments: {} }], afterTool: 'Please hold.' },
  ],
};

async function say(h: ActorHarness, text: string, n: number): Promise<void> {
  h.actor.post({ kind: 'text_inject', text, role: 'user' });
  expect(await h.runUntil(() => h.transport.of('turn_complete').length === n)).toBe(true);
}

describe('CallActor portal hand-off', () => {
  it('a transfer node of a hand-off call asks for a person once and keeps the call', async () => {
    let asked = 0;
    const h = actorHarness({ flow: TRANSFER_FLOW, human_handoff: true, call_id: 'c1' }, { llm: { script: SCRIPT }, requestHandoff: () => asked++ });
    h.actor.start();
    await say(h, 'I would like to book a table', 1);
    await say(h, 'tomorrow', 2);
    await say(h, 'yes', 3);
    await h.settle();
    expect(asked).toBe(1);
    expect(h.transport.closed).toBeUndefined();
    expect(h.transport.of('call_ended')).toEqual([]);
  });

  it('without hand-off the transfer node ends the call', async () => {
    const h = actorHarness({ flow: TRANSFER_FLOW }, { llm: { script: SCRIPT }, requestHandoff: () => undefined });
    h.actor.start();
    await say(h, 'I would like to book a table', 1);
    await say(h, 'tomorrow', 2);
    await say(h, 'yes', 3);
    expect(await h.runUntil(() => h.transport.closed !== undefined)).toBe(true);
    expect(h.transport.of('call_ended')).toEqual([{ type: 'call_ended', reason: 'transfer' }]);
  });

  it('transfer_to_human is offered only on hand-off calls and asks once', async () => {
    let asked = 0;
    const tools: string[][] = [];
    const wrapLlm = (llm: LlmProvider): LlmProvider => ({ ...llm, stream: (req: LlmRequest) => (tools.push(req.tools.map((t) => t.name)), llm.stream(req)) });
    const h = actorHarness({ human_handoff: true, call_id: 'c2' }, { llm: { script: SCRIPT }, wrapLlm, requestHandoff: () => asked++ });
    h.actor.start();
    await say(h, 'a person please', 1);
    await say(h, 'a person, now', 2);
    expect(tools[0]).toContain('transfer_to_human');
    expect(asked).toBe(1);
    expect(h.transport.of('turn_complete')[0]!.assistant_text).toBe('Please hold.');
    const plain = actorHarness({}, { llm: { script: SCRIPT }, wrapLlm, requestHandoff: () => asked++ });
    tools.length = 0;
    plain.actor.start();
    await say(plain, 'a person please', 1);
    expect(tools[0]).not.toContain('transfer_to_human');
  });

  it('a reply cut after its tool ran keeps the call and the result in the history: the next turn neither repeats the tool nor re-answers the old question', async () => {
    let asked = 0;
    const runs: string[] = [];
    const h = actorHarness({ human_handoff: true, call_id: 'c3' }, { llm: { script: SCRIPT, ttftMs: 1000 }, requestHandoff: () => asked++ });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'a person please', role: 'user' });
    // The tool has answered; the model is still thinking about what to say (nothing heard yet).
    expect(await h.runUntil(() => h.transport.of('tool_call_result').length === 1)).toBe(true);
    expect(h.transport.audioFrames).toBe(0);
    // The hand-off fallback cuts the reply (control-plane/portal/handoff.ts).
    expect(h.actor.say('Sorry, no one is available.')).toBe(true);
    expect(await h.runUntil(() => h.recorder.agentMessages.length === 1)).toBe(true);
    expect(h.transport.of('turn_complete')[0]).toMatchObject({ turn: 1, user_text: 'a person please', assistant_text: '' });

    h.actor.post({ kind: 'text_inject', text: 'never mind', role: 'user' });
    expect(await h.runUntil(() => h.transport.of('turn_complete').length === 2)).toBe(true);
    for (const ev of h.transport.of('tool_calls_started')) runs.push(...ev.tools.map((t) => t.name));
    expect(runs).toEqual(['transfer_to_human']);
    expect(asked).toBe(1);
    expect(h.transport.of('turn_complete')[1]).toMatchObject({ user_text: 'never mind', assistant_text: 'You said: never mind.' });
    const last = h.requests[h.requests.length - 1]!.slice(1);
    expect(last.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user']);
    expect(last[0]).toEqual({ role: 'user', content: 'a person please' });
    expect(last[1]).toMatchObject({ role: 'assistant', toolCalls: [{ name: 'transfer_to_human' }] });
    expect(JSON.parse((last[2] as { content: string }).content)).toMatchObject({ status: 'requested' });
    expect(last[3]).toEqual({ role: 'assistant', content: 'Sorry, no one is available.' });
    expect(last[4]).toEqual({ role: 'user', content: 'never mind' });
  });

  it('a tool still running when the reply is cut gets an interrupted result, so the history stays well-formed, and the record keeps it', () => {
    const run = new RunState(1, 'reply', 1, 0, 0, 'book it and text me', 0);
    const calls = [
      { id: 'a', name: 'book', arguments: '{}' },
      { id: 'b', name: 'sms', arguments: '{"to":"+14155550100"}' },
    ];
    recordRunMsg(run, { kind: 'tools_started', step: 1, calls, llmMs: 5, atMs: 1000 }, 's1');
    recordRunMsg(run, { kind: 'tool_result', step: 1, call: calls[0]!, result: { status: 'success', content: '{"booked":true}', output: { booked: true }, latencyMs: 3, attempts: 1 } }, 's1');
    expect(run.cutToolExchange('s1', 1750)).toEqual([
      { role: 'assistant', content: null, toolCalls: calls },
      { role: 'tool', toolCallId: 'a', content: '{"booked":true}' },
      { role: 'tool', toolCallId: 'b', content: INTERRUPTED_TOOL_RESULT },
    ]);
    // The cut tool's request may have reached its endpoint: the record says so (it had no trace).
    expect(run.toolCalls).toEqual([
      expect.objectContaining({ id: 's1:1:a', tool_name: 'book', status: 'success' }),
      { id: 's1:1:b', tool_call_id: 'b', tool_name: 'sms', tool_input: { to: '+14155550100' }, tool_output: JSON.parse(INTERRUPTED_TOOL_RESULT), status: 'interrupted', latency_ms: 750, error_message: 'the turn was cut before the tool answered; its outcome is unknown' },
    ]);
    expect(run.toolSteps).toEqual([1, 1]);
    // Cut twice (the call's end after a barge-in): recorded once.
    run.cutToolExchange('s1', 2000);
    expect(run.toolCalls).toHaveLength(2);
  });

  it('the fallback waits for words the caller is already hearing: "Please hold." plays whole, then the fallback', async () => {
    const h = actorHarness({ human_handoff: true, call_id: 'c4' }, { llm: { script: SCRIPT }, requestHandoff: () => undefined });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'a person please', role: 'user' });
    // The answer is playing (its first audio is out).
    expect(await h.runUntil(() => h.transport.of('tts_audio_start').length === 1)).toBe(true);
    expect(h.actor.say('Sorry, no one is available.')).toBe(true);
    expect(await h.runUntil(() => h.recorder.agentMessages.length === 1)).toBe(true);
    expect(h.transport.of('turn_complete')[0]).toMatchObject({ turn: 1, assistant_text: 'Please hold.' });
    expect(h.recorder.turns[0]).toMatchObject({ assistant_text: 'Please hold.', interrupted: false });
    expect(h.recorder.agentMessages[0]).toMatchObject({ kind: 'nudge', text: 'Sorry, no one is available.', interrupted: false });
  });
});
