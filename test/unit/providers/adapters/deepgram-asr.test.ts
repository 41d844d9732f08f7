import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { asrErrorCode } from '../../../../shared/providers/asr/deepgram-stream.js';
import { createDeepgramAsr, type DeepgramAsrOptions } from '../../../../shared/providers/asr/deepgram.js';
import { encodeText } from '../../../../shared/providers/sim/codec.js';
import type { AsrEvent, AsrStream } from '../../../../shared/providers/types.js';
import { describeAsrContract, finalText, speak } from '../../../contracts/asr.contract.js';
import { DeepgramFake } from '../../../fakes/deepgram.js';
import { collect, waitFor, withTimeout } from './helpers.js';

const fake = new DeepgramFake();
const asr = (extra: Partial<DeepgramAsrOptions> = {}) =>
  createDeepgramAsr({ apiKey: fake.apiKey, baseUrl: fake.url, reconnectBackoffMs: 10, ...extra });
const open16 = (p = asr()) => p.stream({ sampleRateHz: 16000, encoding: 'linear16' });
const codes = (events: AsrEvent[]) => events.flatMap((e) => (e.type === 'error' ? [[asrErrorCode(e), e.recoverable]] : []));

/** Reads events until `pred` matches (bounded), leaving the stream open. */
async function until(stream: AsrStream, pred: (e: AsrEvent) => boolean, seen: AsrEvent[] = []): Promise<AsrEvent[]> {
  const it = stream[Symbol.asyncIterator]();
  await withTimeout(
    (async () => {
      for (;;) {
        const r = await it.next();
        if (r.done) throw new Error(`stream ended before the awaited event; saw ${JSON.stringify(seen)}`);
        seen.push(r.value);
        if (pred(r.value)) return;
      }
    })(),
    5000,
    'until',
  ).catch((e: Error) => {
    throw new Error(`${e.message}; saw ${JSON.stringify(seen)}`);
  });
  return seen;
}
const opened = (n: number) => waitFor(() => fake.connections.length >= n && fake.connections[n - 1]!.status === 101, 3000, `connection ${n} open`);

beforeAll(() => fake.start());
afterAll(() => fake.close());
beforeEach(() => {
  fake.faults.clear();
  fake.idleTimeoutMs = 10_000;
});

describeAsrContract('deepgram vs fake (16 kHz linear16)', () => ({ provider: asr(), sampleRateHz: 16000, encoding: 'linear16', phrase: 'Book a table' }));
describeAsrContract('deepgram vs fake (8 kHz mulaw)', () => ({ provider: asr(), sampleRateHz: 8000, encoding: 'mulaw', phrase: 'Book a table' }));

