/**
 * Anthropic Messages API streaming adapter. Event flow (docs "Streaming messages"):
 * message_start (input usage) -> per content block: content_block_start (text | tool_use),
 * content_block_delta (text_delta | input_json_delta), content_block_stop -> message_delta
 * (stop_reason, cumulative output usage) -> message_stop; `ping` anywhere; `error` anywhere.
 */
import { randomUUID } from 'node:crypto';
import { ProviderError } from '../errors.js';
import { describeJsonError, httpStreamSettings, openHttpStream, LLM_HTTP_DEFAULTS, type HttpAdapterOptions } from '../http.js';
import { parseJsonChunk, sseEvents } from '../sse.js';
import type { LlmEvent, LlmMessage, LlmProvider, LlmRequest, LlmToolCall } from '../types.js';
import { checkToolCall, checkToolCallCount, tokenCount } from './limits.js';
import { isRecord } from '../../protocol/stream-frames.js';

export interface AnthropicLlmOptions extends HttpAdapterOptions {
  apiKey: string;
  /** Default `https://api.anthropic.com`; `/v1/messages` is appended. */
  baseUrl?: string;
  model: string;
  /** Required by the API. Default 1024 (a spoken reply is short). */
  maxTokens?: number;
  /** `anthropic-version` header. Default `2023-06-01`. */
  apiVersion?: string;
}

type Block = Record<string, unknown>;
interface WireMessage {
  role: 'user' | 'assistant';
  content: Block[];
}

/**
 * Our messages -> `{system, messages}`. System prompts join into `system`; tool results become
 * `tool_result` blocks of a user turn; assistant tool calls become `tool_use` blocks. Consecutive
 * same-role turns are merged because the API wants user/assistant alternation and all results of
 * one tool round in a single user turn.
 */
export function toAnthropicMessages(messages: LlmMessage[]): { system: string; messages: WireMessage[] } {
  const system: string[] = [];
  const out: WireMessage[] = [];
  const append = (role: 'user' | 'assistant', blocks: Block[]): void => {
    if (blocks.length === 0) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        system.push(m.content);
        break;
      case 'user':
        if (m.content !== '') append('user', [{ type: 'text', text: m.content }]);
        break;
      case 'assistant': {
        const blocks: Block[] = [];
        if (m.content) blocks.push({ type: 'text', text: m.content });
        for (const c of m.toolCalls ?? [])
          blocks.push({ type: 'tool_use', id: c.id, name: c.name, input: parseToolInput(c.arguments) });
        append('assistant', blocks);
        break;
      }
      case 'tool':
        append('user', [{ type: 'tool_result', tool_use_id: m.toolCallId, content: m.content }]);
        break;
    }
  }
  return { system: system.join('\n\n'), messages: out };
}

