/**
 * `max_turns` with spoken turns (injected ones: max-turns-bypass.test.ts): the last allowed
 * answer plays to the end, then `call_ended` `max_turns`; the record counts exactly the cap.
 */
import { describe, expect, it } from 'vitest';
import { actorHarness } from './actor-harness.js';

describe('CallActor max_turns', () => {
  it('the answer to the last allowed turn plays, then call_ended max_turns; no turn beyond the cap', async () => {
    const h = actorHarness({ max_turns: 2 });
    h.actor.start();
    await h.speak('first');
    await h.silence(200);
    await h.runUntil(() => h.actor.phase === 'listening');
    expect(h.actor.isClosed).toBe(false);
    await h.speak('second');
    await h.silence(200);
    expect(await h.runUntil(() => h.actor.isClosed)).toBe(true);

    expect(h.transport.of('turn_complete').map((e) => [e.turn, e.assistant_text])).toEqual([
      [1, 'You said: first.'],
      [2, 'You said: second.'],
    ]);
    expect(h.transport.types().slice(-2)).toEqual(['turn_complete', 'call_ended']);
    expect(h.transport.events.at(-1)).toMatchObject({ type: 'call_ended', reason: 'max_turns' });
    expect(h.recorder.ended).toMatchObject({ reason: 'max_turns', total_turns: 2 });
    expect(h.llm.requestCount).toBe(2);
  });

});
