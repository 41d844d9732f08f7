import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { createSimLlm, simDemoScript, type SimLlmScript } from '../../../shared/providers/llm/sim.js';
import type { LlmEvent, LlmMessage, LlmRequest, LlmToolSpec } from '../../../shared/providers/types.js';

const WEATHER_TOOL: LlmToolSpec = { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object' } };
const TIME_TOOL: LlmToolSpec = { name: 'get_time', description: 'Local time in a city', parameters: { type: 'object' } };

function request(messages: LlmMessage[], opts: Partial<LlmRequest> = {}): LlmRequest {
  return { messages, tools: [], signal: new AbortController().signal, ...opts };
}
function user(content: string): LlmMessage {
  return { role: 'user', content };
}
async function collect(stream: AsyncIterable<LlmEvent>): Promise<LlmEvent[]> {
  const events: LlmEvent[] = [];
  for await (const e of stream) events.push(e);
  return events;
}
function textOf(events: LlmEvent[]): string {
  return events.map((e) => (e.type === 'text' ? e.delta : '')).join('');
}
/** Lets pending promise callbacks run after a simulated clock fired timers. */
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('sim LLM', () => {
  it('echoes the last user message token by token, then reports usage', async () => {
    const llm = createSimLlm();
    expect([llm.label, llm.model]).toEqual(['sim', 'sim-1']);
    const events = await collect(llm.stream(request([{ role: 'system', content: 'Be brief.' }, user('hi'), { role: 'assistant', content: 'Hello!' }, user('Book a table for two!')])));
    expect(events).toEqual([
      { type: 'text', delta: 'You' },
      { type: 'text', delta: ' said:' },
      { type: 'text', delta: ' Book' },
      { type: 'text', delta: ' a' },
      { type: 'text', delta: ' table' },
      { type: 'text', delta: ' for' },
      { type: 'text', delta: ' two.' },
      { type: 'done', finishReason: 'stop', usage: { inputTokens: 2 + 1 + 1 + 5, outputTokens: 7 } },
    ]);
  });

  it('matches rules case-insensitively on the last user message, first rule winning', async () => {
    const script: SimLlmScript = { rules: [{ when: 'Opening Hours', reply: 'We open at nine.' }, { when: 'hours', reply: 'Never shown.' }] };
    const llm = createSimLlm({ script });
    expect(textOf(await collect(llm.stream(request([user('What are your OPENING hours?')]))))).toBe('We open at nine.');
    expect(textOf(await collect(llm.stream(request([user('opening hours?'), { role: 'assistant', content: 'We open at nine.' }, user('thanks')]))))).toBe('You said: thanks.');
    expect(llm.requestCount).toBe(2);
  });

  it('emits a rule tool call with call_<n> ids and finishes with tool_calls', async () => {
    const llm = createSimLlm({ script: simDemoScript });
    const events = await collect(llm.stream(request([user("What's the weather in New York?")], { tools: [WEATHER_TOOL] })));
    expect(events).toEqual([
      { type: 'tool_calls', calls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"New York"}' }] },
      // Tokens are words: 'get_weather {"city":"New York"}' counts 3.
      { type: 'done', finishReason: 'tool_calls', usage: { inputTokens: 6, outputTokens: 3 } },
    ]);
    const next = await collect(llm.stream(request([user('weather please')], { tools: [WEATHER_TOOL] })));
    expect(next[0]).toEqual({ type: 'tool_calls', calls: [{ id: 'call_2', name: 'get_weather', arguments: '{"city":"Paris"}' }] });
  });

  it('emits several calls at once (parallel), after the rule reply text', async () => {
    const script: SimLlmScript = {
      rules: [{ when: 'compare', reply: 'Let me check both.', toolCalls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }, { name: 'get_time', arguments: { city: 'Oslo' } }] }],
    };
    const events = await collect(createSimLlm({ script }).stream(request([user('compare please')], { tools: [WEATHER_TOOL, TIME_TOOL] })));
    expect(events.map((e) => e.type)).toEqual(['text', 'text', 'text', 'text', 'tool_calls', 'done']);
    expect(textOf(events)).toBe('Let me check both.');
    const calls = events.find((e) => e.type === 'tool_calls');
    expect(calls).toEqual({
      type: 'tool_calls',
      calls: [
        { id: 'call_1', name: 'get_weather', arguments: '{"city":"Oslo"}' },
        { id: 'call_2', name: 'get_time', arguments: '{"city":"Oslo"}' },
      ],
    });
  });

  it('does not call tools the request does not offer', async () => {
    const events = await collect(createSimLlm({ script: simDemoScript }).stream(request([user('weather in Rome')])));
    expect(events.some((e) => e.type === 'tool_calls')).toBe(false);
    expect(textOf(events)).toBe('You said: weather in Rome.');
  });

  it('answers a tool result with the default summary (cut to 200 chars) or the rule template', async () => {
    const call = { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' };
    const history = (q: string, ...results: string[]): LlmMessage[] => [
      user(q),
      { role: 'assistant', content: null, toolCalls: [call] },
      ...results.map((content, i): LlmMessage => ({ role: 'tool', toolCallId: `call_${i + 1}`, content })),
    ];
    const llm = createSimLlm({ script: simDemoScript });
    const long = 'x'.repeat(300);
    expect(textOf(await collect(llm.stream(request(history('tell me something', long)))))).toBe(`Here is what I found: ${'x'.repeat(200)}`);
    expect(textOf(await collect(llm.stream(request(history('weather?', 'sunny, 21 C'), { tools: [WEATHER_TOOL] }))))).toBe('The weather report says: sunny, 21 C.');
    expect(textOf(await collect(llm.stream(request(history('weather?', 'sunny', 'windy')))))).toBe('The weather report says: sunny; windy.');
  });

  it('provides the demo rules: a long answer and a goodbye', async () => {
    const llm = createSimLlm({ script: simDemoScript });
    const long = textOf(await collect(llm.stream(request([user('Tell me the long version')]))));
    expect(long.split('. ').length).toBeGreaterThan(3);
    expect(textOf(await collect(llm.stream(request([user('OK, bye')]))))).toBe('Thank you for calling. Goodbye!');
  });

  it('waits ttftMs for the first token, then streams at tokensPerSecond', async () => {
    const clock = new SimulatedClock();
    const llm = createSimLlm({ ttftMs: 300, tokensPerSecond: 10, clock });
    const seen: LlmEvent[] = [];
    const done = (async () => {
      for await (const e of llm.stream(request([user('one two')]))) seen.push(e);
    })();
    await settle();
    expect(seen).toHaveLength(0);
    clock.advance(299);
    await settle();
    expect(seen).toHaveLength(0);
    clock.advance(1);
    await settle();
    expect(seen).toEqual([{ type: 'text', delta: 'You' }]);
    clock.advance(99);
    await settle();
    expect(seen).toHaveLength(1);
    clock.advance(1);
    await settle();
    expect(seen).toHaveLength(2);
    for (const _ of [' one', ' two.']) {
      clock.advance(100);
      await settle();
    }
    await done;
    expect(textOf(seen)).toBe('You said: one two.');
    expect(seen.at(-1)!.type).toBe('done');
    expect(clock.pendingTimers).toBe(0);
  });

  it('rejects with an AbortError on abort, before or during streaming, leaving no timer', async () => {
    const clock = new SimulatedClock();
    const llm = createSimLlm({ ttftMs: 500, tokensPerSecond: 5, clock });

    const before = new AbortController();
    before.abort();
    await expect(collect(llm.stream(request([user('hi')], { signal: before.signal })))).rejects.toMatchObject({ name: 'AbortError' });

    const duringTtft = new AbortController();
    const first = collect(llm.stream(request([user('hi')], { signal: duringTtft.signal })));
    await settle();
    expect(clock.pendingTimers).toBe(1);
    duringTtft.abort();
    await expect(first).rejects.toMatchObject({ name: 'AbortError' });
    expect(clock.pendingTimers).toBe(0);

    const midStream = new AbortController();
    const seen: LlmEvent[] = [];
    const second = (async () => {
      for await (const e of llm.stream(request([user('a b c d')], { signal: midStream.signal }))) seen.push(e);
    })();
    clock.advance(500);
    await settle();
    clock.advance(200);
    await settle();
    expect(seen.map((e) => (e.type === 'text' ? e.delta : e.type))).toEqual(['You', ' said:']);
    midStream.abort();
    await expect(second).rejects.toMatchObject({ name: 'AbortError' });
    expect(clock.pendingTimers).toBe(0);
  });
});
