/**
 * Key presses on a carrier call: each is a `dtmf` event at once, and the keys of one entry (a
 * number typed in, a PIN) are one caller turn, after a pause or at `#`. Before, each key was a
 * text injection: keys past the injection rate limit (5, then 1 a second) were dropped, and every
 * key started a turn that cut the previous one.
 */
import { describe, expect, it } from 'vitest';
import { DTMF_ENTRY_PAUSE_MS, MAX_DTMF_DIGITS } from '../../../media-engine/session/actor.js';
import { actorHarness } from './actor-harness.js';

describe('CallActor key presses', () => {
  it('a phone number typed at 4 keys a second is one turn with every digit', async () => {
    const h = actorHarness();
    h.actor.start();
    for (const d of '4155550123') {
      h.actor.post({ kind: 'dtmf', digit: d });
      await h.silence(240);
    }
    expect(h.transport.of('dtmf').map((e) => e.digit).join('')).toBe('4155550123');
    expect(h.transport.of('error')).toEqual([]);
    await h.silence(DTMF_ENTRY_PAUSE_MS);
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    expect(h.transport.of('turn_complete')).toMatchObject([{ user_text: '[caller pressed 4155550123]', assistant_text: 'You said: [caller pressed 4155550123].' }]);
    expect(h.recorder.turns).toHaveLength(1);
  });

  it('# ends the entry at once; a single key is its own entry after the pause', async () => {
    const h = actorHarness();
    h.actor.start();
    for (const d of '12#') h.actor.post({ kind: 'dtmf', digit: d });
    // No entry pause: the model is asked at once.
    await h.silence(100);
    expect(h.transport.of('llm_start')).toHaveLength(1);
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    expect(h.transport.of('turn_complete')[0]).toMatchObject({ user_text: '[caller pressed 12#]' });
    h.actor.post({ kind: 'dtmf', digit: '5' });
    await h.silence(DTMF_ENTRY_PAUSE_MS - 100);
    expect(h.transport.of('turn_complete')).toHaveLength(1);
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);
    expect(h.transport.of('turn_complete')[1]).toMatchObject({ user_text: '[caller pressed 5]' });
  });

  it(`an entry keeps at most ${MAX_DTMF_DIGITS} keys`, async () => {
    const h = actorHarness();
    h.actor.start();
    for (let i = 0; i < MAX_DTMF_DIGITS + 10; i++) h.actor.post({ kind: 'dtmf', digit: String(i % 10) });
    await h.runUntil(() => h.transport.of('turn_complete').length >= 1);
    await h.silence(DTMF_ENTRY_PAUSE_MS + 100);
    await h.runUntil(() => h.transport.of('turn_complete').length >= 2, 20_000);
    const texts = h.transport.of('turn_complete').map((e) => String(e.user_text));
    expect(texts[0]).toBe(`[caller pressed ${Array.from({ length: MAX_DTMF_DIGITS }, (_, i) => i % 10).join('')}]`);
    expect(texts[1]).toBe(`[caller pressed ${Array.from({ length: 10 }, (_, i) => (MAX_DTMF_DIGITS + i) % 10).join('')}]`);
  });
});
