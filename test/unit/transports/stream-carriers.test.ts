/**
 * The Plivo, Vonage and Exotel protocols on the generic carrier transport, against a fake socket
 * and a simulated clock: outbound frames exactly as each carrier documents them, marks and clears,
 * inbound audio decoded and handed over once per 20 ms frame in order (Exotel's 100 ms messages cut
 * in five and put in order by timestamp, Vonage's counter-less binary frames numbered on arrival,
 * a lost L16 frame concealed as PCM), and the session parameters of each start.
 */
import { describe, expect, it } from 'vitest';
import { FakeCarrierSocket } from '../../helpers/fake-carrier-socket.js';
import { SimulatedClock } from '../../../shared/clock.js';
import { mulawEncode } from '../../../media-engine/audio/g711.js';
import { CarrierTransport } from '../../../media-engine/transports/carrier-transport.js';
import type { CarrierProtocol } from '../../../media-engine/transports/carrier-protocol.js';
import { exotelProtocol } from '../../../media-engine/transports/exotel.js';
import { plivoProtocol } from '../../../media-engine/transports/plivo.js';
import { vonageProtocol } from '../../../media-engine/transports/vonage.js';

const enc = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v)).buffer as ArrayBuffer;
const le = (pcm: Int16Array) => {
  const b = Buffer.alloc(pcm.length * 2);
  pcm.forEach((s, i) => b.writeInt16LE(s, 2 * i));
  return b;
};
const fromLe = (b: Uint8Array) => Int16Array.from({ length: b.length / 2 }, (_, i) => Buffer.from(b).readInt16LE(2 * i));

function setup(protocol: CarrierProtocol, start: unknown) {
  const ws = new FakeCarrierSocket();
  const clock = new SimulatedClock();
  const t = new CarrierTransport(ws, clock, protocol);
  const ev = t.receiveFrame(enc(start), false);
  const frames: Int16Array[] = [];
  t.attach({ onAudio: (pcm) => frames.push(Int16Array.from(pcm)) });
  const tick = (n: number) => {
    for (let i = 0; i < n; i++) {
      clock.advance(20);
      t.pace(clock.monotonicMs());
    }
  };
  return { ws, t, ev, frames, tick };
}

describe('Plivo', () => {
  const START = { event: 'start', sequenceNumber: 0, start: { callId: 'call-1', streamId: 'st-1', accountId: 'MA1', tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 } }, extra_headers: 'session_id=s-1,agent_id=a-1,call_id=c-1' };

  it('start carries the session; playAudio / checkpoint / clearAudio as Plivo documents them', () => {
    const { ws, t, ev } = setup(plivoProtocol, START);
    expect(ev).toEqual({ event: 'start', streamSid: 'st-1', callSid: 'call-1', accountSid: '', customParameters: { session_id: 's-1', agent_id: 'a-1', call_id: 'c-1' } });
    const frame = Int16Array.from({ length: 160 }, (_, i) => Math.round(5000 * Math.sin(i / 3)));
    t.sendAudio(frame);
    t.mark('run-1');
    t.clearAudio();
    const mu = new Uint8Array(160);
    mulawEncode(frame, mu);
    expect(ws.texts()).toEqual([
      { event: 'playAudio', streamId: 'st-1', media: { contentType: 'audio/x-mulaw', sampleRate: 8000, payload: Buffer.from(mu).toString('base64') } },
      { event: 'checkpoint', streamId: 'st-1', name: 'run-1' },
      { event: 'clearAudio', streamId: 'st-1' },
    ]);
    // The checkpoint was pending at the clear: an echo of it is for dropped audio.
    expect(t.receiveFrame(enc({ event: 'playedStream', streamId: 'st-1', name: 'run-1' }), false)).toEqual({ event: 'mark', name: 'run-1', cleared: true });
    expect(t.receiveFrame(enc({ event: 'clearedAudio', streamId: 'st-1' }), false)).toEqual({ event: 'connected' });
    expect(t.receiveFrame(enc({ event: 'dtmf', streamId: 'st-1', dtmf: { digit: '7' } }), false)).toEqual({ event: 'dtmf', digit: '7' });
    expect(t.receiveFrame(new ArrayBuffer(160), true)).toMatchObject({ event: 'invalid', reason: 'binary_frame' });
  });

  it('keys media by chunk (its epoch-ms timestamp is not a stream clock) and delivers in order', () => {
    const { t, frames, tick } = setup(plivoProtocol, START);
    const media = (chunk: number) => {
      const mu = new Uint8Array(160);
      mulawEncode(new Int16Array(160).fill(chunk * 1000), mu);
      return enc({ event: 'media', sequenceNumber: chunk, streamId: 'st-1', media: { track: 'inbound', timestamp: String(1_700_000_000_000 + chunk * 20), chunk, payload: Buffer.from(mu).toString('base64') } });
    };
    for (const batch of [[1], [3, 2], [4]]) {
      for (const c of batch) expect(t.receiveFrame(media(c), false)).toBeUndefined();
      tick(1);
    }
    tick(5);
    expect(frames.map((f) => Math.round(f[0]! / 1000))).toEqual([1, 2, 3, 4]);
    expect(t.stats().invalidFrames).toBe(0);
  });
});

