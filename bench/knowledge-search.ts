/**
 * Knowledge search (issue 19): the query behind the model's `search_knowledge` function
 * (`media-engine/knowledge/search.ts`, Postgres full-text search ranked by `ts_rank`) over a
 * workspace of 10,000 memory items, against the goal "under 20 ms p95".
 *
 *   npm run build:bench && node dist-bench/bench/knowledge-search.js [--entries 10000] [--runs 400] [--no-append]
 *
 * Database: TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test), in a throwaway
 * schema dropped at the end, migrations applied (GIN index on the generated `search_vector`).
 * Seed: the 20 entries of test/fixtures/knowledge/bistro-faq.ts plus filler entries of 60-160
 * words drawn (Zipf-like) from a 1,500-word vocabulary that includes the questions' words, so
 * every query has many candidate matches, not only the right one. Then VACUUM ANALYZE.
 *
 * Scopes: `bound 100` (an agent's maximum of knowledge bindings: the 20 real entries and 80
 * filler ones) and `all` (every entry of the workspace in scope: the worst case). Queries: the 20
 * paraphrased caller questions, cycled; `--runs` sequential searches per scope after 20 warm-up,
 * timed client-side (the call the engine's tool makes, including the snippets). recall@3 over the
 * 20 questions is printed per scope (with 10,000 distractors for `all`).
 */
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import { createSql } from '../shared/db/client.js';
import { newId } from '../shared/ids.js';
import { migrate } from '../control-plane/db/migrate.js';
import { createPgKnowledgeSearch } from '../media-engine/knowledge/search.js';
import { BISTRO_ENTRIES, BISTRO_QUESTIONS } from '../test/fixtures/knowledge/bistro-faq.js';
import { appendResults, commandLine, num, renderSection, table, type Section } from './lib/report.js';
import { quantile } from './lib/stats.js';

export const GOAL_P95_MS = 20;
const DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Deterministic pseudo-random numbers (the seed data is the same on every run). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function vocabulary(): string[] {
  const fromCorpus = [...BISTRO_ENTRIES.map((e) => `${e.title} ${e.content}`), ...BISTRO_QUESTIONS.map((q) => q.question)]
    .join(' ')
    .toLowerCase()
    .match(/[a-z]{3,}/g)!;
  const words = new Set(fromCorpus);
  const syllables = ['ka', 'lo', 'mi', 'ter', 'van', 'sol', 'ri', 'den', 'po', 'mar', 'tel', 'gu', 'ran', 'si', 'bo'];
  const r = rng(7);
  while (words.size < 1500) words.add(Array.from({ length: 2 + Math.floor(r() * 3) }, () => syllables[Math.floor(r() * syllables.length)]).join(''));
  return [...words];
}

export interface KnowledgeBenchOptions {
  entries: number;
  runs: number;
}

