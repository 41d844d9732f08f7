/**
 * Knowledge search (issue 19; docs/flows.md): the model's `search_knowledge` function asks this.
 * `KnowledgeSearch` is the seam: today Postgres full-text search over workspace memory items
 * (`createPgKnowledgeSearch`); an embedding search (pgvector, once an embedding provider is
 * configured) implements the same interface and the call's tool does not change.
 */
import type { Sql } from '../../shared/db/client.js';

export interface KnowledgeQuery {
  /** Fence: only items of this workspace. */
  workspaceId: string;
  /** Scope: only these memory items (the call's `knowledge_search.item_ids`). */
  itemIds: readonly string[];
  /** The model's question, free text. */
  query: string;
  /** Postgres text search configuration of the query (`english`, `german`, ... `simple`). */
  textSearchConfig: string;
  /** Hits wanted, 1..MAX_KNOWLEDGE_HITS. */
  limit: number;
}

export interface KnowledgeHit {
  id: string;
  title: string;
  /** The best-matching fragments of the entry (at most SNIPPET_MAX_CHARS). */
  snippet: string;
  /** Relevance (`ts_rank`, comparable within one answer only). */
  rank: number;
}

export interface KnowledgeSearch {
  search(q: KnowledgeQuery): Promise<KnowledgeHit[]>;
}

export const MAX_KNOWLEDGE_HITS = 10;
/** Characters of one snippet the model reads (bounds the tool result and the next request). */
export const SNIPPET_MAX_CHARS = 600;
/** Characters of an entry's content a snippet is cut from (ts_headline re-parses its input). */
const HEADLINE_SOURCE_CHARS = 20_000;

/**
 * Full-text search ranked by `ts_rank` (normalisation 1: divided by 1 + log(length), so a long
 * entry does not win by repeating words). The question is turned into its lexemes OR-ed together
 * (not AND-ed like `websearch_to_tsquery`): a caller's paraphrase rarely contains every word of the
 * entry, and the ranking puts entries matching more (and title) words first. The GIN index on
 * `search_vector` (migration 0015) finds candidates; snippets are built for the top hits only.
 */
export function createPgKnowledgeSearch(sql: Sql): KnowledgeSearch {
  return {
    async search(q) {
      if (!q.itemIds.length || !q.query.trim()) return [];
      const limit = Math.max(1, Math.min(MAX_KNOWLEDGE_HITS, Math.floor(q.limit)));
      const rows = await sql<Array<{ id: string; title: string; snippet: string; rank: number }>>`
        with q as (
          select nullif(array_to_string(array(
            select quote_literal(lexeme) from unnest(to_tsvector(${q.textSearchConfig}::regconfig, ${q.query.slice(0, 1000)}))
          ), ' | '), '')::tsquery as tsq
        ), top as (
          select m.id, m.title, m.content, ts_rank(m.search_vector, q.tsq, 1) as rank
          from memory_items m, q
          where q.tsq is not null and m.search_vector @@ q.tsq
            and m.workspace_id = ${q.workspaceId} and m.is_active
            -- A semi-join, not \`= any($ids)\`: prepared statements turn generic after five runs, and a
            -- generic \`= any\` scans the whole id array for every candidate row (slow for big scopes).
            and m.id in (select unnest(${q.itemIds as string[]}::uuid[]))
          order by rank desc, m.id
          limit ${limit}
        )
        select top.id, top.title, top.rank,
          ts_headline(${q.textSearchConfig}::regconfig, left(top.content, ${HEADLINE_SOURCE_CHARS}), q.tsq,
            'MaxFragments=2, MinWords=8, MaxWords=40, FragmentDelimiter=" ... ", StartSel="", StopSel=""') as snippet
        from top, q
        order by top.rank desc, top.id`;
      return rows.map((r) => ({ id: r.id, title: r.title, snippet: r.snippet.slice(0, SNIPPET_MAX_CHARS), rank: Number(r.rank) }));
    },
  };
}
