/**
 * One extraction: asks an LLM for a JSON object matching a schema, validates it with ajv, and asks
 * once more with the validation errors when it does not match (issue 16; QA scoring reuses it with
 * its own tool, prompt and answer checks). The object is requested
 * as the arguments of one forced tool call (`toolChoice`: OpenAI-compatible `tools` with a single
 * function whose parameters are the schema; Anthropic `tool_choice: {type: tool}`); a model that
 * answers with text instead is read for a JSON object in that text.
 *
 * Provider failures (network, 5xx, timeout) throw: the job decides whether to retry them. A reply
 * that is still invalid after the second request is a result, not an exception: `ok: false`.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import type { Clock } from '../../shared/clock.js';
import type { LlmMessage, LlmProvider, LlmToolCall } from '../../shared/providers/types.js';

export const EXTRACT_TOOL = 'record_analysis';
export const EXTRACT_PROMPT =
  'You analyse the transcript of a phone call between a caller and an AI agent. ' +
  `Call ${EXTRACT_TOOL} exactly once with the values the call states. ` +
  'Use null for a value the call does not give; never guess.';
/** Requests per extraction: the first and one retry carrying the validation errors. */
export const MAX_REQUESTS = 2;
/** Default bound of one request; with MAX_REQUESTS it bounds an ask (the jobs' expiry is above it). */
export const ASK_REQUEST_TIMEOUT_MS = 60_000;
/** Text of one answer kept; the rest is not read (the answer is JSON of a bounded schema, never this long). */
export const MAX_ANSWER_TEXT_CHARS = 64 * 1024;

export interface AskOptions {
  llm: LlmProvider;
  /** JSON Schema of the object (fields.ts `jsonSchemaOf`). */
  schema: Record<string, unknown>;
  /** What the schema is about (shown to the model as the tool description). */
  description: string;
  transcript: string;
  model?: string;
  clock: Clock;
  /** Per request. */
  timeoutMs: number;
  signal: AbortSignal;
  /** The forced tool's name and the system prompt. Default: the analysis extraction's (QA scoring passes its own). */
  tool?: string;
  prompt?: string;
  /** Checks beyond JSON Schema on a schema-valid object (QA: quotes from the transcript); problems are retried like schema errors. */
  check?: (value: Record<string, unknown>) => string[];
}

export type AskOutcome = { ok: true; values: Record<string, unknown>; requests: number } | { ok: false; error: string; requests: number };

// strict: false: `type: ['string', 'null']` together with `enum` is fine JSON Schema that strict mode frowns on.
const ajv = new Ajv({ allErrors: true, strict: false });

export async function askForObject(o: AskOptions): Promise<AskOutcome> {
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(o.schema);
  } catch (err) {
    // Deterministic (a schema stored before its names were checked): a result now, not retries.
    return { ok: false, error: `the schema cannot be used: ${(err as Error).message}`, requests: 0 };
  }
  const toolName = o.tool ?? EXTRACT_TOOL;
  const tool = { name: toolName, description: o.description || 'Record the values of this call.', parameters: o.schema };
  const messages: LlmMessage[] = [
    { role: 'system', content: o.prompt ?? EXTRACT_PROMPT },
    { role: 'user', content: o.transcript },
  ];
  let problem = '';
  for (let n = 1; n <= MAX_REQUESTS; n++) {
    const reply = await requestOnce(o, messages, [tool]);
    const parsed = readObject(reply, toolName);
    const valid = 'value' in parsed && validate(parsed.value);
    const extra = valid && o.check ? o.check(parsed.value) : [];
    if (valid && extra.length === 0) return { ok: true, values: parsed.value, requests: n };
    problem = valid ? extra.slice(0, 10).join('; ') : 'value' in parsed ? describe(validate.errors ?? []) : parsed.error;
    // The retry shows the model its own answer and what was wrong with it.
    const call = reply.calls[0];
    messages.push({ role: 'assistant', content: reply.text || null, toolCalls: call ? [call] : undefined });
    if (call) messages.push({ role: 'tool', toolCallId: call.id, content: `rejected: ${problem}` });
    messages.push({ role: 'user', content: `Your answer was invalid: ${problem}. Call ${toolName} again with corrected arguments.` });
  }
  return { ok: false, error: `invalid answer after ${MAX_REQUESTS} requests: ${problem}`, requests: MAX_REQUESTS };
}

interface Reply {
  text: string;
  calls: LlmToolCall[];
}

async function requestOnce(o: AskOptions, messages: LlmMessage[], tools: Array<{ name: string; description: string; parameters: Record<string, unknown> }>): Promise<Reply> {
  const abort = new AbortController();
  const timer = o.clock.setTimeout(() => abort.abort(new Error(`analysis LLM timed out after ${o.timeoutMs} ms`)), o.timeoutMs);
  const onAbort = () => abort.abort(o.signal.reason);
  o.signal.addEventListener('abort', onAbort, { once: true });
  const reply: Reply = { text: '', calls: [] };
  try {
    for await (const ev of o.llm.stream({ messages: [...messages], tools, toolChoice: tools[0].name, model: o.model, temperature: 0, signal: abort.signal })) {
      if (ev.type === 'text') reply.text += ev.delta;
      else if (ev.type === 'tool_calls') reply.calls.push(...ev.calls);
      // Leaving the loop closes the vendor's stream; the text is then judged like any other.
      if (reply.text.length > MAX_ANSWER_TEXT_CHARS) break;
    }
  } finally {
    o.clock.clearTimeout(timer);
    o.signal.removeEventListener('abort', onAbort);
  }
  if (abort.signal.aborted) throw abort.signal.reason as Error;
  return reply;
}

/** The forced call's arguments, else the first `{...}` in the text. */
function readObject(reply: Reply, toolName: string): { value: Record<string, unknown> } | { error: string } {
  const call = reply.calls.find((c) => c.name === toolName) ?? reply.calls[0];
  const raw = call ? call.arguments : /\{[\s\S]*\}/.exec(reply.text)?.[0];
  if (raw === undefined) return { error: `no ${toolName} call and no JSON object in the reply` };
  try {
    const value: unknown = JSON.parse(raw);
    if (!value || typeof value !== 'object' || Array.isArray(value)) return { error: 'the arguments are not a JSON object' };
    return { value: value as Record<string, unknown> };
  } catch {
    return { error: 'the arguments are not valid JSON' };
  }
}

/** `/intent must be equal to one of the allowed values (billing, other); /score must be number`. */
function describe(errors: ErrorObject[]): string {
  return errors
    .slice(0, 10)
    .map((e) => {
      const at = e.instancePath || '(object)';
      const allowed = e.keyword === 'enum' ? ` (${(e.params as { allowedValues: unknown[] }).allowedValues.filter((v) => v !== null).join(', ')})` : '';
      const extra = e.keyword === 'additionalProperties' ? ` (${(e.params as { additionalProperty: string }).additionalProperty})` : '';
      return `${at} ${e.message}${allowed}${extra}`;
    })
    .join('; ');
}
