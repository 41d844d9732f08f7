/**
 * Flow mode (issue 19, "Done means" 1): a three-node booking flow on the simulated clock with the
 * sim LLM scripted to call the generated functions. greet -> collect (`date`, `party_size`) ->
 * confirm -> end: the nodes are entered in order (`flow_node_entered`), each LLM request carries
 * its node's instructions and only its node's functions, the variables land in the record, a
 * barge-in mid-node stays in the node, and a transition with no edge is refused and the model told.
 */
import { describe, expect, it } from 'vitest';
import { BOOKING_FLOW } from '../../fixtures/flows/booking.js';
import type { LlmEvent, LlmProvider, LlmRequest } from '../../../shared/providers/types.js';
import type { SimLlmScript } from '../../../shared/providers/llm/sim.js';
import { actorHarness, type ActorHarness } from './actor-harness.js';

const LONG =
  'Let me tell you everything about our tables. We have window seats and a quiet corner. ' +
  'The terrace opens in the summer and seats twenty people. We also have a private room upstairs. ' +
  'Most evenings are busy after eight, so earlier is easier. Which day would you like?';


const SCRIPT: SimLlmScript = {
  rules: [
    { when: 'book a table', toolCalls: [{ name: 'go_to_collect', arguments: {} }], afterTool: 'Sure. For which date, and how many people?' },
    {
      when: 'tomorrow',
      toolCalls: [
        { name: 'set_variables', arguments: { date: 'tomorrow', party_size: '4' } },
        { name: 'go_to_confirm', arguments: {} },
      ],
      afterTool: 'A table for four tomorrow. Is that right?',
    },
    { when: 'yes', toolCalls: [{ name: 'go_to_end', arguments: {} }], afterTool: 'You are booked. Goodbye!' },
    { when: 'everything', reply: LONG },
  ],
};

interface Seen {
  system: string;
  tools: string[];
  temperature?: number;
}

/** Records what each LLM request carried: the system prompt and the offered function names. */
function recordRequests(seen: Seen[]): (llm: LlmProvider) => LlmProvider {
  return (llm) => ({
    ...llm,
    stream: (req: LlmRequest) => {
      seen.push({ system: req.messages[0]?.content ?? '', tools: req.tools.map((t) => t.name), temperature: req.temperature });
      return llm.stream(req);
    },
  });
}

function flowHarness(seen: Seen[], wrap?: (llm: LlmProvider) => LlmProvider): ActorHarness {
  return actorHarness(
    { flow: BOOKING_FLOW, dynamic_variables: { customer: 'Kim' }, system_prompt: 'You take table bookings for Chez Test.' },
    { llm: { script: SCRIPT }, wrapLlm: (llm) => recordRequests(seen)(wrap ? wrap(llm) : llm) },
  );
}

/** The caller's turn `n` (injected text) and its whole answer played. */
async function say(h: ActorHarness, text: string, n: number): Promise<void> {
  h.actor.post({ kind: 'text_inject', text, role: 'user' });
  expect(await h.runUntil(() => h.transport.of('turn_complete').length === n)).toBe(true);
}

const entered = (h: ActorHarness) => h.transport.of('flow_node_entered').map((e) => e.node_id);

