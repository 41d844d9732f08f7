import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOpenAiLlm, type OpenAiLlmOptions } from '../../../../shared/providers/llm/openai.js';
import { MAX_TOOL_CALLS_PER_RESPONSE } from '../../../../shared/providers/llm/limits.js';
import type { LlmEvent, LlmMessage, LlmToolSpec } from '../../../../shared/providers/types.js';
import { describeLlmContract } from '../../../contracts/llm.contract.js';
import { OpenAiFake } from '../../../fakes/openai.js';
import { collect, endlessSseServer, settle, withTimeout } from './helpers.js';

const tools: LlmToolSpec[] = [
  { name: 'lookup_order', description: 'Find an order', parameters: { type: 'object', properties: { id: { type: 'string' } } } },
  { name: 'check_stock', description: 'Stock level', parameters: { type: 'object', properties: { sku: { type: 'string' } } } },
];
const LONG = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');

const fake = new OpenAiFake({
  rules: [
    { match: 'order', toolCalls: [{ name: 'lookup_order', arguments: { id: 'A-17' } }, { name: 'check_stock', arguments: { sku: 'X9' } }], afterTools: 'Your order ships today.' },
    { match: 'long', reply: LONG },
    { match: 'hello', reply: 'Hi there, how can I help?' },
  ],
});

function llm(extra: Partial<OpenAiLlmOptions> = {}) {
  return createOpenAiLlm({ apiKey: fake.apiKey, baseUrl: `${fake.url}/v1`, model: 'gpt-test', baseBackoffMs: 10, ...extra });
}
const ask = (text: string, signal = new AbortController().signal, withTools = false) => ({
  messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: text }] as LlmMessage[],
  tools: withTools ? tools : [],
  signal,
});
const textOf = (events: LlmEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join('');

beforeAll(() => fake.start());
afterAll(() => fake.close());
beforeEach(() => {
  fake.faults.clear();
  fake.chunkDelayMs = 0;
});

describeLlmContract('openai adapter vs fake', () => ({
  provider: llm(),
  textPrompt: 'hello',
  expectText: 'how can I help',
  toolPrompt: 'where is my order',
  tools,
  longPrompt: 'say something long',
}));

describe('openai LLM adapter: wire format', () => {
  it('streams text, reports usage and sends the documented request', async () => {
    const events = await collect(llm().stream(ask('hello')));
    expect(textOf(events)).toBe('Hi there, how can I help?');
    const done = events.at(-1)!;
    expect(done).toMatchObject({ type: 'done', finishReason: 'stop' });
    expect(done.type === 'done' && done.usage!.inputTokens).toBeGreaterThan(0);
    const rec = fake.requests.at(-1)!;
    expect(rec.path).toBe('/v1/chat/completions');
    expect(rec.headers.authorization).toBe(`Bearer ${fake.apiKey}`);
    expect(rec.body).toMatchObject({ model: 'gpt-test', stream: true, stream_options: { include_usage: true } });
    // tool_choice/parallel_tool_calls without tools is a 400 upstream, so they travel only with tools.
    expect(rec.body.tool_choice).toBeUndefined();
  });

  it('assembles parallel tool calls by index and maps the tool round trip to the wire', async () => {
    const p = llm();
    const first = await collect(p.stream(ask('where is my order', undefined, true)));
    const calls = first.flatMap((e) => (e.type === 'tool_calls' ? e.calls : []));
    expect(calls.map((c) => c.name)).toEqual(['lookup_order', 'check_stock']);
    expect(calls.map((c) => JSON.parse(c.arguments))).toEqual([{ id: 'A-17' }, { sku: 'X9' }]);
    expect(first.at(-1)).toMatchObject({ type: 'done', finishReason: 'tool_calls' });
    expect(fake.requests.at(-1)!.body).toMatchObject({ tool_choice: 'auto', parallel_tool_calls: true });
    expect(fake.requests.at(-1)!.body.tools[0]).toEqual({ type: 'function', function: tools[0] });

    const history: LlmMessage[] = [
      { role: 'user', content: 'where is my order' },
      { role: 'assistant', content: null, toolCalls: calls },
      { role: 'tool', toolCallId: calls[0]!.id, content: 'shipped' },
      { role: 'tool', toolCallId: calls[1]!.id, content: '4 left' },
    ];
    const second = await collect(p.stream({ messages: history, tools, signal: new AbortController().signal }));
    expect(textOf(second)).toBe('Your order ships today.');
    const wire = fake.requests.at(-1)!.body.messages;
    expect(wire[1]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    });
    expect(wire[2]).toEqual({ role: 'tool', tool_call_id: calls[0]!.id, content: 'shipped' });
  });

  it('drains after [DONE] so the next request reuses the keep-alive connection', async () => {
    const p = llm();
    await collect(p.stream(ask('hello')));
    // undici hands a finished connection back to its pool asynchronously; no event exposes that.
    await new Promise((r) => setTimeout(r, 20));
    await collect(p.stream(ask('hello')));
    const [a, b] = fake.requests.slice(-2);
    expect(b!.remotePort).toBe(a!.remotePort);
  });

  it('treats choices:null on the usage chunk as empty (compatible servers)', async () => {
    const compat = new OpenAiFake({ usageChoicesNull: true, rules: [{ match: 'hello', reply: 'Hi.' }] });
    const { url } = await compat.start();
    try {
      const events = await collect(createOpenAiLlm({ apiKey: compat.apiKey, baseUrl: `${url}/v1`, model: 'm' }).stream(ask('hello')));
      expect(textOf(events)).toBe('Hi.');
      expect(events.at(-1)).toMatchObject({ type: 'done', usage: { outputTokens: expect.any(Number) } });
    } finally {
      await compat.close();
    }
  });
});

