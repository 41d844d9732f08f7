import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { CallerSpeech, TURN_TEXT_MAX_CHARS } from '../../../media-engine/session/caller-speech.js';

describe('CallerSpeech text of a turn', () => {
  it('injected text joins what the caller said and was not answered yet', () => {
    const c = new CallerSpeech(new SimulatedClock(), 'browser_headset', 0.5, 16000);
    c.addFinal('my order is late');
    c.inject('and it is the second time');
    expect(c.take().text).toBe('my order is late and it is the second time');
    c.inject('hello');
    expect(c.take().text).toBe('hello');
  });

  it('keeps at most TURN_TEXT_MAX_CHARS, the newest words', () => {
    const c = new CallerSpeech(new SimulatedClock(), 'browser_headset', 0.5, 16000);
    for (let i = 0; i < 5; i++) c.inject(`${i}`.repeat(3000));
    const { text } = c.take();
    expect(text).toHaveLength(TURN_TEXT_MAX_CHARS);
    expect(text.endsWith('4'.repeat(3000))).toBe(true);
  });
});
