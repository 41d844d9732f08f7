/**
 * Alert notifications: one row and one `alerts.notify` job per channel target, event and kind
 * (`fired` / `resolved`), created in the evaluator's transaction (the job exists iff the event
 * does). The body is built once and stored; attempts send those bytes.
 *
 * - `webhook`: POST through the outbound client, signed like `call.completed` (webhooks/signing.ts)
 *   with the workspace's webhook secret, `Webhook-Event-Type: alert.fired | alert.resolved`,
 *   `Webhook-Id` = the notification id (the same on every attempt).
 * - `slack`: an incoming-webhook JSON `{text, blocks}` POSTed through the outbound client.
 * - `email`: the accounts mailer (SMTP, or the development mailbox).
 *
 * Retries are pg-boss's (backoff in SQL, `QUEUE_SETTINGS['alerts.notify']`): a retryable failure
 * records `last_error` and throws; the last attempt, a refused address, a 3xx or a 4xx other than
 * 408/425/429 is `dead` at once (the webhook rules of spec doc 3). Evaluation never waits on it.
 */
import type postgres from 'postgres';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { SecretBox } from '../../shared/secrets.js';
import type { Sql } from '../../shared/db/client.js';
import { newId } from '../../shared/ids.js';
import { isOutboundRefused } from '../../shared/outbound/index.js';
import type { Mailer } from '../accounts/mail.js';
import type { Jobs, JobContext } from '../jobs/index.js';
import { deliveryHeaders } from '../webhooks/signing.js';
import { ATTEMPT_TIMEOUT_MS, classify } from '../webhooks/schedule.js';
import type { Channels } from './rules.js';
import * as store from './store.js';

type Tx = postgres.TransactionSql<Record<string, unknown>>;
export type NotifySend = (url: string, init: { method: string; headers: Record<string, string>; body: string; signal: AbortSignal }) => Promise<Response>;

const MAX_ERROR_CHARS = 500;

export interface NotifierDeps {
  sql: Sql;
  jobs: Jobs;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  mailer: Mailer;
  send: NotifySend;
}

export interface Notifier {
  /** Stores one notification per target and queues its job, inside the caller's transaction. */
  queue(tx: Tx, event: store.EventRow, kind: 'fired' | 'resolved', channels: Channels, now: Date): Promise<void>;
  run(job: JobContext<'alerts.notify'>): Promise<void>;
}

/** A failure that no retry can fix. */
class Permanent extends Error {}

export function createNotifier(deps: NotifierDeps): Notifier {
  const { sql, jobs, clock, logger } = deps;

  async function queue(tx: Tx, event: store.EventRow, kind: 'fired' | 'resolved', channels: Channels, now: Date): Promise<void> {
    const targets: Array<readonly [store.NotificationRow['channel'], string]> = [
      ...channels.email.map((t) => ['email', t] as const),
      ...channels.webhook.map((t) => ['webhook', t] as const),
      ...channels.slack.map((t) => ['slack', t] as const),
    ];
    for (const [channel, target] of targets) {
      const id = newId();
      const body = buildBody(channel, id, event, kind, now);
      const inserted = await tx`
        insert into alert_notifications (id, event_id, workspace_id, channel, target, kind, status, body, created_at, updated_at)
        values (${id}, ${event.id}, ${event.workspace_id}, ${channel}, ${target}, ${kind}, 'pending', ${body}, ${now}, ${now})
        on conflict (event_id, kind, channel, target) do nothing`;
      if (inserted.count) await jobs.enqueue('alerts.notify', { notification_id: id }, { singletonKey: id, tx });
    }
  }

  async function run(job: JobContext<'alerts.notify'>): Promise<void> {
    const n = await store.getNotification(sql, job.data.notification_id);
    if (!n || n.status !== 'pending') return;
    await sql`update alert_notifications set attempts = attempts + 1, updated_at = ${new Date(clock.now())} where id = ${n.id}`;
    try {
      await deliver(n, job.signal);
      await sql`update alert_notifications set status = 'delivered', delivered_at = ${new Date(clock.now())}, last_error = null, updated_at = ${new Date(clock.now())} where id = ${n.id}`;
    } catch (err) {
      const error = errorText(err).slice(0, MAX_ERROR_CHARS);
      const dead = err instanceof Permanent || job.isLastAttempt;
      await sql`update alert_notifications set status = ${dead ? 'dead' : 'pending'}, last_error = ${error}, updated_at = ${new Date(clock.now())} where id = ${n.id}`;
      logger.warn({ notification: n.id, channel: n.channel, attempt: job.retryCount + 1, dead, error }, 'alert notification failed');
      if (!dead) throw err;
    }
  }

  async function deliver(n: store.NotificationRow, signal: AbortSignal): Promise<void> {
    if (n.channel === 'email') {
      const mail = JSON.parse(n.body) as { subject: string; text: string };
      await deps.mailer.send({ to: n.target, subject: mail.subject, text: mail.text });
      return;
    }
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'voiceplane-alerts/1' };
    if (n.channel === 'webhook') {
      const enc = await store.webhookSecretEnc(sql, n.workspace_id);
      if (!enc) throw new Permanent('the workspace has no webhook secret (PUT /api/v1/call-center/settings creates one)');
      Object.assign(headers, deliveryHeaders(deps.secrets.decrypt(enc), n.id, Math.floor(clock.now() / 1000), n.body, `alert.${n.kind}`));
    }
    const abort = new AbortController();
    const timer = clock.setTimeout(() => abort.abort(new Error(`timed out after ${ATTEMPT_TIMEOUT_MS} ms`)), ATTEMPT_TIMEOUT_MS);
    const onClose = () => abort.abort(signal.reason);
    signal.addEventListener('abort', onClose, { once: true });
    try {
      let res: Response;
      try {
        res = await deps.send(n.target, { method: 'POST', headers, body: n.body, signal: abort.signal });
      } catch (err) {
        if (isOutboundRefused(err)) throw new Permanent(errorText(err));
        throw abort.signal.aborted ? (abort.signal.reason as Error) : err;
      }
      await res.body?.cancel().catch(() => undefined);
      const verdict = classify({ status: res.status });
      if (verdict === 'delivered') return;
      const msg = `HTTP ${res.status}`;
      throw verdict === 'dead' ? new Permanent(msg) : new Error(msg);
    } finally {
      clock.clearTimeout(timer);
      signal.removeEventListener('abort', onClose);
    }
  }

  return { queue, run };
}

