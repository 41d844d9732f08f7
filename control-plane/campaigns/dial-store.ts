/**
 * The dialer's SQL: the per-campaign lease, the paced claim of one contact, and the moves of a
 * contact after a dial or a call end. Every move is a compare-and-set on the contact's status,
 * so a late or repeated event (a callback retried by the carrier, a recovery racing the hook)
 * changes nothing twice.
 */
import type { Sql } from '../../shared/db/client.js';
import { CAMPAIGN_COLS, type CampaignRow, type ContactRow } from './store.js';

/** Longest `status_reason` kept (an error message of ours; bounded whatever it says). */
const STATUS_REASON_MAX_CHARS = 500;

/** Takes (or renews) the campaign's dial lease for `owner`; undefined when another owner holds it. */
export async function takeLease(sql: Sql, id: string, owner: string, now: Date, untilMs: number): Promise<CampaignRow | undefined> {
  const [row] = await sql<CampaignRow[]>`
    update campaigns set dialer_owner = ${owner}, dialer_lease_until = ${new Date(untilMs)}
    where id = ${id} and (dialer_owner is null or dialer_owner = ${owner} or dialer_lease_until < ${now})
    returning ${sql.unsafe(CAMPAIGN_COLS)}`;
  return row;
}

/** Gives the lease up and answers the status it saw in the same statement (see dialer.ts, "kick"). */
export async function releaseLease(sql: Sql, id: string, owner: string): Promise<string | undefined> {
  const [row] = await sql<{ status: string }[]>`
    update campaigns set dialer_owner = null, dialer_lease_until = null
    where id = ${id} and dialer_owner = ${owner} returning status`;
  return row?.status;
}

/** Whether some replica holds a live dial lease (then it queues its own successor). */
export async function leaseHeld(sql: Sql, id: string, now: Date): Promise<boolean> {
  const [row] = await sql<{ held: boolean }[]>`
    select (dialer_owner is not null and dialer_lease_until >= ${now}) as held from campaigns where id = ${id}`;
  return row?.held ?? false;
}

/**
 * Moves the campaign's queued dial slice, if it waits for a later time, to now (`wake` in
 * dialer.ts). The job queue (pg-boss, policy `stately`) keeps at most one queued job per
 * singleton key, so while a delayed successor waits (a slice that found nothing due queues the
 * next one up to maxHoldMs ahead) a new job for the campaign is refused: an upload's contacts
 * waited out that delay. The queue's API has no way to move a job, hence this update of its table
 * (`jobsSchema`: the queue's schema, `Jobs.schema`); workers pick the job up at their next poll.
 */
export async function advanceQueuedSlice(sql: Sql, jobsSchema: string, campaignId: string): Promise<void> {
  await sql`update ${sql(jobsSchema)}.job set start_after = now()
            where name = 'campaign.dial' and singleton_key = ${campaignId} and state = 'created' and start_after > now()`;
}

/** When the campaign's earliest queued contact is due (undefined: none queued). */
export async function nextQueuedMs(sql: Sql, campaignId: string): Promise<number | undefined> {
  const [next] = await sql<{ at: Date | null }[]>`
    select min(scheduled_at) as at from campaign_contacts where campaign_id = ${campaignId} and status = 'queued'`;
  return next?.at ? next.at.getTime() : undefined;
}

export type Claim =
  /** `previousDialedAt`: the contact's `dialed_at` before this claim (null: never dialed), for `unclaim`. */
  | { kind: 'claimed'; contact: ContactRow; previousDialedAt: Date | null }
  /** The pacing bucket is empty until `atMs`. */
  | { kind: 'paced'; atMs: number }
  /** Nothing due; `nextDueMs` is the earliest retry waiting (undefined: none queued). */
  | { kind: 'none'; nextDueMs?: number }
  /** The campaign is no longer running (paused, cancelled): stop at once. */
  | { kind: 'stopped' };

/**
 * One paced claim, in one transaction: lock the campaign row (only while `running`), check the
 * pacing state `next_dial_at`, take the next due queued contact with SKIP LOCKED, mark it
 * `dialing` with its new call id and attempt number, and advance `next_dial_at` by one interval
 * (60 s / pacing_per_minute): a token bucket of depth one, so starts are evenly spaced and an idle
 * period never saves up a burst. A claim that comes a little late (at most `CATCH_UP` of an
 * interval: timer and query latency) keeps the schedule instead of shifting it, otherwise every
 * start would inherit the loop's few milliseconds and 600/min would come out near 585/min; the
 * next gap is then at most that much shorter. Later than that, the schedule restarts from now.
 */
const CATCH_UP = 0.1;

