/**
 * Billing SQL. Every balance change inserts its ledger row and moves the cached balance in one
 * transaction; duplicates (a re-relayed conversation, a retried top-up) are refused by the unique
 * indexes of migration 0012, so they change nothing.
 */
import type { Sql, SqlOrTx } from '../../shared/db/client.js';
import { newId } from '../../shared/ids.js';
import { invalid } from '../../shared/errors.js';
import { FREE, MAX_BALANCE_MICROS, MAX_MICROS, costOf, quantitiesOf, type Prices, type Quantities, type RecordedUsage, type Unit } from './units.js';

export type LedgerKind = 'top_up' | 'usage_debit' | 'adjustment';

export interface LedgerRow {
  id: string;
  workspace_id: string;
  kind: LedgerKind;
  amount_micros: number;
  conversation_id: string | null;
  reference: string | null;
  note: string | null;
  usage: { quantities: Quantities; prices_micros: Prices; status: string } | null;
  created_at: Date;
}

/** The ledger columns as read back (amounts as numbers: exact below 2^53, bounded by MAX_MICROS per entry). */
const ledgerColumns = (sql: SqlOrTx) => sql`id, workspace_id, kind, amount_micros::float8 as amount_micros, conversation_id, reference, note, usage, created_at`;

export async function prices(sql: SqlOrTx): Promise<Prices> {
  const rows = await sql<{ unit: Unit; price_micros: number }[]>`select unit, price_micros::float8 as price_micros from billing_prices`;
  const out: Prices = { ...FREE };
  for (const r of rows) out[r.unit] = r.price_micros;
  return out;
}

export async function setPrices(sql: Sql, list: Array<{ unit: Unit; priceMicros: number }>): Promise<void> {
  await sql.begin(async (tx) => {
    for (const p of list) {
      await tx`insert into billing_prices (unit, price_micros) values (${p.unit}, ${p.priceMicros})
        on conflict (unit) do update set price_micros = excluded.price_micros, updated_at = now()`;
    }
  });
}

export async function balance(sql: SqlOrTx, workspaceId: string): Promise<number> {
  const [row] = await sql<{ balance_micros: number }[]>`select balance_micros::float8 as balance_micros from billing_balances where workspace_id = ${workspaceId}`;
  return row?.balance_micros ?? 0;
}

/** Moves the cached balance by `delta`; the row lock orders concurrent entries of one workspace. */
async function addToBalance(tx: SqlOrTx, workspaceId: string, delta: number): Promise<number> {
  const [row] = await tx<{ balance_micros: number }[]>`
    insert into billing_balances (workspace_id, balance_micros) values (${workspaceId}, ${delta})
    on conflict (workspace_id) do update set balance_micros = billing_balances.balance_micros + excluded.balance_micros, updated_at = now()
    returning balance_micros::float8 as balance_micros`;
  return row.balance_micros;
}

/**
 * The usage an ended AI conversation recorded, for conversations our engine ran
 * (`engine_node_id` set by its record writer): a conversation a client recorded over REST ran on
 * its own systems and costs nothing, and human stints after a transfer are not ours to bill.
 * Messages count only when `billable`: not platform notices (credit ran out, shutdown), not
 * messages a client added over REST (our LLM and TTS never made them).
 */
async function recordedUsage(tx: SqlOrTx, conversationId: string): Promise<(RecordedUsage & { workspace_id: string; status: string }) | undefined> {
  const [row] = await tx<(RecordedUsage & { workspace_id: string; status: string })[]>`
    select c.workspace_id, c.status, c.total_duration_ms::float8 as total_duration_ms,
      coalesce(sum(m.tokens_input) filter (where m.billable), 0)::float8 as tokens_input,
      coalesce(sum(m.tokens_output) filter (where m.billable), 0)::float8 as tokens_output,
      coalesce(sum(char_length(m.content)) filter (where m.role = 'assistant' and m.billable), 0)::float8 as tts_characters,
      (select count(*) from tool_calls t where t.conversation_id = c.id and t.billable)::float8 as tool_calls
    from conversations c left join messages m on m.conversation_id = c.id
    where c.id = ${conversationId} and c.segment_kind = 'ai' and c.engine_node_id is not null
    group by c.id`;
  return row;
}

