/**
 * The campaign dialer (issue 15) on the control plane's job queue (docs/adr/0003-job-queue.md).
 *
 * One `campaign.dial` job (singleton key = campaign id) runs the campaign's dial loop for a slice
 * (`sliceMs`), then queues its successor while the campaign can still dial. Correct with several
 * replicas: pg-boss runs at most one active job per key, and the loop additionally holds a lease
 * on the campaign row (`dialer_owner`, renewed while it runs), so even a job that pg-boss expired
 * while its replica was only slow cannot dial beside its retry. Contacts are claimed with
 * `FOR UPDATE SKIP LOCKED` and marked `dialing` (attempt counted, call id chosen) before the
 * carrier is asked: a crash after the claim never dials the same attempt twice, and the
 * recovery below settles the attempt and requeues the contact, so none is lost.
 *
 * Per iteration: status (scheduled / running), calling window (luxon, in the campaign's zone),
 * a 503 hold, live calls (the telephony domain's live-call store) + dials in flight against
 * `max_concurrent_calls`, then one paced claim (dial-store.ts `claimNext`).
 * Outcomes arrive through the telephony call-event hook (`outcomes.ts`).
 */
import type { Clock } from '../../shared/clock.js';
import { sleepOn } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { toAppError, type AppError } from '../../shared/errors.js';
import { CarrierError } from '../telephony/carriers/index.js';
import { newId } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/client.js';
import type { JobContext, Jobs } from '../jobs/index.js';
import type { TelephonyDomain } from '../telephony/index.js';
import * as ds from './dial-store.js';
import { CARRIER_ERROR, outcomeOf } from './policy.js';
import { failIfMediaNeverConnected } from './media-check.js';
import type { CampaignRow, ContactRow } from './store.js';
import { nextOpenMs, windowOf } from './window.js';


/**
 * Longest a loop sleeps waiting for a queued contact to come due before it claims again: contacts
 * uploaded meanwhile (whose wake saw this loop's lease) are dialed within this, not at the retry's time.
 */
const IDLE_POLL_MS = 1000;

/** Carrier failures in a row carried to the next slice at most: the hold is capped at maxHoldMs long before. */
const MAX_CARRIED_FAILURES = 16;
/** Carrier status reads at once, and the time a recovery pass spends on them (askCarriers). */
const CARRIER_CHECKS_AT_ONCE = 5;
const CARRIER_CHECK_BUDGET_MS = 5000;

export interface DialerOptions {
  /** Length of one dial job's loop. Default 20 000 ms (the queue expires a job after 60 s). */
  sliceMs?: number;
  /** Dial lease on the campaign row; a dead owner's lease runs out after this. Default 30 000 ms. */
  leaseMs?: number;
  /** Longest a held campaign (window closed, invalid window, schedule, retries not due) waits before re-checking. Default 60 000 ms. */
  maxHoldMs?: number;
  /** Delay before the first retry of an unanswered or busy number; doubles per attempt. Default 300 000 ms. */
  retryBaseMs?: number;
  /** An open attempt older than this whose call is not live any more is settled by recovery. Default 120 000 ms. */
  staleAttemptMs?: number;
  /** Re-check period while at `max_concurrent_calls`. Default 200 ms. */
  busyPollMs?: number;
  /** Campaigns dialed at once by this replica (0: none). Default 4. */
  concurrency?: number;
  /** How long after an answered attempt settles its conversation is looked for (media-check.ts). Default 60 000 ms. */
  mediaCheckDelayMs?: number;
  /**
   * An open attempt this old whose call is placed but not connected is asked of its carrier (a
   * final status callback may have been lost; telephony `reconcileWithCarrier`, which also keeps
   * its own pace per call). Default 15 000 ms.
   */
  carrierCheckAfterMs?: number;
}

export interface DialerDeps {
  sql: Sql;
  jobs: Jobs;
  clock: Clock;
  logger: Logger;
  telephony: Pick<TelephonyDomain, 'dial' | 'calls' | 'endIfStale' | 'reconcileWithCarrier'>;
  /** Base URL the carrier's callbacks reach (known once the server listens). */
  publicBase: () => string;
  options?: DialerOptions;
}

