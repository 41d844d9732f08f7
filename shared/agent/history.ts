/**
 * The LLM conversation of one call, bounded (issue 11, "bounded state everywhere"): by an
 * estimated token budget, because every turn sends the whole history to the model (cost and
 * latency grow with it, and past the model's window the request fails), and by a message count.
 *
 * Rule (also in NOTES.md):
 * - The history is cut into units: the system prompt (the first message), then turns. A turn starts
 *   at a `user` message and holds everything up to the next one (assistant text, assistant tool
 *   calls with their tool results, injected system notes). Messages before the first user message
 *   (the welcome) form one turn of their own.
 * - After every change, whole turns are dropped, oldest first, while the estimate exceeds the token
 *   budget or the count exceeds the message cap. The system prompt and the newest turn (the current
 *   one) are never dropped, even when they alone exceed the budget. Dropping whole turns never
 *   separates a tool call from its result, and the kept history starts with a `user` turn (or the
 *   welcome), as the vendors require.
 * - Trimming memory and trimming the request are the same thing: the kept turns are always the
 *   newest, so a turn dropped once could never be sent again anyway.
 * - No summary of what was dropped: a model-written summary costs a request per trim and is not
 *   deterministic; the dropped turns stay in the conversation record.
 */
import type { LlmMessage } from '../providers/types.js';

/** Fixed cost of one message (role, separators) in the estimate, as OpenAI documents ~3-4. */
const MESSAGE_OVERHEAD_TOKENS = 4;

/**
 * Cheap token estimate: ~4 characters per token for English text (OpenAI's rule of thumb); tool
 * call names and JSON arguments are counted as text. Deliberately no tokenizer: it runs on the call
 * path after every turn, and the budget is a bound, not a bill.
 */
export function estimateTokens(m: LlmMessage): number {
  let chars = m.content?.length ?? 0;
  if (m.role === 'assistant' && m.toolCalls) for (const c of m.toolCalls) chars += c.name.length + c.arguments.length + c.id.length;
  if (m.role === 'tool') chars += m.toolCallId.length;
  return MESSAGE_OVERHEAD_TOKENS + Math.ceil(chars / 4);
}

export interface HistoryLimits {
  /** Estimated tokens of the whole history, system prompt included. */
  tokenBudget: number;
  /** Messages, system prompt included. */
  maxMessages: number;
}

export class CallHistory {
  private messages: LlmMessage[] = [];
  private tokens = 0;
  /** Messages dropped so far by the bounds (for the call's log line). */
  droppedMessages = 0;

  constructor(private readonly limits: HistoryLimits) {}

  get length(): number {
    return this.messages.length;
  }

  /** Current token estimate of everything kept. */
  get estimatedTokens(): number {
    return this.tokens;
  }

  get last(): LlmMessage | undefined {
    return this.messages[this.messages.length - 1];
  }

  /** Appends, then trims to the bounds. */
  push(...msgs: LlmMessage[]): void {
    for (const m of msgs) {
      this.messages.push(m);
      this.tokens += estimateTokens(m);
    }
    this.trim();
  }

  /** Removes and returns the last message (an unanswered caller turn folded into the next one). */
  pop(): LlmMessage | undefined {
    const m = this.messages.pop();
    if (m) this.tokens -= estimateTokens(m);
    return m;
  }

  /** A copy for one LLM request: already within the bounds. */
  forModel(): LlmMessage[] {
    return [...this.messages];
  }

  private trim(): void {
    if (this.tokens <= this.limits.tokenBudget && this.messages.length <= this.limits.maxMessages) return;
    // The pinned prefix: the system prompt (pushed first by the actor).
    const first = this.messages[0]?.role === 'system' ? 1 : 0;
    // Start of the newest turn: never dropped.
    let newest = this.messages.length - 1;
    while (newest > first && this.messages[newest]!.role !== 'user') newest--;
    let cut = first;
    let tokens = this.tokens;
    let count = this.messages.length;
    while ((tokens > this.limits.tokenBudget || count > this.limits.maxMessages) && cut < newest) {
      // Drop one whole turn: the message at `cut` and everything up to the next user message.
      let end = cut + 1;
      while (end < newest && this.messages[end]!.role !== 'user') end++;
      for (let i = cut; i < end; i++) tokens -= estimateTokens(this.messages[i]!);
      count -= end - cut;
      cut = end;
    }
    if (cut === first) return;
    this.droppedMessages += cut - first;
    this.messages.splice(first, cut - first);
    this.tokens = tokens;
  }
}