/** `tool_use.input` must be an object; a model's broken JSON is replayed as `{}` rather than failing the next request. */
function parseToolInput(args: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(args || '{}');
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** Anthropic stop reasons -> the OpenAI-style names the engine switches on. */
function normalizeStopReason(r: string | null): string {
  switch (r) {
    case 'end_turn':
    case 'stop_sequence':
    case null:
      return 'stop';
    case 'tool_use':
      return 'tool_calls';
    case 'max_tokens':
      return 'length';
    default:
      return r;
  }
}

export function createAnthropicLlm(opts: AnthropicLlmOptions): LlmProvider {
  const label = 'anthropic';
  const baseUrl = (opts.baseUrl ?? 'https://api.anthropic.com').replace(/\/+$/, '');

  async function* stream(req: LlmRequest): AsyncGenerator<LlmEvent> {
    const { system, messages } = toAnthropicMessages(req.messages);
    const body: Record<string, unknown> = {
      model: req.model || opts.model,
      max_tokens: opts.maxTokens ?? 1024,
      messages,
      stream: true,
    };
    if (system) body.system = system;
    if (req.temperature !== undefined) body.temperature = req.temperature;
    if (req.tools.length > 0) {
      body.tools = req.tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
      // Parallel tool use is on unless disable_parallel_tool_use is set.
      body.tool_choice = req.toolChoice ? { type: 'tool', name: req.toolChoice } : { type: 'auto' };
    }
    const http = await openHttpStream({
      provider: label,
      url: `${baseUrl}/v1/messages`,
      headers: {
        'content-type': 'application/json',
        accept: 'text/event-stream',
        'x-api-key': opts.apiKey,
        'anthropic-version': opts.apiVersion ?? '2023-06-01',
      },
      body: JSON.stringify(body),
      signal: req.signal,
      describeError: describeJsonError,
      ...httpStreamSettings(opts, LLM_HTTP_DEFAULTS),
    });

    // Open tool_use blocks by content-block index; JSON arrives as partial strings.
    const toolBlocks = new Map<number, { id: string; name: string; json: string; initial: unknown }>();
    const finished: LlmToolCall[] = [];
    let inputTokens: number | undefined;
    let outputTokens: number | undefined;
    let stopReason: string | null = null;
    let stopped = false;
    try {
      for await (const ev of sseEvents(http, label)) {
        const msg = parseJsonChunk(label, ev.data);
        const type = String(msg.type ?? ev.event);
        if (type === 'message_start') {
          const u = isRecord(msg.message) && isRecord(msg.message.usage) ? msg.message.usage : {};
          // Cached prompt tokens are reported apart from input_tokens; the prompt cost is their sum.
          inputTokens = tokenCount(u.input_tokens) + tokenCount(u.cache_creation_input_tokens) + tokenCount(u.cache_read_input_tokens);
          outputTokens = typeof u.output_tokens === 'number' ? tokenCount(u.output_tokens) : undefined;
        } else if (type === 'content_block_start') {
          const block = isRecord(msg.content_block) ? msg.content_block : {};
          if (block.type === 'tool_use') {
            checkToolCallCount(label, toolBlocks.size + finished.length);
            // A nameless call can never run, and sent back in the history it fails every later turn.
            if (typeof block.name !== 'string' || !block.name) throw new ProviderError({ provider: label, code: 'MALFORMED_RESPONSE', message: `${label}: a tool_use block without a name` });
            const id = typeof block.id === 'string' && block.id ? block.id : `toolu_${randomUUID().replaceAll('-', '')}`;
            const t = { id, name: block.name, json: '', initial: block.input };
            checkToolCall(label, { name: t.name, arguments: '' });
            toolBlocks.set(Number(msg.index), t);
          }
        } else if (type === 'content_block_delta') {
          const delta = (msg.delta ?? {}) as Record<string, unknown>;
          if (delta.type === 'text_delta' && typeof delta.text === 'string' && delta.text !== '')
            yield { type: 'text', delta: delta.text };
          else if (delta.type === 'input_json_delta') {
            const t = toolBlocks.get(Number(msg.index));
            if (t && typeof delta.partial_json === 'string') {
              t.json += delta.partial_json;
              checkToolCall(label, { name: t.name, arguments: t.json });
            }
          }
          // thinking_delta / signature_delta are not spoken: ignored.
        } else if (type === 'content_block_stop') {
          const t = toolBlocks.get(Number(msg.index));
          if (t) {
            toolBlocks.delete(Number(msg.index));
            finished.push({ id: t.id, name: t.name, arguments: t.json || JSON.stringify(t.initial ?? {}) });
          }
        } else if (type === 'message_delta') {
          const d = (msg.delta ?? {}) as Record<string, unknown>;
          if (typeof d.stop_reason === 'string') stopReason = d.stop_reason;
          const u = (msg.usage ?? {}) as Record<string, number>;
          // message_delta usage is cumulative: the latest value wins.
          if (typeof u.output_tokens === 'number') outputTokens = tokenCount(u.output_tokens);
          if (typeof u.input_tokens === 'number' && inputTokens === undefined) inputTokens = tokenCount(u.input_tokens);
        } else if (type === 'message_stop') {
          stopped = true;
          break;
        } else if (type === 'error') {
          const e = (msg.error ?? {}) as { type?: string; message?: string };
          throw new ProviderError({
            provider: label,
            code: 'VENDOR_ERROR',
            retryable: e.type === 'overloaded_error' || e.type === 'api_error' || e.type === 'rate_limit_error',
            vendorCode: e.type,
            message: `${label}: error mid-stream: ${e.message ?? 'unknown'}`,
          });
        }
        // `ping` and unknown future event types are ignored (the API reserves the right to add some).
      }
    } finally {
      // After the end marker, drain so the connection is reused; on `break` or error, never leave
      // the request streaming.
      if (stopped) await http.drain();
      else http.cancel();
    }
    if (!stopped)
      throw new ProviderError({
        provider: label,
        code: 'STREAM_INTERRUPTED',
        retryable: true,
        message: `${label}: stream ended before message_stop`,
      });
    if (finished.length > 0) yield { type: 'tool_calls', calls: finished };
    yield {
      type: 'done',
      finishReason: normalizeStopReason(stopReason),
      usage:
        inputTokens === undefined && outputTokens === undefined
          ? undefined
          : { inputTokens: inputTokens ?? 0, outputTokens: outputTokens ?? 0 },
    };
  }

  return {
    label,
    model: opts.model,
    capabilities: { tools: true, parallelToolCalls: true },
    stream: (req) => stream(req),
  };
}
