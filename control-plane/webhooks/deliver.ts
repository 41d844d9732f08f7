/**
 * The delivery worker (`webhook.deliver` jobs): one job = one attempt of one stored delivery.
 *
 * - The body is the stored bytes (built once when the event was created); each attempt only signs
 *   it with a fresh timestamp. Manual retries re-send the same bytes with the same event id.
 * - Every dial goes through the outbound client (address policy at connect time: no DNS-rebinding
 *   window), redirects are never followed (a 3xx is dead), 10 s per attempt.
 * - The schedule (30 s, 2 min, 10 min, 30 min, +20 % jitter; Retry-After up to 1 h) is computed on
 *   the injected clock and stored as `next_attempt_at`; the next job gets `startAfter` of that
 *   time. A job that runs before the clock says the attempt is due (database clock ahead, or a
 *   test's simulated clock) is put back, so the clock alone decides when an attempt happens.
 * - At least once: a crash after `in_flight` leaves the job active; pg-boss expires and retries
 *   it and the same bytes go out again (receivers deduplicate on `Webhook-Id`).
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { SecretBox } from '../../shared/secrets.js';
import { newId } from '../../shared/ids.js';
import { isOutboundRefused } from '../../shared/outbound/index.js';
import type { Sql } from '../../shared/db/client.js';
import type { Jobs, JobContext } from '../jobs/index.js';
import { deliveryHeaders } from './signing.js';
import { ATTEMPT_TIMEOUT_MS, classify, nextWaitMs, type AttemptResult } from './schedule.js';
import * as store from './store.js';

/** `fetch`-shaped sender: the outbound client's `fetch` in production. */
export type WebhookSend = (url: string, init: { method: string; headers: Record<string, string>; body: string; signal: AbortSignal }) => Promise<Response>;

const EXCERPT_CHARS = 512;
const MAX_ERROR_CHARS = 500;
/** Re-check period of an attempt that is not due yet on the injected clock. */
const NOT_DUE_RECHECK_S = 1;
/**
 * Attempts of one workspace out at once, over all replicas (counted under the workspace's lock).
 * A receiver that hangs holds at most this many worker slots for its 10 s timeouts; the rest of
 * its deliveries wait their turn instead of starving every other tenant's.
 */
export const MAX_IN_FLIGHT_PER_WORKSPACE = 2;
/** An attempt ends within its timeout: an in-flight row older than this is a crashed replica's (pg-boss retries its job), not counted. */
const IN_FLIGHT_STALE_MS = ATTEMPT_TIMEOUT_MS + 5_000;
/** The log line of an attempt whose outcome was never recorded. */
export const LOST_ATTEMPT = 'no outcome recorded: the replica sending this attempt stopped; sent again';
/** Re-check period of an attempt held back by its workspace's in-flight bound. */
const WORKSPACE_BUSY_RECHECK_S = 3;

export interface DeliveryWorkerOptions {
  sql: Sql;
  jobs: Jobs;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  send: WebhookSend;
  /** Jitter source in [0, 1). Default Math.random. */
  random?: () => number;
}

export interface DeliveryWorker {
  /** Queues the attempt due at `at` (default now) for a stored delivery. */
  schedule(deliveryId: string, at?: Date, tx?: Parameters<Jobs['enqueue']>[2]['tx']): Promise<void>;
  run(job: JobContext<'webhook.deliver'>): Promise<void>;
}