export interface Dialer {
  /** Queues the campaign's dial job unless a live loop holds it (that loop queues its own successor). */
  kick(campaignId: string): Promise<void>;
  /**
   * A kick that also brings a delayed successor forward: the campaign's next slice runs now (start,
   * resume, PATCH, an upload to a running campaign), not when a slice that found nothing due planned it.
   */
  wake(campaignId: string): Promise<void>;
  /** Settles an attempt whose call ended (called by the call-event hook). */
  settleEnded(callId: string, end: { carrierStatus: string; answered: boolean; amdVerdict: string; durationS?: number }): Promise<void>;
  readonly retryBaseMs: number;
  /** This replica's lease identity (`campaigns.dialer_owner` while it dials a campaign). */
  readonly owner: string;
  /** Starts working the queue and the periodic sweep. */
  start(): Promise<void>;
  /** Stops new slices and waits for the running ones to end theirs. */
  close(): Promise<void>;
}

/**
 * A pre-carrier refusal naming the contact's own data (its number, its variables): only that
 * contact fails. Anything else is the agent's or the campaign's configuration.
 */
const CONTACT_FIELDS = new Set(['to_number', 'dynamic_variables', 'session_metadata']);
function isContactProblem(e: AppError): boolean {
  return (e.details ?? []).some((d) => CONTACT_FIELDS.has(d.field));
}

