import { describe, expect, it } from 'vitest';
import { AudioRing } from '../../../../shared/providers/asr/audio-ring.js';
import { AsyncQueue } from '../../../../shared/providers/async-queue.js';
import { describeJsonError, httpStreamSettings, LLM_HTTP_DEFAULTS, TTS_HTTP_DEFAULTS } from '../../../../shared/providers/http.js';
import { backoffDelayMs } from '../../../../shared/backoff.js';
import { parseRetryAfterMs } from '../../../../shared/providers/errors.js';
import { SseParser } from '../../../../shared/providers/sse.js';

const enc = (s: string) => new TextEncoder().encode(s);

describe('SseParser', () => {
  it('handles comments, CRLF, event names, multi-line data and events split across chunks', () => {
    const p = new SseParser('t');
    const out = [
      ...p.push(enc(': ping\r\n\r\nevent: a\r\ndata: {"x"')),
      ...p.push(enc(':1}\r\n\r\ndata: line1\ndata: line2\n')),
      ...p.push(enc('\n')),
    ];
    expect(out).toEqual([
      { event: 'a', data: '{"x":1}' },
      { event: '', data: 'line1\nline2' },
    ]);
  });

  it('reassembles a UTF-8 character split between chunks', () => {
    const bytes = enc('data: h\u00e9llo \u{1F600}\n\n');
    const p = new SseParser('t');
    const out = [...p.push(bytes.subarray(0, 9)), ...p.push(bytes.subarray(9, 15)), ...p.push(bytes.subarray(15))];
    expect(out).toEqual([{ event: '', data: 'h\u00e9llo \u{1F600}' }]);
  });

  it('dispatches a last event that lacks its blank line at end of body', () => {
    const p = new SseParser('t');
    expect(p.push(enc('data: [DONE]'))).toEqual([]);
    expect(p.end()).toEqual([{ event: '', data: '[DONE]' }]);
  });

  it('rejects an unterminated line beyond the bound with MALFORMED_RESPONSE', () => {
    const p = new SseParser('t');
    expect(() => p.push(enc('data: ' + 'x'.repeat(1024 * 1024 + 10)))).toThrow(expect.objectContaining({ code: 'MALFORMED_RESPONSE' }));
  });

  it('rejects one event whose data lines add up beyond the bound, and stays rejected', () => {
    const p = new SseParser('t');
    const line = `data: ${'x'.repeat(64 * 1024)}\n`;
    expect(() => {
      for (let i = 0; i < 20; i++) p.push(enc(line));
    }).toThrow(expect.objectContaining({ code: 'MALFORMED_RESPONSE' }));
    expect(() => p.push(enc('\n'))).toThrow(expect.objectContaining({ code: 'MALFORMED_RESPONSE' }));
  });

  it('takes a lone CR as a line end (WHATWG) and reports no comment or unknown field as an event', () => {
    const p = new SseParser('t');
    // A CR ending a chunk may be the first half of a CRLF, so that last blank line is only
    // confirmed by the next byte (here: the end of the body).
    expect(p.push(enc(': keep-alive\rid: 7\rretry: x\rfoo: bar\rdata: a\r\rdata: b\r\r'))).toEqual([{ event: '', data: 'a' }]);
    expect(p.end()).toEqual([{ event: '', data: 'b' }]);
  });
});

describe('parseRetryAfterMs', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it.each([
    ['2', 2000],
    ['0', 0],
    ['1.5', 1500],
    ['Wed, 01 Jan 2025 00:00:03 GMT', 3000],
    ['Tue, 31 Dec 2024 23:59:00 GMT', 0],
    ['soon', undefined],
    [null, undefined],
  ])('%s -> %s ms', (v, ms) => expect(parseRetryAfterMs(v, now)).toBe(ms));
});

describe('describeJsonError', () => {
  it('reads OpenAI, Anthropic and ElevenLabs error bodies', () => {
    expect(describeJsonError('{"error":{"message":"m","type":"t","code":"c"}}')).toEqual({ message: 'm', vendorCode: 'c' });
    expect(describeJsonError('{"type":"error","error":{"type":"overloaded_error","message":"o"}}')).toEqual({ message: 'o', vendorCode: 'overloaded_error' });
    expect(describeJsonError('{"detail":{"status":"quota_exceeded","message":"q"}}')).toEqual({ message: 'q', vendorCode: 'quota_exceeded' });
    expect(describeJsonError('<html>bad gateway</html>').message).toBe('<html>bad gateway</html>');
  });
});

describe('AudioRing', () => {
  it('drops the oldest whole frames beyond its cap and trims finalized audio by offset', () => {
    const r = new AudioRing(10);
    for (let i = 0; i < 4; i++) r.append(new Uint8Array(4).fill(i));
    expect(r.all().map((f) => [f.start, f.bytes[0]])).toEqual([[8, 2], [12, 3]]);
    expect(r.droppedBytes).toBe(8);
    r.trimBefore(13); // the message [12,16) straddles the cut: only its unfinalized tail is kept
    expect(r.startOffset).toBe(13);
    expect(r.heldBytes).toBe(3);
    expect(r.all().map((f) => [f.start, f.bytes.length, f.bytes[0]])).toEqual([[13, 3, 3]]);
    r.trimBefore(16);
    expect(r.heldBytes).toBe(0);
    expect(r.startOffset).toBe(16);
  });

  it('copies frames, so a caller reusing its buffer does not corrupt held audio', () => {
    const r = new AudioRing(100);
    const buf = new Uint8Array([1, 2]);
    r.append(buf);
    buf[0] = 9;
    expect(r.all()[0]!.bytes[0]).toBe(1);
  });
});

describe('AsyncQueue', () => {
  it('delivers queued items before a failure, refuses pushes beyond capacity', async () => {
    const q = new AsyncQueue<number>(2);
    expect([q.push(1), q.push(2), q.push(3)]).toEqual([true, true, false]);
    q.fail(new Error('x'));
    expect(await q.next()).toEqual({ value: 1, done: false });
    expect(await q.next()).toEqual({ value: 2, done: false });
    await expect(q.next()).rejects.toThrow('x');
    expect(await q.next()).toEqual({ value: undefined, done: true });
  });
});

describe('httpStreamSettings', () => {
  it("fills an adapter's unset options from its kind's defaults", () => {
    const s = httpStreamSettings({}, TTS_HTTP_DEFAULTS);
    expect(s).toMatchObject({ firstByteTimeoutMs: 10_000, idleTimeoutMs: 15_000, maxRetries: 0, maxRetryAfterMs: 5_000, backoff: { baseMs: 200, maxMs: 5_000 } });
    expect(httpStreamSettings({}, LLM_HTTP_DEFAULTS)).toMatchObject({ firstByteTimeoutMs: 15_000, maxRetries: 2, backoff: { baseMs: 250, maxMs: 10_000 } });
  });

  it('an explicit option wins, and the backoff uses the given jitter draw under maxRetryAfterMs', () => {
    const random = () => 1;
    const s = httpStreamSettings({ timeoutMs: 1, idleTimeoutMs: 2, maxRetries: 3, baseBackoffMs: 400, maxRetryAfterMs: 1000, random }, LLM_HTTP_DEFAULTS);
    expect(s).toMatchObject({ firstByteTimeoutMs: 1, idleTimeoutMs: 2, maxRetries: 3, maxRetryAfterMs: 1000 });
    expect([1, 2, 3].map((n) => backoffDelayMs(n, s.backoff))).toEqual([400, 800, 1000]);
  });
});