describe('CallActor in flow mode', () => {
  it('runs greet -> collect -> confirm -> end in order; variables land in the record; the end node hangs up', async () => {
    const seen: Seen[] = [];
    const h = flowHarness(seen);
    h.actor.start();
    expect(h.transport.of('flow_node_entered')).toEqual([{ type: 'flow_node_entered', node_id: 'greet', label: 'Greet', node_type: 'start', turn: 0 }]);

    await say(h, 'Hello, I would like to book a table', 1);
    expect(entered(h)).toEqual(['greet', 'collect']);
    // Step 1 in greet: its instructions and only its transition; step 2 already in collect.
    expect(seen[0]!.system).toContain('You take table bookings for Chez Test.');
    expect(seen[0]!.system).toContain('## Current step: Greet\n\nGreet the caller and ask how you can help.');
    expect(seen[0]!.tools).toEqual(['set_variables', 'go_to_collect']);
    expect(seen[1]!.system).toContain('## Current step: Collect booking\n\nAsk for the date and the party size of Kim.');
    expect(seen[1]!.tools).toEqual(['set_variables', 'go_to_confirm']);
    // The node's own temperature (greet sets none).
    expect([seen[0]!.temperature, seen[1]!.temperature]).toEqual([undefined, 0.2]);
    expect(h.transport.of('turn_complete')[0]!.assistant_text).toBe('Sure. For which date, and how many people?');

    await say(h, 'Tomorrow, for four people', 2);
    expect(entered(h)).toEqual(['greet', 'collect', 'confirm']);
    // Variables are typed (the model's "4" is the integer 4) and fill the next node's instructions.
    expect(seen[3]!.system).toContain('Read back: a table for 4 on tomorrow.');
    expect(seen[3]!.system).toContain('## Collected so far\ndate: tomorrow\nparty_size: 4');
    expect(seen[3]!.tools).toEqual(['set_variables', 'go_to_end']);

    await say(h, 'Yes, that is right', 3);
    expect(await h.runUntil(() => h.transport.closed !== undefined)).toBe(true);
    expect(entered(h)).toEqual(['greet', 'collect', 'confirm', 'end']);
    // The end node offers no functions; its reply is spoken, then the call ends.
    expect(seen[5]!.tools).toEqual([]);
    expect(h.transport.of('turn_complete')[2]!.assistant_text).toBe('You are booked. Goodbye!');
    expect(h.transport.of('call_ended')).toEqual([{ type: 'call_ended', reason: 'flow_end' }]);

    // The record: every transition is a tool call; the node path and variables are on the conversation.
    expect(h.recorder.turns.flatMap((t) => t.tool_calls.map((c) => c.tool_name))).toEqual(['go_to_collect', 'set_variables', 'go_to_confirm', 'go_to_end']);
    expect(h.recorder.ended?.metadata).toEqual({
      flow: { node_path: ['greet', 'collect', 'confirm', 'end'], variables: { date: 'tomorrow', party_size: 4 }, current_node_id: 'end' },
    });
  });

  it('a barge-in mid-node stays in the node; the next turn is answered there', async () => {
    const seen: Seen[] = [];
    const h = flowHarness(seen);
    h.actor.start();
    await say(h, 'I want to book a table please', 1);
    expect(entered(h)).toEqual(['greet', 'collect']);

    h.actor.post({ kind: 'text_inject', text: 'tell me everything first', role: 'user' });
    await h.runUntil(() => h.transport.of('tts_audio_start').length === 2);
    await h.silence(600);
    expect(h.actor.phase).toBe('speaking');
    await h.speak('hold on a moment');
    await h.silence(200);
    expect(await h.runUntil(() => h.transport.of('turn_complete').length === 3)).toBe(true);

    expect(h.transport.clears).toBe(1);
    expect(h.recorder.turns[1]!.interrupted).toBe(true);
    // Still in collect: no node entered since, and the turn after the barge-in got collect's prompt and functions.
    expect(entered(h)).toEqual(['greet', 'collect']);
    const last = seen[seen.length - 1]!;
    expect(last.system).toContain('## Current step: Collect booking');
    expect(last.tools).toEqual(['set_variables', 'go_to_confirm']);
  });

  it('a transition the model calls in a run superseded by a barge-in never moves the node', async () => {
    const seen: Seen[] = [];
    // The model talks, then (once the test lets it) calls go_to_collect: by then the caller has cut in.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const lateTransition = (llm: LlmProvider): LlmProvider => ({
      ...llm,
      async *stream(req: LlmRequest): AsyncGenerator<LlmEvent> {
        const last = req.messages[req.messages.length - 1];
        if (last?.role !== 'user' || !last.content.includes('table')) {
          yield* llm.stream(req);
          return;
        }
        yield { type: 'text', delta: LONG };
        await gate;
        yield { type: 'tool_calls', calls: [{ id: 'late_1', name: 'go_to_collect', arguments: '{}' }] };
        yield { type: 'done', finishReason: 'tool_calls' };
      },
    });
    const h = flowHarness(seen, lateTransition);
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'a table maybe', role: 'user' });
    await h.runUntil(() => h.transport.of('tts_audio_start').length === 1);
    await h.silence(400);
    await h.speak('stop please');
    await h.silence(200);
    expect(h.transport.clears).toBe(1);
    // The superseded run now calls the transition.
    release();
    expect(await h.runUntil(() => h.transport.of('turn_complete').length === 2)).toBe(true);
    expect(h.recorder.turns[0]!.interrupted).toBe(true);
    expect(h.transport.of('tool_call_result')).toEqual([]);
    expect(entered(h)).toEqual(['greet']);
    expect(seen[seen.length - 1]!.system).toContain('## Current step: Greet');
    expect(seen[seen.length - 1]!.tools).toEqual(['set_variables', 'go_to_collect']);
  });

  it('a transition with no edge from the current node is refused and the model is told which exist', async () => {
    const seen: Seen[] = [];
    // A model that jumps ahead: it calls go_to_end from greet (not offered there).
    const jumpy = (llm: LlmProvider): LlmProvider => ({
      ...llm,
      async *stream(req: LlmRequest): AsyncGenerator<LlmEvent> {
        const last = req.messages[req.messages.length - 1];
        if (last?.role === 'user' && last.content.includes('skip')) {
          yield { type: 'tool_calls', calls: [{ id: 'bad_1', name: 'go_to_end', arguments: '{}' }] };
          yield { type: 'done', finishReason: 'tool_calls' };
          return;
        }
        yield* llm.stream(req);
      },
    });
    const h = flowHarness(seen, jumpy);
    h.actor.start();
    await say(h, 'skip to the end', 1);
    const result = h.transport.of('tool_call_result')[0]!;
    expect(result.tool_name).toBe('go_to_end');
    const told = h.recorder.turns[0]!.tool_calls[0]!.tool_output as { error: string; allowed_transitions: string[] };
    expect(told.error).toContain('no transition go_to_end from step greet');
    expect(told.allowed_transitions).toEqual(['go_to_collect']);
    expect(h.recorder.turns[0]!.tool_calls[0]!.status).toBe('error');
    expect(entered(h)).toEqual(['greet']);
    expect(h.transport.closed).toBeUndefined();
    // The model read the refusal (its next step got the tool result) and the call stays in greet.
    expect(seen[1]!.system).toContain('## Current step: Greet');
  });

  it('set_variables refuses values of the wrong type and keeps the valid ones', async () => {
    const seen: Seen[] = [];
    const h = actorHarness(
      { flow: BOOKING_FLOW },
      {
        llm: { script: { rules: [{ when: 'book', toolCalls: [{ name: 'go_to_collect', arguments: {} }], afterTool: 'Ok.' }, { when: 'party', toolCalls: [{ name: 'set_variables', arguments: { date: 'friday', party_size: 'many' } }], afterTool: 'How many exactly?' }] } },
        wrapLlm: recordRequests(seen),
      },
    );
    h.actor.start();
    await say(h, 'book please', 1);
    await say(h, 'friday, a big party', 2);
    const call = h.recorder.turns[1]!.tool_calls[0]!;
    expect(call.status).toBe('error');
    expect(call.tool_output).toEqual({ error: 'party_size: must be an integer', saved: { date: 'friday' } });
    h.actor.endCall('test_over');
    expect(h.recorder.ended?.metadata).toMatchObject({ flow: { variables: { date: 'friday' }, current_node_id: 'collect' } });
  });
});
