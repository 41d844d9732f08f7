/**
 * SQL of the campaigns domain (tables: migration 0006; 0027 the number index, 0029 `agent_id` null
 * once the agent is deleted). Reads are fenced by the caller's workspace ids; the dialer's claims
 * live in `dial-store.ts`. Counters are counted from the contacts on every read (one grouped query
 * per page of campaigns), so they can never drift.
 */
import type postgres from 'postgres';
import type { Sql } from '../../shared/db/client.js';

type Tx = Sql | postgres.TransactionSql<Record<string, unknown>>;

export type CampaignStatus = 'draft' | 'scheduled' | 'running' | 'paused' | 'completed' | 'cancelled';
export type ContactStatus = 'queued' | 'dialing' | 'in_progress' | 'completed' | 'voicemail' | 'failed' | 'cancelled';

/** Stored in `campaigns.config` (spec: every create field except name and agent_id). */
export interface CampaignConfig {
  pacing_per_minute: number;
  max_concurrent_calls: number;
  max_retries: number;
  from_number: string;
  schedule_start: string | null;
  calling_hours_start: string | null;
  calling_hours_end: string | null;
  timezone: string | null;
}

export interface CampaignRow {
  id: string;
  user_id: string;
  workspace_id: string;
  /** Null once the agent was deleted: only a finished campaign outlives its agent (migration 0029). */
  agent_id: string | null;
  name: string;
  status: CampaignStatus;
  config: CampaignConfig;
  column_map: Record<string, string>;
  variable_names: string[];
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  updated_at: Date;
  /** Why the service (not the owner) moved the campaign last, e.g. the dialer's pause; null otherwise (migration 0030). */
  status_reason: string | null;
}

export interface Counters {
  total_calls: number;
  completed_calls: number;
  failed_calls: number;
  answered_calls: number;
}

export interface ContactRow {
  id: string;
  campaign_id: string;
  to_number: string;
  dynamic_variables: Record<string, string>;
  status: ContactStatus;
  call_id: string | null;
  session_id: string | null;
  conversation_id: string | null;
  attempts: number;
  scheduled_at: Date | null;
  dialed_at: Date | null;
  answered_at: Date | null;
  completed_at: Date | null;
  duration_seconds: number | null;
  error_message: string | null;
  amd_verdict: string | null;
}

export const TERMINAL: ReadonlySet<CampaignStatus> = new Set(['completed', 'cancelled']);

export const CAMPAIGN_COLS = 'id, user_id, workspace_id, agent_id, name, status, config, column_map, variable_names, created_at, started_at, completed_at, updated_at, status_reason';

export async function insertCampaign(sql: Sql, c: Omit<CampaignRow, 'variable_names' | 'started_at' | 'completed_at' | 'status_reason'>): Promise<CampaignRow> {
  const [row] = await sql<CampaignRow[]>`
    insert into campaigns (id, user_id, workspace_id, agent_id, name, status, config, column_map, created_at, updated_at)
    values (${c.id}, ${c.user_id}, ${c.workspace_id}, ${c.agent_id}, ${c.name}, ${c.status}, ${sql.json(c.config as never)},
            ${sql.json(c.column_map)}, ${c.created_at}, ${c.updated_at})
    returning ${sql.unsafe(CAMPAIGN_COLS)}`;
  return row;
}

/** The campaign when it lives in one of `workspaceIds` (else undefined: the caller gets 404). */
export async function getCampaign(sql: Tx, id: string, workspaceIds: readonly string[] | 'any'): Promise<CampaignRow | undefined> {
  const fence = workspaceIds === 'any' ? sql`` : sql`and workspace_id = any(${workspaceIds as string[]}::uuid[])`;
  const [row] = await sql<CampaignRow[]>`select ${sql.unsafe(CAMPAIGN_COLS)} from campaigns where id = ${id} ${fence}`;
  return row;
}

/** One page of the campaigns in `workspaceIds`, newest first (ids break ties: a stable order across pages). */
export async function listCampaigns(sql: Sql, workspaceIds: readonly string[], page: { limit: number; offset: number }): Promise<CampaignRow[]> {
  return sql<CampaignRow[]>`
    select ${sql.unsafe(CAMPAIGN_COLS)} from campaigns
    where workspace_id = any(${workspaceIds as string[]}::uuid[])
    order by created_at desc, id desc
    limit ${page.limit} offset ${page.offset}`;
}

