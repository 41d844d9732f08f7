import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createAnthropicLlm, toAnthropicMessages, type AnthropicLlmOptions } from '../../../../shared/providers/llm/anthropic.js';
import type { LlmEvent, LlmMessage, LlmToolSpec } from '../../../../shared/providers/types.js';
import { describeLlmContract } from '../../../contracts/llm.contract.js';
import { AnthropicFake } from '../../../fakes/anthropic.js';
import { collect, endlessSseServer, settle, withTimeout } from './helpers.js';

const tools: LlmToolSpec[] = [
  { name: 'get_weather', description: 'Weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  { name: 'get_time', description: 'Time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } },
];
const LONG = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');

const fake = new AnthropicFake({
  rules: [
    { match: 'weather', reply: 'Let me check.', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }, { name: 'get_time', arguments: { tz: 'CET' } }], afterTools: 'Sunny in Paris.' },
    { match: 'long', reply: LONG },
    { match: 'hello', reply: 'Hello! What can I do?' },
  ],
});

function llm(extra: Partial<AnthropicLlmOptions> = {}) {
  return createAnthropicLlm({ apiKey: fake.apiKey, baseUrl: fake.url, model: 'claude-test', baseBackoffMs: 10, ...extra });
}
const ask = (text: string, signal = new AbortController().signal) => ({
  messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: text }] as LlmMessage[],
  tools: [] as LlmToolSpec[],
  signal,
});
const textOf = (events: LlmEvent[]) => events.flatMap((e) => (e.type === 'text' ? [e.delta] : [])).join('');

beforeAll(() => fake.start());
afterAll(() => fake.close());
beforeEach(() => {
  fake.faults.clear();
  fake.chunkDelayMs = 0;
});

describeLlmContract('anthropic adapter vs fake', () => ({
  provider: llm(),
  textPrompt: 'hello',
  expectText: 'What can I do',
  toolPrompt: 'weather please',
  tools,
  longPrompt: 'something long',
}));

describe('anthropic LLM adapter: wire format', () => {
  it('streams text with usage from message_start + message_delta, and sends the documented headers', async () => {
    const events = await collect(llm().stream(ask('hello')));
    expect(textOf(events)).toBe('Hello! What can I do?');
    expect(events.at(-1)).toMatchObject({ type: 'done', finishReason: 'stop', usage: { inputTokens: expect.any(Number), outputTokens: 6 } });
    const rec = fake.requests.at(-1)!;
    expect(rec.path).toBe('/v1/messages');
    expect(rec.headers['x-api-key']).toBe(fake.apiKey);
    expect(rec.headers['anthropic-version']).toBe('2023-06-01');
    expect(rec.body).toMatchObject({ model: 'claude-test', max_tokens: 1024, stream: true, system: 'Be brief.' });
    expect(rec.body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'hello' }] }]);
  });

  it('text + parallel tool_use blocks, then tool results as user tool_result blocks', async () => {
    const p = llm();
    const first = await collect(p.stream({ ...ask('weather please'), tools }));
    expect(textOf(first)).toBe('Let me check.');
    const calls = first.flatMap((e) => (e.type === 'tool_calls' ? e.calls : []));
    expect(calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['get_weather', { city: 'Paris' }],
      ['get_time', { tz: 'CET' }],
    ]);
    expect(first.at(-1)).toMatchObject({ type: 'done', finishReason: 'tool_calls' });
    expect(fake.requests.at(-1)!.body.tools[0]).toEqual({ name: 'get_weather', description: 'Weather', input_schema: tools[0]!.parameters });

    const history: LlmMessage[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'weather please' },
      { role: 'assistant', content: 'Let me check.', toolCalls: calls },
      { role: 'tool', toolCallId: calls[0]!.id, content: 'sunny' },
      { role: 'tool', toolCallId: calls[1]!.id, content: '14:00' },
    ];
    const second = await collect(p.stream({ messages: history, tools, signal: new AbortController().signal }));
    expect(textOf(second)).toBe('Sunny in Paris.');
    const wire = fake.requests.at(-1)!.body.messages;
    expect(wire[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'text', text: 'Let me check.' },
        { type: 'tool_use', id: calls[0]!.id, name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: calls[1]!.id, name: 'get_time', input: { tz: 'CET' } },
      ],
    });
    // Both results of one tool round in ONE user turn (the API wants alternation).
    expect(wire[2]).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: calls[0]!.id, content: 'sunny' },
        { type: 'tool_result', tool_use_id: calls[1]!.id, content: '14:00' },
      ],
    });
    expect(wire).toHaveLength(3);
  });

  it('maps broken tool-call JSON in history to an empty input object instead of failing', () => {
    const { messages } = toAnthropicMessages([{ role: 'assistant', content: null, toolCalls: [{ id: 't1', name: 'x', arguments: '{oops' }] }]);
    expect(messages[0]!.content[0]).toEqual({ type: 'tool_use', id: 't1', name: 'x', input: {} });
  });
});

