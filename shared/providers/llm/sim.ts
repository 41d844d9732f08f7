/**
 * `sim` LLM: a scripted responder with configurable time to first token and token rate, so turn
 * latency, tool calls and barge-in can be exercised deterministically and offline.
 *
 * Reply choice, from the conversation:
 * - last message is a tool result -> the rule that asked for the tool answers with its `afterTool`
 *   template (`{{result}}` = the tool output), else `Here is what I found: <output, 200 chars>`;
 * - last user message contains a rule's `when` (case-insensitive, first rule wins) -> its `reply`
 *   and/or `toolCalls` (several calls are emitted at once, as parallel calls);
 * - otherwise the echo `You said: <text>.`
 *
 * A request that forces a tool (`toolChoice`, structured output) gets exactly that call, its
 * arguments extracted from the first user message by keyword rules (./sim-extract.ts; QA scoring:
 * ./sim-qa.ts).
 */
import { realClock, sleepOn, type Clock } from '../../clock.js';
import type { LlmEvent, LlmMessage, LlmProvider, LlmRequest, LlmToolCall } from '../types.js';
import { simExtract } from './sim-extract.js';
import { SIM_QA_TOOL, simQaScores } from './sim-qa.js';
import { SIM_CALLER_TOOL, SIM_JUDGE_TOOL, simCallerTurn, simJudgeVerdicts } from './sim-simtest.js';

export interface SimLlmRule {
  /** Matches when the last user message contains this (case-insensitive). */
  when: string;
  /** Text to stream. With `toolCalls` it is streamed before the calls. */
  reply?: string;
  /**
   * Tool calls to make. Only tools offered in the request are called, as a real model would;
   * when none of them is offered the rule falls back to `reply` or the echo. `arguments` may be
   * computed from the last user message.
   */
  toolCalls?: Array<{ name: string; arguments: SimToolArguments }>;
  /** Reply once the tool results are in; `{{result}}` is replaced by them (joined by `; `). */
  afterTool?: string;
}

export type SimToolArguments = Record<string, unknown> | ((userText: string) => Record<string, unknown>);

export interface SimLlmScript {
  /** Tried in order; the first match wins. */
  rules: SimLlmRule[];
}

export interface SimLlmOptions {
  /** Delay before the first event (text or tool calls). Default 0. */
  ttftMs?: number;
  /** Text tokens (words) per second after the first; 0 means all at once. Default 0. */
  tokensPerSecond?: number;
  /** Default: no rules, so every answer is the echo. */
  script?: SimLlmScript;
  /** Time source for the delays. Default `realClock`. */
  clock?: Clock;
}

export interface SimLlmProvider extends LlmProvider {
  /** How many `stream` calls were made (tests count attempts with it). */
  readonly requestCount: number;
}

/** Tool output is cut to this many characters in the default after-tool reply. */
const TOOL_RESULT_MAX_CHARS = 200;

/** A demo script: a weather tool, a long answer to interrupt, and a goodbye. */
export const simDemoScript: SimLlmScript = {
  rules: [
    {
      when: 'weather',
      toolCalls: [{ name: 'get_weather', arguments: (text) => ({ city: cityIn(text) }) }],
      afterTool: 'The weather report says: {{result}}.',
    },
    {
      when: 'long',
      reply:
        'Sure, here is the long version. Our restaurant opened in 1998 in a small street near the old market. ' +
        'We serve seasonal dishes made from local produce, and the menu changes every few weeks. ' +
        'Lunch is served from noon until half past two, and dinner from seven until eleven. ' +
        'We can seat groups of up to twelve people, and the terrace opens when the weather allows. ' +
        'Is there anything else you would like to know?',
    },
    { when: 'bye', reply: 'Thank you for calling. Goodbye!' },
  ],
};

/** The words after "in" ("weather in New York?" -> "New York"), else "Paris". */
function cityIn(text: string): string {
  const match = /\bin\s+([^.,?!]+)/i.exec(text);
  return match?.[1]?.trim() || 'Paris';
}

