/**
 * TwilioTransport against a fake socket and a simulated clock: the outbound frame encoding (exact
 * JSON, base64 of the mu-law frame), marks and `clear` (marks pending at a clear come back as
 * cleared), suppressed events, inbound parsing, and the jitter-buffered pop schedule.
 */
import { describe, expect, it } from 'vitest';
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
    expect(t.receiveText('not json')).toEqual({ event: 'invalid', reason: 'not JSON' });
    expect(t.receiveText('{"event":"bogus"}')).toMatchObject({ event: 'invalid' });
    expect(t.receiveText('{"event":"media","media":{"chunk":"x","timestamp":"0","payload":"AA=="}}')).toBeUndefined();
    t.receiveBinary();
    expect(t.stats()).toMatchObject({ badFrames: 1, binaryFramesIgnored: 1, dtmf: 1 });
  });

  it('pops one frame per 20 ms through the jitter buffer, in order, upsampled to 16 kHz', () => {
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
    expect(got.every((g) => g.n === 320)).toBe(true);
    const raws = got.map((g) => g.raw);
    // In order; the lost chunk 5 is concealed from chunk 4 (faded repeat, so not byte 0x15).
    expect(raws.slice(0, 4)).toEqual([0x11, 0x12, 0x13, 0x14]);
    expect(raws[4]).not.toBe(0x15);
    expect(raws[5]).toBe(0x16);
    const s = t.stats().jitter;
    expect(s).toMatchObject({ received: 5, reordered: 1, late: 0 });
    expect(s.lost).toBeGreaterThanOrEqual(1);
  });

  it('decodes what it pops: a tone survives mu-law and the 8 -> 16 kHz path', () => {
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
    const steady = out.slice(-1600);
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
