/**
 * TwilioTransport against a fake socket and a simulated clock: the outbound frame encoding (exact
 * JSON, base64 of the mu-law frame), marks and `clear` (marks pending at a clear come back as
 * cleared), suppressed events, inbound parsing, and the jitter-buffered pop schedule.
 */
import { describe, expect, it } from 'vitest';
import { MAX_MEDIA_PAYLOAD_CHARS } from '../../../shared/protocol/twilio-media.js';
import { SimulatedClock } from '../../../shared/clock.js';
import { mulawDecode, mulawEncode } from '../../../media-engine/audio/g711.js';
import { base64Into, MAX_BUFFERED_BYTES, TwilioTransport } from '../../../media-engine/transports/twilio.js';

class FakeSocket {
  sent: string[] = [];
  buffered = 0;
  ended?: [number | undefined, string | undefined];
  send(message: ArrayBufferView | string): number {
    this.sent.push(typeof message === 'string' ? message : Buffer.from(message.buffer, message.byteOffset, message.byteLength).toString('utf8'));
    return 1;
  }
  getBufferedAmount(): number {
    return this.buffered;
  }
  end(code?: number, reason?: string): void {
    this.ended = [code, reason];
  }
  json(): Array<Record<string, any>> {
    return this.sent.map((s) => JSON.parse(s));
  }
}

function started(opts: ConstructorParameters<typeof TwilioTransport>[2] = {}) {
  const ws = new FakeSocket();
  const clock = new SimulatedClock();
  const t = new TwilioTransport(ws, clock, opts);
  const ev = t.receiveText(JSON.stringify({ event: 'start', sequenceNumber: '1', streamSid: 'MZ1', start: { streamSid: 'MZ1', accountSid: 'AC1', callSid: 'CA1', customParameters: { session_id: 's-1', agent_id: 'a-1' } } }));
  return { ws, clock, t, ev };
}

function media(chunk: number, bytes: Uint8Array): string {
  return JSON.stringify({ event: 'media', sequenceNumber: String(chunk + 1), streamSid: 'MZ1', media: { track: 'inbound', chunk: String(chunk), timestamp: String((chunk - 1) * 20), payload: Buffer.from(bytes).toString('base64') } });
}

describe('base64Into', () => {
  it('matches Buffer base64 for every tail length', () => {
    const dst = new Uint8Array(400);
    for (const n of [0, 1, 2, 3, 4, 5, 159, 160, 161]) {
      const src = Uint8Array.from({ length: n }, (_, i) => (i * 37 + n) & 0xff);
      const written = base64Into(src, dst, 5);
      expect(Buffer.from(dst.subarray(5, 5 + written)).toString('latin1')).toBe(Buffer.from(src).toString('base64'));
    }
  });
});

