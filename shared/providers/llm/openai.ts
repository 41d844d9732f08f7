/**
 * OpenAI Chat Completions streaming adapter (docs/protocols.md section 6). Works with any
 * OpenAI-compatible server (Groq, Together, vLLM, Ollama) through `baseUrl`.
 */
import { randomUUID } from 'node:crypto';
import { ProviderError } from '../errors.js';
import { describeJsonError, httpStreamSettings, openHttpStream, LLM_HTTP_DEFAULTS, type HttpAdapterOptions } from '../http.js';
import { parseJsonChunk, sseEvents } from '../sse.js';
import { checkToolCall, checkToolCallCount, tokenCount } from './limits.js';
import { isRecord } from '../../protocol/stream-frames.js';
import type { LlmEvent, LlmMessage, LlmProvider, LlmRequest, LlmToolCall } from '../types.js';

export interface OpenAiLlmOptions extends HttpAdapterOptions {
  /** Sent as `Authorization: Bearer`; '' omits the header (local vLLM/Ollama need none). */
  apiKey: string;
  /** Default `https://api.openai.com/v1`; `/chat/completions` is appended. */
  baseUrl?: string;
  model: string;
  /** Name used in labels and errors (`groq`, `together`, …). Default `openai`. */
  label?: string;
}

interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** Our message union -> Chat Completions messages. */
export function toOpenAiMessages(messages: LlmMessage[]): Array<Record<string, unknown>> {
  return messages.map((m) => {
    switch (m.role) {
      case 'system':
      case 'user':
        return { role: m.role, content: m.content };
      case 'assistant': {
        const wire: Record<string, unknown> = { role: 'assistant', content: m.content };
        if (m.toolCalls && m.toolCalls.length > 0)
          wire.tool_calls = m.toolCalls.map(
            (c): WireToolCall => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }),
          );
        return wire;
      }
      case 'tool':
        return { role: 'tool', tool_call_id: m.toolCallId, content: m.content };
    }
  });
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

/** Assembles `delta.tool_calls` fragments by `index` (only the first fragment carries id and name). */
class ToolCallAssembler {
  private readonly calls = new Map<number, PartialCall>();
  /** Calls of the whole response, taken or not: the bound holds across several `finish_reason`s. */
  private total = 0;

  constructor(private readonly provider: string) {}

  add(fragments: unknown[]): void {
    fragments.forEach((raw, position) => {
      // The base URL may be anyone's: a fragment that is not an object carries nothing.
      if (!isRecord(raw)) return;
      const f = raw as { index?: unknown; id?: unknown; function?: unknown };
      const fn = (isRecord(f.function) ? f.function : {}) as { name?: unknown; arguments?: unknown };
      // Some compatible servers send whole calls without `index`: their position stands in.
      const index = Number.isSafeInteger(f.index) && (f.index as number) >= 0 ? (f.index as number) : position;
      let call = this.calls.get(index);
      if (!call) {
        checkToolCallCount(this.provider, this.total++);
        call = { id: '', name: '', arguments: '' };
        this.calls.set(index, call);
      }
      if (typeof f.id === 'string' && f.id) call.id = f.id;
      if (typeof fn.name === 'string') call.name += fn.name;
      if (typeof fn.arguments === 'string') call.arguments += fn.arguments;
      checkToolCall(this.provider, call);
    });
  }

  get size(): number {
    return this.calls.size;
  }

  take(): LlmToolCall[] {
    // A call without a name cannot be run, and sent back in the history it fails every later turn.
    for (const c of this.calls.values())
      if (!c.name) throw new ProviderError({ provider: this.provider, code: 'MALFORMED_RESPONSE', message: `${this.provider}: a tool call without a function name` });
    const out = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      // A made-up id stays within OpenAI's 40-character bound on tool call ids (a dashed UUID made 41).
      .map(([, c]) => ({ id: c.id || `call_${randomUUID().replaceAll('-', '')}`, name: c.name, arguments: c.arguments || '{}' }));
    this.calls.clear();
    return out;
  }
}