/** The stored bytes of one notification (payloads: docs/alerts.md, "Notifications"). */
export function buildBody(channel: store.NotificationRow['channel'], id: string, e: store.EventRow, kind: 'fired' | 'resolved', now: Date): string {
  const summary = summaryLine(e, kind);
  if (channel === 'webhook') return JSON.stringify({ id, type: `alert.${kind}`, created_at: now.toISOString(), data: eventPayload(e) });
  if (channel === 'slack') {
    return JSON.stringify({
      text: summary,
      blocks: [
        { type: 'section', text: { type: 'mrkdwn', text: `*${escapeSlack(summary)}*` } },
        { type: 'context', elements: [{ type: 'mrkdwn', text: escapeSlack(`event ${e.id} · rule ${e.rule_id} · workspace ${e.workspace_id}`) }] },
      ],
    });
  }
  const lines = [
    summary,
    '',
    `Rule: ${e.rule_name} (${e.rule_id})`,
    `Metric: ${metricLabel(e)} over the scope ${e.scope_type === 'agent' ? `agent ${e.agent_id}` : 'workspace'}`,
    `Condition: ${e.operator} ${e.threshold}`,
    `Observed: ${e.observed_value}`,
    `Triggered at: ${e.triggered_at.toISOString()}`,
    ...(e.resolved_at ? [`Resolved at: ${e.resolved_at.toISOString()} (${e.resolution})`] : []),
    `Event: ${e.id}`,
  ];
  return JSON.stringify({ subject: `[Voiceplane] ${summary}`, text: lines.join('\n') });
}

export function eventPayload(e: store.EventRow): Record<string, unknown> {
  return {
    event_id: e.id,
    rule_id: e.rule_id,
    rule_name: e.rule_name,
    workspace_id: e.workspace_id,
    metric: e.metric,
    component: e.component || null,
    scope: { type: e.scope_type, agent_id: e.agent_id },
    operator: e.operator,
    threshold: e.threshold,
    observed_value: e.observed_value,
    status: e.status,
    triggered_at: e.triggered_at.toISOString(),
    resolved_at: e.resolved_at?.toISOString() ?? null,
    resolution: e.resolution,
  };
}

function metricLabel(e: store.EventRow): string {
  return e.component ? `${e.metric} (${e.component})` : e.metric;
}

function summaryLine(e: store.EventRow, kind: 'fired' | 'resolved'): string {
  return kind === 'fired'
    ? `Alert fired: ${e.rule_name}: ${metricLabel(e)} = ${e.observed_value} (${e.operator} ${e.threshold})`
    : `Alert resolved: ${e.rule_name}: ${metricLabel(e)} (${e.resolution === 'manual' ? 'resolved by hand' : 'condition cleared'})`;
}

/** Slack mrkdwn control characters. */
function escapeSlack(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function errorText(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } };
  const cause = e?.cause ? ` (${e.cause.code ?? e.cause.message ?? ''})` : '';
  return `${e?.message ?? String(err)}${cause}`;
}
