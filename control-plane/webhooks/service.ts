/**
 * WebhookService: the spec's "Webhook" routes (doc 3), one implementation for REST, Connect and
 * gRPC. `workspace_id` scopes every call (default: the caller's own workspace). Not a member:
 * 403 FORBIDDEN (spec doc 3's error table: a workspace of another organization). Writes, test and retry need owner or admin (403 for other members); reads any member.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { WebhookService, WebhookDeliverySchema } from '../../shared/gen/voiceplane/v1/webhooks_pb.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { SecretBox } from '../../shared/secrets.js';
import { AppError, conflict, invalid, notFound } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import { assertTenantUrl, resolveAllowed, type OutboundPolicy } from '../../shared/outbound/index.js';
import type { Auth, Principal } from '../http/auth.js';
import { pageMeta, pageOf } from '../http/pagination.js';
import type { Sql } from '../../shared/db/client.js';
import type { DeliveryWorker } from './deliver.js';
import type { CallEvents } from './events.js';
import { EVENT_TYPE, newWebhookSecret } from './signing.js';
import { testLimitRetryAfterS } from './schedule.js';
import * as store from './store.js';
import type { CarrierAccounts } from '../telephony/carrier-accounts.js';

/** Spec limit: un-sent test pings per workspace. */
export const MAX_UNSENT_TESTS = 5;
const MAX_URL_CHARS = 2048;

export interface WebhookServiceDeps {
  sql: Sql;
  auth: Auth;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  policy: OutboundPolicy;
  deliveries: DeliveryWorker;
  events: CallEvents;
  enabled: boolean;
  allowHttp: boolean;
  /** Name resolution for the save-time check (tests inject one). Default: the system resolver. */
  resolver?: Parameters<typeof resolveAllowed>[1]['resolver'];
  /** Workspace carrier accounts (telephony/carrier-accounts.ts), part of the same settings. */
  carrierAccounts?: CarrierAccounts;
}