describe('openai LLM adapter: faults', () => {
  it('slow first byte: the first-byte timeout fires and the request is closed', async () => {
    fake.faults.once({ slowFirstByteMs: 600 });
    const { error } = await settle(llm({ timeoutMs: 100 }).stream(ask('hello')));
    expect(error.code).toBe('FIRST_BYTE_TIMEOUT');
    const rec = fake.requests.at(-1)!;
    await withTimeout(rec.closed, 2000, 'fake saw close');
    expect(rec.clientClosedEarly).toBe(true);
  });

  it('slow first byte under the timeout still succeeds', async () => {
    fake.faults.once({ slowFirstByteMs: 80 });
    const events = await collect(llm({ timeoutMs: 2000 }).stream(ask('hello')));
    expect(textOf(events)).toContain('help');
  });

  it('mid-stream disconnect surfaces STREAM_INTERRUPTED after the text already delivered, without a retry', async () => {
    fake.faults.once({ disconnectMidStream: true });
    const before = fake.requests.length;
    const { items, error } = await settle(llm().stream(ask('hello')));
    expect(textOf(items)).toBe('Hi ');
    expect(error.code).toBe('STREAM_INTERRUPTED');
    expect(fake.requests.length - before).toBe(1);
  });

  it('429 with Retry-After: waits that long, then succeeds', async () => {
    fake.faults.once({ status429RetryAfterS: 1 });
    const retries: Array<[number, number, string]> = [];
    const before = fake.requests.length;
    const events = await collect(llm({ onRetry: (n, ms, e) => retries.push([n, ms, e.code]) }).stream(ask('hello')));
    expect(textOf(events)).toContain('help');
    expect(retries).toEqual([[1, 1000, 'RATE_LIMITED']]);
    const [a, b] = fake.requests.slice(before);
    expect(b!.atMs - a!.atMs).toBeGreaterThanOrEqual(950);
  });

  it('429 asking for longer than maxRetryAfterMs surfaces at once with retryAfterMs', async () => {
    fake.faults.once({ status429RetryAfterS: 30 });
    const { error } = await settle(llm({ maxRetryAfterMs: 5000 }).stream(ask('hello')));
    expect(error).toMatchObject({ code: 'RATE_LIMITED', status: 429, retryable: true, retryAfterMs: 30_000, vendorCode: 'rate_limit_exceeded' });
  });

  it('500 is retried maxRetries times, then surfaced', async () => {
    fake.faults.always({ status500: true });
    const before = fake.requests.length;
    const { error } = await settle(llm({ maxRetries: 2 }).stream(ask('hello')));
    expect(error).toMatchObject({ name: 'ProviderError', code: 'UPSTREAM_UNAVAILABLE', status: 500, retryable: true, provider: 'openai' });
    expect(fake.requests.length - before).toBe(3);
  });

  it('401 is not retried', async () => {
    const before = fake.requests.length;
    const { error } = await settle(createOpenAiLlm({ apiKey: 'sk-wrong-key-0042', baseUrl: `${fake.url}/v1`, model: 'm' }).stream(ask('hello')));
    expect(error).toMatchObject({ code: 'AUTH_FAILED', status: 401, retryable: false, vendorCode: 'invalid_api_key' });
    // The fake echoes the key it refused; the message passes it on redacted.
    expect((error as Error).message).toBe('openai: HTTP 401: Incorrect API key provided: [redacted].');
    expect(fake.requests.length - before).toBe(1);
  });

  it('malformed chunk: MALFORMED_RESPONSE, no crash, request closed', async () => {
    fake.faults.once({ malformedChunk: true });
    fake.chunkDelayMs = 20; // keep the fake streaming after the bad chunk
    const { error } = await settle(llm().stream(ask('say something long')));
    expect(error.code).toBe('MALFORMED_RESPONSE');
    const rec = fake.requests.at(-1)!;
    await withTimeout(rec.closed, 2000, 'fake saw close');
    expect(rec.clientClosedEarly).toBe(true);
  });

  it('an error object mid-stream becomes VENDOR_ERROR', async () => {
    fake.faults.once({ errorMidStream: true });
    const { error } = await settle(llm().stream(ask('hello')));
    expect(error).toMatchObject({ code: 'VENDOR_ERROR', retryable: true, vendorCode: 'server_error' });
  });

  it('abort mid-stream cancels the HTTP request (the fake sees the client close)', async () => {
    fake.chunkDelayMs = 30;
    const ac = new AbortController();
    const it = llm().stream(ask('say something long', ac.signal))[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ type: 'text' });
    ac.abort();
    await expect(it.next()).rejects.toMatchObject({ code: 'ABORTED' });
    const rec = fake.requests.at(-1)!;
    await withTimeout(rec.closed, 2000, 'fake saw close');
    expect(rec.clientClosedEarly).toBe(true);
  });

  it('a consumer that stops reading (break) also cancels the request', async () => {
    fake.chunkDelayMs = 30;
    for await (const e of llm().stream(ask('say something long'))) if (e.type === 'text') break;
    const rec = fake.requests.at(-1)!;
    await withTimeout(rec.closed, 2000, 'fake saw close');
    expect(rec.clientClosedEarly).toBe(true);
  });
});