describe('deepgram ASR adapter: wire format', () => {
  it('connects to /v1/listen with the documented params and Token auth; maps Results/SpeechStarted/UtteranceEnd', async () => {
    const s = open16(asr({ endpointingMs: 250, utteranceEndMs: 1200 }));
    speak(s, 'hello world', 16000, 'linear16');
    s.end();
    const events = await collect(s);
    const conn = fake.connections.at(-1)!;
    expect(conn.headers.authorization).toBe(`Token ${fake.apiKey}`);
    expect(Object.fromEntries(conn.query)).toEqual({
      model: 'nova-3', encoding: 'linear16', sample_rate: '16000', channels: '1', interim_results: 'true',
      endpointing: '250', utterance_end_ms: '1200', vad_events: 'true', punctuate: 'true', smart_format: 'true', language: 'en-US',
    });
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('speech_started');
    expect(types.filter((t) => t === 'interim').length).toBeGreaterThan(1);
    expect(events.find((e) => e.type === 'final')).toMatchObject({ text: 'hello world', endOfTurn: true, confidence: 0.99 });
    expect(types.at(-1)).toBe('utterance_end');
    expect(conn.texts).toContainEqual({ type: 'CloseStream' });
    await withTimeout(conn.closed, 2000, 'closed');
    expect(conn.closedByServer).toBe(true); // after CloseStream the server closes, as Deepgram does
  });

  it('mu-law passes through byte for byte (no resampling, no re-encoding)', async () => {
    const s = asr().stream({ sampleRateHz: 8000, encoding: 'mulaw' });
    const pushed = speak(s, 'yes', 8000, 'mulaw');
    s.end();
    expect(finalText(await collect(s))).toBe('yes');
    expect(fake.connections.at(-1)!.binaryBytes).toBe(pushed);
    expect(fake.connections.at(-1)!.query.get('encoding')).toBe('mulaw');
  });

  it('sends KeepAlive as text while no audio flows, so the server idle timeout never fires', async () => {
    // Generous margins (idle 400 ms vs a KeepAlive every 50 ms) so a loaded machine's late timers do not flake.
    fake.idleTimeoutMs = 400;
    const s = open16(asr({ keepAliveMs: 50 }));
    await opened(fake.connections.length + 1);
    const session = fake.sessions.at(-1)!;
    await waitFor(() => session.keepAlives >= 12, 5000, 'keepalives'); // >= 600 ms: past the idle timeout
    expect(session.rec.closeCode).toBeUndefined();
    expect(session.rec.binaryFrames).toBe(0); // a binary KeepAlive would be read as audio
    s.close();
  });

  it('flush() sends Finalize and the forced final is not an end of turn', async () => {
    const s = open16();
    // Everything but the end marker: the vendor has not seen the phrase end, so only Finalize ends it.
    const pcm = encodeText('wait for it', 16000);
    for (let i = 0; i < pcm.length - 960; i += 320) s.push(pcm.subarray(i, Math.min(i + 320, pcm.length - 960)));
    s.flush();
    const seen = await until(s, (e) => e.type === 'final');
    expect(seen.at(-1)).toMatchObject({ type: 'final', text: 'wait for it', endOfTurn: false });
    expect(fake.connections.at(-1)!.texts).toContainEqual({ type: 'Finalize' });
    s.close();
  });

  it('joins 20 ms frames into sendChunkMs messages; flush() and end() send a partial one first', async () => {
    const s = open16(); // default 40 ms: two frames per message
    await opened(fake.connections.length + 1);
    const conn = fake.connections.at(-1)!;
    for (let i = 0; i < 5; i++) s.push(new Int16Array(320).fill(i + 1));
    await waitFor(() => conn.binaryFrames >= 2, 3000, 'two messages');
    expect([conn.binaryFrames, conn.binaryBytes]).toEqual([2, 2 * 1280]);
    s.flush();
    await waitFor(() => conn.texts.some((t) => (t as { type?: string }).type === 'Finalize'), 3000, 'Finalize');
    // The fifth frame went before Finalize, on its own (a partial message).
    expect([conn.binaryFrames, conn.binaryBytes]).toEqual([3, 2 * 1280 + 640]);
    s.close();

    const wide = open16(asr({ sendChunkMs: 100 }));
    await opened(fake.connections.length + 1);
    const wideConn = fake.connections.at(-1)!;
    for (let i = 0; i < 7; i++) wide.push(new Int16Array(320));
    wide.end();
    await withTimeout(wideConn.closed, 3000, 'closed after CloseStream');
    expect([wideConn.binaryFrames, wideConn.binaryBytes]).toEqual([2, 7 * 640]);
    expect(wideConn.texts).toContainEqual({ type: 'CloseStream' });
  });

  it('a partial message left when pushes pause goes out with the next KeepAlive tick', async () => {
    const s = open16(asr({ keepAliveMs: 50 }));
    await opened(fake.connections.length + 1);
    const conn = fake.connections.at(-1)!;
    s.push(new Int16Array(320)); // half of a 40 ms message, then nothing
    await waitFor(() => conn.binaryBytes === 640, 3000, 'the partial message');
    expect(conn.binaryFrames).toBe(1);
    s.close();
  });

  it('warm() pre-opens the socket the first stream adopts', async () => {
    const p = asr();
    await p.warm!();
    const before = fake.connections.length;
    const s = open16(p);
    speak(s, 'warm start', 16000, 'linear16');
    s.end();
    expect(finalText(await collect(s))).toBe('warm start');
    expect(fake.connections.length).toBe(before);
  });
});

