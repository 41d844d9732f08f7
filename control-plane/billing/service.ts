/**
 * BillingService: one implementation for REST, Connect and gRPC (docs/billing.md).
 *
 * Who: the operator is the organization owner (ORG_API_KEY or the owner's session; spec doc 1:
 * the org key "acts as the organization's owner"). Operators set prices, top up and adjust;
 * workspace admins (and the operator) read balances and ledgers. Another tenant's workspace is
 * 404, like a missing one; a member who is not the operator gets 403 on operator routes.
 * Input is checked before anything is read, so bad input is a 400 naming its field.
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { JsonObject } from '@bufbuild/protobuf';
import type { BillingService } from '../../shared/gen/voiceplane/v1/billing_pb.js';
import type { Config } from '../../shared/config.js';
import type { Sql } from '../../shared/db/client.js';
import { alreadyExists, conflict, forbidden, invalid, notFound } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Auth, Principal } from '../http/auth.js';
import { pageMeta, pageOf } from '../http/pagination.js';
import { text, uuidField } from '../http/validate.js';
import type { Jobs } from '../jobs/index.js';
import { enqueuePublish, type Publisher } from './publish.js';
import * as store from './store.js';
import { UNITS, checkAmount, checkPrices } from './units.js';

export interface BillingServiceDeps {
  config: Config;
  sql: Sql;
  auth: Auth;
  jobs: Jobs;
  logger: Logger;
  publisher: Publisher;
}

/** Longest idempotency key / client reference. */
export const MAX_REFERENCE_CHARS = 200;
export const MAX_NOTE_CHARS = 1000;

export function createBillingService(deps: BillingServiceDeps): ServiceImpl<typeof BillingService> {
  const { config, sql, auth, jobs, logger, publisher } = deps;

  /** The workspace a reader may see (admin and up, or the operator); missing or foreign: 404. */
  async function readable(p: Principal, workspaceId: string): Promise<void> {
    await auth.requireWorkspace(p, workspaceId, { min: 'admin' });
    if (p.isOrgOwner && !(await store.workspaceExists(sql, workspaceId))) throw notFound('workspace');
  }

  async function operatorOf(ctx: HandlerContext): Promise<Principal> {
    const p = await auth.principal(ctx);
    if (!p.isOrgOwner) throw forbidden('only the operator (organization owner) may do this');
    return p;
  }

  /** Publishes at once so a top-up is usable now; the queued job covers a failure here. */
  function publishNow(workspaceId: string): void {
    publisher.one(workspaceId).catch((err: Error) => logger.warn({ err, workspaceId }, 'billing: state not published (the queued job retries)'));
  }

  async function creditEntry(kind: 'top_up' | 'adjustment', req: { workspaceId: string; amountMicros: number; reference: string; note: string }, ctx: HandlerContext) {
    const workspaceId = uuidField('workspace_id', req.workspaceId, true)!;
    const amountMicros = checkAmount(kind, req.amountMicros);
    const header = ctx.requestHeader.get('idempotency-key') ?? undefined;
    const fromBody = text('reference', req.reference, { maxChars: MAX_REFERENCE_CHARS });
    const fromHeader = text('Idempotency-Key', header, { maxChars: MAX_REFERENCE_CHARS });
    if (fromBody && fromHeader && fromBody !== fromHeader) throw invalid('reference', 'differs from the Idempotency-Key header');
    const reference = fromBody ?? fromHeader;
    if (!reference) throw invalid('reference', 'is required (or send an Idempotency-Key header)');
    const note = text('note', req.note, { maxChars: MAX_NOTE_CHARS });
    const p = await operatorOf(ctx);
    await readable(p, workspaceId);
    const out = await sql.begin(async (tx) => {
      const r = await store.credit(tx, { workspaceId, kind, amountMicros, reference, note });
      if (!r.replayed && config.billingEnabled) await enqueuePublish(jobs, workspaceId, tx);
      return r;
    });
    if (out.replayed && (out.entry.kind !== kind || out.entry.amount_micros !== amountMicros)) {
      throw alreadyExists(`reference ${JSON.stringify(reference)} was already used for a ${out.entry.kind} of ${out.entry.amount_micros} micro-credits`);
    }
    if (!out.replayed && config.billingEnabled) publishNow(workspaceId);
    return { entry: entryOut(out.entry), balanceMicros: out.balanceMicros, replayed: out.replayed };
  }

  return {
    async getBalance(req, ctx) {
      const workspaceId = uuidField('workspace_id', req.workspaceId, true)!;
      await readable(await auth.principal(ctx), workspaceId);
      const [balanceMicros, p] = await Promise.all([store.balance(sql, workspaceId), store.prices(sql)]);
      // The engine's rule (media-engine/credit-check.ts): audio is billed per started second.
      const mayCall = !config.billingEnabled || (balanceMicros > 0 && balanceMicros >= p.audio_second);
      return { workspaceId, balanceMicros, mayCall, billingEnabled: config.billingEnabled };
    },

    async listLedger(req, ctx) {
      const workspaceId = uuidField('workspace_id', req.workspaceId, true)!;
      const page = pageOf(req);
      await readable(await auth.principal(ctx), workspaceId);
      const { rows, total } = await store.ledgerPage(sql, workspaceId, page.limit, page.offset);
      return { entries: rows.map(entryOut), meta: pageMeta(page, total) };
    },

    topUp: (req, ctx) => creditEntry('top_up', req, ctx),
    adjust: (req, ctx) => creditEntry('adjustment', req, ctx),

    async getPrices(_req, ctx) {
      await auth.principal(ctx);
      const p = await store.prices(sql);
      return { prices: UNITS.map((unit) => ({ unit, priceMicros: p[unit] })) };
    },

    async setPrices(req, ctx) {
      const list = checkPrices(req.prices);
      await operatorOf(ctx);
      await store.setPrices(sql, list);
      // The per-second price is in every published state: republish them all (a job, bounded pages).
      if (config.billingEnabled) await enqueuePublish(jobs, undefined);
      const p = await store.prices(sql);
      return { prices: UNITS.map((unit) => ({ unit, priceMicros: p[unit] })) };
    },
  };
}

function entryOut(r: store.LedgerRow) {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    kind: r.kind,
    amountMicros: r.amount_micros,
    conversationId: r.conversation_id ?? '',
    reference: r.reference ?? '',
    note: r.note ?? '',
    usage: (r.usage ?? undefined) as JsonObject | undefined,
    createdAt: r.created_at.toISOString(),
  };
}
