/**
 * The `search_knowledge` function (issue 19; docs/flows.md): offered when the session config
 * carries a knowledge search scope (`on_demand` bindings, `kb_mode: tool`, or `always` entries past
 * the prompt budget) and the node has a searcher. A tool call like any other: it runs in the
 * turn runner (never on the audio path), is bounded by a timeout on the call's clock, is reported
 * as `tool_call_*` events and a tool call record, and never throws into the call.
 */
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { KnowledgeSearchConfig } from '../../shared/voice/session-config.js';
import type { KnowledgeSearch } from '../knowledge/search.js';
import type { CallTool } from './call-tools.js';
import type { ToolResult } from './tools.js';

export { SEARCH_KNOWLEDGE_FUNCTION } from '../../shared/agent/reserved-tools.js';
import { SEARCH_KNOWLEDGE_FUNCTION } from '../../shared/agent/reserved-tools.js';
/** Hits returned when the model does not ask for a number. */
export const DEFAULT_KNOWLEDGE_HITS = 3;
/** Longest a search may take before the model is told it failed (the query itself is bounded by the pool's statement timeout). */
export const KNOWLEDGE_SEARCH_TIMEOUT_MS = 2000;

export function knowledgeSearchTool(cfg: KnowledgeSearchConfig, workspaceId: string, search: KnowledgeSearch, clock: Clock, timeoutMs = KNOWLEDGE_SEARCH_TIMEOUT_MS): CallTool {
  return {
    spec: {
      name: SEARCH_KNOWLEDGE_FUNCTION,
      description: "Search the company's knowledge base. Use it before answering questions about policies, products, prices, hours or procedures you are not sure about.",
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', description: "The caller's question or the key words to look up" },
          top_k: { type: 'integer', minimum: 1, maximum: 10, description: `How many entries to return (default ${DEFAULT_KNOWLEDGE_HITS})` },
        },
        required: ['query'],
      },
    },
    async run(argsJson, signal) {
      const started = clock.monotonicMs();
      const done = (status: 'success' | 'error', output: unknown, error?: string): ToolResult => ({
        status,
        content: JSON.stringify(output),
        output,
        error,
        latencyMs: Math.round(clock.monotonicMs() - started),
        attempts: 1,
      });
      let query = '';
      let topK = DEFAULT_KNOWLEDGE_HITS;
      try {
        const args = JSON.parse(argsJson || '{}') as { query?: unknown; top_k?: unknown };
        if (typeof args.query === 'string') query = args.query.trim();
        if (Number.isInteger(args.top_k)) topK = args.top_k as number;
      } catch {
        return done('error', { error: 'arguments must be a JSON object' }, 'arguments must be a JSON object');
      }
      if (!query) return done('error', { error: 'query is required' }, 'query is required');
      let timer: TimerHandle | undefined;
      try {
        const hits = await Promise.race([
          search.search({ workspaceId, itemIds: cfg.item_ids, query, textSearchConfig: cfg.text_search_config, limit: topK }),
          new Promise<never>((_, reject) => {
            timer = clock.setTimeout(() => reject(new Error(`knowledge search timed out after ${timeoutMs} ms`)), timeoutMs);
            signal.addEventListener('abort', () => reject(new Error('cancelled')), { once: true });
          }),
        ]);
        const results = hits.map((h) => ({ title: h.title, snippet: h.snippet }));
        return done('success', results.length ? { results } : { results, note: 'nothing in the knowledge base matches; say you do not know rather than guessing' });
      } catch (e) {
        const message = (e as Error).message || 'knowledge search failed';
        return done('error', { error: message }, message);
      } finally {
        clock.clearTimeout(timer);
      }
    },
  };
}
