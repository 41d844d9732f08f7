/**
 * One forced tool call (structured output) to an LLM: the simulated caller's next line and the
 * judge's verdicts are both the arguments of a single function the model must call (`toolChoice`;
 * OpenAI-compatible and Anthropic adapters send it as the vendor's forced tool choice). The `sim`
 * LLM answers these two tools deterministically (shared/providers/llm/sim-simtest.ts).
 *
 * Provider failures (network, 5xx, timeout) throw `ProviderFailure` once the adapter's own retries
 * are spent (shared/providers/http.ts: 429/5xx before the first byte, twice, with backoff); an answer that is not a JSON
 * object is `{error}` (the caller decides whether to ask again).
 */
import type { Clock } from '../../shared/clock.js';
import type { LlmMessage, LlmProvider, LlmToolSpec } from '../../shared/providers/types.js';

export class ProviderFailure extends Error {
  constructor(
    readonly who: 'agent' | 'caller' | 'judge',
    message: string,
  ) {
    super(`${who} LLM failed: ${message}`);
    this.name = 'ProviderFailure';
  }
}

export interface ForcedAnswer {
  /** The arguments as a JSON object, or why they are not one. */
  parsed: { value: Record<string, unknown> } | { error: string };
  tokens: number;
}

export async function forcedCall(
  who: 'caller' | 'judge',
  llm: LlmProvider,
  messages: LlmMessage[],
  tool: LlmToolSpec,
  o: { clock: Clock; timeoutMs: number; signal: AbortSignal },
): Promise<ForcedAnswer> {
  const abort = new AbortController();
  const timer = o.clock.setTimeout(() => abort.abort(new Error(`timed out after ${o.timeoutMs} ms`)), o.timeoutMs);
  const onAbort = () => abort.abort(o.signal.reason);
  o.signal.addEventListener('abort', onAbort, { once: true });
  let text = '';
  let args: string | undefined;
  let tokens = 0;
  try {
    for await (const ev of llm.stream({ messages, tools: [tool], toolChoice: tool.name, temperature: 0, signal: abort.signal })) {
      if (ev.type === 'text') text += ev.delta;
      else if (ev.type === 'tool_calls') args ??= (ev.calls.find((c) => c.name === tool.name) ?? ev.calls[0])?.arguments;
      else if (ev.type === 'done' && ev.usage) tokens += ev.usage.inputTokens + ev.usage.outputTokens;
    }
  } catch (err) {
    if (o.signal.aborted) throw o.signal.reason as Error;
    throw new ProviderFailure(who, abort.signal.aborted ? String((abort.signal.reason as Error)?.message) : (err as Error).message);
  } finally {
    o.clock.clearTimeout(timer);
    o.signal.removeEventListener('abort', onAbort);
  }
  const raw = args ?? /\{[\s\S]*\}/.exec(text)?.[0];
  if (raw === undefined) return { parsed: { error: `no ${tool.name} call and no JSON object in the answer` }, tokens };
  try {
    const value: unknown = JSON.parse(raw);
    if (!value || typeof value !== 'object' || Array.isArray(value)) return { parsed: { error: 'the arguments are not a JSON object' }, tokens };
    return { parsed: { value: value as Record<string, unknown> }, tokens };
  } catch {
    return { parsed: { error: 'the arguments are not valid JSON' }, tokens };
  }
}