describe('Vonage', () => {
  const START = { event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000', session_id: 's-1', agent_id: 'a-1', call_id: 'c-1' };

  it('runs at 16 kHz: binary PCM out, notify for marks, clear', () => {
    const { ws, t, ev } = setup(vonageProtocol, START);
    expect(ev).toMatchObject({ event: 'start', streamSid: 'c-1', customParameters: { session_id: 's-1', agent_id: 'a-1', call_id: 'c-1' } });
    expect([t.inRateHz, t.outRateHz]).toEqual([16000, 16000]);
    const out = Int16Array.from({ length: 320 }, (_, i) => i * 50 - 8000);
    t.sendAudio(out);
    expect(ws.sent[0]!.binary).toBe(true);
    expect(fromLe(ws.sent[0]!.msg as Uint8Array)).toEqual(out);
    t.mark('run-1');
    t.clearAudio();
    expect(ws.texts()).toEqual([{ action: 'notify', payload: { mark: 'run-1' } }, { action: 'clear' }]);
    expect(t.receiveFrame(enc({ event: 'websocket:cleared' }), false)).toEqual({ event: 'connected' });
    expect(t.receiveFrame(enc({ event: 'websocket:dtmf', digit: '#', duration: 100 }), false)).toEqual({ event: 'dtmf', digit: '#' });
  });

  it('numbers counter-less binary frames on arrival', () => {
    const { t, frames, tick } = setup(vonageProtocol, START);
    for (let i = 1; i <= 3; i++) {
      const b = le(new Int16Array(320).fill(i * 1000));
      t.receiveFrame(b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer, true);
      tick(1);
    }
    // A stall is only waited out (nothing is lost on an ordered socket): no frame is invented.
    tick(8);
    expect(frames).toHaveLength(3);
    expect(frames.slice(0, 3).map((f) => [f.length, f[0]])).toEqual([[320, 1000], [320, 2000], [320, 3000]]);
    expect(t.stats().invalidFrames).toBe(0);
  });

  it('runs at 8 kHz when websocket:connected says so (the default NCCO): 320-byte frames both ways, the narrowband rates', () => {
    const { ws, t, ev, frames, tick } = setup(vonageProtocol, { ...START, 'content-type': 'audio/l16;rate=8000' });
    expect(ev).toMatchObject({ event: 'start', customParameters: { session_id: 's-1' } });
    expect([t.inRateHz, t.outRateHz, t.format]).toEqual([8000, 8000, { codec: 'l16', sampleRateHz: 8000 }]);
    const out = Int16Array.from({ length: 160 }, (_, i) => i * 90 - 7000);
    t.sendAudio(out);
    expect(ws.sent[0]!.binary).toBe(true);
    expect(fromLe(ws.sent[0]!.msg as Uint8Array)).toEqual(out);
    // A 16 kHz frame is not this stream's size.
    expect(() => t.sendAudio(new Int16Array(320))).toThrow(RangeError);
    for (let i = 1; i <= 3; i++) {
      const b = le(new Int16Array(160).fill(i * 700));
      t.receiveFrame(b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer, true);
      tick(1);
    }
    expect(frames.map((f) => [f.length, f[0], f[159]])).toEqual([[160, 700, 700], [160, 1400, 1400], [160, 2100, 2100]]);
    expect(t.stats()).toMatchObject({ invalidFrames: 0, jitter: { received: 3 } });
  });

  it('closes a stream at any other rate at once, with the reason; media before websocket:connected is invalid', () => {
    const ws = new FakeCarrierSocket();
    const t = new CarrierTransport(ws, new SimulatedClock(), vonageProtocol);
    expect(t.receiveFrame(new ArrayBuffer(640), true)).toMatchObject({ event: 'invalid', reason: 'media_before_start', close: false });
    const refused = t.receiveFrame(enc({ ...START, 'content-type': 'audio/l16;rate=24000' }), false);
    expect(refused).toEqual({ event: 'invalid', reason: 'bad_media_format', close: true, message: 'unsupported media format (vonage streams here: l16 at 8000 or 16000 Hz)' });
    expect(t.receiveFrame(enc({ ...START, 'content-type': 'audio/pcmu;rate=8000' }), false)).toMatchObject({ reason: 'bad_media_format', close: true });
    expect(t.streamSid).toBe('');
  });
});

describe('Exotel', () => {
  const START = { event: 'start', sequence_number: '1', stream_sid: 'MZ1', start: { stream_sid: 'MZ1', call_sid: 'CA1', account_sid: 'acct', custom_parameters: { session_id: 's-1' }, media_format: { encoding: 'base64', sample_rate: '8000', bit_rate: '128kbps' } } };

  it('batches five 20 ms frames of 8 kHz PCM per media message; a mark sends the rest first; a clear drops it', () => {
    const { ws, t, ev } = setup(exotelProtocol, START);
    expect(ev).toMatchObject({ event: 'start', streamSid: 'MZ1', callSid: 'CA1', customParameters: { session_id: 's-1' } });
    expect(t.leadMs).toBe(180);
    const level = (v: number) => new Int16Array(160).fill(v);
    for (let i = 0; i < 4; i++) t.sendAudio(level(i));
    expect(ws.sent).toEqual([]);
    for (let i = 4; i < 7; i++) t.sendAudio(level(i));
    t.mark('run-1');
    t.sendAudio(level(99));
    t.clearAudio();
    t.mark('run-2');
    const msgs = ws.texts();
    expect(msgs.map((m) => m.event)).toEqual(['media', 'media', 'mark', 'clear', 'mark']);
    const first = fromLe(Buffer.from(msgs[0]!.media.payload, 'base64'));
    expect(first.length).toBe(800);
    expect([first[0], first[160], first[799]]).toEqual([0, 1, 4]);
    const rest = fromLe(Buffer.from(msgs[1]!.media.payload, 'base64'));
    expect([rest.length, rest[0], rest[319]]).toEqual([320, 5, 6]);
    expect(msgs[1]!.stream_sid).toBe('MZ1');
    expect(msgs[2]).toEqual({ event: 'mark', stream_sid: 'MZ1', mark: { name: 'run-1' } });
    // The frame after run-1 was dropped by the clear: run-2 follows the clear directly.
    expect(msgs[3]).toEqual({ event: 'clear', stream_sid: 'MZ1' });
    expect(msgs[4]).toEqual({ event: 'mark', stream_sid: 'MZ1', mark: { name: 'run-2' } });
    expect(t.stats().outFrames).toBe(7);
  });

  it('cuts 100 ms messages into five 20 ms frames, in timestamp order', () => {
    const { t, frames, tick } = setup(exotelProtocol, START);
    const msg = (chunk: number) => {
      const pcm = new Int16Array(800);
      for (let f = 0; f < 5; f++) pcm.fill(((chunk - 1) * 5 + f) * 10, f * 160, (f + 1) * 160);
      return enc({ event: 'media', sequence_number: String(chunk + 1), stream_sid: 'MZ1', media: { chunk: String(chunk), timestamp: String((chunk - 1) * 100), payload: le(pcm).toString('base64') } });
    };
    t.receiveFrame(msg(1), false);
    tick(5);
    // The third message overtakes the second.
    t.receiveFrame(msg(3), false);
    t.receiveFrame(msg(2), false);
    tick(20);
    expect(frames.map((f) => f[0])).toEqual(Array.from({ length: 15 }, (_, i) => i * 10));
    expect(frames.every((f) => f.length === 160)).toBe(true);
    expect(t.stats().invalidFrames).toBe(0);
  });

  it('conceals a lost message as faded PCM (not as mu-law)', () => {
    const { t, frames, tick } = setup(exotelProtocol, START);
    const msg = (chunk: number, v: number) => enc({ event: 'media', stream_sid: 'MZ1', media: { chunk: String(chunk), timestamp: String((chunk - 1) * 100), payload: le(new Int16Array(800).fill(v)).toString('base64') } });
    t.receiveFrame(msg(1, 4000), false);
    tick(5);
    // Message 2 never comes; message 3 does, late enough that 2 is given up.
    tick(10);
    t.receiveFrame(msg(3, -2000), false);
    tick(20);
    const firsts = frames.map((f) => f[0]);
    expect(firsts.slice(0, 5)).toEqual([4000, 4000, 4000, 4000, 4000]);
    expect(firsts.slice(-5)).toEqual([-2000, -2000, -2000, -2000, -2000]);
    const concealed = frames.slice(5, -5);
    expect(concealed.length).toBeGreaterThanOrEqual(1);
    // The first concealed frame starts at the last sample's level and fades to half by its end.
    expect(concealed[0]![0]).toBe(4000);
    expect(concealed[0]![159]).toBeGreaterThan(1900);
    expect(concealed[0]![159]).toBeLessThan(2100);
    expect(concealed.every((f) => f.every((x) => x >= 0 && x <= 4000))).toBe(true);
  });
});