export function createWebhookService(deps: WebhookServiceDeps): ServiceImpl<typeof WebhookService> {
  const { sql, auth, clock, secrets } = deps;
  const protocols = deps.allowHttp ? ['https:', 'http:'] : ['https:'];

  async function workspace(ctx: Parameters<Auth['principal']>[0], requested: string | undefined, min: 'member' | 'admin'): Promise<{ p: Principal; ws: string }> {
    const p = await auth.principal(ctx);
    let ws = requested || (await auth.defaultWorkspaceId(p));
    if (!ws) throw invalid('workspace_id', 'is required (the caller owns no workspace)');
    if (!isUuid(ws)) throw invalid('workspace_id', 'must be a UUID');
    // Another organization's workspace is 403 (spec doc 3's error table); the default is the caller's own.
    await auth.requireWorkspace(p, ws, { min, onDenied: 'forbidden' });
    return { p, ws };
  }

  function available(): void {
    if (!deps.enabled) throw new AppError('WEBHOOKS_UNAVAILABLE', 'webhook delivery is switched off on this deployment');
  }

  /** https (http only in development), no credentials, a public address now (and again at every dial). */
  async function checkUrl(value: string): Promise<string> {
    if (value.length > MAX_URL_CHARS) throw invalid('webhook_url', `must be at most ${MAX_URL_CHARS} characters`);
    const url = assertTenantUrl(value, 'webhook_url', deps.policy, protocols);
    try {
      await resolveAllowed(url.hostname, { policy: deps.policy, resolver: deps.resolver, clock });
    } catch (err) {
      const why = err instanceof AppError ? 'must resolve to a public address' : 'does not resolve';
      throw invalid('webhook_url', `${why} (${url.hostname})`);
    }
    return url.href;
  }

  async function deliveryOr404(ws: string, id: string | undefined): Promise<store.DeliveryRow> {
    if (!id || !isUuid(id)) throw notFound('delivery');
    const d = await store.getDelivery(sql, id, ws);
    if (!d) throw notFound('delivery');
    return d;
  }

  return {
    async getWebhookSettings(req, ctx) {
      const { ws } = await workspace(ctx, req.workspaceId, 'member');
      const s = await store.getSettings(sql, ws);
      const carriers = (await deps.carrierAccounts?.view(sql, ws)) ?? {};
      return { workspaceId: ws, webhookUrl: s?.webhook_url ?? '', hasWebhookSecret: !!s?.secret_enc, carriers };
    },

    async putWebhookSettings(req, ctx) {
      const { ws } = await workspace(ctx, req.workspaceId, 'admin');
      const carriers = deps.carrierAccounts?.parse(req.carriers);
      if (req.webhookUrl === undefined && !req.rotateWebhookSecret && !carriers) throw invalid('webhook_url', 'give webhook_url, rotate_webhook_secret: true and/or carriers');
      const url = req.webhookUrl === undefined ? undefined : req.webhookUrl === '' ? null : await checkUrl(req.webhookUrl);
      const now = new Date(clock.now());
      const { row, secret } = await sql.begin(async (tx) => {
        // Serialised per workspace: two first PUTs at once must not both mint (and show) a secret
        // when only the last one is stored.
        await store.lockWorkspaceWebhooks(tx, ws);
        const current = await store.getSettings(tx, ws);
        // A secret exists from the first endpoint on; it is shown once, in the response that made it.
        const secret = req.rotateWebhookSecret || (!current?.secret_enc && url) ? newWebhookSecret() : undefined;
        // Only carrier accounts given: the webhook row is left as it is (none is created).
        const saved = url === undefined && !req.rotateWebhookSecret ? current : await store.putSettings(tx, ws, { url, secretEnc: secret ? secrets.encrypt(secret) : undefined }, now);
        if (url === null) await store.skipPending(tx, ws, now);
        if (carriers) await deps.carrierAccounts!.save(tx, ws, carriers, now);
        return { row: saved, secret };
      });
      const carrierView = (await deps.carrierAccounts?.view(sql, ws)) ?? {};
      return { workspaceId: ws, webhookUrl: row?.webhook_url ?? '', hasWebhookSecret: !!row?.secret_enc, webhookSecret: secret, carriers: carrierView };
    },

    async sendTestWebhook(req, ctx) {
      const { ws } = await workspace(ctx, req.workspaceId, 'admin');
      available();
      const s = await store.getSettings(sql, ws);
      if (!s?.webhook_url) throw invalid('webhook_url', 'is not set: save one first (PUT /call-center/settings)');
      const { eventId, body } = deps.events.testEvent(ws);
      const now = new Date(clock.now());
      const id = newId();
      await sql.begin(async (tx) => {
        // Count and insert under one per-workspace lock: concurrent pings cannot overshoot the limit.
        await store.lockWorkspaceWebhooks(tx, ws);
        const unsent = await store.unsentTests(tx, ws);
        if (unsent.n >= MAX_UNSENT_TESTS) {
          const retryAfterS = testLimitRetryAfterS(unsent.earliestDue?.getTime() ?? null, clock.now());
          throw new AppError('TEST_LIMIT', `${MAX_UNSENT_TESTS} test pings are still un-sent; wait for them to be delivered or to fail (retry in ${retryAfterS} s)`, { retryAfterS });
        }
        await store.insertDelivery(tx, { id, workspace_id: ws, event_id: eventId, event_type: EVENT_TYPE, test: true, call_id: null, body, next_attempt_at: now, created_at: now });
        await deps.deliveries.schedule(id, now, tx);
      });
      return { deliveryId: id };
    },

    async listWebhookDeliveries(req, ctx) {
      const { ws } = await workspace(ctx, req.workspaceId, 'member');
      const page = pageOf(req);
      const status = req.status || undefined;
      if (status && !(store.DELIVERY_STATUSES as readonly string[]).includes(status)) throw invalid('status', `must be one of ${store.DELIVERY_STATUSES.join(', ')}`);
      const { rows, total } = await store.listDeliveries(sql, ws, status, page);
      return { deliveries: rows.map((r) => deliveryView(r)), meta: pageMeta(page, total) };
    },

    async getWebhookDelivery(req, ctx) {
      const { ws } = await workspace(ctx, req.workspaceId, 'member');
      const d = await deliveryOr404(ws, req.id);
      return deliveryView(d, await store.listAttempts(sql, d.id));
    },

    async retryWebhookDelivery(req, ctx) {
      const { ws } = await workspace(ctx, req.workspaceId, 'admin');
      available();
      const d = await deliveryOr404(ws, req.id);
      if (d.status !== 'dead') throw conflict(`only a dead delivery can be re-sent (this one is ${d.status})`);
      const now = new Date(clock.now());
      // Same event id, same stored bytes: only the attempt count goes on.
      const updated = await sql.begin(async (tx) => {
        const [row] = await tx<store.DeliveryRow[]>`
          update webhook_deliveries set status = 'pending', next_attempt_at = ${now}, updated_at = ${now}
          where id = ${d.id} and status = 'dead' returning *`;
        if (row) await deps.deliveries.schedule(d.id, now, tx);
        return row;
      });
      if (!updated) throw conflict('the delivery changed meanwhile; read it again');
      return deliveryView(updated, await store.listAttempts(sql, d.id));
    },
  };
}

function deliveryView(d: store.DeliveryRow, attempts?: store.AttemptRow[]): MessageInitShape<typeof WebhookDeliverySchema> {
  return {
    id: d.id,
    eventId: d.event_id,
    eventType: d.event_type,
    status: d.status,
    test: d.test,
    callId: d.call_id ?? undefined,
    attempts: d.attempts,
    // While an attempt is out there is no next one yet (the column still holds this attempt's due time).
    nextAttemptAt: d.status === 'in_flight' ? undefined : d.next_attempt_at?.toISOString(),
    lastStatusCode: d.last_status_code ?? undefined,
    lastError: d.last_error ?? undefined,
    deliveredAt: d.delivered_at?.toISOString(),
    createdAt: d.created_at.toISOString(),
    updatedAt: d.updated_at.toISOString(),
    attemptLog: (attempts ?? []).map((a) => ({
      n: a.n,
      startedAt: a.started_at.toISOString(),
      statusCode: a.status_code ?? undefined,
      latencyMs: a.latency_ms,
      error: a.error ?? undefined,
      responseExcerpt: a.response_excerpt ?? undefined,
    })),
    body: attempts ? d.body : undefined,
  };
}