describe('anthropic LLM adapter: faults', () => {
  it('slow first byte: timeout fires and the request is closed', async () => {
    fake.faults.once({ slowFirstByteMs: 600 });
    const { error } = await settle(llm({ timeoutMs: 100 }).stream(ask('hello')));
    expect(error.code).toBe('FIRST_BYTE_TIMEOUT');
    const rec = fake.requests.at(-1)!;
    await withTimeout(rec.closed, 2000, 'fake saw close');
    expect(rec.clientClosedEarly).toBe(true);
  });

  it('mid-stream disconnect: STREAM_INTERRUPTED (no message_stop)', async () => {
    fake.faults.once({ disconnectMidStream: true });
    const { items, error } = await settle(llm().stream(ask('hello')));
    expect(textOf(items)).toBe('Hello! ');
    expect(error.code).toBe('STREAM_INTERRUPTED');
  });

  it('429 with Retry-After is honoured, then succeeds', async () => {
    fake.faults.once({ status429RetryAfterS: 1 });
    const before = fake.requests.length;
    const events = await collect(llm().stream(ask('hello')));
    expect(textOf(events)).toContain('What can I do');
    const [a, b] = fake.requests.slice(before);
    expect(b!.atMs - a!.atMs).toBeGreaterThanOrEqual(950);
  });

  it('500 retried, then surfaced with the vendor error type', async () => {
    fake.faults.always({ status500: true });
    const before = fake.requests.length;
    const { error } = await settle(llm({ maxRetries: 1 }).stream(ask('hello')));
    expect(error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', status: 500, vendorCode: 'api_error', provider: 'anthropic' });
    expect(fake.requests.length - before).toBe(2);
  });

  it('malformed event: MALFORMED_RESPONSE', async () => {
    fake.faults.once({ malformedChunk: true });
    const { error } = await settle(llm().stream(ask('something long')));
    expect(error.code).toBe('MALFORMED_RESPONSE');
  });

  it('`event: error` mid-stream (overloaded) becomes a retryable VENDOR_ERROR', async () => {
    fake.faults.once({ errorMidStream: true });
    const { error } = await settle(llm().stream(ask('hello')));
    expect(error).toMatchObject({ code: 'VENDOR_ERROR', retryable: true, vendorCode: 'overloaded_error' });
  });

  it('abort mid-stream closes the request at the fake', async () => {
    fake.chunkDelayMs = 30;
    const ac = new AbortController();
    const it = llm().stream(ask('something long', ac.signal))[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ type: 'text' });
    ac.abort();
    await expect(it.next()).rejects.toMatchObject({ code: 'ABORTED' });
    const rec = fake.requests.at(-1)!;
    await withTimeout(rec.closed, 2000, 'fake saw close');
    expect(rec.clientClosedEarly).toBe(true);
  });

  it('wrong key: AUTH_FAILED, not retried', async () => {
    const before = fake.requests.length;
    const { error } = await settle(createAnthropicLlm({ apiKey: 'nope', baseUrl: fake.url, model: 'm' }).stream(ask('hello')));
    expect(error).toMatchObject({ code: 'AUTH_FAILED', status: 401, vendorCode: 'authentication_error' });
    expect(fake.requests.length - before).toBe(1);
  });
});

