/**
 * SQL of simulation tests (migration 0016). Times that decide liveness (heartbeats, staleness)
 * are the database's `now()`, so replicas with skewed clocks agree.
 */
import type { Sql } from '../../shared/db/client.js';
import type { AgentSnapshot } from '../agents/types.js';

export interface CaseRow {
  id: string;
  agent_id: string;
  workspace_id: string;
  name: string;
  persona: string;
  goal: string;
  assertions: string[];
  max_turns: number;
  tags: string[];
  mocks: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export type RunMode = 'text' | 'audio';
export const RUN_MODES: readonly RunMode[] = ['text', 'audio'];

export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
export const FINISHED_RUN: readonly RunStatus[] = ['completed', 'failed', 'cancelled'];

export interface RunRow {
  id: string;
  agent_id: string;
  workspace_id: string;
  agent_version: number;
  status: RunStatus;
  mode: RunMode;
  total: number;
  passed: number;
  failed: number;
  errored: number;
  triggered_by: string;
  error_message: string | null;
  started_at: Date | null;
  finished_at: Date | null;
  last_heartbeat: Date | null;
  created_at: Date;
}

/** The tested configuration, frozen at run creation (secrets still encrypted). */
export interface RunSnapshot {
  snapshot: AgentSnapshot;
}

export type ResultStatus = 'pending' | 'running' | 'passed' | 'failed' | 'errored' | 'cancelled';

export interface TranscriptEntryJson {
  role: 'caller' | 'agent' | 'tool';
  content: string;
  turn: number;
  /** Audio mode: what the other side's ASR recognised. */
  heard?: string;
}

export interface AssertionResultJson {
  assertion: string;
  passed: boolean;
  reason: string;
  quote: string;
}

export interface ResultRow {
  id: string;
  test_run_id: string;
  test_case_id: string | null;
  test_case_name: string;
  position: number;
  case_snapshot: CaseRow;
  status: ResultStatus;
  transcript: TranscriptEntryJson[];
  assertion_results: AssertionResultJson[];
  turns_taken: number;
  duration_ms: number;
  tokens_used: number;
  retry_count: number;
  error_message: string | null;
  created_at: Date;
}

const RUN_COLS = 'id, agent_id, workspace_id, agent_version, status, mode, total, passed, failed, errored, triggered_by, error_message, started_at, finished_at, last_heartbeat, created_at';

// ------------------------------------------------------------------ cases

export async function listCases(sql: Sql, agentId: string): Promise<CaseRow[]> {
  return sql<CaseRow[]>`select * from test_cases where agent_id = ${agentId} order by created_at, id`;
}

export async function getCase(sql: Sql, agentId: string, id: string): Promise<CaseRow | undefined> {
  const [row] = await sql<CaseRow[]>`select * from test_cases where agent_id = ${agentId} and id = ${id}`;
  return row;
}

export async function countCases(sql: Sql, agentId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from test_cases where agent_id = ${agentId}`;
  return row!.n;
}

export async function insertCase(sql: Sql, c: Omit<CaseRow, 'created_at' | 'updated_at'>): Promise<CaseRow> {
  const [row] = await sql<CaseRow[]>`
    insert into test_cases (id, agent_id, workspace_id, name, persona, goal, assertions, max_turns, tags, mocks)
    values (${c.id}, ${c.agent_id}, ${c.workspace_id}, ${c.name}, ${c.persona}, ${c.goal}, ${sql.json(c.assertions)}::jsonb,
      ${c.max_turns}, ${c.tags}::text[], ${sql.json(c.mocks as never)}::jsonb)
    returning *`;
  return row!;
}

export async function updateCase(sql: Sql, c: CaseRow): Promise<CaseRow | undefined> {
  const [row] = await sql<CaseRow[]>`
    update test_cases set name = ${c.name}, persona = ${c.persona}, goal = ${c.goal}, assertions = ${sql.json(c.assertions)}::jsonb,
      max_turns = ${c.max_turns}, tags = ${c.tags}::text[], mocks = ${sql.json(c.mocks as never)}::jsonb, updated_at = now()
    where agent_id = ${c.agent_id} and id = ${c.id}
    returning *`;
  return row;
}

export async function deleteCase(sql: Sql, agentId: string, id: string): Promise<boolean> {
  const rows = await sql`delete from test_cases where agent_id = ${agentId} and id = ${id} returning id`;
  return rows.length > 0;
}

// ------------------------------------------------------------------ runs

/** The run and one `pending` result per case, in one transaction (the job is enqueued in it too). */
export async function insertRun(
  tx: Sql,
  run: { id: string; agent_id: string; workspace_id: string; agent_version: number; mode: RunMode; triggered_by: string; snapshot: RunSnapshot },
  cases: CaseRow[],
  resultIds: string[],
): Promise<RunRow> {
  const [row] = await tx<RunRow[]>`
    insert into test_runs (id, agent_id, workspace_id, agent_version, mode, status, total, triggered_by, snapshot)
    values (${run.id}, ${run.agent_id}, ${run.workspace_id}, ${run.agent_version}, ${run.mode}, 'queued', ${cases.length}, ${run.triggered_by}, ${tx.json(run.snapshot as never)}::jsonb)
    returning ${tx.unsafe(RUN_COLS)}`;
  for (let i = 0; i < cases.length; i++) {
    const c = cases[i]!;
    await tx`insert into test_results (id, test_run_id, test_case_id, test_case_name, position, case_snapshot, status)
      values (${resultIds[i]!}, ${run.id}, ${c.id}, ${c.name}, ${i}, ${tx.json(c as never)}::jsonb, 'pending')`;
  }
  return row!;
}

export async function getRun(sql: Sql, id: string): Promise<RunRow | undefined> {
  const [row] = await sql<RunRow[]>`select ${sql.unsafe(RUN_COLS)} from test_runs where id = ${id}`;
  return row;
}

export async function getRunSnapshot(sql: Sql, id: string): Promise<RunSnapshot | undefined> {
  const [row] = await sql<{ snapshot: RunSnapshot }[]>`select snapshot from test_runs where id = ${id}`;
  return row?.snapshot;
}

export async function listRuns(sql: Sql, agentId: string, page: { limit: number; offset: number }): Promise<{ rows: RunRow[]; total: number }> {
  const [rows, [count]] = await Promise.all([
    sql<RunRow[]>`select ${sql.unsafe(RUN_COLS)} from test_runs where agent_id = ${agentId} order by created_at desc, id desc limit ${page.limit} offset ${page.offset}`,
    sql<{ total: number }[]>`select count(*)::int as total from test_runs where agent_id = ${agentId}`,
  ]);
  return { rows, total: count!.total };
}

export async function listResults(sql: Sql, runId: string): Promise<ResultRow[]> {
  return sql<ResultRow[]>`select * from test_results where test_run_id = ${runId} order by position`;
}

export type ClaimOutcome = 'claimed' | 'busy' | 'not_queued';

/**
 * queued -> running, unless the workspace already runs `maxRunning` runs (then `busy`: the caller
 * re-queues the job with a delay). The per-workspace advisory lock makes the count exact across
 * replicas. Runs whose heartbeat is stale do not count (the watchdog is failing them).
 */
export async function claimRun(sql: Sql, runId: string, workspaceId: string, maxRunning: number, staleSeconds: number): Promise<ClaimOutcome> {
  return (await sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtext('simtests:' || ${workspaceId}))`;
    const [{ n }] = await tx<{ n: number }[]>`select count(*)::int as n from test_runs where workspace_id = ${workspaceId}
      and status = 'running' and last_heartbeat > now() - make_interval(secs => ${staleSeconds})`;
    const [run] = await tx<{ status: RunStatus }[]>`select status from test_runs where id = ${runId} for update`;
    if (!run || run.status !== 'queued') return 'not_queued';
    if (n >= maxRunning) return 'busy';
    await tx`update test_runs set status = 'running', started_at = now(), last_heartbeat = now() where id = ${runId}`;
    return 'claimed';
  })) as ClaimOutcome;
}