export async function countCampaigns(sql: Sql, workspaceIds: readonly string[]): Promise<number> {
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from campaigns where workspace_id = any(${workspaceIds as string[]}::uuid[])`;
  return n;
}

/**
 * Counters per campaign: `completed_calls` = contacts that reached an end state (completed,
 * voicemail, failed), `failed_calls` = failed ones, `answered_calls` = contacts whose call was
 * answered at least once (human or machine). Documented in docs/campaigns.md.
 */
export async function counters(sql: Tx, ids: readonly string[]): Promise<Map<string, Counters>> {
  const out = new Map<string, Counters>(ids.map((id) => [id, { total_calls: 0, completed_calls: 0, failed_calls: 0, answered_calls: 0 }]));
  if (ids.length === 0) return out;
  const rows = await sql<Array<Counters & { campaign_id: string }>>`
    select campaign_id,
           count(*)::int as total_calls,
           count(*) filter (where status in ('completed', 'voicemail', 'failed'))::int as completed_calls,
           count(*) filter (where status = 'failed')::int as failed_calls,
           count(*) filter (where answered_at is not null)::int as answered_calls
    from campaign_contacts where campaign_id = any(${ids as string[]}::uuid[])
    group by campaign_id`;
  for (const r of rows) out.set(r.campaign_id, { total_calls: r.total_calls, completed_calls: r.completed_calls, failed_calls: r.failed_calls, answered_calls: r.answered_calls });
  return out;
}

export async function updateConfig(sql: Sql, id: string, config: CampaignConfig, now: Date): Promise<CampaignRow> {
  const [row] = await sql<CampaignRow[]>`
    update campaigns set config = ${sql.json(config as never)}, updated_at = ${now}
    where id = ${id} returning ${sql.unsafe(CAMPAIGN_COLS)}`;
  return row;
}

/**
 * Moves the campaign to `to` only from one of `from` (a compare-and-set: two replicas handling
 * start and cancel at once cannot both win). Undefined when the status was not in `from`.
 */
export async function transition(
  sql: Tx,
  id: string,
  from: readonly CampaignStatus[],
  to: CampaignStatus,
  now: Date,
  extra: { started?: boolean; completed?: boolean } = {},
): Promise<CampaignRow | undefined> {
  const [row] = await sql<CampaignRow[]>`
    update campaigns set status = ${to}, updated_at = ${now}, status_reason = null,
      started_at = ${extra.started ? sql`coalesce(started_at, ${now})` : sql`started_at`},
      completed_at = ${extra.completed ? now : null}
    where id = ${id} and status = any(${from as string[]}::text[])
    returning ${sql.unsafe(CAMPAIGN_COLS)}`;
  return row;
}

/** Queued contacts of a cancelled campaign will never be dialed: say so on each. */
export async function cancelQueued(sql: Tx, campaignId: string, now: Date): Promise<void> {
  await sql`update campaign_contacts set status = 'cancelled', completed_at = ${now}, error_message = 'campaign cancelled'
            where campaign_id = ${campaignId} and status = 'queued'`;
}

/**
 * Uploads to one campaign take turns (a transaction-scoped advisory lock), without locking the
 * campaign row: an import of a large file takes seconds (20 s for 560,000 rows here), and a
 * row lock held that long made every claim, PATCH, start or pause of the campaign wait and answer
 * 503 at the statement timeout. The contact inserts take only the foreign key's KEY SHARE lock on
 * the row, which none of those conflict with (they take FOR NO KEY UPDATE).
 */
export async function lockCampaignUploads(sql: Tx, id: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${'campaign-upload:' + id}, 0))`;
}

/**
 * Adds variable names not seen before, keeping first-seen order (the export's columns). False,
 * nothing written, when the campaign would hold more than `max` names. Also the end of an
 * upload's check of the campaign's status: the status under the row lock (a cancel committed
 * during the import is seen here), undefined for a deleted campaign.
 */
export async function addVariableNames(sql: Tx, id: string, names: readonly string[], max: number): Promise<{ added: boolean; status: CampaignStatus | undefined }> {
  const [row] = await sql<{ variable_names: string[]; status: CampaignStatus }[]>`select variable_names, status from campaigns where id = ${id} for no key update`;
  if (!row || TERMINAL.has(row.status)) return { added: false, status: row?.status };
  const merged = [...(row?.variable_names ?? [])];
  const seen = new Set(merged);
  for (const n of names) if (!seen.has(n)) seen.add(n), merged.push(n);
  if (merged.length > max) return { added: false, status: row.status };
  await sql`update campaigns set variable_names = ${sql.json(merged)} where id = ${id}`;
  return { added: true, status: row.status };
}

