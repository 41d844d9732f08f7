/**
 * askForObject (control-plane/analysis/ask.ts) with a scripted provider: valid first answer,
 * one corrective retry, and `ok: false` (not an exception) when the retry is still invalid; plus
 * the sim LLM's keyword extraction answering a forced tool, which always matches the schema.
 */
import { describe, expect, it } from 'vitest';
import { askForObject } from '../../../control-plane/analysis/ask.js';
import { jsonSchemaOf, parseFields } from '../../../control-plane/analysis/fields.js';
import { realClock } from '../../../shared/clock.js';
import { createSimLlm } from '../../../shared/providers/llm/sim.js';
import type { LlmProvider, LlmRequest } from '../../../shared/providers/types.js';

const schema = jsonSchemaOf(parseFields([
  { name: 'reason', type: 'enum', enum: ['refund', 'delivery'] },
  { name: 'amount', type: 'number' },
  { name: 'wants_callback', type: 'boolean' },
  { name: 'complaint', type: 'string' },
]));

/** Answers each request with the next scripted tool-call arguments (raw text). */
function scripted(answers: string[]): LlmProvider & { seen: LlmRequest[] } {
  const seen: LlmRequest[] = [];
  return {
    label: 'scripted',
    model: 'm',
    capabilities: { tools: true, parallelToolCalls: false },
    seen,
    async *stream(req) {
      seen.push(req);
      yield { type: 'tool_calls', calls: [{ id: `c${seen.length}`, name: 'record_analysis', arguments: answers[seen.length - 1] ?? '{}' }] };
      yield { type: 'done', finishReason: 'tool_calls' };
    },
  };
}

const ask = (llm: LlmProvider, transcript = 'Caller: hi') =>
  askForObject({ llm, schema, description: 'facts', transcript, clock: realClock, timeoutMs: 5000, signal: new AbortController().signal });

describe('askForObject', () => {
  const good = JSON.stringify({ reason: 'refund', amount: 12, wants_callback: null, complaint: null });

  it('a valid first answer is taken as is', async () => {
    const llm = scripted([good]);
    expect(await ask(llm)).toEqual({ ok: true, values: JSON.parse(good), requests: 1 });
    expect(llm.seen[0]).toMatchObject({ toolChoice: 'record_analysis', tools: [{ name: 'record_analysis', parameters: schema }] });
  });

  it('an invalid answer is retried once with its errors', async () => {
    const llm = scripted(['{"reason": "lost"}', good]);
    expect(await ask(llm)).toMatchObject({ ok: true, requests: 2 });
    expect(llm.seen[1]!.messages.at(-1)!.content).toMatch(/\/reason must be equal to one of the allowed values \(refund, delivery\)/);
  });

  it('still invalid after the retry: ok false with the errors, no third request', async () => {
    const llm = scripted(['not json', '{"reason": "refund"}', good]);
    const out = await ask(llm);
    expect(out).toMatchObject({ ok: false, requests: 2 });
    expect(!out.ok && out.error).toContain("must have required property 'amount'");
    expect(llm.seen).toHaveLength(2);
  });

  it('an answer that never ends is read up to MAX_ANSWER_TEXT_CHARS, its stream closed, and judged invalid', async () => {
    let closed = 0;
    const endless: LlmProvider = {
      label: 'endless',
      model: 'm',
      capabilities: { tools: true, parallelToolCalls: false },
      async *stream() {
        try {
          for (;;) yield { type: 'text', delta: 'la la la la ' };
        } finally {
          closed++;
        }
      },
    };
    const out = await ask(endless);
    expect(out).toMatchObject({ ok: false, requests: 2 });
    expect(closed).toBe(2);
  });

  it('the sim LLM extracts by keywords, deterministically, within the schema', async () => {
    const transcript = 'Caller: I want a refund of 40 euros. Please arrange a callback.\nAgent: Noted.';
    const first = await ask(createSimLlm(), transcript);
    expect(first).toEqual({ ok: true, requests: 1, values: { reason: 'refund', amount: 40, wants_callback: true, complaint: null } });
    expect(await ask(createSimLlm(), transcript)).toEqual(first);
  });

  it('a schema that cannot be compiled (stored before its names were checked) is a failed result at once, not an exception the job retries', async () => {
    const llm = scripted([]);
    // What `properties['__proto__'] = {...}` made of such a stored field: the object's prototype, not a property.
    const properties = Object.setPrototypeOf({}, { type: ['string', 'null'] }) as Record<string, unknown>;
    const out = await askForObject({ llm, schema: { type: 'object', properties }, description: 'facts', transcript: 'Caller: hi', clock: realClock, timeoutMs: 5000, signal: new AbortController().signal });
    expect(out).toMatchObject({ ok: false, requests: 0, error: expect.stringMatching(/^the schema cannot be used: /) });
    expect(llm.seen).toHaveLength(0);
  });
});

