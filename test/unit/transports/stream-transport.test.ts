/**
 * StreamTransport with each wire (Plivo, Exotel, Vonage) against a fake socket and a simulated
 * clock: outbound frames exactly as each carrier documents them (Exotel's 100 ms batches, Vonage's
 * binary PCM), marks and clears (marks pending at a clear come back cleared), inbound audio decoded
 * and delivered once per 20 ms frame in order (Exotel's 100 ms messages cut in five, reordered
 * messages put back in order by timestamp), and garbage handling.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { mulawEncode } from '../../../media-engine/audio/g711.js';
import { StreamTransport } from '../../../media-engine/transports/stream-transport.js';
import { readPcmLE, WIRES, writePcmLE, type StreamCarrier } from '../../../media-engine/transports/stream-wires.js';

class FakeSocket {
  sent: Array<{ msg: Uint8Array | string; binary: boolean }> = [];
  buffered = 0;
  ended?: [number | undefined, string | undefined];
  send(message: ArrayBufferView | string, isBinary = false): number {
    this.sent.push({ msg: typeof message === 'string' ? message : new Uint8Array(message.buffer.slice(message.byteOffset, message.byteOffset + message.byteLength)), binary: isBinary });
    return 1;
  }
  getBufferedAmount(): number {
    return this.buffered;
  }
  end(code?: number, reason?: string): void {
    this.ended = [code, reason];
  }
  texts(): Array<Record<string, any>> {
    return this.sent.filter((s) => !s.binary).map((s) => JSON.parse(typeof s.msg === 'string' ? s.msg : Buffer.from(s.msg).toString('utf8')));
  }
}

class Sink {
  frames: Int16Array[] = [];
  onAudio(pcm: Int16Array): void {
    this.frames.push(Int16Array.from(pcm));
  }
}

const enc = (s: unknown) => new TextEncoder().encode(typeof s === 'string' ? s : JSON.stringify(s)).buffer as ArrayBuffer;

function setup(carrier: StreamCarrier, start: unknown) {
  const ws = new FakeSocket();
  const clock = new SimulatedClock();
  const t = new StreamTransport(WIRES[carrier], ws, clock);
  const ev = t.receiveFrame(enc(start), false);
  const sink = new Sink();
  t.attach(sink);
  return { ws, clock, t, ev, sink };
}

/** A 20 ms frame whose samples all equal `v` (distinguishable after delivery). */
const level = (v: number, n: number) => new Int16Array(n).fill(v);
const pcmBytes = (pcm: Int16Array) => {
  const b = new Uint8Array(pcm.length * 2);
  writePcmLE(pcm, b);
  return b;
};