export async function claimNext(sql: Sql, campaignId: string, now: Date, callId: string): Promise<Claim> {
  return sql.begin(async (tx) => {
    const [c] = await tx<{ next_dial_at: Date; pacing: number }[]>`
      select next_dial_at, (config->>'pacing_per_minute')::int as pacing from campaigns
      where id = ${campaignId} and status = 'running' for no key update`;
    if (!c) return { kind: 'stopped' } as const;
    if (c.next_dial_at.getTime() > now.getTime()) return { kind: 'paced', atMs: c.next_dial_at.getTime() } as const;
    const [claimed] = await tx<Array<ContactRow & { previous_dialed_at: Date | null }>>`
      with pick as (
        select id, dialed_at from campaign_contacts
        where campaign_id = ${campaignId} and status = 'queued' and scheduled_at <= ${now}
        order by scheduled_at, seq limit 1 for update skip locked)
      update campaign_contacts c set status = 'dialing', attempts = c.attempts + 1, call_id = ${callId},
        session_id = null, claimed_at = ${now}, dialed_at = ${now}, answered_at = null
      from pick where c.id = pick.id
      returning c.*, pick.dialed_at as previous_dialed_at`;
    if (!claimed) {
      const [next] = await tx<{ at: Date | null }[]>`
        select min(scheduled_at) as at from campaign_contacts where campaign_id = ${campaignId} and status = 'queued'`;
      return { kind: 'none', nextDueMs: next?.at ? next.at.getTime() : undefined } as const;
    }
    const intervalMs = 60_000 / Math.max(1, c.pacing);
    const lateMs = now.getTime() - c.next_dial_at.getTime();
    const from = lateMs <= intervalMs * CATCH_UP ? c.next_dial_at.getTime() : now.getTime();
    await tx`update campaigns set next_dial_at = ${new Date(from + intervalMs)} where id = ${campaignId}`;
    const { previous_dialed_at: previousDialedAt, ...contact } = claimed;
    return { kind: 'claimed', contact, previousDialedAt } as const;
  });
}

/** The carrier accepted the call: `dialing` -> `in_progress` (unless its end already arrived). */
export async function markPlaced(sql: Sql, contactId: string, callId: string, sessionId: string): Promise<void> {
  await sql`update campaign_contacts set status = 'in_progress', session_id = ${sessionId}
            where id = ${contactId} and call_id = ${callId} and status = 'dialing'`;
}

/**
 * A 503 from the dial path: not an attempt, and no dial. Back to the queue at `atMs` with the
 * attempt count and `dialed_at` as they were before the claim (`previousDialedAt`, null for a
 * contact never dialed), so neither the calls list nor the export shows a dial that never happened.
 */
export async function unclaim(sql: Sql, contactId: string, callId: string, atMs: number, why: string, previousDialedAt: Date | null): Promise<void> {
  await sql`update campaign_contacts set status = 'queued', attempts = greatest(attempts - 1, 0), call_id = null,
              dialed_at = ${previousDialedAt}, scheduled_at = ${new Date(atMs)}, error_message = ${why}
            where id = ${contactId} and call_id = ${callId} and status = 'dialing'`;
}

/**
 * A dial refused by our own checks for this contact's data, before any carrier request: the
 * contact ends `failed` with the reason, its attempt count and `dialed_at` as before the claim
 * (nothing was placed).
 */
export async function refuseUnplaced(sql: Sql, contactId: string, callId: string, why: string, previousDialedAt: Date | null, now: Date): Promise<void> {
  await sql`update campaign_contacts set status = 'failed', attempts = greatest(attempts - 1, 0), call_id = null,
              dialed_at = ${previousDialedAt}, completed_at = ${now}, error_message = ${why}
            where id = ${contactId} and call_id = ${callId} and status = 'dialing'`;
}

/**
 * A dial refused before any carrier request because of the agent or the campaign (the same for
 * every contact): `running` -> `paused`, and the contact back in the queue, due at once, with
 * its attempt count and `dialed_at` restored and `why` as the campaign's `status_reason` (and, with
 * "requeued: campaign paused: " before it, the contact's error_message). One transaction, the
 * pause first: a resume finds the contact queued. A campaign cancelled meanwhile gets the contact
 * `cancelled` instead (as `settleRetry`: never a queued contact in a final campaign). True when
 * this call paused the campaign (concurrent dials refused alike put their contacts back too).
 */
export async function pauseUnplaced(sql: Sql, campaignId: string, contactId: string, callId: string, why: string, previousDialedAt: Date | null, now: Date): Promise<boolean> {
  return sql.begin(async (tx) => {
    const paused = await tx`update campaigns set status = 'paused', updated_at = ${now}, status_reason = ${`paused: ${why}`.slice(0, STATUS_REASON_MAX_CHARS)}
                            where id = ${campaignId} and status = 'running' returning id`;
    const [{ status }] = await tx<{ status: string }[]>`select status from campaigns where id = ${campaignId} for share`;
    const cancelled = status === 'cancelled';
    await tx`update campaign_contacts set status = ${cancelled ? 'cancelled' : 'queued'}, attempts = greatest(attempts - 1, 0),
               call_id = null, dialed_at = ${previousDialedAt}, scheduled_at = ${now},
               completed_at = ${cancelled ? now : null}, error_message = ${cancelled ? 'campaign cancelled' : `requeued: campaign paused: ${why}`}
             where id = ${contactId} and call_id = ${callId} and status = 'dialing'`;
    return paused.length > 0;
  });
}