/** Writes the heartbeat; answers the run's status (a `cancelled` run stops its worker). */
export async function heartbeat(sql: Sql, runId: string): Promise<RunStatus | undefined> {
  const [row] = await sql<{ status: RunStatus }[]>`
    update test_runs set last_heartbeat = case when status = 'running' then now() else last_heartbeat end
    where id = ${runId} returning status`;
  return row?.status;
}

export async function markResultRunning(sql: Sql, resultId: string): Promise<boolean> {
  const rows = await sql`update test_results set status = 'running' where id = ${resultId} and status in ('pending', 'running') returning id`;
  return rows.length > 0;
}

export interface ResultOutcome {
  status: 'passed' | 'failed' | 'errored';
  transcript: TranscriptEntryJson[];
  assertion_results: AssertionResultJson[];
  turns_taken: number;
  duration_ms: number;
  tokens_used: number;
  retry_count: number;
  error_message: string | null;
}

/** Stores one case's outcome (only while its run is running) and refreshes the run's counters. */
export async function finishResult(sql: Sql, runId: string, resultId: string, o: ResultOutcome): Promise<void> {
  await sql.begin(async (tx) => {
    // Serialises the counters: two cases finishing at once would each count without the other's
    // uncommitted outcome. With the run row locked first, each count (a new snapshot under READ
    // COMMITTED) sees every outcome committed before it.
    await tx`select id from test_runs where id = ${runId} for update`;
    const rows = await tx`
      update test_results r set status = ${o.status}, transcript = ${tx.json(o.transcript as never)}::jsonb,
        assertion_results = ${tx.json(o.assertion_results as never)}::jsonb, turns_taken = ${o.turns_taken},
        duration_ms = ${o.duration_ms}, tokens_used = ${o.tokens_used}, retry_count = ${o.retry_count}, error_message = ${o.error_message}
      from test_runs t
      where r.id = ${resultId} and t.id = r.test_run_id and t.status = 'running' and r.status in ('pending', 'running')
      returning r.id`;
    if (rows.length) await refreshCounters(tx as unknown as Sql, runId);
  });
}

