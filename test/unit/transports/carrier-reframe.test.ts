/**
 * Carrier streams whose `media` messages are not 20 ms each (docs/protocols.md: "Size is not
 * promised"): every byte reaches the sink once, in order, in 20 ms frames, whatever the message size;
 * a gap in the media timestamps is concealed, a message older than the one before is dropped, and a
 * stream of 10 ms messages is neither rejected by the counter windows nor by the frame budget.
 * Before the reframer, a longer payload was cut to its first 20 ms and a shorter one padded to 20.
 */
import { describe, expect, it } from 'vitest';
import { FakeCarrierSocket } from '../../helpers/fake-carrier-socket.js';
import { SimulatedClock } from '../../../shared/clock.js';
import { CarrierTransport } from '../../../media-engine/transports/carrier-transport.js';
import type { CarrierProtocol } from '../../../media-engine/transports/carrier-protocol.js';
import { twilioProtocol } from '../../../media-engine/transports/twilio.js';
import { plivoProtocol } from '../../../media-engine/transports/plivo.js';
import { vonageProtocol } from '../../../media-engine/transports/vonage.js';

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).buffer as ArrayBuffer;

/** A byte pattern no two 20 ms frames share: byte i of the stream is (i * 7 + i / 160) & 0x7f. */
const streamBytes = (from: number, n: number) => Uint8Array.from({ length: n }, (_, k) => ((from + k) * 7 + Math.floor((from + k) / 160)) & 0x7f);

function setup(protocol: CarrierProtocol, start: unknown) {
  const ws = new FakeCarrierSocket();
  const clock = new SimulatedClock();
  const t = new CarrierTransport(ws, clock, protocol, { passRawMulaw: true });
  const ev = t.receiveFrame(enc(start), false);
  const raw: number[] = [];
  const pcm: Int16Array[] = [];
  t.attach({ onAudio: (p, r) => (pcm.push(Int16Array.from(p)), r && raw.push(...r)) });
  return { ws, clock, t, ev, raw, pcm };
}

const TWILIO_START = { event: 'start', sequenceNumber: '1', streamSid: 'MZ1', start: { streamSid: 'MZ1', accountSid: 'AC1', callSid: 'CA1', customParameters: {} } };

/** Sends `seconds` of Twilio media in messages of `ms` each, one message per `ms` of clock, pacing between. */
function sendTwilio(s: ReturnType<typeof setup>, ms: number, seconds: number, skip: (i: number) => boolean = () => false) {
  const bytes = ms * 8;
  const count = (seconds * 1000) / ms;
  for (let i = 0; i < count; i++) {
    if (!skip(i)) {
      const payload = Buffer.from(streamBytes(i * bytes, bytes)).toString('base64');
      const ev = s.t.receiveFrame(enc({ event: 'media', sequenceNumber: String(i + 2), streamSid: 'MZ1', media: { track: 'inbound', chunk: String(i + 1), timestamp: String(i * ms), payload } }), false);
      expect(ev).toBeUndefined();
    }
    s.clock.advance(ms);
    s.t.pace(s.clock.monotonicMs());
  }
  for (let i = 0; i < 10; i++) {
    s.clock.advance(20);
    s.t.pace(s.clock.monotonicMs());
  }
}