export function createOpenAiLlm(opts: OpenAiLlmOptions): LlmProvider {
  const label = opts.label ?? 'openai';
  const baseUrl = (opts.baseUrl ?? 'https://api.openai.com/v1').replace(/\/+$/, '');

  async function* stream(req: LlmRequest): AsyncGenerator<LlmEvent> {
    const body: Record<string, unknown> = {
      model: req.model || opts.model,
      messages: toOpenAiMessages(req.messages),
      stream: true,
      stream_options: { include_usage: true },
    };
    if (req.temperature !== undefined) body.temperature = req.temperature;
    // `tool_choice` / `parallel_tool_calls` without `tools` is a 400 on OpenAI: send them together or not at all.
    if (req.tools.length > 0) {
      body.tools = req.tools.map((t) => ({
        type: 'function',
        function: { name: t.name, description: t.description, parameters: t.parameters },
      }));
      // A forced tool is a structured answer: exactly one call of it.
      body.tool_choice = req.toolChoice ? { type: 'function', function: { name: req.toolChoice } } : 'auto';
      body.parallel_tool_calls = !req.toolChoice;
    }
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'text/event-stream' };
    if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;

    const http = await openHttpStream({
      provider: label,
      url: `${baseUrl}/chat/completions`,
      headers,
      body: JSON.stringify(body),
      signal: req.signal,
      describeError: describeJsonError,
      ...httpStreamSettings(opts, LLM_HTTP_DEFAULTS),
    });

    const calls = new ToolCallAssembler(label);
    let finishReason: string | null = null;
    let usage: { inputTokens: number; outputTokens: number } | undefined;
    let sawDone = false;
    try {
      for await (const ev of sseEvents(http, label)) {
        if (ev.data.trim() === '[DONE]') {
          sawDone = true;
          break;
        }
        const chunk = parseJsonChunk(label, ev.data);
        if (chunk.error) throw midStreamError(label, chunk.error);
        // `choices: null` from some compatible servers is the same as `[]` (usage-only chunk).
        const choices = Array.isArray(chunk.choices) ? (chunk.choices as Array<Record<string, unknown>>) : [];
        for (const choice of choices) {
          if (!isRecord(choice)) continue; // `[null]` and the like: nothing in it
          if (typeof choice.index === 'number' && choice.index !== 0) continue; // we never ask for n > 1
          const delta = (isRecord(choice.delta) ? choice.delta : {}) as { content?: unknown; tool_calls?: unknown };
          if (typeof delta.content === 'string' && delta.content !== '') yield { type: 'text', delta: delta.content };
          if (Array.isArray(delta.tool_calls)) calls.add(delta.tool_calls);
          if (typeof choice.finish_reason === 'string') {
            finishReason = choice.finish_reason;
            // Arguments are complete once finish_reason arrives; hand them over before the usage chunk.
            if (calls.size > 0) yield { type: 'tool_calls', calls: calls.take() };
          }
        }
        const u = chunk.usage as { prompt_tokens?: unknown; completion_tokens?: unknown } | null | undefined;
        if (isRecord(u)) usage = { inputTokens: tokenCount(u.prompt_tokens), outputTokens: tokenCount(u.completion_tokens) };
      }
    } finally {
      // After the end marker, drain so the connection is reused; on `break` or error, never leave
      // the request streaming.
      if (sawDone) await http.drain();
      else http.cancel();
    }
    if (!sawDone && finishReason === null)
      throw new ProviderError({
        provider: label,
        code: 'STREAM_INTERRUPTED',
        retryable: true,
        message: `${label}: stream ended before finish_reason / [DONE]`,
      });
    if (calls.size > 0) yield { type: 'tool_calls', calls: calls.take() };
    yield { type: 'done', finishReason: finishReason ?? 'stop', usage };
  }

  return {
    label,
    model: opts.model,
    capabilities: { tools: true, parallelToolCalls: true },
    stream: (req) => stream(req),
  };
}

function midStreamError(provider: string, raw: unknown): ProviderError {
  const e = (typeof raw === 'object' && raw ? raw : { message: String(raw) }) as {
    message?: string;
    type?: string;
    code?: string | null;
  };
  const vendorCode = e.code ?? e.type ?? undefined;
  return new ProviderError({
    provider,
    code: 'VENDOR_ERROR',
    // Output was already streamed, so nothing retries this automatically; the flag tells the engine
    // whether asking again could work (server trouble) or not (a bad request).
    retryable: e.type === 'server_error' || vendorCode === 'rate_limit_exceeded',
    vendorCode: vendorCode ?? undefined,
    message: `${provider}: error mid-stream: ${e.message ?? 'unknown'}`,
  });
}