/** A server that answers every request with these SSE chunks, then [DONE]. */
async function scripted(chunks: unknown[]) {
  const http = await import('node:http');
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return { provider: createOpenAiLlm({ apiKey: 'k', baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm' }), close: () => new Promise((r) => server.close(r)) };
}

describe('openai LLM adapter: a tool call streamed without an id', () => {
  it('gets a made-up id within OpenAI\'s 40-character bound (it is sent back as tool_call_id)', async () => {
    const s = await scripted([
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, type: 'function', function: { name: 'lookup_order', arguments: '{"id":"A-17"}' } }] } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
    ]);
    try {
      const events = await collect(s.provider.stream(ask('order', undefined, true)));
      const calls = events.flatMap((e) => (e.type === 'tool_calls' ? e.calls : []));
      expect(calls).toHaveLength(1);
      expect(calls[0]!.id).toMatch(/^call_[0-9a-f]{32}$/);
      expect(calls[0]!.id.length).toBeLessThanOrEqual(40);
    } finally {
      await s.close();
    }
  });
});

describe('openai LLM adapter: entries of the wrong shape from a compatible server', () => {
  it('null choices, deltas and fragments carry nothing; usage counts that are not numbers are 0', async () => {
    const s = await scripted([
      { choices: [null, 7] },
      { choices: [{ index: 0, delta: null }] },
      { choices: [{ index: 0, delta: { content: 'Hi', tool_calls: [null, 'x'] } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }], usage: { prompt_tokens: 'lots', completion_tokens: 3.7 } },
    ]);
    try {
      const events = await collect(s.provider.stream(ask('hello')));
      expect(textOf(events)).toBe('Hi');
      expect(events.filter((e) => e.type === 'tool_calls')).toEqual([]);
      expect(events.at(-1)).toEqual({ type: 'done', finishReason: 'stop', usage: { inputTokens: 0, outputTokens: 3 } });
    } finally {
      await s.close();
    }
  });

  it('a tool call without a function name is MALFORMED_RESPONSE (it could never run, and would poison the history)', async () => {
    const s = await scripted([
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 'a', id: 'call_1', function: { arguments: '{}' } }] } }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
    ]);
    try {
      const err = await collect(s.provider.stream(ask('order', undefined, true))).then(() => undefined, (e: unknown) => e);
      expect(err).toMatchObject({ code: 'MALFORMED_RESPONSE' });
    } finally {
      await s.close();
    }
  });
});

