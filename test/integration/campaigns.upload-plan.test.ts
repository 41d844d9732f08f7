/**
 * The CSV upload's duplicate check on a fresh database (campaign_contacts never analyzed,
 * reltuples -1), as the audit found it: each 500-row batch asks which of its numbers the campaign
 * has. Planned from the campaign_id condition alone, that read every row the upload had inserted
 * so far (245 s for a 10 MB file); it must probe the (campaign_id, to_number) index per number.
 * Measured in the transaction's own table counters (pg_stat_xact_user_tables), so the test does
 * not depend on timing. Own file: a fresh schema is the condition under test.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { insertContacts } from '../../control-plane/campaigns/store.js';
import { newId } from '../../shared/ids.js';

let h: TelephonyHarness;

beforeAll(async () => {
  h = await startTelephonyHarness();
}, 60_000);

afterAll(async () => {
  await h?.close();
});

const phone = (i: number) => `+1415${String(2_000_000 + i).padStart(7, '0')}`;

it('a batch against a campaign of 3,000 contacts reads about its own numbers, not the 3,000 rows (no table statistics)', async () => {
  const agentId = await h.createAgent({ number: '+14155550951', direction: 'outbound' });
  const id = (await h.call('POST', '/campaigns', { name: 'plan', agent_id: agentId })).body.data.id as string;
  const [table] = await h.infra.sql<{ reltuples: number }[]>`select reltuples from pg_class where relname = 'campaign_contacts' and relnamespace = ${h.infra.schema}::regnamespace`;
  // The condition under test: a table never analyzed.
  expect(table!.reltuples).toBe(-1);
  const rowsRead = async (tx: typeof h.infra.sql) => {
    const [s] = await tx<{ n: number }[]>`select (coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0))::int as n from pg_stat_xact_user_tables where relid = 'campaign_contacts'::regclass`;
    return s?.n ?? 0;
  };
  const contacts = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => ({ id: newId(), to_number: phone(from + k), dynamic_variables: {} }));
  // Rolled back: the table stays as a fresh database has it.
  await h.infra.sql
    .begin(async (tx) => {
      const sql = tx as unknown as typeof h.infra.sql;
      const now = new Date();
      for (let from = 0; from < 3000; from += 500) expect(await insertContacts(tx, id, contacts(from, from + 500), now)).toBe(0);
      const before = await rowsRead(sql);
      // 250 numbers the campaign has and 250 new ones, as a second upload's batch would bring.
      expect(await insertContacts(tx, id, contacts(2750, 3250), now)).toBe(250);
      const read = (await rowsRead(sql)) - before;
      expect(read).toBeLessThan(1000);
      throw new Error('rollback');
    })
    .catch((err: Error) => {
      if (err.message !== 'rollback') throw err;
    });
});