const PLIVO_START = { event: 'start', sequenceNumber: 0, start: { callId: 'call-1', streamId: 'st-1', accountId: 'MA1', tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 } }, extra_headers: 'session_id=s-1,agent_id=a-1' };
const EXOTEL_START = { event: 'start', sequence_number: '1', stream_sid: 'MZ1', start: { stream_sid: 'MZ1', call_sid: 'CA1', account_sid: 'acc', custom_parameters: { session_id: 's-1' }, media_format: { encoding: 'base64', sample_rate: '8000', bit_rate: '128kbps' } } };
const VONAGE_START = { event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000', session_id: 's-1', call_id: 'c-1' };

describe('StreamTransport, Plivo', () => {
  it('start names the session; audio goes out as playAudio mu-law, marks as checkpoints, clear as clearAudio', () => {
    const { ws, t, ev } = setup('plivo', PLIVO_START);
    expect(ev).toEqual({ event: 'start', streamId: 'st-1', callId: 'call-1', customParameters: { session_id: 's-1', agent_id: 'a-1' } });
    expect([t.inRateHz, t.outRateHz, t.kind]).toEqual([8000, 8000, 'plivo']);
    const frame = Int16Array.from({ length: 160 }, (_, i) => Math.round(6000 * Math.sin(i / 4)));
    t.sendAudio(frame);
    t.mark('run-1');
    t.clearAudio();
    t.mark('run-2');
    const [play, cp, clear, cp2] = ws.texts();
    const mulaw = new Uint8Array(160);
    mulawEncode(frame, mulaw);
    expect(play).toEqual({ event: 'playAudio', streamId: 'st-1', media: { contentType: 'audio/x-mulaw', sampleRate: 8000, payload: Buffer.from(mulaw).toString('base64') } });
    expect(cp).toEqual({ event: 'checkpoint', streamId: 'st-1', name: 'run-1' });
    expect(clear).toEqual({ event: 'clearAudio', streamId: 'st-1' });
    expect(cp2).toEqual({ event: 'checkpoint', streamId: 'st-1', name: 'run-2' });
    // run-1 was pending at the clear: its echo is for dropped audio.
    expect(t.receiveFrame(enc({ event: 'playedStream', streamId: 'st-1', name: 'run-1' }), false)).toEqual({ event: 'mark', name: 'run-1', cleared: true });
    expect(t.receiveFrame(enc({ event: 'playedStream', streamId: 'st-1', name: 'run-2' }), false)).toEqual({ event: 'mark', name: 'run-2', cleared: false });
    expect(t.receiveFrame(enc({ event: 'clearedAudio', streamId: 'st-1' }), false)).toBeUndefined();
    expect(t.receiveFrame(enc({ event: 'dtmf', streamId: 'st-1', dtmf: { digit: '9' } }), false)).toEqual({ event: 'dtmf', digit: '9' });
    expect(t.stats()).toMatchObject({ outFrames: 1, marksSent: 2, marksHeard: 1, marksCleared: 1, clears: 1, dtmf: 1 });
    expect(() => t.sendAudio(new Int16Array(320))).toThrow(RangeError);
  });

  it('delivers inbound media decoded, one frame per chunk in order, concealing a lost chunk', () => {
    const { t, sink, clock } = setup('plivo', PLIVO_START);
    const media = (chunk: number, v: number) => {
      const mu = new Uint8Array(160);
      mulawEncode(level(v, 160), mu);
      return enc({ event: 'media', streamId: 'st-1', media: { track: 'inbound', chunk, timestamp: String(1_700_000_000_000 + chunk * 20), payload: Buffer.from(mu).toString('base64') } });
    };
    // Chunk 4 overtakes chunk 3 within one tick; chunk 5 never comes.
    for (const batch of [[1], [2], [4, 3], [], [6]]) {
      for (const chunk of batch) t.receiveFrame(media(chunk, chunk * 1000), false);
      clock.advance(20);
      t.pace(clock.monotonicMs());
    }
    for (let i = 0; i < 10; i++) {
      clock.advance(20);
      t.pace(clock.monotonicMs());
    }
    const firsts = sink.frames.map((f) => f[0]!);
    // mu-law is lossy: compare by rounding to the nearest thousand. Chunk 5 never came: concealed (chunk 4 repeated, fading).
    expect(firsts.slice(0, 4).map((x) => Math.round(x / 1000))).toEqual([1, 2, 3, 4]);
    // The concealed frame repeats chunk 4 fading to half (-6 dB) by its end.
    expect(firsts[4]).toBe(sink.frames[3]![0]);
    expect(sink.frames[4]![159]! / sink.frames[3]![159]!).toBeCloseTo(0.5, 1);
    expect(Math.round(firsts[5]! / 1000)).toBe(6);
    expect(sink.frames).toHaveLength(6);
  });

  it('refuses binary frames and closes a stream that keeps sending garbage', () => {
    const { t } = setup('plivo', PLIVO_START);
    expect(t.receiveFrame(new ArrayBuffer(160), true)).toEqual({ event: 'invalid', reason: 'binary_frame', close: false });
    let last;
    for (let i = 0; i < 25; i++) last = t.receiveFrame(enc('{nope'), false);
    expect(last).toEqual({ event: 'invalid', reason: 'not_json', close: true });
    expect(t.receiveFrame(enc({ event: 'start', start: { streamId: 'x' } }), false)).toMatchObject({ event: 'invalid', reason: 'duplicate_start' });
  });
});

describe('StreamTransport, Exotel', () => {
  it('batches five 20 ms frames of 8 kHz PCM into one 100 ms media message; a mark flushes the rest first; clear drops it', () => {
    const { ws, t, ev } = setup('exotel', EXOTEL_START);
    expect(ev).toMatchObject({ event: 'start', streamId: 'MZ1', callId: 'CA1', customParameters: { session_id: 's-1' } });
    for (let i = 0; i < 7; i++) t.sendAudio(level(i * 100, 160));
    t.mark('run-1');
    t.sendAudio(level(9, 160));
    t.clearAudio();
    const msgs = ws.texts();
    expect(msgs.map((m) => m.event)).toEqual(['media', 'media', 'mark', 'clear']);
    const first = Buffer.from(msgs[0]!.media.payload, 'base64');
    expect(first.length).toBe(1600);
    const pcm = new Int16Array(800);
    readPcmLE(first, pcm);
    expect([pcm[0], pcm[160], pcm[799]]).toEqual([0, 100, 400]);
    expect(Buffer.from(msgs[1]!.media.payload, 'base64').length).toBe(320 * 2);
    expect(msgs[1]!.stream_sid).toBe('MZ1');
    expect(msgs[2]).toEqual({ event: 'mark', stream_sid: 'MZ1', mark: { name: 'run-1' } });
    expect(msgs[3]).toEqual({ event: 'clear', stream_sid: 'MZ1' });
    // The frame queued after the mark was dropped by the clear: nothing flushes it later.
    t.mark('run-2');
    expect(ws.texts().slice(4)).toEqual([{ event: 'mark', stream_sid: 'MZ1', mark: { name: 'run-2' } }]);
  });

  it('cuts 100 ms messages into 20 ms frames and orders reordered messages by timestamp', () => {
    const { t, sink, clock } = setup('exotel', EXOTEL_START);
    const msg = (chunk: number) => {
      const pcm = new Int16Array(800);
      for (let f = 0; f < 5; f++) pcm.fill((chunk * 5 + f) * 10, f * 160, (f + 1) * 160);
      return enc({ event: 'media', stream_sid: 'MZ1', media: { chunk: String(chunk), timestamp: String(chunk * 100), payload: Buffer.from(pcmBytes(pcm)).toString('base64') } });
    };
    t.receiveFrame(msg(0), false);
    clock.advance(100);
    t.pace(clock.monotonicMs());
    t.receiveFrame(msg(2), false);
    t.receiveFrame(msg(1), false);
    for (let i = 0; i < 30; i++) {
      clock.advance(20);
      t.pace(clock.monotonicMs());
    }
    expect(sink.frames.map((f) => f[0])).toEqual(Array.from({ length: 15 }, (_, i) => i * 10));
    expect(sink.frames.every((f) => f.length === 160)).toBe(true);
  });
});

describe('StreamTransport, Vonage', () => {
  it('runs at 16 kHz: binary PCM in and out, notify for marks, clear', () => {
    const { ws, t, sink, clock, ev } = setup('vonage', VONAGE_START);
    expect(ev).toEqual({ event: 'start', streamId: 'c-1', callId: 'c-1', customParameters: { session_id: 's-1', call_id: 'c-1' } });
    expect([t.inRateHz, t.outRateHz]).toEqual([16000, 16000]);
    const out = Int16Array.from({ length: 320 }, (_, i) => i - 160);
    t.sendAudio(out);
    expect(ws.sent[0]!.binary).toBe(true);
    const back = new Int16Array(320);
    readPcmLE(ws.sent[0]!.msg as Uint8Array, back);
    expect(back).toEqual(out);
    t.mark('run-1');
    t.clearAudio();
    expect(ws.texts()).toEqual([{ action: 'notify', payload: { mark: 'run-1' } }, { action: 'clear' }]);
    for (let i = 1; i <= 3; i++) {
      const b = pcmBytes(level(-i * 1000, 320));
      t.receiveFrame(b.buffer as ArrayBuffer, true);
      clock.advance(20);
      t.pace(clock.monotonicMs());
    }
    expect(sink.frames.map((f) => [f.length, f[0]])).toEqual([[320, -1000], [320, -2000], [320, -3000]]);
    expect(t.receiveFrame(enc({ event: 'websocket:dtmf', digit: '#' }), false)).toEqual({ event: 'dtmf', digit: '#' });
  });

  it('takes an 8 kHz stream when websocket:connected says so', () => {
    const { t } = setup('vonage', { ...VONAGE_START, 'content-type': 'audio/l16;rate=8000' });
    expect([t.inRateHz, t.outRateHz]).toEqual([8000, 8000]);
  });

  it('refuses media before websocket:connected', () => {
    const ws = new FakeSocket();
    const t = new StreamTransport(WIRES.vonage, ws, new SimulatedClock());
    expect(t.receiveFrame(new ArrayBuffer(640), true)).toMatchObject({ event: 'invalid', reason: 'media_before_start' });
  });
});