export async function runKnowledgeSearchBench(o: KnowledgeBenchOptions, log: (l: string) => void = console.error): Promise<{ section: Section; p95: Record<string, number> }> {
  const schema = `bench_kb_${Date.now().toString(36)}`;
  const sql = createSql(DATABASE_URL, { schema, max: 2, statementTimeoutMs: 600_000 });
  try {
    await sql.unsafe(`create schema "${schema}"`);
    await migrate(sql);
    const user = newId();
    const ws = newId();
    await sql`insert into users (id, email, password_hash) values (${user}, ${`${user}@bench.test`}, 'x')`;
    await sql`insert into workspaces (id, user_id, name) values (${ws}, ${user}, 'bench')`;
    const t0 = performance.now();
    const realIds = BISTRO_ENTRIES.map(() => newId());
    await sql`insert into memory_items ${sql(BISTRO_ENTRIES.map((e, i) => ({ id: realIds[i]!, workspace_id: ws, title: e.title, content: e.content })) as never)}`;
    const words = vocabulary();
    const r = rng(42);
    // Zipf-like: low indexes (the corpus words come first) are drawn far more often.
    const word = () => words[Math.floor(words.length * r() ** 2.2)]!;
    const fillerIds: string[] = [];
    for (let start = 0; start < o.entries - BISTRO_ENTRIES.length; start += 500) {
      const rows = [];
      for (let i = start; i < Math.min(start + 500, o.entries - BISTRO_ENTRIES.length); i++) {
        const id = newId();
        fillerIds.push(id);
        const length = 60 + Math.floor(r() * 100);
        rows.push({ id, workspace_id: ws, title: `${word()} ${word()} ${word()}`, content: Array.from({ length }, word).join(' ') + '.' });
      }
      await sql`insert into memory_items ${sql(rows as never)}`;
    }
    const seedMs = performance.now() - t0;
    await sql.unsafe('vacuum analyze memory_items');
    log(`[knowledge] seeded ${o.entries} entries in ${num(seedMs / 1000, 1)} s`);

    const search = createPgKnowledgeSearch(sql);
    const scopes: Record<string, string[]> = { 'bound 100': [...realIds, ...fillerIds.slice(0, 80)], all: [...realIds, ...fillerIds] };
    const rows: Array<[string, number, number, string, string, string, string, string]> = [];
    const p95: Record<string, number> = {};
    for (const [name, ids] of Object.entries(scopes)) {
      let recalled = 0;
      for (const q of BISTRO_QUESTIONS) {
        const hits = await search.search({ workspaceId: ws, itemIds: ids, query: q.question, textSearchConfig: 'english', limit: 3 });
        if (hits.some((h) => h.id === realIds[q.entry])) recalled++;
      }
      const once = async (i: number): Promise<number> => {
        const q = BISTRO_QUESTIONS[i % BISTRO_QUESTIONS.length]!;
        const s = performance.now();
        await search.search({ workspaceId: ws, itemIds: ids, query: q.question, textSearchConfig: 'english', limit: 3 });
        return performance.now() - s;
      };
      for (let i = 0; i < 20; i++) await once(i);
      const samples: number[] = [];
      for (let i = 0; i < o.runs; i++) samples.push(await once(i));
      p95[name] = quantile(samples, 0.95);
      rows.push([name, ids.length, o.entries, num(quantile(samples, 0.5), 2), num(p95[name], 2), num(Math.max(...samples), 2), `${recalled}/${BISTRO_QUESTIONS.length}`, p95[name] < GOAL_P95_MS ? 'met' : 'NOT met']);
      log(`[knowledge] scope ${name}: p95 ${num(p95[name], 2)} ms, recall@3 ${recalled}/${BISTRO_QUESTIONS.length}`);
    }
    // The candidate query of the search (as media-engine/knowledge/search.ts builds it) for one question, per scope.
    const planOf = async (ids: string[]): Promise<string> => {
      const rows = (await sql.unsafe(
        `explain (analyze, costs off, timing off)
         with q as (select array_to_string(array(select quote_literal(lexeme) from unnest(to_tsvector('english', $3))), ' | ')::tsquery as tsq)
         select m.id from memory_items m, q
         where m.search_vector @@ q.tsq and m.workspace_id = $1 and m.is_active and m.id in (select unnest($2::uuid[]))
         order by ts_rank(m.search_vector, q.tsq, 1) desc limit 3`,
        [ws, ids, BISTRO_QUESTIONS[3]!.question],
      )) as unknown as Array<Record<string, string>>;
      // The scope's id list is thousands of literals: elided.
      return rows.map((p) => p['QUERY PLAN']!.replace(/'\{[^}]*\}'::uuid\[\]/g, "'{...}'::uuid[]")).join('\n');
    };
    const plans = [`Plan, scope bound 100, "${BISTRO_QUESTIONS[3]!.question}":\n${await planOf(scopes['bound 100']!)}`, `Plan, scope all:\n${await planOf(scopes.all!)}`];
    const section: Section = {
      title: `Knowledge search: search_knowledge over ${num(o.entries)} memory items (Postgres full-text search, ts_rank, GIN)`,
      settings: { entries: num(o.entries), 'runs per scope': `${o.runs} (after 20 warm-up)`, queries: '20 paraphrased caller questions, cycled', 'seed s': num(seedMs / 1000, 1) },
      blocks: [
        table(['scope', 'ids in scope', 'entries in workspace', 'p50 ms', 'p95 ms', 'max ms', 'recall@3', `goal p95 < ${GOAL_P95_MS} ms`], rows, 1),
        ...plans,
      ],
      notes: [
        'Client-side latency of createPgKnowledgeSearch().search (query, ranking, snippets of the top 3), one at a time, Postgres on the same machine.',
        'A call\'s scope is at most 100 items (knowledge bindings per agent; a session may only name bases its agent carries): `bound 100` is the production case. `all` is a stress row: every item of a full workspace in scope (10,000 ids sent with each query, thousands of OR-matches ranked).',
      ],
    };
    return { section, p95 };
  } finally {
    await sql.unsafe(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await sql.end({ timeout: 5 });
  }
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values: args } = benchArgs({
    options: {
      entries: { type: 'string', default: '10000' },
      runs: { type: 'string', default: '400' },
      'no-append': { type: 'boolean', default: false },
    },
  });
  const o: KnowledgeBenchOptions = { entries: Number(args.entries), runs: Number(args.runs) };
  if (!(o.entries >= BISTRO_ENTRIES.length && o.entries <= 10_000) || !(o.runs >= 1)) throw new Error('bad options: 20 <= --entries <= 10000 (the per-workspace limit), --runs >= 1');
  const r = await runKnowledgeSearchBench(o);
  console.log(renderSection(r.section));
  if (!args['no-append']) appendResults('knowledge search', [r.section], { command: commandLine() });
}