export function createDialer(deps: DialerDeps): Dialer {
  const { sql, jobs, clock, logger, telephony } = deps;
  const o = deps.options ?? {};
  const sliceMs = o.sliceMs ?? 20_000;
  const leaseMs = o.leaseMs ?? 30_000;
  const maxHoldMs = o.maxHoldMs ?? 60_000;
  const retryBaseMs = o.retryBaseMs ?? 300_000;
  const staleAttemptMs = o.staleAttemptMs ?? 120_000;
  const busyPollMs = o.busyPollMs ?? 200;
  const mediaCheckDelayMs = o.mediaCheckDelayMs ?? 60_000;
  const carrierCheckAfterMs = o.carrierCheckAfterMs ?? 15_000;
  /** This process's lease identity. */
  const owner = newId();
  const log = logger.child({ domain: 'campaigns' });
  const now = () => new Date(clock.now());
  /** Aborted at close: loops end their slice at once (releasing the lease and queuing their successor). */
  const closing = new AbortController();

  /** Relative delays (never absolute times): the queue compares with the database's clock, ours is injected. */
  async function enqueue(campaignId: string, delayMs: number, carrierFailures = 0): Promise<void> {
    const delaySeconds = Math.min(maxHoldMs, Math.max(0, delayMs)) / 1000;
    const data = carrierFailures > 0 ? { campaign_id: campaignId, carrier_failures: carrierFailures } : { campaign_id: campaignId };
    await jobs.enqueue('campaign.dial', data, { singletonKey: campaignId, ...(delaySeconds >= 0.5 ? { delaySeconds } : {}) });
  }

  async function settleEnded(callId: string, end: Parameters<Dialer['settleEnded']>[1]): Promise<void> {
    const [row] = await sql<Array<ContactRow & { max_retries: number }>>`
      select c.*, (p.config->>'max_retries')::int as max_retries from campaign_contacts c join campaigns p on p.id = c.campaign_id
      where c.call_id = ${callId}`;
    if (!row || (row.status !== 'dialing' && row.status !== 'in_progress')) return;
    const outcome = outcomeOf({ ...end, answered: end.answered || row.answered_at !== null }, row.attempts, row.max_retries, clock.now(), retryBaseMs);
    // The media check is queued in the settle's transaction: a settled answered attempt always gets it.
    const settled = await sql.begin(async (tx) => {
      const row = await ds.settle(tx as unknown as Sql, callId, outcome, now());
      if (row && outcome.status === 'completed') {
        await jobs.enqueue('campaign.media-check', { call_id: callId }, { singletonKey: callId, delaySeconds: mediaCheckDelayMs / 1000, tx });
      }
      return row;
    });
    if (!settled) return;
    // A retry needs a dial loop (the last one may have ended); otherwise the campaign may be done.
    if (outcome.status === 'queued') await kick(row.campaign_id);
    else await ds.completeIfDone(sql, row.campaign_id, now());
  }

  /** Every conversation of the call ended before `beforeMs`: the last one's end reason; else undefined (none, or one still active). */
  async function conversationEndedBefore(callId: string, beforeMs: number): Promise<{ endReason: string; durationS: number } | undefined> {
    const rows = await sql<{ status: string; started_at: Date; ended_at: Date | null; end_reason: string | null }[]>`
      select status, started_at, ended_at, metadata->>'end_reason' as end_reason from conversations where call_id = ${callId} order by started_at, id`;
    if (!rows.length || rows.some((r) => r.status === 'active' || !r.ended_at || r.ended_at.getTime() > beforeMs)) return undefined;
    const last = rows[rows.length - 1]!;
    return { endReason: last.end_reason ?? '', durationS: Math.max(0, Math.round((last.ended_at!.getTime() - rows[0]!.started_at.getTime()) / 1000)) };
  }

  /**
   * Open attempts whose call is placed but not connected, asked of their carriers: a final status
   * callback lost on its way (answered 503 during a Redis outage) ends the call with the carrier's
   * outcome instead of `no-answer` at the end of its answer window. A few at once, within a time
   * budget, so a carrier that hangs delays the slice by seconds, not by its timeouts one after
   * another. The call ids that ended.
   */
  async function askCarriers(c: CampaignRow): Promise<Set<string>> {
    const ended = new Set<string>();
    const quiet = (await ds.staleAttempts(sql, c.id, clock.now() - carrierCheckAfterMs)).filter((a) => a.call_id);
    const startMono = clock.monotonicMs();
    for (let i = 0; i < quiet.length && clock.monotonicMs() - startMono < CARRIER_CHECK_BUDGET_MS; i += CARRIER_CHECKS_AT_ONCE) {
      await Promise.all(
        quiet.slice(i, i + CARRIER_CHECKS_AT_ONCE).map(async (a) => {
          const r = await telephony.reconcileWithCarrier(a.call_id!).catch((err: Error) => {
            log.warn({ campaignId: c.id, contactId: a.id, err: err.message }, 'campaign attempt not checked with its carrier');
            return 'not_asked' as const;
          });
          if (r === 'ended') ended.add(a.call_id!);
        }),
      );
    }
    return ended;
  }

  /** Attempts whose end we never heard of (their replica died mid-dial or before the hook ran, or the carrier's final callback was lost). */
  async function recover(c: CampaignRow): Promise<void> {
    // Their end event settles them (the call-event hook): not judged again here meanwhile.
    const endedByCarrier = await askCarriers(c);
    for (const a of await ds.staleAttempts(sql, c.id, clock.now() - staleAttemptMs)) {
      if (a.call_id && endedByCarrier.has(a.call_id)) continue;
      if (!a.call_id) continue;
      const live = await telephony.calls.get(a.call_id);
      // A record the carrier never acknowledged (no call sid, never rang) long after its creation:
      // its replica died between taking the seat and the carrier's answer. Had the carrier placed
      // it, its callbacks (to any replica) would have moved or ended it by now. Free the seat.
      const orphan = live && !live.provider_call_sid && live.status === 'initiated' && clock.now() - live.created_at_ms > staleAttemptMs;
      if (live && !orphan) {
        // The conversation is long over but the carrier's final callback never came (it went to a
        // replica that died): the attempt's outcome is known, so the contact is settled; the live
        // record goes too, unless the call was transferred (it may still be up, elsewhere).
        const ended = await conversationEndedBefore(a.call_id, clock.now() - staleAttemptMs);
        if (ended) {
          if (ended.endReason !== 'transfer') await telephony.calls.remove(a.call_id);
          log.warn({ campaignId: c.id, contactId: a.id, endReason: ended.endReason }, 'campaign attempt recovered: its conversation ended and the carrier never reported the end');
          await settleEnded(a.call_id, { carrierStatus: 'completed', answered: true, amdVerdict: a.amd_verdict ?? '', durationS: ended.durationS });
          continue;
        }
        // Never connected and its session's answer window is over with no final callback (lost):
        // ended now (no-answer), its outcome arriving through the call-event hook like any end.
        if (await telephony.endIfStale(a.call_id)) continue;
        if (a.status === 'dialing') await ds.markPlaced(sql, a.id, a.call_id, live.session_id);
        continue;
      }
      if (orphan) await telephony.calls.remove(a.call_id);
      log.warn({ campaignId: c.id, contactId: a.id, status: a.status }, 'campaign attempt recovered: its call is gone and no end was recorded');
      await settleEnded(a.call_id, { carrierStatus: 'unknown', answered: a.answered_at !== null, amdVerdict: a.amd_verdict ?? '' });
    }
  }

  /**
   * Every running or scheduled campaign without a live loop gets a dial job: after a restart of
   * every replica, and whenever a successor could not be queued (database blip at slice end).
   */
  let sweeper: ReturnType<Clock['setInterval']> | undefined;
  async function sweep(): Promise<void> {
    try {
      const rows = await sql<{ id: string }[]>`select id from campaigns where status in ('running', 'scheduled')
        and (dialer_owner is null or dialer_lease_until < ${now()})`;
      for (const r of rows) await enqueue(r.id, 0);
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'campaign sweep failed');
    }
  }

  async function kick(campaignId: string): Promise<void> {
    if (await ds.leaseHeld(sql, campaignId, now())) return;
    await enqueue(campaignId, 0);
  }

  /**
   * Lease held: the live loop sees the change (it re-reads the queue at least every IDLE_POLL_MS,
   * and after its release when it ends idle). Otherwise a job is queued for now, and then a
   * successor queued earlier with a delay is moved to now, in that order: a successor the last
   * slice queues between the two is either refused (ours is queued) or moved.
   */
  async function wake(campaignId: string): Promise<void> {
    if (await ds.leaseHeld(sql, campaignId, now())) return;
    await enqueue(campaignId, 0);
    await ds.advanceQueuedSlice(sql, jobs.schema, campaignId);
  }

  /** Dial slices running in this process: close waits for them (they release their lease and write their last outcomes). */
  const running = new Set<Promise<void>>();

  function run(job: JobContext<'campaign.dial'>): Promise<void> {
    // Closing: the queue may still hand this replica a slice (its own successor, queued as the last
    // slice released the lease). Starting it would outlive the pool; the sweep on a live replica
    // (or this one after a restart) queues the campaign again, since no lease is held.
    if (closing.signal.aborted) return Promise.resolve();
    const p = runSlice(job);
    const tracked = p.catch(() => {}).finally(() => running.delete(tracked));
    running.add(tracked);
    return p;
  }

  async function runSlice(job: JobContext<'campaign.dial'>): Promise<void> {
    const id = job.data.campaign_id;
    const first = await ds.takeLease(sql, id, owner, now(), clock.now() + leaseMs);
    // Held by a live loop elsewhere: it queues its own successor. A dead holder's job expires and is retried.
    if (!first) return;
    // The slice is measured on the monotonic clock, and no sleep outlasts what is left of it: the
    // wall clock can step back mid-slice (NTP; a test's injected clock). Measured against the wall
    // clock, a slice that began before a 28-day step waited "until sliceEnd" 28 days at a time,
    // which setTimeout caps at 24.8 days and turns into 1 ms: a busy loop (seen in CI).
    const sliceEndMono = clock.monotonicMs() + sliceMs;
    const sliceLeftMs = () => sliceEndMono - clock.monotonicMs();
    const inFlight = new Set<Promise<void>>();
    let holdUntil = 0;
    /**
     * Carrier failures in a row (see dialOne): each doubles the campaign's hold. Carried from the
     * slice before (its job's payload, bounded here), so an outage longer than a slice keeps
     * backing off instead of starting again at 5 s.
     */
    let carrierFailures = Math.min(MAX_CARRIED_FAILURES, Math.max(0, Math.floor(Number(job.data.carrier_failures) || 0)));
    let wakeAt: number | undefined;
    /** The slice ended waiting for contacts to come due (none queued, or none due yet). */
    let idle = false;
    let stop = false;
    const signal = AbortSignal.any([job.signal, closing.signal]);
    const sleep = (ms: number) => sleepOn(clock, Math.max(0, Math.min(ms, sliceLeftMs())), signal, () => new Error('dialer stopped'));

    async function dialOne(c: CampaignRow, contact: ContactRow, callId: string, previousDialedAt: Date | null): Promise<void> {
      let placed: Awaited<ReturnType<TelephonyDomain['dial']>>;
      try {
        placed = await telephony.dial(
          {
            // Never null here: an agent with a campaign that is not finished cannot be deleted
            // (agents/core/store.ts); were it null, the dial path's 400 would pause the campaign.
            agent_id: c.agent_id ?? '',
            to_number: contact.to_number,
            from_number: c.config.from_number,
            telephony_provider: '',
            dynamic_variables: contact.dynamic_variables,
            context: '',
            user_background: '',
            system_message_override: '',
            welcome_message_override: '',
            session_metadata: { campaign_id: c.id, campaign_contact_id: contact.id },
          },
          { userId: c.user_id, mayUse: async (ws) => ws === c.workspace_id, publicBase: deps.publicBase(), callId, campaignId: c.id },
        );
      } catch (err) {
        const e = toAppError(err);
        const carrier = e.options.cause instanceof CarrierError ? e.options.cause : undefined;
        // A carrier 429 or 503 is still an attempt here (retried by the contact's policy with the
        // campaign's growing hold), as its other 5xx are: it may be an outage, not a moment.
        const carrierBusy = carrier !== undefined && (carrier.status === 429 || carrier.status === 503);
        if ((e.code === 'SERVICE_UNAVAILABLE' || e.code === 'RATE_LIMITED') && !carrierBusy) {
          // No capacity or no credentials (or a rate limit of ours: a moment, not the agent's
          // configuration): not an attempt and no dial (dialed_at restored); the whole campaign
          // waits the Retry-After.
          const waitMs = (e.options.retryAfterS ?? 5) * 1000;
          holdUntil = Math.max(holdUntil, clock.now() + waitMs);
          await ds.unclaim(sql, contact.id, callId, clock.now() + waitMs, `requeued: ${e.message}`, previousDialedAt);
        } else if (!carrier && e.status >= 400 && e.status < 500) {
          // Our own checks refused the dial before any carrier request (carrier refusals are 502 /
          // 503 with a CarrierError cause): nothing was placed, so no attempt and no dial time.
          if (isContactProblem(e)) {
            // This contact's own data: the next contacts may dial fine.
            await ds.refuseUnplaced(sql, contact.id, callId, e.message, previousDialedAt, now());
          } else {
            // The agent or the campaign (call_direction inbound, a provider removed, unpublished,
            // no caller ID ...): every contact would fail alike, so the campaign is paused and the
            // contact put back, the campaign's status_reason and the contact's error_message saying
            // why; start resumes once it is fixed.
            stop = true;
            const paused = await ds.pauseUnplaced(sql, c.id, contact.id, callId, e.message, previousDialedAt, now());
            if (paused) log.warn({ campaignId: c.id, code: e.code, reason: e.message }, 'campaign paused: its agent cannot place the calls');
          }
        } else if (carrier && (carrier.outcomeUnknown || carrier.status === 429 || carrier.status >= 500)) {
          // The carrier failed (5xx, 429) or never answered a create it may have carried out: an
          // attempt (it may have rung the callee), retried by the contact's policy like an unanswered
          // call, never at once. Each one in a row holds the campaign twice as long (5 s up to
          // maxHoldMs), so an outage slows the campaign instead of spending its whole list.
          carrierFailures++;
          holdUntil = Math.max(holdUntil, clock.now() + Math.min(maxHoldMs, 5000 * 2 ** (carrierFailures - 1)));
          const outcome = outcomeOf({ carrierStatus: CARRIER_ERROR, answered: false, amdVerdict: '' }, contact.attempts, c.config.max_retries, clock.now(), retryBaseMs);
          await ds.settle(sql, callId, { ...outcome, error: `${outcome.error}: ${e.message}` }, now());
        } else {
          await ds.settle(sql, callId, { status: 'failed', error: e.message }, now());
        }
        log.info({ campaignId: c.id, contactId: contact.id, code: e.code, carrierStatus: carrier?.status, outcomeUnknown: carrier?.outcomeUnknown }, 'campaign dial refused');
        return;
      }
      carrierFailures = 0;
      // The call is placed: whatever fails from here, the contact must never go back to the queue
      // as "not dialed" (a database error is a 503, which the refusal path above requeues: the
      // callee rang twice). It stays `dialing` with its call id; the call's end settles it
      // (`settle` takes `dialing`), and recovery does if that end is never heard of.
      try {
        await ds.markPlaced(sql, contact.id, callId, placed.session_id);
      } catch (err) {
        log.warn({ campaignId: c.id, contactId: contact.id, callId, err: (err as Error).message }, 'campaign call placed; its contact stays dialing until the call ends');
      }
    }

    try {
      await recover(first);
      let c: CampaignRow | undefined = first;
      while (!stop && sliceLeftMs() > 0 && !signal.aborted) {
        const t = clock.now();
        if (c.status === 'scheduled') {
          const at = c.config.schedule_start ? Date.parse(c.config.schedule_start) : t;
          if (at > t) {
            wakeAt = at;
            break;
          }
          await ds.startScheduled(sql, id, now());
          c = { ...c, status: 'running' };
        }
        if (c.status !== 'running') {
          stop = true;
          break;
        }
        const w = windowOf(c.config);
        const open = nextOpenMs(w, t);
        if (open === undefined || open > t) {
          // Closed, or a stored window that cannot be read (rule 1): hold, stay running, re-check.
          if (open === undefined) log.warn({ campaignId: id }, 'campaign holds: its stored calling window cannot be interpreted');
          wakeAt = open ?? t + maxHoldMs;
          break;
        }
        if (holdUntil > t) {
          await sleep(holdUntil - t);
          continue;
        }
        const live = (await telephony.calls.countCampaign(c.workspace_id, id)) + inFlight.size;
        if (live >= c.config.max_concurrent_calls) {
          await sleep(busyPollMs);
          continue;
        }
        const callId = newId();
        const claim = await ds.claimNext(sql, id, now(), callId);
        if (claim.kind === 'stopped') {
          stop = true;
        } else if (claim.kind === 'paced') {
          await sleep(claim.atMs - clock.now());
        } else if (claim.kind === 'none') {
          if (claim.nextDueMs === undefined) {
            // Nothing queued: done once the open attempts end (their hook completes it);
            // come back for the recovery of attempts whose end is never heard of.
            await Promise.allSettled(inFlight);
            if (await ds.completeIfDone(sql, id, now())) stop = true;
            else {
              wakeAt = clock.now() + Math.min(maxHoldMs, staleAttemptMs);
              idle = true;
            }
            break;
          }
          if (claim.nextDueMs - clock.now() >= sliceLeftMs()) {
            wakeAt = claim.nextDueMs;
            idle = true;
            break;
          }
          // Not all the way: contacts uploaded meanwhile are due now (their upload's wake saw our lease).
          await sleep(Math.min(claim.nextDueMs - clock.now(), IDLE_POLL_MS));
        } else {
          // A database error while recording the outcome leaves the row `dialing`: recovery settles it.
          const p: Promise<void> = dialOne(c, claim.contact, callId, claim.previousDialedAt)
            .catch((err: Error) => log.warn({ campaignId: id, err: err.message }, 'campaign dial outcome not recorded'))
            .finally(() => inFlight.delete(p));
          inFlight.add(p);
        }
        // Renews the lease and re-reads status and config: a pause is seen before the next claim
        // (the claim itself also requires `running`), a PATCH within the slice.
        c = await ds.takeLease(sql, id, owner, now(), clock.now() + leaseMs);
        if (!c) return; // lost the lease (this replica stalled past it): the new owner goes on
      }
    } catch (err) {
      // Shutting down mid-sleep is a normal end of the slice; anything else fails the job (retried).
      if (!signal.aborted) throw err;
    } finally {
      await Promise.allSettled(inFlight);
      const status = await ds.releaseLease(sql, id, owner);
      // Read in the same statement as the release: a start or resume that landed meanwhile (and
      // whose kick saw our lease) is not missed.
      if (status === 'running' || status === 'scheduled') {
        // A hold that outlasts the slice delays the next one too.
        let next = Math.max(wakeAt ?? 0, holdUntil);
        // Ended idle: contacts added since the last claim (an upload whose wake saw our lease and
        // so left the wake to us) are looked for after the release, so they do not wait for wakeAt.
        if (idle) {
          const due = await ds.nextQueuedMs(sql, id).catch(() => undefined);
          if (due !== undefined) next = Math.max(holdUntil, Math.min(next, due));
        }
        await enqueue(id, next === 0 ? 0 : next - clock.now(), carrierFailures).catch((err: Error) =>
          log.warn({ campaignId: id, err: err.message }, 'next dial slice not queued; the sweep will queue it'),
        );
      }
    }
  }

  return {
    kick,
    wake,
    settleEnded,
    retryBaseMs,
    owner,
    async start() {
      // 0: this replica serves the API and callbacks but dials nothing.
      const concurrency = o.concurrency ?? 4;
      if (concurrency > 0) await jobs.work('campaign.dial', run, { concurrency });
      await jobs.work('campaign.media-check', async (job) => void (await failIfMediaNeverConnected(sql, job.data.call_id, log)));
      await sweep();
      sweeper = clock.setInterval(() => void sweep(), maxHoldMs);
    },
    async close() {
      clock.clearInterval(sweeper);
      closing.abort();
      await Promise.allSettled([...running]);
    },
  };
}