async function refreshCounters(sql: Sql, runId: string): Promise<void> {
  await sql`update test_runs t set
      passed = c.passed, failed = c.failed, errored = c.errored
    from (select count(*) filter (where status = 'passed')::int as passed, count(*) filter (where status = 'failed')::int as failed,
      count(*) filter (where status = 'errored')::int as errored from test_results where test_run_id = ${runId}) c
    where t.id = ${runId}`;
}

/** running -> completed once every case has its outcome. */
export async function completeRun(sql: Sql, runId: string): Promise<RunRow | undefined> {
  const [row] = await sql<RunRow[]>`
    update test_runs set status = 'completed', finished_at = now(), last_heartbeat = now()
    where id = ${runId} and status = 'running'
      and not exists (select 1 from test_results where test_run_id = ${runId} and status in ('pending', 'running'))
    returning ${sql.unsafe(RUN_COLS)}`;
  return row;
}

/** Ends a run for good: its unfinished cases get `resultStatus` and the reason. Answers the row if it moved. */
async function endRun(sql: Sql, runId: string, to: 'failed' | 'cancelled', fromWhere: 'any_open' | 'stale_running', staleSeconds: number, reason: string): Promise<RunRow | undefined> {
  return (await sql.begin(async (tx) => {
    const [row] =
      fromWhere === 'any_open'
        ? await tx<RunRow[]>`update test_runs set status = ${to}, finished_at = now(), error_message = coalesce(error_message, ${reason})
            where id = ${runId} and status in ('queued', 'running') returning ${tx.unsafe(RUN_COLS)}`
        : await tx<RunRow[]>`update test_runs set status = ${to}, finished_at = now(), error_message = ${reason}
            where id = ${runId} and status = 'running' and last_heartbeat <= now() - make_interval(secs => ${staleSeconds})
            returning ${tx.unsafe(RUN_COLS)}`;
    if (!row) return undefined;
    await tx`update test_results set status = ${to === 'cancelled' ? 'cancelled' : 'errored'}, error_message = ${reason}
      where test_run_id = ${runId} and status in ('pending', 'running')`;
    await refreshCounters(tx as unknown as Sql, runId);
    return (await tx<RunRow[]>`select ${tx.unsafe(RUN_COLS)} from test_runs where id = ${runId}`)[0];
  })) as RunRow | undefined;
}

export function cancelRun(sql: Sql, runId: string): Promise<RunRow | undefined> {
  return endRun(sql, runId, 'cancelled', 'any_open', 0, 'cancelled');
}

/** A run that cannot go on (its configuration cannot run at all). */
export function failRun(sql: Sql, runId: string, reason: string): Promise<RunRow | undefined> {
  return endRun(sql, runId, 'failed', 'any_open', 0, reason);
}

/** The watchdog: a running run whose heartbeat is older than `staleSeconds` lost its worker. */
export function failIfStale(sql: Sql, runId: string, staleSeconds: number): Promise<RunRow | undefined> {
  return endRun(sql, runId, 'failed', 'stale_running', staleSeconds, `the worker stopped sending heartbeats for ${staleSeconds} s (process died?)`);
}

export async function publishGateOf(sql: Sql, agentId: string): Promise<string | undefined> {
  const [row] = await sql<{ publish_gate: string }[]>`select publish_gate from agents where id = ${agentId}`;
  return row?.publish_gate;
}

export async function setPublishGate(sql: Sql, agentId: string, gate: string): Promise<void> {
  await sql`update agents set publish_gate = ${gate} where id = ${agentId}`;
}
