/**
 * Portal hand-off in the engine (issue 21): on a `human_handoff` call a flow `transfer` node asks
 * for a person once and keeps the call; without it the node ends the call (`transfer`). The
 * `transfer_to_human` function is offered only on hand-off calls and asks once.
 */
import { describe, expect, it } from 'vitest';
import { BOOKING_FLOW } from '../../fixtures/flows/booking.js';
import type { SimLlmScript } from '../../../shared/providers/llm/sim.js';
import type { LlmProvider, LlmRequest } from '../../../shared/providers/types.js';
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
});
