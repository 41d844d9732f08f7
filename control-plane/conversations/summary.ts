/**
 * Post-call summaries (spec: `PUT /conversations/{id}` with `agent_id` "triggers summary
 * generation"; the summary is "filled asynchronously"). The agent's published LLM writes it:
 * `sim` runs the offline scripted model; every provider (sim included) is built by the engine's
 * provider registry, as a call would build it.
 *
 * Bound: at most `maxPending` summaries waiting or running (default 100), `concurrency` at a time
 * (default 2). Overflow policy: the new request is refused with a warning; the summary stays absent.
 * No agent config resolver wired (`liveConfig`): summaries are skipped with a warning (never a
 * silent fallback to `sim`).
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { ProviderSettings } from '../../shared/voice/session-config.js';
import type { LlmProvider } from '../../media-engine/providers/types.js';
import { createLlmProvider } from '../../media-engine/providers/registry.js';
import type { Sql } from '../db/client.js';
import { listMessages } from './store.js';

/** What the summary needs of the agents domain's `liveConfig(agentId)` (the published snapshot). */
export type LiveConfigFn = (agentId: string) => Promise<{ providers?: { llm?: ProviderSettings | null } } | null | undefined>;
export type LlmFactory = (settings: ProviderSettings) => LlmProvider | Promise<LlmProvider>;

export const SUMMARY_PROMPT =
  'You write the post-call summary of a phone conversation between a caller and an AI agent. ' +
  'In at most three sentences say why the caller called, what the agent did, and how the call ended. ' +
  'Plain text, no lists.';
/** Longest transcript sent to the model (the end of the call is kept). */
const MAX_TRANSCRIPT_CHARS = 20_000;
const MAX_SUMMARY_CHARS = 4000;

export interface SummarizerOptions {
  sql: Sql;
  logger: Logger;
  clock: Clock;
  liveConfig?: LiveConfigFn;
  llmFor?: LlmFactory;
  /** Default 100. */
  maxPending?: number;
  /** Default 2. */
  concurrency?: number;
  /** Per summary. Default 60 s. */
  timeoutMs?: number;
}

export interface Summarizer {
  /** Queues a summary; false when refused (queue full, closed, or no resolver). */
  request(conversationId: string, agentId: string): boolean;
  /** Resolves when nothing is waiting or running (tests). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** The engine's provider registry (`sim` is the offline scripted model, a provider like any other). */
export function defaultLlmFactory(clock: Clock): LlmFactory {
  return (settings) => createLlmProvider(settings, { clock });
}

export function createSummarizer(opts: SummarizerOptions): Summarizer {
  const { sql, logger, clock } = opts;
  const maxPending = opts.maxPending ?? 100;
  const concurrency = opts.concurrency ?? 2;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const llmFor = opts.llmFor ?? defaultLlmFactory(clock);
  const waiting: Array<{ conversationId: string; agentId: string }> = [];
  const running = new Set<AbortController>();
  let idleWaiters: Array<() => void> = [];
  let closed = false;

  function pump(): void {
    while (!closed && running.size < concurrency && waiting.length) {
      const job = waiting.shift()!;
      const ac = new AbortController();
      running.add(ac);
      void generate(job.conversationId, job.agentId, ac.signal)
        .catch((err: Error) => logger.warn({ conversationId: job.conversationId, err: err.message }, 'summary generation failed'))
        .finally(() => {
          running.delete(ac);
          pump();
          if (!running.size && !waiting.length) for (const w of idleWaiters.splice(0)) w();
        });
    }
  }

  async function generate(conversationId: string, agentId: string, signal: AbortSignal): Promise<void> {
    const live = await opts.liveConfig!(agentId);
    const settings = live?.providers?.llm;
    if (!settings?.provider_name) {
      logger.warn({ conversationId, agentId }, 'summary skipped: the agent has no published LLM');
      return;
    }
    const messages = await listMessages(sql, conversationId);
    if (!messages.length) return;
    let transcript = messages.map((m) => `${m.role === 'user' ? 'Caller' : 'Agent'}: ${m.content}`).join('\n');
    if (transcript.length > MAX_TRANSCRIPT_CHARS) transcript = transcript.slice(-MAX_TRANSCRIPT_CHARS);
    const llm = await llmFor(settings);
    const abort = new AbortController();
    const timer = clock.setTimeout(() => abort.abort(new Error('summary timed out')), timeoutMs);
    signal.addEventListener('abort', () => abort.abort(signal.reason), { once: true });
    let text = '';
    try {
      for await (const ev of llm.stream({
        messages: [
          { role: 'system', content: SUMMARY_PROMPT },
          { role: 'user', content: transcript },
        ],
        tools: [],
        model: settings.model_name,
        signal: abort.signal,
      })) {
        if (ev.type === 'text') text += ev.delta;
        if (text.length > MAX_SUMMARY_CHARS) break;
      }
    } finally {
      clock.clearTimeout(timer);
    }
    const summary = text.trim().slice(0, MAX_SUMMARY_CHARS);
    if (!summary) return;
    await sql`update conversations set summary = ${summary}, updated_at = now() where id = ${conversationId}`;
  }

  return {
    request(conversationId, agentId) {
      if (closed) return false;
      if (!opts.liveConfig) {
        logger.warn({ conversationId }, 'summary skipped: no agent config resolver (liveConfig) wired');
        return false;
      }
      if (waiting.length + running.size >= maxPending) {
        logger.warn({ conversationId, maxPending }, 'summary queue full: summary refused');
        return false;
      }
      waiting.push({ conversationId, agentId });
      pump();
      return true;
    },
    idle() {
      if (!running.size && !waiting.length) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
    async close() {
      if (closed) return;
      closed = true;
      waiting.length = 0;
      for (const ac of running) ac.abort(new Error('closed'));
      if (running.size) await new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
  };
}