describe('deepgram ASR adapter: faults', () => {
  it('audio pushed while connecting is buffered (bounded) and replayed on open', async () => {
    fake.faults.once({ slowFirstByteMs: 150 });
    const s = open16(asr({ connectBufferMs: 2000 }));
    speak(s, 'early words', 16000, 'linear16', 2500); // 1.3 s of code + 2.5 s silence > 2 s bound
    s.end();
    const events = await collect(s);
    // The oldest audio was dropped to honour the bound, so at most 2 s (64000 bytes) reached Deepgram.
    expect(fake.connections.at(-1)!.binaryBytes).toBeLessThanOrEqual(64_000);
    expect(events.some((e) => e.type === 'error')).toBe(false);
  });

  it('mid-stream disconnect: reconnects, replays the unfinished utterance, and the turn is not lost', async () => {
    fake.faults.once({ disconnectMidStream: true });
    const before = fake.connections.length;
    const s = open16();
    await opened(before + 1);
    // Kept under connectBufferMs (1.2 s code + 0.3 s silence) in case the client has not seen 'open' yet.
    const pushed = speak(s, 'table for two', 16000, 'linear16', 300);
    const seen = await until(s, (e) => e.type === 'final');
    s.end();
    seen.push(...(await collect(s)));
    expect(codes(seen)).toEqual([['STREAM_INTERRUPTED', true]]);
    expect(finalText(seen)).toBe('table for two');
    expect(fake.connections.length).toBe(before + 2);
    // The second connection got the utterance from its start, not just the audio after the drop.
    expect(fake.connections[before + 1]!.binaryBytes).toBe(pushed);
    expect(fake.sessions.at(-1)!.finals).toEqual(['table for two']);
  });

  it('after a final, a drop replays only audio the vendor has not finalized', async () => {
    const s = open16();
    await opened(fake.connections.length + 1);
    speak(s, 'first', 16000, 'linear16');
    await until(s, (e) => e.type === 'final');
    fake.connections.at(-1)!.socket!.terminate(); // vendor drops between utterances
    speak(s, 'second', 16000, 'linear16');
    const seen = await until(s, (e) => e.type === 'final' && e.text === 'second');
    expect(seen.filter((e) => e.type === 'final').map((e) => (e as { text: string }).text)).toEqual(['second']);
    s.close();
  });

  it('429 on connect: Retry-After honoured, then connected', async () => {
    fake.faults.once({ status429RetryAfterS: 1 });
    const before = fake.connections.length;
    const s = open16();
    speak(s, 'ok', 16000, 'linear16');
    s.end();
    const events = await collect(s);
    expect(codes(events)).toEqual([['RATE_LIMITED', true]]);
    expect(finalText(events)).toBe('ok');
    const [a, b] = fake.connections.slice(before);
    expect(b!.atMs - a!.atMs).toBeGreaterThanOrEqual(950);
  });

  it('500 on every connect: bounded attempts, then a non-recoverable error and the stream ends', async () => {
    fake.faults.always({ status500: true });
    const before = fake.connections.length;
    const s = open16(asr({ maxReconnectAttempts: 2 }));
    const events = await collect(s);
    expect(codes(events)).toEqual([
      ['UPSTREAM_UNAVAILABLE', true],
      ['UPSTREAM_UNAVAILABLE', true],
      ['UPSTREAM_UNAVAILABLE', false],
    ]);
    expect(fake.connections.length - before).toBe(3);
  });

  it('slow handshake beyond connectTimeoutMs: CONNECT_FAILED', async () => {
    fake.faults.once({ slowFirstByteMs: 500 });
    const events = await collect(open16(asr({ connectTimeoutMs: 100, maxReconnectAttempts: 0 })));
    expect(codes(events)).toEqual([['CONNECT_FAILED', false]]);
  });

  it('malformed message: a recoverable error event, and the transcript still arrives', async () => {
    fake.faults.once({ malformedChunk: true });
    const s = open16();
    speak(s, 'still here', 16000, 'linear16');
    s.end();
    const events = await collect(s);
    expect(codes(events)).toEqual([['MALFORMED_RESPONSE', true]]);
    expect(finalText(events)).toBe('still here');
  });

  it("JSON that is not an object (`null`, a number), and fields of the wrong type, are this stream's recoverable errors, never a throw", async () => {
    for (const frame of ['null', '42', '"text"', '[1,2]', '{"type":"Results","channel":null}', '{"type":"Results","is_final":true,"channel":{"alternatives":[{"transcript":12345,"confidence":"high"}]}}']) {
      fake.faults.once({ malformedChunk: frame });
      const s = open16();
      speak(s, 'still here', 16000, 'linear16');
      s.end();
      const events = await collect(s);
      expect(finalText(events), frame).toBe('still here');
      for (const e of events) if (e.type === 'final' || e.type === 'interim') expect(typeof e.text, frame).toBe('string');
      if (!frame.startsWith('{')) expect(codes(events), frame).toEqual([['MALFORMED_RESPONSE', true]]);
    }
  });

  it('a server that greets and drops every connection exhausts the attempts (Metadata is not progress)', async () => {
    fake.faults.always({ greetThenClose: true });
    const before = fake.connections.length;
    const s = open16(asr({ maxReconnectAttempts: 2 }));
    const events = await collect(s);
    expect(codes(events).at(-1)).toEqual([expect.any(String), false]);
    expect(fake.connections.length - before).toBe(3);
  });

  it('server idle timeout (no KeepAlive) is a drop: reconnect with a recoverable error', async () => {
    fake.idleTimeoutMs = 100;
    const before = fake.connections.length;
    const s = open16(asr({ keepAliveMs: 60_000 }));
    const seen = await until(s, (e) => e.type === 'error');
    expect(codes(seen)).toEqual([['STREAM_INTERRUPTED', true]]);
    await withTimeout(fake.connections[before]!.closed, 2000, 'closed');
    expect(fake.connections[before]!.closeCode).toBe(1011);
    await opened(before + 2);
    s.close();
  });

  it('close() aborts: the fake sees a client close and the iterator completes', async () => {
    const s = open16();
    await opened(fake.connections.length + 1);
    const conn = fake.connections.at(-1)!;
    // Audio reaching the fake proves the client side is open too (a close while still connecting
    // aborts the handshake instead, which is a different path).
    s.push(new Int16Array(320));
    s.push(new Int16Array(320)); // two 20 ms frames: one 40 ms message (sendChunkMs)
    await waitFor(() => conn.binaryFrames > 0, 3000, 'audio at the fake');
    s.close();
    await collect(s, 2000);
    await withTimeout(conn.closed, 2000, 'fake saw close');
    expect(conn.closedByServer).toBe(false);
    expect(conn.closeCode).toBe(1000);
  });

  it('a consumer that breaks out of the loop closes the socket too', async () => {
    const s = open16();
    speak(s, 'hi', 16000, 'linear16');
    for await (const e of s) if (e.type === 'interim') break;
    const conn = fake.connections.at(-1)!;
    await withTimeout(conn.closed, 2000, 'fake saw close');
    expect(conn.closedByServer).toBe(false);
  });

  it('wrong key: AUTH_FAILED, not retried', async () => {
    const before = fake.connections.length;
    const events = await collect(createDeepgramAsr({ apiKey: 'nope', baseUrl: fake.url }).stream({ sampleRateHz: 16000, encoding: 'linear16' }));
    expect(codes(events)).toEqual([['AUTH_FAILED', false]]);
    expect(fake.connections.length - before).toBe(1);
  });
});
