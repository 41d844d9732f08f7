import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { withTtsRetry } from '../../../../shared/providers/retry.js';
import { createCartesiaTts, type CartesiaTts, type CartesiaTtsOptions } from '../../../../shared/providers/tts/cartesia.js';
import { describeTtsContract } from '../../../contracts/tts.contract.js';
import { CartesiaFake } from '../../../fakes/cartesia.js';
import { MAX_VENDOR_WS_MESSAGE_BYTES } from '../../../../shared/providers/ws-connect.js';
import { collect, concatPcm, decodeSimPcm, settle, waitFor, withTimeout } from './helpers.js';

const fake = new CartesiaFake();
const LONG = 'this is a much longer sentence so the stream has many chunks to abort';
const made: CartesiaTts[] = [];
function tts(extra: Partial<CartesiaTtsOptions> = {}): CartesiaTts {
  const p = createCartesiaTts({ apiKey: fake.apiKey, baseUrl: fake.url, voice: 'voice-uuid', ...extra });
  made.push(p);
  return p;
}
const req = (text: string, rate = 16000, signal = new AbortController().signal) => ({ text, preferredSampleRateHz: rate, signal });

beforeAll(() => fake.start());
afterAll(() => fake.close());
beforeEach(() => {
  fake.faults.clear();
  fake.requestFaults.clear();
  fake.chunkDelayMs = 0;
});
afterEach(() => {
  for (const p of made.splice(0)) p.close();
});

describeTtsContract('cartesia vs fake', () => ({ provider: tts(), text: 'good evening', longText: LONG, preferredSampleRateHz: 8000, simCoded: true }));