export interface Outcome {
  status: 'completed' | 'voicemail' | 'failed' | 'queued';
  /** For `queued`: when the retry is due. */
  retryAtMs?: number;
  durationS?: number;
  error?: string;
}

/** Applies an outcome to the contact of `callId` if its attempt is still open; the row, or undefined. */
export async function settle(sql: Sql, callId: string, o: Outcome, now: Date): Promise<ContactRow | undefined> {
  if (o.status === 'queued') return settleRetry(sql, callId, o, now);
  const [row] = await sql<ContactRow[]>`
    update campaign_contacts set status = ${o.status}, completed_at = ${now},
      duration_seconds = ${o.durationS ?? sql`duration_seconds`},
      error_message = ${o.error ?? null}
    where call_id = ${callId} and status in ('dialing', 'in_progress')
    returning *`;
  return row;
}

/**
 * A retry goes back to the queue, unless its campaign was cancelled meanwhile: then it is
 * `cancelled` like the contacts that were queued at the cancel (never a queued contact in a final
 * campaign). The campaign row is read FOR SHARE, so a cancel in flight is waited for and seen.
 */
async function settleRetry(sql: Sql, callId: string, o: Outcome, now: Date): Promise<ContactRow | undefined> {
  const [row] = await sql<ContactRow[]>`
    with campaign as (
      select p.status from campaigns p join campaign_contacts c on c.campaign_id = p.id
      where c.call_id = ${callId} for share of p)
    update campaign_contacts set
      status = case when (select status from campaign) = 'cancelled' then 'cancelled' else 'queued' end,
      scheduled_at = ${new Date(o.retryAtMs!)},
      completed_at = case when (select status from campaign) = 'cancelled' then ${now}::timestamptz else null end,
      error_message = case when (select status from campaign) = 'cancelled' then 'campaign cancelled' else ${o.error ?? null} end
    where call_id = ${callId} and status in ('dialing', 'in_progress')
    returning *`;
  return row;
}

export async function markAnswered(sql: Sql, callId: string, now: Date): Promise<void> {
  await sql`update campaign_contacts set answered_at = coalesce(answered_at, ${now}) where call_id = ${callId}`;
}

export async function markAmd(sql: Sql, callId: string, verdict: string): Promise<void> {
  await sql`update campaign_contacts set amd_verdict = ${verdict} where call_id = ${callId}`;
}

/** Open attempts older than `beforeMs` (their call may have ended without us hearing of it). */
export async function staleAttempts(sql: Sql, campaignId: string, beforeMs: number, limit = 100): Promise<ContactRow[]> {
  return sql<ContactRow[]>`
    select * from campaign_contacts
    where campaign_id = ${campaignId} and status in ('dialing', 'in_progress') and claimed_at < ${new Date(beforeMs)}
    order by claimed_at limit ${limit}`;
}

/**
 * `running` -> `completed` when no contact can be dialed any more: none queued, none with an
 * open attempt, and no upload in progress (its contacts are not visible until it commits; the
 * upload holds the campaign's upload lock, store.lockCampaignUploads, and would be refused by a
 * campaign completed under it). Returns true when this call moved it.
 */
export async function completeIfDone(sql: Sql, campaignId: string, now: Date): Promise<boolean> {
  return sql.begin(async (tx) => {
    // The upload lock first, in its own statement: the update's snapshot is then taken after any
    // upload that held it committed (in one statement, an upload committing between the snapshot
    // and the lock attempt left its contacts queued in a completed campaign).
    const [{ free }] = await tx<{ free: boolean }[]>`select pg_try_advisory_xact_lock(hashtextextended(${'campaign-upload:' + campaignId}, 0)) as free`;
    if (!free) return false;
    const rows = await tx`
      update campaigns set status = 'completed', completed_at = ${now}, updated_at = ${now}, status_reason = null
      where id = ${campaignId} and status = 'running'
        and not exists (select 1 from campaign_contacts where campaign_id = ${campaignId} and status in ('queued', 'dialing', 'in_progress'))
      returning id`;
    return rows.length > 0;
  }) as Promise<boolean>;
}

export async function startScheduled(sql: Sql, campaignId: string, now: Date): Promise<void> {
  await sql`update campaigns set status = 'running', started_at = coalesce(started_at, ${now}), updated_at = ${now}
            where id = ${campaignId} and status = 'scheduled'`;
}