/**
 * Debits one ended conversation at the current prices, once: returns its workspace when this
 * call wrote the debit (the caller publishes the new state), undefined otherwise.
 */
export async function meterConversation(tx: SqlOrTx, conversationId: string): Promise<string | undefined> {
  const used = await recordedUsage(tx, conversationId);
  if (!used) return undefined;
  const p = await prices(tx);
  const quantities = quantitiesOf(used);
  const usage = { quantities, prices_micros: p, status: used.status };
  // One entry is at most MAX_MICROS, like an operator's (absurd recorded usage at absurd prices
  // overflowed bigint, and the failing event held back every workspace's metering behind it).
  const debit = Math.min(costOf(quantities, p), MAX_MICROS);
  const inserted = await tx`
    insert into billing_ledger (id, workspace_id, kind, amount_micros, conversation_id, usage)
    values (${newId()}, ${used.workspace_id}, 'usage_debit', ${-debit}, ${conversationId}, ${tx.json(usage as never)})
    on conflict (conversation_id) where conversation_id is not null do nothing
    returning id`;
  if (inserted.length === 0) return undefined;
  await addToBalance(tx, used.workspace_id, -debit);
  return used.workspace_id;
}

export interface CreditInput {
  workspaceId: string;
  kind: 'top_up' | 'adjustment';
  amountMicros: number;
  reference: string;
  note?: string;
}

/**
 * An operator entry, idempotent by (workspace, reference): a repeat returns the first entry
 * (`replayed`), whatever its amount; the service compares the amounts.
 */
export async function credit(tx: SqlOrTx, c: CreditInput): Promise<{ entry: LedgerRow; balanceMicros: number; replayed: boolean }> {
  const rows = await tx<LedgerRow[]>`
    insert into billing_ledger (id, workspace_id, kind, amount_micros, reference, note)
    values (${newId()}, ${c.workspaceId}, ${c.kind}, ${c.amountMicros}, ${c.reference}, ${c.note ?? null})
    on conflict (workspace_id, reference) where reference is not null do nothing
    returning ${ledgerColumns(tx)}`;
  if (rows.length === 0) {
    const [entry] = await tx<LedgerRow[]>`select ${ledgerColumns(tx)} from billing_ledger where workspace_id = ${c.workspaceId} and reference = ${c.reference}`;
    return { entry, balanceMicros: await balance(tx, c.workspaceId), replayed: true };
  }
  const balanceMicros = await addToBalance(tx, c.workspaceId, c.amountMicros);
  // Refused inside the transaction (nothing written): past this the balance is no longer exact as
  // a number, and a bigint overflow further on was a 500.
  if (Math.abs(balanceMicros) > MAX_BALANCE_MICROS) throw invalid('amount_micros', `would take the balance past ±${MAX_BALANCE_MICROS} micro-credits`);
  return { entry: rows[0], balanceMicros, replayed: false };
}

export async function ledgerPage(sql: Sql, workspaceId: string, limit: number, offset: number): Promise<{ rows: LedgerRow[]; total: number }> {
  const rows = await sql<LedgerRow[]>`
    select ${ledgerColumns(sql)} from billing_ledger where workspace_id = ${workspaceId}
    order by created_at desc, id desc limit ${limit} offset ${offset}`;
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from billing_ledger where workspace_id = ${workspaceId}`;
  return { rows, total: n };
}

/** Workspaces with a ledger, in pages (republishing every state). */
export async function balancesAfter(sql: Sql, afterWorkspaceId: string, limit: number): Promise<Array<{ workspace_id: string; balance_micros: number }>> {
  return sql<{ workspace_id: string; balance_micros: number }[]>`
    select workspace_id, balance_micros::float8 as balance_micros from billing_balances
    where workspace_id > ${afterWorkspaceId}::uuid order by workspace_id limit ${limit}`;
}

export async function workspaceExists(sql: Sql, workspaceId: string): Promise<boolean> {
  const rows = await sql`select 1 from workspaces where id = ${workspaceId}`;
  return rows.length > 0;
}