describe('anthropic LLM adapter: a response beyond our bounds', () => {
  it('tool input JSON that never ends fails with RESPONSE_TOO_LARGE and closes the request', async () => {
    const ev = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify({ type, ...(data as object) })}\n\n`;
    const prelude =
      ev('message_start', { message: { id: 'msg_1', usage: { input_tokens: 5, output_tokens: 1 } } }) +
      ev('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_1', name: 'lookup_order', input: {} } });
    const piece = ev('content_block_delta', { index: 0, delta: { type: 'input_json_delta', partial_json: 'xxxxxxxxxxxxxxxx' } });
    const server = await endlessSseServer(() => piece, prelude);
    try {
      const provider = createAnthropicLlm({ apiKey: 'k', baseUrl: server.url, model: 'm' });
      const { error } = await settle(provider.stream({ messages: [{ role: 'user', content: 'order' }], tools, signal: new AbortController().signal }));
      expect(error).toMatchObject({ code: 'RESPONSE_TOO_LARGE', retryable: false });
      await withTimeout(server.closed, 2000, 'server saw the client close');
    } finally {
      await server.close();
    }
  });
});

describe('anthropic LLM adapter: tool_use blocks of the wrong shape', () => {
  const ev = (type: string, data: unknown) => `event: ${type}\ndata: ${JSON.stringify({ type, ...(data as object) })}\n\n`;
  /** A server that streams `blocks` as one message, then ends it. */
  async function once(blocks: string) {
    const http = await import('node:http');
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(ev('message_start', { message: { id: 'msg_1', usage: { input_tokens: 'many', output_tokens: 1 } } }) + blocks + ev('message_delta', { delta: { stop_reason: 'tool_use' }, usage: { output_tokens: 3 } }) + ev('message_stop', {}));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    return { provider: createAnthropicLlm({ apiKey: 'k', baseUrl: `http://127.0.0.1:${port}`, model: 'm' }), close: () => new Promise((r) => server.close(r)) };
  }

  it('a tool_use without a name is MALFORMED_RESPONSE; one without an id gets a made-up id; a usage count that is not a number is 0', async () => {
    const nameless = await once(ev('content_block_start', { index: 0, content_block: { type: 'tool_use', id: 'toolu_1', input: {} } }) + ev('content_block_stop', { index: 0 }));
    try {
      const { error } = await settle(nameless.provider.stream({ messages: [{ role: 'user', content: 'x' }], tools, signal: new AbortController().signal }));
      expect(error).toMatchObject({ code: 'MALFORMED_RESPONSE' });
    } finally {
      await nameless.close();
    }
    const idless = await once(ev('content_block_start', { index: 0, content_block: { type: 'tool_use', name: 'lookup_order', input: { id: 'A' } } }) + ev('content_block_stop', { index: 0 }));
    try {
      const events: LlmEvent[] = [];
      for await (const e of idless.provider.stream({ messages: [{ role: 'user', content: 'x' }], tools, signal: new AbortController().signal })) events.push(e);
      const calls = events.flatMap((e) => (e.type === 'tool_calls' ? e.calls : []));
      expect(calls).toEqual([{ id: expect.stringMatching(/^toolu_[0-9a-f]{32}$/), name: 'lookup_order', arguments: '{"id":"A"}' }]);
      expect(events.at(-1)).toMatchObject({ type: 'done', usage: { inputTokens: 0, outputTokens: 3 } });
    } finally {
      await idless.close();
    }
  });
});
