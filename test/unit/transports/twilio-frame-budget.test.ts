import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { TwilioTransport } from '../../../media-engine/transports/twilio.js';
import type { TwilioSocket } from '../../../media-engine/transports/twilio-types.js';

const socket: TwilioSocket = { send: () => 1, getBufferedAmount: () => 0, end: () => {} };
const frame = (event: object) => new TextEncoder().encode(JSON.stringify(event)).buffer as ArrayBuffer;
const mark = frame({ event: 'connected' });

describe('carrier socket frame budget', () => {
  it('a 5 s burst passes, then three times real time (10 ms messages fit); a flood past it is dropped unparsed and closes the stream', () => {
    const clock = new SimulatedClock();
    const t = new TwilioTransport(socket, clock);
    for (let i = 0; i < 250; i++) expect(t.receiveFrame(mark, false)).toEqual({ event: 'connected' });
    expect(t.receiveFrame(mark, false)).toMatchObject({ event: 'invalid', reason: 'frame_rate', close: false });
    // One second later: 150 more frames fit.
    clock.advance(1000);
    for (let i = 0; i < 150; i++) expect(t.receiveFrame(mark, false)).toEqual({ event: 'connected' });
    // A flood: the garbage policy closes the stream once more than 20 of the last 100 frames were dropped.
    const results = Array.from({ length: 30 }, () => t.receiveFrame(mark, false));
    expect(results.every((r) => r?.event === 'invalid' && r.reason === 'frame_rate')).toBe(true);
    expect(results.findIndex((r) => r?.event === 'invalid' && r.close)).toBe(20); // the 21st of the window
    expect(t.stats().invalidReasons.frame_rate).toBe(31);
  });

  it('real time (50 media frames a second) never touches the budget', () => {
    const clock = new SimulatedClock();
    const t = new TwilioTransport(socket, clock);
    for (let i = 0; i < 50 * 60; i++) {
      clock.advance(20);
      expect(t.receiveFrame(mark, false)).toEqual({ event: 'connected' });
    }
    expect(t.stats().invalidFrames).toBe(0);
  });
});
