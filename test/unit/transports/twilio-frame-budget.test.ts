import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { TwilioTransport } from '../../../media-engine/transports/twilio.js';
import type { TwilioSocket } from '../../../media-engine/transports/twilio-types.js';

const socket: TwilioSocket = { send: () => 1, getBufferedAmount: () => 0, end: () => {} };
const frame = (event: object) => new TextEncoder().encode(JSON.stringify(event)).buffer as ArrayBuffer;
const mark = frame({ event: 'connected' });

describe('carrier socket frame budget', () => {
  it('a burst of 2,000 passes (what a stalled network delivers at once), then three times real time (10 ms messages fit); a flood past it is dropped unparsed and closes the stream', () => {
    const clock = new SimulatedClock();
    const t = new TwilioTransport(socket, clock);
    for (let i = 0; i < 2000; i++) expect(t.receiveFrame(mark, false)).toEqual({ event: 'connected' });
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

  it('a 15 s network stall: the 750 media frames held back arrive at once and every one is taken', () => {
    const clock = new SimulatedClock();
    const t = new TwilioTransport(socket, clock);
    t.receiveFrame(frame({ event: 'start', sequenceNumber: '1', streamSid: 'MZ1', start: { streamSid: 'MZ1', accountSid: 'AC1', callSid: 'CA1', customParameters: {} } }), false);
    const got: number[] = [];
    t.attach({ onAudio: (_pcm, raw) => got.push(raw![0]!) }, { passRawMulaw: true });
    const media = (c: number) => frame({ event: 'media', sequenceNumber: String(c + 1), streamSid: 'MZ1', media: { track: 'inbound', chunk: String(c), timestamp: String((c - 1) * 20), payload: Buffer.alloc(160, c & 0x7f).toString('base64') } });
    for (let c = 1; c <= 50; c++) {
      t.receiveFrame(media(c), false);
      clock.advance(20);
      t.pace(clock.monotonicMs());
    }
    clock.advance(15_000);
    t.pace(clock.monotonicMs());
    const results = [];
    for (let c = 51; c <= 800; c++) results.push(t.receiveFrame(media(c), false));
    expect(results.filter((r) => r !== undefined)).toEqual([]);
    expect(t.stats().invalidFrames).toBe(0);
    expect(got.length).toBe(800);
    expect(got.slice(-3)).toEqual([798 & 0x7f, 799 & 0x7f, 800 & 0x7f]);
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