export function createDeliveryWorker(opts: DeliveryWorkerOptions): DeliveryWorker {
  const { sql, jobs, clock, logger, secrets, send } = opts;
  const random = opts.random ?? Math.random;

  async function schedule(deliveryId: string, at?: Date, tx?: Parameters<Jobs['enqueue']>[2]['tx']): Promise<void> {
    await jobs.enqueue('webhook.deliver', { delivery_id: deliveryId }, { singletonKey: deliveryId, startAfter: at ?? new Date(clock.now()), tx });
  }

  async function run(job: JobContext<'webhook.deliver'>): Promise<void> {
    const d = await store.getDelivery(sql, job.data.delivery_id);
    // Delivered, dead or skipped meanwhile (or a duplicate job): nothing to do.
    if (!d || (d.status !== 'pending' && d.status !== 'in_flight')) return;
    const now = clock.now();
    if (d.next_attempt_at && d.next_attempt_at.getTime() > now) {
      // Released early (the database clock is ahead of ours, or a test drives a simulated clock):
      // look again shortly, measured on the database clock so this never spins.
      await jobs.enqueue('webhook.deliver', { delivery_id: d.id }, { singletonKey: d.id, delaySeconds: NOT_DUE_RECHECK_S });
      return;
    }
    const claim = await claimAttempt(d.id, d.workspace_id, new Date(now));
    if (claim === 'busy') {
      await jobs.enqueue('webhook.deliver', { delivery_id: d.id }, { singletonKey: d.id, delaySeconds: WORKSPACE_BUSY_RECHECK_S });
      return;
    }
    if (!claim) return;
    const { settings, n } = claim;
    const result = await attempt(settings.webhook_url, secrets.decrypt(settings.secret_enc), d, job.signal);
    const verdict = classify(result.outcome);
    const after = clock.now();
    const wait = verdict === 'retry' ? nextWaitMs(n, result.outcome, after, random()) : undefined;
    const { status, nextAt } = await sql.begin(async (tx) => {
      // Under the settings lock: an endpoint removed while this attempt was out leaves nothing
      // pending behind it (the removal skipped every pending delivery; this one was in flight).
      await store.lockWorkspaceWebhooks(tx, d.workspace_id);
      const removed = wait !== undefined && !(await store.getSettings(tx, d.workspace_id))?.webhook_url;
      const status = verdict === 'delivered' ? 'delivered' : removed ? 'skipped' : wait !== undefined ? 'pending' : 'dead';
      const nextAt = status === 'pending' ? new Date(after + wait!) : null;
      await tx`
        insert into webhook_attempts (id, delivery_id, n, started_at, status_code, latency_ms, error, response_excerpt)
        values (${newId()}, ${d.id}, ${n}, ${new Date(now)}, ${result.outcome.status ?? null}, ${result.latencyMs}, ${result.outcome.error ?? null}, ${result.excerpt})
        on conflict (delivery_id, n) do nothing`;
      await tx`
        update webhook_deliveries set status = ${status}, next_attempt_at = ${nextAt},
          last_status_code = ${result.outcome.status ?? null}, last_error = ${result.outcome.error ?? null},
          delivered_at = ${status === 'delivered' ? new Date(after) : null}, updated_at = ${new Date(after)}
        where id = ${d.id}`;
      if (nextAt) await schedule(d.id, nextAt, tx);
      return { status, nextAt };
    });
    logger.info({ delivery: d.id, event: d.event_id, attempt: n, status: result.outcome.status, verdict: status, nextAt }, 'webhook attempt');
  }

  /**
   * Marks the attempt in flight, or the delivery skipped when the workspace has no endpoint. Under
   * the settings lock, so an endpoint removal either comes first (skipped here) or finds this
   * attempt already out (the old endpoint gets it, as it would have a moment earlier).
   */
  async function claimAttempt(id: string, workspaceId: string, now: Date): Promise<{ settings: { webhook_url: string; secret_enc: string }; n: number } | 'busy' | undefined> {
    return sql.begin(async (tx) => {
      await store.lockWorkspaceWebhooks(tx, workspaceId);
      const settings = await store.getSettings(tx, workspaceId);
      if (!settings?.webhook_url || !settings.secret_enc) {
        await tx`update webhook_deliveries set status = 'skipped', next_attempt_at = null, updated_at = ${now} where id = ${id} and status in ('pending', 'in_flight')`;
        return undefined;
      }
      const [{ out }] = await tx<{ out: number }[]>`
        select count(*)::int as out from webhook_deliveries
        where workspace_id = ${workspaceId} and status = 'in_flight' and id <> ${id} and updated_at > ${new Date(now.getTime() - IN_FLIGHT_STALE_MS)}`;
      if (out >= MAX_IN_FLIGHT_PER_WORKSPACE) return 'busy';
      // Still in flight: the attempt before this one never reported (its replica died while it
      // was out). The log says so, so that every counted attempt has its line.
      await tx`
        insert into webhook_attempts (id, delivery_id, n, started_at, status_code, latency_ms, error, response_excerpt)
        select ${newId()}, id, attempts, updated_at, null, 0, ${LOST_ATTEMPT}, null from webhook_deliveries
        where id = ${id} and status = 'in_flight' and attempts > 0
        on conflict (delivery_id, n) do nothing`;
      const [row] = await tx<{ attempts: number }[]>`
        update webhook_deliveries set status = 'in_flight', attempts = attempts + 1, updated_at = ${now}
        where id = ${id} and status in ('pending', 'in_flight') returning attempts`;
      return row ? { settings: { webhook_url: settings.webhook_url, secret_enc: settings.secret_enc }, n: row.attempts } : undefined;
    });
  }

  async function attempt(url: string, secret: string, d: store.DeliveryRow, signal: AbortSignal): Promise<{ outcome: AttemptResult; latencyMs: number; excerpt: string | null }> {
    const headers = deliveryHeaders(secret, d.event_id, Math.floor(clock.now() / 1000), d.body);
    const abort = new AbortController();
    const timer = clock.setTimeout(() => abort.abort(new Error(`timed out after ${ATTEMPT_TIMEOUT_MS} ms`)), ATTEMPT_TIMEOUT_MS);
    const onClose = () => abort.abort(signal.reason);
    signal.addEventListener('abort', onClose, { once: true });
    const t0 = clock.monotonicMs();
    try {
      const res = await send(url, { method: 'POST', headers, body: d.body, signal: abort.signal });
      const excerpt = await readExcerpt(res);
      return { outcome: { status: res.status, retryAfter: res.headers.get('retry-after') }, latencyMs: Math.round(clock.monotonicMs() - t0), excerpt };
    } catch (err) {
      const refused = isOutboundRefused(err);
      const message = abort.signal.aborted ? String((abort.signal.reason as Error)?.message ?? 'aborted') : errorText(err);
      return { outcome: { error: message.slice(0, MAX_ERROR_CHARS), refused }, latencyMs: Math.round(clock.monotonicMs() - t0), excerpt: null };
    } finally {
      clock.clearTimeout(timer);
      signal.removeEventListener('abort', onClose);
    }
  }

  return { schedule, run };
}

/** The first bytes of the body as text; the rest is cancelled, never drained. */
async function readExcerpt(res: Response): Promise<string | null> {
  const reader = res.body?.getReader();
  if (!reader) return null;
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < EXCERPT_CHARS * 4) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // A body cut off mid-way still leaves its status code: the excerpt is best effort.
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const text = Buffer.concat(chunks).toString('utf8').slice(0, EXCERPT_CHARS);
  return text || null;
}

/** DNS, TLS and connection failures: undici wraps the cause. */
export function errorText(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  // undici asserts on answers it cannot take (an HTTP 101 upgrade to a plain POST): its internal
  // assertion text says nothing to the receiver's owner.
  if (e?.cause?.code === 'ERR_ASSERTION') return 'the receiver answered with something that is not an HTTP response to a POST (an upgrade or a protocol error)';
  const cause = e?.cause ? ` (${e.cause.code ?? ''}${e.cause.code && e.cause.message ? ': ' : ''}${e.cause.message ?? ''})` : '';
  return `${e?.message ?? String(err)}${cause}`;
}