export interface NewContact {
  id: string;
  to_number: string;
  dynamic_variables: Record<string, string>;
}

/**
 * Which of `$2` (numbers) campaign `$1` already has. One index probe per number on
 * campaign_contacts_number_idx (campaign_id, to_number), whatever the table's statistics: the
 * LIMIT inside the LATERAL keeps the planner from turning it into a join. The plain
 * `to_number = any($2)` was planned from the campaign_id condition alone on a table never
 * analyzed (a fresh database, reltuples -1: ~15 rows guessed per campaign), so every 500-row batch
 * of an upload read every row the upload had inserted so far: 245 s for 177,831 rows (quadratic).
 */
export const EXISTING_NUMBERS_SQL = `
  select n.to_number from unnest($2::text[]) as n(to_number)
  cross join lateral (select 1 from campaign_contacts c where c.campaign_id = $1 and c.to_number = n.to_number limit 1) as hit`;

/**
 * Inserts the contacts whose number the campaign does not have yet (nor an earlier row of `rows`):
 * one campaign calls a number once. Returns how many were skipped as duplicates.
 */
export async function insertContacts(sql: Tx, campaignId: string, rows: readonly NewContact[], now: Date): Promise<number> {
  if (rows.length === 0) return 0;
  const numbers = [...new Set(rows.map((r) => r.to_number))];
  const had = new Set((await sql.unsafe<{ to_number: string }[]>(EXISTING_NUMBERS_SQL, [campaignId, numbers])).map((r) => r.to_number));
  const fresh: NewContact[] = [];
  for (const r of rows) {
    if (had.has(r.to_number)) continue;
    had.add(r.to_number);
    fresh.push(r);
  }
  if (fresh.length > 0) {
    const values = fresh.map((r) => ({ id: r.id, campaign_id: campaignId, to_number: r.to_number, dynamic_variables: sql.json(r.dynamic_variables), status: 'queued', scheduled_at: now }));
    await sql`insert into campaign_contacts ${sql(values as never)}`;
  }
  return rows.length - fresh.length;
}

const CONTACT_COLS = sqlCols();
function sqlCols(): string {
  // conversation_id: stored once known; until then found through the call's voice session, in the
  // campaign's workspace (session ids are unique per workspace, migration 0024).
  return `c.id, c.campaign_id, c.to_number, c.dynamic_variables, c.status, c.call_id, c.session_id,
    coalesce(c.conversation_id, (select v.id from conversations v where v.session_id = c.session_id
      and v.workspace_id = (select p.workspace_id from campaigns p where p.id = c.campaign_id))) as conversation_id,
    c.attempts, c.scheduled_at, c.dialed_at, c.answered_at, c.completed_at, c.duration_seconds, c.error_message, c.amd_verdict`;
}

export async function listContacts(sql: Sql, campaignId: string, status: string, limit: number, offset: number): Promise<{ rows: ContactRow[]; total: number }> {
  const filter = status ? sql`and c.status = ${status}` : sql``;
  const rows = await sql<ContactRow[]>`
    select ${sql.unsafe(CONTACT_COLS)} from campaign_contacts c
    where c.campaign_id = ${campaignId} ${filter}
    order by c.seq limit ${limit} offset ${offset}`;
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from campaign_contacts c where c.campaign_id = ${campaignId} ${filter}`;
  return { rows, total: n };
}

/**
 * Every contact in CSV order, `batch` rows at a time, each batch its own short query (keyset on
 * `seq`): nothing whole in memory, and no connection held while a slow client reads the export
 * (a server-side cursor would hold one, and postgres.js cursors bypass the pool gate's accounting).
 */
export async function* contactBatches(sql: Sql, campaignId: string, batch: number): AsyncGenerator<ContactRow[]> {
  let after = -1;
  for (;;) {
    const rows = await sql<(ContactRow & { seq: number })[]>`
      select ${sql.unsafe(CONTACT_COLS)}, c.seq from campaign_contacts c
      where c.campaign_id = ${campaignId} and c.seq > ${after}
      order by c.seq limit ${batch}`;
    if (rows.length === 0) return;
    after = Number(rows[rows.length - 1].seq);
    yield rows;
    if (rows.length < batch) return;
  }
}

/** The agent's workspace (the caller must be a member to use it). */
export async function agentFacts(sql: Sql, agentId: string): Promise<{ workspace_id: string } | undefined> {
  const [row] = await sql<{ workspace_id: string }[]>`select workspace_id from agents where id = ${agentId}`;
  return row;
}