describe('TwilioTransport', () => {
  it('parses start and answers nothing on the socket', () => {
    const { ws, ev, t } = started();
    expect(ev).toEqual({ event: 'start', streamSid: 'MZ1', callSid: 'CA1', accountSid: 'AC1', customParameters: { session_id: 's-1', agent_id: 'a-1' } });
    expect(t.streamSid).toBe('MZ1');
    t.sendEvent({ type: 'pipeline_ready', providers: { asr: 'sim', llm: 'sim', tts: 'sim' } });
    expect(ws.sent).toEqual([]);
  });

  it('encodes each 20 ms frame as mu-law base64 in one media text frame', () => {
    const { ws, t } = started();
    const frame = Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin(i / 5)));
    t.sendAudio(frame);
    t.sendAudio(new Int16Array(160));
    const [first, second] = ws.sent;
    expect(first).toMatch(/^\{"event":"media","streamSid":"MZ1","media":\{"payload":"[A-Za-z0-9+/=]{216}"\}\}$/);
    const payload = Buffer.from(JSON.parse(first!).media.payload, 'base64');
    const expected = new Uint8Array(160);
    mulawEncode(frame, expected);
    expect(new Uint8Array(payload)).toEqual(expected);
    expect(JSON.parse(second!).media.payload).toBe(Buffer.alloc(160, 0xff).toString('base64'));
    expect(t.stats().outFrames).toBe(2);
    expect(() => t.sendAudio(new Int16Array(320))).toThrow(RangeError);
  });

  it('drops audio instead of buffering past the backpressure bound', () => {
    const { ws, t } = started();
    ws.buffered = MAX_BUFFERED_BYTES + 1;
    t.sendAudio(new Int16Array(160));
    expect(ws.sent).toEqual([]);
    expect(t.stats().outFramesDropped).toBe(1);
  });

  it('marks are heard when echoed; marks pending at a clear come back as cleared', () => {
    const { ws, t } = started();
    t.mark('run-1');
    t.mark('run-2');
    t.clearAudio();
    t.mark('run-3');
    expect(ws.json().map((m) => m.event + (m.mark ? `:${m.mark.name}` : ''))).toEqual(['mark:run-1', 'mark:run-2', 'clear', 'mark:run-3']);
    expect(ws.json()[2]).toEqual({ event: 'clear', streamSid: 'MZ1' });
    const echo = (name: string) => t.receiveText(JSON.stringify({ event: 'mark', sequenceNumber: '9', streamSid: 'MZ1', mark: { name } }));
    expect(echo('run-1')).toEqual({ event: 'mark', name: 'run-1', cleared: true });
    expect(echo('run-2')).toEqual({ event: 'mark', name: 'run-2', cleared: true });
    expect(echo('run-3')).toEqual({ event: 'mark', name: 'run-3', cleared: false });
    expect(t.stats()).toMatchObject({ marksSent: 3, marksCleared: 2, marksHeard: 1, clears: 1 });
  });

  it('reports dtmf, stop, invalid frames; counts binary frames', () => {
    const { t } = started();
    expect(t.receiveText('{"event":"dtmf","streamSid":"MZ1","dtmf":{"track":"inbound_track","digit":"7"}}')).toEqual({ event: 'dtmf', digit: '7' });
    expect(t.receiveText('{"event":"stop","streamSid":"MZ1","stop":{}}')).toEqual({ event: 'stop' });
    expect(t.receiveText('not json')).toEqual({ event: 'invalid', reason: 'not_json', close: false });
    // Unknown events are ignored and counted, not invalid (Twilio adds events over time).
    expect(t.receiveText('{"event":"bogus"}')).toBeUndefined();
    expect(t.receiveText('{"event":"media","media":{"chunk":"x","timestamp":"0","payload":"AA=="}}')).toEqual({ event: 'invalid', reason: 'bad_chunk', close: false });
    expect(t.receiveBinary()).toEqual({ event: 'invalid', reason: 'binary_frame', close: false });
    expect(t.stats()).toMatchObject({ invalidFrames: 3, unknownEvents: 1, binaryFramesIgnored: 1, dtmf: 1, invalidReasons: { not_json: 1, bad_chunk: 1, binary_frame: 1 } });
  });

  it('pops one frame per 20 ms through the jitter buffer, in order, as 8 kHz PCM (no resampling)', () => {
    const { t, clock } = started({ passRawMulaw: true });
    const got: Array<{ n: number; raw: number }> = [];
    t.attach({ onAudio: (pcm, raw) => got.push({ n: pcm.length, raw: raw![0]! }) });
    const frame = (v: number) => new Uint8Array(160).fill(v);
    // One arrival group per 20 ms: chunk 4 overtakes chunk 3 (same slot), chunk 5 never arrives.
    const groups = [[1], [2], [4, 3], [6]];
    for (const g of groups) {
      for (const c of g) t.receiveText(media(c, frame(0x10 + c)));
      clock.advance(20);
      t.pace(clock.monotonicMs());
    }
    for (let i = 0; i < 4; i++) {
      clock.advance(20);
      t.pace(clock.monotonicMs());
    }
    expect(got.every((g) => g.n === 160)).toBe(true);
    const raws = got.map((g) => g.raw);
    // In order; the lost chunk 5 is concealed from chunk 4 (faded repeat, so not byte 0x15).
    expect(raws.slice(0, 4)).toEqual([0x11, 0x12, 0x13, 0x14]);
    expect(raws[4]).not.toBe(0x15);
    expect(raws[5]).toBe(0x16);
    const s = t.stats().jitter;
    expect(s).toMatchObject({ received: 5, reordered: 1, late: 0 });
    expect(s.lost).toBeGreaterThanOrEqual(1);
  });

  it('decodes what it pops: a tone survives mu-law at 8 kHz', () => {
    const { t, clock } = started();
    const out: number[] = [];
    t.attach({ onAudio: (pcm) => out.push(...pcm) });
    for (let c = 1; c <= 20; c++) {
      const pcm = Int16Array.from({ length: 160 }, (_, i) => Math.round(10000 * Math.sin((2 * Math.PI * 1000 * ((c - 1) * 160 + i)) / 8000)));
      const bytes = new Uint8Array(160);
      mulawEncode(pcm, bytes);
      t.receiveText(media(c, bytes));
      clock.advance(20);
      t.pace(clock.monotonicMs());
    }
    const steady = out.slice(-800);
    const rms = Math.sqrt(steady.reduce((a, x) => a + x * x, 0) / steady.length);
    expect(rms).toBeGreaterThan(6000);
    expect(rms).toBeLessThan(8000);
    const check = new Int16Array(1);
    mulawDecode(new Uint8Array([0xff]), check);
    expect(check[0]).toBe(0);
  });

  it('close is idempotent and nothing is sent after it', () => {
    const { ws, t } = started();
    t.close(1000, 'done');
    t.close(1000, 'again');
    t.sendAudio(new Int16Array(160));
    t.mark('x');
    expect(ws.ended).toEqual([1000, 'done']);
    expect(ws.sent).toEqual([]);
  });
});