export function createSimLlm(opts: SimLlmOptions = {}): SimLlmProvider {
  const ttftMs = opts.ttftMs ?? 0;
  const tokensPerSecond = opts.tokensPerSecond ?? 0;
  const rules = opts.script?.rules ?? [];
  const clock = opts.clock ?? realClock;
  let requestCount = 0;
  let nextCallId = 1; // per provider, so ids stay unique across the turns of a conversation

  async function* stream(req: LlmRequest): AsyncGenerator<LlmEvent> {
    requestCount++;
    const { signal } = req;
    throwIfAborted(signal);
    const plan = planReply(req, rules);
    const calls: LlmToolCall[] = plan.toolCalls.map((c) => ({
      id: `call_${nextCallId++}`,
      name: c.name,
      arguments: JSON.stringify(typeof c.arguments === 'function' ? c.arguments(plan.userText) : c.arguments),
    }));
    const tokens = plan.text.match(/\s*\S+/g) ?? [];
    if (ttftMs > 0) await sleep(clock, ttftMs, signal);
    const gapMs = tokensPerSecond > 0 ? 1000 / tokensPerSecond : 0;
    for (let i = 0; i < tokens.length; i++) {
      if (i > 0 && gapMs > 0) await sleep(clock, gapMs, signal);
      throwIfAborted(signal);
      yield { type: 'text', delta: tokens[i]! };
    }
    throwIfAborted(signal);
    if (calls.length > 0) yield { type: 'tool_calls', calls };
    throwIfAborted(signal);
    const callWords = calls.reduce((n, c) => n + countWords(`${c.name} ${c.arguments}`), 0);
    yield {
      type: 'done',
      finishReason: calls.length > 0 ? 'tool_calls' : 'stop',
      usage: { inputTokens: req.messages.reduce((n, m) => n + countWords(m.content ?? ''), 0), outputTokens: tokens.length + callWords },
    };
  }

  return {
    label: 'sim',
    model: 'sim-1',
    capabilities: { tools: true, parallelToolCalls: true },
    stream,
    get requestCount() {
      return requestCount;
    },
  };
}

interface ReplyPlan {
  text: string;
  toolCalls: Array<{ name: string; arguments: SimToolArguments }>;
  userText: string;
}

function planReply(req: LlmRequest, rules: SimLlmRule[]): ReplyPlan {
  const { messages } = req;
  const forced = req.toolChoice ? req.tools.find((t) => t.name === req.toolChoice) : undefined;
  if (forced) {
    // The material to extract from is the first user message (a retry appends its errors later).
    const material = messages.find((m) => m.role === 'user')?.content ?? '';
    // QA scoring gets per-criterion scores with quotes (./sim-qa.ts); any other forced tool, extraction.
    // Simulation tests: the scripted caller and judge (./sim-simtest.ts).
    const args =
      forced.name === SIM_QA_TOOL
        ? simQaScores(forced.parameters, material)
        : forced.name === SIM_CALLER_TOOL
          ? simCallerTurn(material)
          : forced.name === SIM_JUDGE_TOOL
            ? simJudgeVerdicts(material)
            : simExtract(forced.parameters, material);
    return { text: '', toolCalls: [{ name: forced.name, arguments: args }], userText: material };
  }
  const lastUser = [...messages].reverse().find((m): m is Extract<LlmMessage, { role: 'user' }> => m.role === 'user');
  const userText = lastUser?.content ?? '';
  const rule = rules.find((r) => userText.toLowerCase().includes(r.when.toLowerCase()));
  const last = messages[messages.length - 1];

  if (last?.role === 'tool') {
    // All results of the trailing (possibly parallel) tool calls answer the same request.
    const results: string[] = [];
    for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--) {
      results.unshift((messages[i] as Extract<LlmMessage, { role: 'tool' }>).content);
    }
    const joined = results.join('; ');
    const text = rule?.afterTool
      ? rule.afterTool.replaceAll('{{result}}', joined)
      : `Here is what I found: ${joined.slice(0, TOOL_RESULT_MAX_CHARS)}`;
    return { text, toolCalls: [], userText };
  }

  if (rule) {
    const offered = new Set(req.tools.map((t) => t.name));
    const toolCalls = (rule.toolCalls ?? []).filter((c) => offered.has(c.name));
    if (rule.reply !== undefined || toolCalls.length > 0) return { text: rule.reply ?? '', toolCalls, userText };
  }
  return { text: `You said: ${userText.trim().replace(/[.!?\s]+$/, '')}.`, toolCalls: [], userText };
}

function countWords(text: string): number {
  return text.split(/\s+/).filter((w) => w.length > 0).length;
}

function abortError(): DOMException {
  return new DOMException('sim LLM request aborted', 'AbortError');
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortError();
}

function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return sleepOn(clock, ms, signal, abortError);
}
