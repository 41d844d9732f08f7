/**
 * Knowledge search against real Postgres (issue 19, "Done means" 3): migration 0015's generated
 * `search_vector` and GIN index, the engine's `createPgKnowledgeSearch`, and the model's
 * `search_knowledge` function on top. Retrieval quality: 20 entries, 20 paraphrased caller
 * questions, recall@3 printed (and held to a floor). Fencing: other workspaces, inactive items and
 * items outside the call's scope never come back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSql, type Sql } from '../../shared/db/client.js';
import { migrate } from '../../control-plane/db/migrate.js';
import { newId } from '../../shared/ids.js';
import { realClock, SimulatedClock } from '../../shared/clock.js';
import { createPgKnowledgeSearch, type KnowledgeSearch } from '../../media-engine/knowledge/search.js';
import { knowledgeSearchTool } from '../../media-engine/session/knowledge-tool.js';
import { TEXT_SEARCH_LANGUAGE_CODES, textSearchConfig } from '../../shared/voice/text-search.js';
import { dropSchema, TEST_DATABASE_URL, uniqueName } from '../helpers/infra.js';
import { BISTRO_ENTRIES, BISTRO_QUESTIONS } from '../fixtures/knowledge/bistro-faq.js';

const schema = uniqueName('t_kb');
let sql: Sql;
let search: KnowledgeSearch;
const ws = newId();
const otherWs = newId();
const ids: string[] = [];
let otherId = '';
let inactiveId = '';

async function insertItem(workspaceId: string, title: string, content: string, extra: { is_active?: boolean; metadata?: object } = {}): Promise<string> {
  const id = newId();
  await sql`insert into memory_items (id, workspace_id, title, content, metadata, is_active)
            values (${id}, ${workspaceId}, ${title}, ${content}, ${sql.json((extra.metadata ?? {}) as never)}, ${extra.is_active ?? true})`;
  return id;
}

beforeAll(async () => {
  sql = createSql(TEST_DATABASE_URL, { schema, max: 4 });
  await sql.unsafe(`create schema if not exists "${schema}"`);
  await migrate(sql);
  const user = newId();
  await sql`insert into users (id, email, password_hash) values (${user}, ${`${user}@kb.test`}, 'x')`;
  await sql`insert into workspaces (id, user_id, name) values (${ws}, ${user}, 'kb'), (${otherWs}, ${user}, 'other')`;
  for (const e of BISTRO_ENTRIES) ids.push(await insertItem(ws, e.title, e.content));
  otherId = await insertItem(otherWs, 'Parking', 'Parking for the other workspace: free parking everywhere, park your car here.');
  inactiveId = await insertItem(ws, 'Old parking rules', 'Parking rules from last year: park your car in the yard.', { is_active: false });
  search = createPgKnowledgeSearch(sql);
});

afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await dropSchema(schema);
});

describe('knowledge search over memory items (Postgres full-text search)', () => {
  it('finds the right entry for paraphrased questions: recall@3 over 20 entries / 20 questions', async () => {
    let hitsAt1 = 0;
    let hitsAt3 = 0;
    const misses: string[] = [];
    for (const q of BISTRO_QUESTIONS) {
      const hits = await search.search({ workspaceId: ws, itemIds: ids, query: q.question, textSearchConfig: 'english', limit: 3 });
      const rankOf = hits.findIndex((h) => h.id === ids[q.entry]);
      if (rankOf === 0) hitsAt1++;
      if (rankOf >= 0) hitsAt3++;
      else misses.push(`${q.question} -> ${hits.map((h) => h.title).join(' | ') || '(nothing)'}`);
    }
    const recall3 = hitsAt3 / BISTRO_QUESTIONS.length;
    console.log(`knowledge search recall@1 = ${(hitsAt1 / BISTRO_QUESTIONS.length).toFixed(2)}, recall@3 = ${recall3.toFixed(2)} (${hitsAt3}/${BISTRO_QUESTIONS.length})${misses.length ? `; misses: ${misses.join('; ')}` : ''}`);
    expect(recall3).toBeGreaterThanOrEqual(0.9);
  });

  it('answers with the title and a snippet of the matching content, best first', async () => {
    const [best] = await search.search({ workspaceId: ws, itemIds: ids, query: 'Can I bring my dog?', textSearchConfig: 'english', limit: 3 });
    expect(best!.title).toBe('Pets');
    expect(best!.snippet).toContain('Dogs are welcome on the terrace');
    expect(best!.rank).toBeGreaterThan(0);
  });

  it('never returns another workspace, an inactive item or an item outside the scope', async () => {
    const all = [...ids, otherId, inactiveId];
    const hits = await search.search({ workspaceId: ws, itemIds: all, query: 'where can I park my car', textSearchConfig: 'english', limit: 10 });
    expect(hits.map((h) => h.id)).toEqual([ids[3]]);
    const scoped = await search.search({ workspaceId: ws, itemIds: [ids[0]!], query: 'parking', textSearchConfig: 'english', limit: 3 });
    expect(scoped).toEqual([]);
  });

  it('a question of stop words only, or an empty scope, finds nothing (no error)', async () => {
    expect(await search.search({ workspaceId: ws, itemIds: ids, query: 'is it the', textSearchConfig: 'english', limit: 3 })).toEqual([]);
    expect(await search.search({ workspaceId: ws, itemIds: [], query: 'parking', textSearchConfig: 'english', limit: 3 })).toEqual([]);
  });

  it('items are indexed in the language of their metadata (German stemming)', async () => {
    // `Parkplätze` and `Parkplatz` share the German stem only; in English they would not match.
    const de = await insertItem(ws, 'Parken', 'Kostenlose Parkplätze gibt es in der Garage hinter dem Haus.', { metadata: { language: 'de' } });
    const en = await insertItem(ws, 'Parken', 'Kostenlose Parkplätze gibt es in der Garage hinter dem Haus.');
    const hits = await search.search({ workspaceId: ws, itemIds: [de, en], query: 'Habt ihr einen Parkplatz?', textSearchConfig: textSearchConfig('de-DE'), limit: 3 });
    expect(hits.map((h) => h.id)).toEqual([de]);
  });

  it('the SQL language table is the TypeScript one', async () => {
    for (const code of [...TEXT_SEARCH_LANGUAGE_CODES, 'en-US', 'pt_BR', 'xx', '']) {
      const [row] = await sql<{ cfg: string }[]>`select voiceplane_text_search_config(${code})::text as cfg`;
      expect(`${code}: ${row!.cfg}`).toBe(`${code}: ${textSearchConfig(code)}`);
    }
  });

  it('search_knowledge: a tool result with titles and snippets; bad arguments and timeouts are error results', async () => {
    const tool = knowledgeSearchTool({ item_ids: ids, text_search_config: 'english' }, ws, search, realClock);
    expect(tool.spec.name).toBe('search_knowledge');
    const ok = await tool.run(JSON.stringify({ query: 'do you take credit cards', top_k: 2 }), new AbortController().signal);
    expect(ok.status).toBe('success');
    expect((ok.output as { results: Array<{ title: string }> }).results[0]!.title).toBe('Payment methods');
    expect(JSON.parse(ok.content).results.length).toBeLessThanOrEqual(2);

    expect((await tool.run('{"top_k": 3}', new AbortController().signal)).status).toBe('error');
    expect((await tool.run('not json', new AbortController().signal)).status).toBe('error');

    const clock = new SimulatedClock();
    const never: KnowledgeSearch = { search: () => new Promise(() => {}) };
    const slow = knowledgeSearchTool({ item_ids: ids, text_search_config: 'english' }, ws, never, clock, 2000);
    const pending = slow.run('{"query":"hours"}', new AbortController().signal);
    clock.advance(2000);
    const timedOut = await pending;
    expect(timedOut).toMatchObject({ status: 'error', error: 'knowledge search timed out after 2000 ms' });
  });
});