describe('openai LLM adapter: a response beyond our bounds', () => {
  /** A compatible server that streams `chunk(i)` until the client goes away. */
  async function endlessServer(chunk: (i: number) => unknown) {
    const s = await endlessSseServer((i) => `data: ${JSON.stringify(chunk(i))}\n\n`);
    return { ...s, provider: createOpenAiLlm({ apiKey: 'k', baseUrl: `${s.url}/v1`, model: 'm' }) };
  }

  it('a tool call whose arguments never end fails with RESPONSE_TOO_LARGE and closes the request', async () => {
    const s = await endlessServer((i) => ({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, ...(i === 0 ? { id: 'call_1', function: { name: 'lookup_order', arguments: '{"id":"' } } : { function: { arguments: 'xxxxxxxxxxxxxxxx' } }) }] } }] }));
    try {
      const { error } = await settle(s.provider.stream(ask('order', undefined, true)));
      expect(error).toMatchObject({ code: 'RESPONSE_TOO_LARGE', retryable: false });
      await withTimeout(s.closed, 2000, 'server saw the client close');
    } finally {
      await s.close();
    }
  });

  it('the bound holds across several finish_reasons in one response', async () => {
    // Each chunk: one whole call and a finish_reason (which hands the calls over).
    const s = await endlessServer((i) => ({ choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: `call_${i}`, function: { name: 'check_stock', arguments: '{}' } }] }, finish_reason: 'tool_calls' }] }));
    try {
      const { items, error } = await settle(s.provider.stream(ask('order', undefined, true)));
      expect(error).toMatchObject({ code: 'RESPONSE_TOO_LARGE' });
      expect(items.flatMap((e) => (e.type === 'tool_calls' ? e.calls : []))).toHaveLength(MAX_TOOL_CALLS_PER_RESPONSE);
    } finally {
      await s.close();
    }
  });

  it('more tool calls than MAX_TOOL_CALLS_PER_RESPONSE fail with RESPONSE_TOO_LARGE', async () => {
    const s = await endlessServer((i) => ({ choices: [{ index: 0, delta: { tool_calls: [{ index: i, id: `call_${i}`, function: { name: 'check_stock', arguments: '{}' } }] } }] }));
    try {
      const { error } = await settle(s.provider.stream(ask('order', undefined, true)));
      expect(error).toMatchObject({ code: 'RESPONSE_TOO_LARGE' });
      expect(error.message).toContain(`${MAX_TOOL_CALLS_PER_RESPONSE} tool calls`);
      await withTimeout(s.closed, 2000, 'server saw the client close');
    } finally {
      await s.close();
    }
  });
});

describe('openai LLM adapter: keep-alives are not data', () => {
  it('a stream that sends only SSE comments after its first chunk fails with IDLE_TIMEOUT after the idle bound', async () => {
    const http = await import('node:http');
    let closed!: () => void;
    const clientGone = new Promise<void>((r) => (closed = r));
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'One moment' } }] })}\n\n`);
        const ping = setInterval(() => res.write(': ping\n\n'), 40);
        res.on('close', () => (clearInterval(ping), closed()));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (server.address() as { port: number }).port;
      const t0 = Date.now();
      const { items, error } = await settle(createOpenAiLlm({ apiKey: 'k', baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', idleTimeoutMs: 300, maxRetries: 0 }).stream(ask('hello')));
      expect(textOf(items)).toBe('One moment');
      expect(error).toMatchObject({ code: 'IDLE_TIMEOUT' });
      expect(Date.now() - t0).toBeLessThan(3000);
      await withTimeout(clientGone, 2000, 'server saw the client close');
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