/**
 * Issue 11, "one carrier frame freezes the node": every field of every carrier frame is validated
 * at the edge, counters must lie in a window of the stream's position, no media is accepted before
 * `start` and a claimed session, and a stream that keeps sending garbage is told to close.
 */
describe('one carrier frame freezes the node (carrier input validation)', () => {
  const HOSTILE = ['2e8', '1e300', '-1', 'abc', '9007199254740993', '1.5', '', ' 7', '0x10'];
  const HOSTILE_NUMBERS = [1e300, -1, 1.5, 2 ** 53, Number.MAX_VALUE];
  const payload = Buffer.alloc(160, 0x55).toString('base64');
  const mediaWith = (fields: Record<string, unknown>, top: Record<string, unknown> = {}) =>
    JSON.stringify({ event: 'media', streamSid: 'MZ1', ...top, media: { track: 'inbound', chunk: '1', timestamp: '0', payload, ...fields } });

  function attached() {
    const s = started();
    s.t.attach({ onAudio: () => {} });
    return s;
  }

  it('rejects hostile chunk, timestamp and sequenceNumber values, as strings and as numbers', () => {
    const { t } = attached();
    for (const v of [...HOSTILE, ...HOSTILE_NUMBERS, null, true, [], {}]) {
      expect(t.receiveText(mediaWith({ chunk: v }))).toMatchObject({ event: 'invalid', reason: 'bad_chunk' });
      expect(t.receiveText(mediaWith({ timestamp: v }))).toMatchObject({ event: 'invalid', reason: 'bad_timestamp' });
      expect(t.receiveText(mediaWith({}, { sequenceNumber: v }))).toMatchObject({ event: 'invalid', reason: 'bad_sequence_number' });
    }
    expect(t.stats().jitter.received).toBe(0);
    // Numbers that are safe integers are fine, as are digit strings.
    expect(t.receiveText(mediaWith({ chunk: 1, timestamp: 0 }, { sequenceNumber: 2 }))).toBeUndefined();
    expect(t.receiveText(mediaWith({ chunk: '2', timestamp: '20' }, { sequenceNumber: '3' }))).toBeUndefined();
    expect(t.stats().jitter.received).toBe(2);
  });

  it('a counter far outside the window of the stream position is dropped; a stalled stream may resume', () => {
    const { t, clock } = attached();
    for (let c = 1; c <= 10; c++) expect(t.receiveText(mediaWith({ chunk: String(c), timestamp: String((c - 1) * 20) }))).toBeUndefined();
    expect(t.receiveText(mediaWith({ chunk: '200000000', timestamp: '200' }))).toMatchObject({ reason: 'chunk_out_of_window' });
    expect(t.receiveText(mediaWith({ chunk: String(Number.MAX_SAFE_INTEGER), timestamp: '200' }))).toMatchObject({ reason: 'chunk_out_of_window' });
    expect(t.receiveText(mediaWith({ chunk: '11', timestamp: '200000000' }))).toMatchObject({ reason: 'timestamp_out_of_window' });
    expect(t.receiveText(mediaWith({ chunk: '11', timestamp: '200' }, { sequenceNumber: '9000000' }))).toMatchObject({ reason: 'sequence_out_of_window' });
    expect(t.stats().jitter.received).toBe(10);
    // 10 s of silence on the line, then the carrier's counters have moved on by 500 frames: fine.
    clock.advance(10_000);
    expect(t.receiveText(mediaWith({ chunk: '510', timestamp: '10180' }))).toBeUndefined();
    expect(t.stats().jitter.received).toBe(11);
  });

  it('bounds and checks the payload: size, base64 alphabet and padding', () => {
    const { t } = attached();
    for (const bad of ['', 'A', 'AAA', '!!!!', 'AA==AA==', 'A'.repeat(MAX_MEDIA_PAYLOAD_CHARS + 4), 12, null]) {
      expect(t.receiveText(mediaWith({ payload: bad }))).toMatchObject({ event: 'invalid', reason: 'bad_payload' });
    }
    expect(t.receiveText(mediaWith({ track: 'both' }))).toMatchObject({ reason: 'bad_track' });
    // 1,024 bytes (128 ms): reframed into six whole 20 ms frames, the rest waits for the next message.
    expect(t.receiveText(mediaWith({ payload: Buffer.alloc(1024, 1).toString('base64') }))).toBeUndefined();
    expect(t.stats().jitter.received).toBe(6);
  });

  it('bounds start: sids, custom parameters, media format; a second start is invalid', () => {
    const ws = new FakeSocket();
    const t = new TwilioTransport(ws, new SimulatedClock());
    const start = (s: Record<string, unknown>) => t.receiveText(JSON.stringify({ event: 'start', sequenceNumber: '1', start: { streamSid: 'MZ1', callSid: 'CA1', accountSid: 'AC1', ...s } }));
    expect(start({ streamSid: 'M'.repeat(65) })).toMatchObject({ reason: 'bad_stream_sid' });
    expect(start({ callSid: { $gt: '' } })).toMatchObject({ reason: 'bad_start' });
    expect(start({ customParameters: { session_id: 7 } })).toMatchObject({ reason: 'bad_custom_parameters' });
    expect(start({ customParameters: { session_id: 'x'.repeat(257) } })).toMatchObject({ reason: 'bad_custom_parameters' });
    expect(start({ customParameters: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v'])) })).toMatchObject({ reason: 'bad_custom_parameters' });
    expect(start({ mediaFormat: { encoding: 'audio/l16', sampleRate: 16000, channels: 1 } })).toMatchObject({ reason: 'bad_media_format' });
    expect(t.streamSid).toBe('');
    expect(start({ mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } })).toMatchObject({ event: 'start', streamSid: 'MZ1' });
    expect(t.receiveText(JSON.stringify({ event: 'start', streamSid: 'MZ2', start: { streamSid: 'MZ2' } }))).toMatchObject({ reason: 'stream_sid_mismatch' });
    expect(t.receiveText(JSON.stringify({ event: 'start', streamSid: 'MZ1', start: { streamSid: 'MZ1' } }))).toMatchObject({ reason: 'duplicate_start' });
    expect(t.streamSid).toBe('MZ1');
    expect(t.receiveText(mediaWith({}, { streamSid: 'MZ9' }))).toMatchObject({ reason: 'stream_sid_mismatch' });
  });

  it('no media before start (invalid) nor before the claim (dropped, counted, not buffered)', () => {
    const ws = new FakeSocket();
    const clock = new SimulatedClock();
    const t = new TwilioTransport(ws, clock);
    expect(t.receiveText(mediaWith({}, { streamSid: undefined }))).toMatchObject({ reason: 'media_before_start' });
    t.receiveText(JSON.stringify({ event: 'start', sequenceNumber: '1', start: { streamSid: 'MZ1', callSid: 'CA1', accountSid: 'AC1' } }));
    for (let c = 1; c <= 3; c++) expect(t.receiveText(mediaWith({ chunk: String(c), timestamp: String((c - 1) * 20) }))).toBeUndefined();
    expect(t.stats()).toMatchObject({ mediaBeforeClaim: 3, invalidFrames: 1, jitter: { received: 0 } });
    const got: number[] = [];
    t.attach({ onAudio: (pcm) => got.push(pcm.length) });
    t.receiveText(mediaWith({ chunk: '4', timestamp: '60' }));
    clock.advance(40);
    t.pace(clock.monotonicMs());
    expect(t.stats().jitter).toMatchObject({ received: 1, played: 1 });
    expect(got[0]).toBe(160);
  });

  it('a stream that keeps sending garbage is told to close; rare bad frames are tolerated', () => {
    const { t } = attached();
    // 20 % garbage (one bad frame in five) for 500 frames: never closed.
    let chunk = 0;
    for (let i = 0; i < 500; i++) {
      const ev = i % 5 === 0 ? t.receiveText('{"event":"media","media":{}}') : t.receiveText(mediaWith({ chunk: String(++chunk), timestamp: String((chunk - 1) * 20) }));
      expect(ev && ev.event === 'invalid' && ev.close).toBeFalsy();
    }
    // Then pure garbage: closed at the first frame that makes it more than 20 of the last 100.
    const verdicts: boolean[] = [];
    for (let i = 0; i < 30; i++) {
      const ev = t.receiveText('[]');
      verdicts.push(ev?.event === 'invalid' && ev.close);
    }
    expect(verdicts.indexOf(true)).toBeGreaterThan(0);
    expect(verdicts.indexOf(true)).toBeLessThanOrEqual(20);
    expect(t.stats().invalidFrames).toBe(100 + 30);
  });
});