describe('cartesia TTS adapter', () => {
  it('sends the documented headers and context request; audio round-trips at the preferred rate', async () => {
    const chunks = await collect(tts().synthesize(req('Hello from cartesia', 16000)));
    expect(chunks.every((c) => c.sampleRateHz === 16000)).toBe(true);
    expect(decodeSimPcm(concatPcm(chunks), 16000)).toBe('hello from cartesia');
    const conn = fake.connections.at(-1)!;
    expect(conn.headers['x-api-key']).toBe(fake.apiKey);
    expect(conn.headers['cartesia-version']).toBe('2024-11-13');
    expect(fake.generations.at(-1)!.request).toMatchObject({
      model_id: 'sonic-2',
      transcript: 'Hello from cartesia',
      voice: { mode: 'id', id: 'voice-uuid' },
      language: 'en',
      output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: 16000 },
      continue: false,
    });
  });

  it('multiplexes concurrent syntheses as separate contexts on one socket', async () => {
    const p = tts();
    await p.warm!();
    const before = fake.connections.length;
    const [a, b] = await Promise.all([collect(p.synthesize(req('first one'))), collect(p.synthesize(req('second one')))]);
    expect(decodeSimPcm(concatPcm(a), 16000)).toBe('first one');
    expect(decodeSimPcm(concatPcm(b), 16000)).toBe('second one');
    expect(fake.connections.length).toBe(before);
    const ids = fake.generations.slice(-2).map((g) => g.contextId);
    expect(new Set(ids).size).toBe(2);
  });

  it('abort sends cancel for that context (the fake sees it) and the stream ends ABORTED', async () => {
    fake.chunkDelayMs = 20;
    const ac = new AbortController();
    const it = tts().synthesize(req(LONG, 16000, ac.signal))[Symbol.asyncIterator]();
    expect((await it.next()).done).toBe(false);
    ac.abort();
    await expect(it.next()).rejects.toMatchObject({ code: 'ABORTED' });
    const g = fake.generations.at(-1)!;
    await waitFor(() => g.cancelled, 2000, 'fake saw cancel');
    expect(fake.connections.at(-1)!.texts).toContainEqual({ context_id: g.contextId, cancel: true });
    expect(g.done).toBe(false);
  });

  it('slow first chunk: FIRST_BYTE_TIMEOUT and the context is cancelled', async () => {
    fake.requestFaults.once({ slowFirstByteMs: 500 });
    const { error } = await settle(tts({ timeoutMs: 100 }).synthesize(req('hi')));
    expect(error.code).toBe('FIRST_BYTE_TIMEOUT');
    const g = fake.generations.at(-1)!;
    await waitFor(() => g.cancelled, 2000, 'fake saw cancel');
  });

  it('socket drop mid-stream: STREAM_INTERRUPTED, and the next synthesis reconnects', async () => {
    const p = tts();
    fake.requestFaults.once({ disconnectMidStream: true });
    const { items, error } = await settle(p.synthesize(req(LONG)));
    expect(items.length).toBeGreaterThan(0);
    expect(error).toMatchObject({ code: 'STREAM_INTERRUPTED', retryable: true });
    const before = fake.connections.length;
    const chunks = await collect(p.synthesize(req('again')));
    expect(decodeSimPcm(concatPcm(chunks), 16000)).toBe('again');
    expect(fake.connections.length).toBe(before + 1);
  });

  it('upgrade refused with 429 + Retry-After: honoured by withTtsRetry', async () => {
    fake.faults.once({ status429RetryAfterS: 1 });
    const retries: Array<[number, number]> = [];
    const before = fake.connections.length;
    const chunks = await collect(withTtsRetry(tts(), { onRetry: (a, ms) => retries.push([a, ms]) }).synthesize(req('ok')));
    expect(decodeSimPcm(concatPcm(chunks), 16000)).toBe('ok');
    expect(retries).toEqual([[1, 1000]]);
    const [a, b] = fake.connections.slice(before);
    expect(b!.atMs - a!.atMs).toBeGreaterThanOrEqual(950);
  });

  it('in-band 500 error: retryable VENDOR_ERROR, retried until exhausted', async () => {
    fake.requestFaults.always({ status500: true });
    const exhausted: number[] = [];
    const before = fake.generations.length;
    const { error } = await settle(withTtsRetry(tts(), { baseBackoffMs: 5, onExhausted: (a) => exhausted.push(a) }).synthesize(req('ok')));
    expect(error).toMatchObject({ code: 'VENDOR_ERROR', status: 500, retryable: true, vendorCode: 'internal_error' });
    expect(exhausted).toEqual([3]);
    expect(fake.generations.length - before).toBe(3);
  });

  it('malformed message: MALFORMED_RESPONSE, no crash', async () => {
    fake.requestFaults.once({ malformedChunk: true });
    fake.chunkDelayMs = 10;
    const { error } = await settle(tts().synthesize(req(LONG)));
    expect(error.code).toBe('MALFORMED_RESPONSE');
  });

  it('JSON that is not an object (`null`, a number, an array): MALFORMED_RESPONSE for the stream, never a throw', async () => {
    for (const frame of ['null', '7', '[]', '"chunk"']) {
      fake.requestFaults.once({ malformedChunk: frame });
      fake.chunkDelayMs = 10;
      const { error } = await settle(tts().synthesize(req(LONG)));
      expect(error?.code, frame).toBe('MALFORMED_RESPONSE');
    }
  });

  it('a message over MAX_VENDOR_WS_MESSAGE_BYTES fails the stream instead of being buffered', async () => {
    // A server that answers any request with one chunk message just over the bound.
    const { WebSocketServer } = await import('ws');
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((r) => wss.once('listening', r));
    wss.on('connection', (ws) =>
      ws.on('message', (raw) => {
        const { context_id } = JSON.parse(raw.toString()) as { context_id: string };
        ws.send(JSON.stringify({ type: 'chunk', data: 'A'.repeat(MAX_VENDOR_WS_MESSAGE_BYTES), done: false, status_code: 206, context_id }));
      }),
    );
    const p = createCartesiaTts({ apiKey: 'k', baseUrl: `ws://127.0.0.1:${(wss.address() as { port: number }).port}`, voice: 'v' });
    made.push(p);
    try {
      const { items, error } = await settle(p.synthesize(req('hello there')));
      expect(items).toEqual([]);
      expect(error).toMatchObject({ code: 'STREAM_INTERRUPTED' });
    } finally {
      await new Promise((r) => wss.close(r));
    }
  });

  it('wrong key: the upgrade is refused with AUTH_FAILED', async () => {
    const p = createCartesiaTts({ apiKey: 'bad', baseUrl: fake.url, voice: 'v' });
    made.push(p);
    const { error } = await settle(p.synthesize(req('hi')));
    expect(error).toMatchObject({ code: 'AUTH_FAILED', status: 401 });
  });

  it('close() closes the shared socket (the fake sees a client close)', async () => {
    const p = tts();
    await p.warm!();
    const conn = fake.connections.at(-1)!;
    p.close();
    p.close(); // idempotent
    await withTimeout(conn.closed, 2000, 'fake saw close');
    expect(conn.closedByServer).toBe(false);
    expect(conn.closeCode).toBe(1000);
  });
});