describe('carrier media messages that are not 20 ms', () => {
  for (const ms of [10, 30, 40, 100, 120]) {
    it(`Twilio, ${ms} ms per message: the sink gets every byte once, in order, in 20 ms frames`, () => {
      const s = setup(twilioProtocol, TWILIO_START);
      sendTwilio(s, ms, 6);
      expect(s.pcm.every((f) => f.length === 160)).toBe(true);
      // Every whole 20 ms of the 6 s, byte for byte (a trailing part-frame waits for the next message).
      expect(s.raw.length).toBe(6000 * 8);
      expect(Buffer.from(s.raw).equals(Buffer.from(streamBytes(0, 6000 * 8)))).toBe(true);
      expect(s.t.stats()).toMatchObject({ invalidFrames: 0, mediaDroppedOutOfOrder: 0 });
      expect(s.t.isClosed).toBe(false);
    });
  }

  it('a gap in the media timestamps is concealed for its length; the audio after it stays on its time', () => {
    const s = setup(twilioProtocol, TWILIO_START);
    // 40 ms messages; the 11th and 12th (80 ms of media, four frames) never arrive.
    sendTwilio(s, 40, 2, (i) => i === 10 || i === 11);
    expect(s.raw.length).toBe(2000 * 8);
    const want = streamBytes(0, 2000 * 8);
    // Before the gap and after it, byte for byte; the four frames of the gap are concealment.
    expect(Buffer.from(s.raw.slice(0, 400 * 8)).equals(Buffer.from(want.subarray(0, 400 * 8)))).toBe(true);
    expect(Buffer.from(s.raw.slice(480 * 8)).equals(Buffer.from(want.subarray(480 * 8)))).toBe(true);
    expect(Buffer.from(s.raw.slice(400 * 8, 480 * 8)).equals(Buffer.from(want.subarray(400 * 8, 480 * 8)))).toBe(false);
  });

  it.each([
    { what: 'a message older than the one before it is dropped and counted, not spliced in', sends: [[0, 0], [1, 40], [2, 80], [3, 40], [4, 120]] },
    { what: 'an exact duplicate is dropped, not played twice (the stream stays on its media clock)', sends: [[0, 0], [1, 40], [1, 40], [2, 80], [3, 120]] },
  ])('$what', ({ sends }) => {
    const s = setup(twilioProtocol, TWILIO_START);
    const msg = (i: number, ts: number) => enc({ event: 'media', sequenceNumber: String(i + 2), streamSid: 'MZ1', media: { track: 'inbound', chunk: String(i + 1), timestamp: String(ts), payload: Buffer.from(streamBytes(ts * 8, 320)).toString('base64') } });
    for (const [i, ts] of sends) {
      s.t.receiveFrame(msg(i!, ts!), false);
      s.clock.advance(40);
      s.t.pace(s.clock.monotonicMs());
    }
    expect(s.t.stats().mediaDroppedOutOfOrder).toBe(1);
    expect(Buffer.from(s.raw).equals(Buffer.from(streamBytes(0, 160 * 8)))).toBe(true);
  });

  it('one odd-sized message that is invalid (outbound track) does not switch a 20 ms stream to reframing', () => {
    const s = setup(twilioProtocol, TWILIO_START);
    const frame = (c: number, track: string, bytes: number) => enc({ event: 'media', sequenceNumber: String(c + 1), streamSid: 'MZ1', media: { track, chunk: String(c), timestamp: String((c - 1) * 20), payload: Buffer.from(streamBytes((c - 1) * 160, bytes)).toString('base64') } });
    s.t.receiveFrame(frame(1, 'outbound', 320), false);
    // Chunks 3 and 2 arrive swapped within one tick: the jitter buffer (not the reframer) puts them back in order.
    for (const group of [[1], [3, 2], [4]]) {
      for (const c of group) s.t.receiveFrame(frame(c, 'inbound', 160), false);
      s.clock.advance(20);
      s.t.pace(s.clock.monotonicMs());
    }
    for (let i = 0; i < 5; i++) (s.clock.advance(20), s.t.pace(s.clock.monotonicMs()));
    expect(Buffer.from(s.raw).equals(Buffer.from(streamBytes(0, 4 * 160)))).toBe(true);
    expect(s.t.stats().jitter.reordered).toBe(1);
  });

  it('a stream that switches from 20 ms frames to 40 ms messages continues where it was', () => {
    const s = setup(twilioProtocol, TWILIO_START);
    let ts = 0;
    for (let i = 0; i < 100; i++) {
      const ms = i < 50 ? 20 : 40;
      s.t.receiveFrame(enc({ event: 'media', sequenceNumber: String(i + 2), streamSid: 'MZ1', media: { track: 'inbound', chunk: String(i + 1), timestamp: String(ts), payload: Buffer.from(streamBytes(ts * 8, ms * 8)).toString('base64') } }), false);
      ts += ms;
      s.clock.advance(ms);
      s.t.pace(s.clock.monotonicMs());
    }
    expect(Buffer.from(s.raw).equals(Buffer.from(streamBytes(0, ts * 8)))).toBe(true);
    expect(s.t.stats().invalidFrames).toBe(0);
  });

  it('Plivo, 10 ms messages for 6 s (its chunk counts messages): every byte, no invalid frame, not closed', () => {
    const s = setup(plivoProtocol, { event: 'start', sequenceNumber: 0, start: { callId: 'call-1', streamId: 'st-1', accountId: 'MA1', tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 } } });
    for (let i = 0; i < 600; i++) {
      const ev = s.t.receiveFrame(enc({ event: 'media', sequenceNumber: i + 1, streamId: 'st-1', media: { track: 'inbound', timestamp: String(i * 10), chunk: i + 1, payload: Buffer.from(streamBytes(i * 80, 80)).toString('base64') } }), false);
      expect(ev).toBeUndefined();
      s.clock.advance(10);
      s.t.pace(s.clock.monotonicMs());
    }
    expect(Buffer.from(s.raw).equals(Buffer.from(streamBytes(0, 48000)))).toBe(true);
    expect(s.t.stats().invalidFrames).toBe(0);
  });

  it('Vonage, 40 ms binary frames of L16: every sample once, in order', () => {
    const s = setup(vonageProtocol, { event: 'websocket:connected', 'content-type': 'audio/l16;rate=8000' });
    const all = Int16Array.from({ length: 8000 * 2 }, (_, i) => ((i * 37) % 20000) - 10000);
    for (let i = 0; i < 50; i++) {
      const part = all.subarray(i * 320, (i + 1) * 320);
      s.t.receiveFrame(new Uint8Array(part.buffer.slice(part.byteOffset, part.byteOffset + part.byteLength)).buffer as ArrayBuffer, true);
      s.clock.advance(40);
      s.t.pace(s.clock.monotonicMs());
    }
    const got = Int16Array.from(s.pcm.flatMap((f) => Array.from(f)));
    expect(got.length).toBe(all.length);
    expect(Array.from(got)).toEqual(Array.from(all));
    expect(s.t.stats().invalidFrames).toBe(0);
  });
});
