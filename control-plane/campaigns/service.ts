/**
 * CampaignService: the spec's "Campaigns" routes (doc 2), one implementation for REST, Connect and
 * gRPC. Fencing: a campaign outside the caller's workspaces is 404; an agent or a `workspace_id`
 * that is not the caller's is 403 (create and list, as the spec says).
 */
import { Readable } from 'node:stream';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { CampaignService } from '../../shared/gen/voiceplane/v1/campaigns_pb.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { forbidden, invalid, notFound } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import type { Auth } from '../http/auth.js';
import { pageMeta, pageOf } from '../http/pagination.js';
import type { Sql } from '../../shared/db/client.js';
import { importCsv } from './csv-import.js';
import { outboundProblem } from './preflight.js';
import { exportCsv } from './csv-export.js';
import * as store from './store.js';
import { agentId, callsPage, campaignName, columnMap, configInput, defaultConfig, mergeConfig } from './validate.js';
import { uuidField } from '../http/validate.js';
import { createOnce, sameFields } from '../http/create-once.js';
import { campaignView, contactView } from './views.js';

export interface CampaignServiceDeps {
  sql: Sql;
  auth: Auth;
  clock: Clock;
  logger: Logger;
  /** Makes the campaign's dial loop run now (start, resume, PATCH, an upload to a running campaign): `Dialer.wake`. */
  wake: (campaignId: string) => Promise<void>;
}

export interface CampaignAccess {
  /** The caller's campaign, or 404. */
  campaign(ctx: HandlerContext, id: string | undefined): Promise<store.CampaignRow>;
}

export function createCampaignAccess(sql: Sql, auth: Auth): CampaignAccess {
  return {
    async campaign(ctx, id) {
      const p = await auth.principal(ctx);
      if (!id || !isUuid(id)) throw notFound('campaign');
      const row = await store.getCampaign(sql, id, await auth.workspaceIds(p));
      if (!row) throw notFound('campaign');
      return row;
    },
  };
}

export function createCampaignService(deps: CampaignServiceDeps): ServiceImpl<typeof CampaignService> {
  const { sql, auth, clock } = deps;
  const access = createCampaignAccess(sql, auth);
  const now = () => new Date(clock.now());

  async function view(row: store.CampaignRow) {
    const n = await store.counters(sql, [row.id]);
    return campaignView(row, n.get(row.id)!);
  }

  return {
    // limit + offset in, meta out (API conventions: the spec gives this list no paging of its own).
    async listCampaigns(req, ctx) {
      const p = await auth.principal(ctx);
      const page = pageOf(req);
      let ws: string[];
      if (req.workspaceId) {
        if (!isUuid(req.workspaceId)) throw invalid('workspace_id', 'must be a UUID');
        await auth.requireWorkspace(p, req.workspaceId, { onDenied: 'forbidden' });
        ws = [req.workspaceId];
      } else {
        ws = await auth.workspaceIds(p);
      }
      const [rows, total] = await Promise.all([store.listCampaigns(sql, ws, page), store.countCampaigns(sql, ws)]);
      const n = await store.counters(sql, rows.map((r) => r.id));
      return { campaigns: rows.map((r) => campaignView(r, n.get(r.id)!)), meta: pageMeta(page, total) };
    },

    async createCampaign(req, ctx) {
      const p = await auth.principal(ctx);
      const name = campaignName(req.name);
      const agent = agentId(req.agentId);
      const config = mergeConfig(defaultConfig(), configInput(req));
      const map = columnMap(req.columnMap);
      const facts = await store.agentFacts(sql, agent);
      // Unknown and foreign agents answer alike, so a probe learns nothing about other tenants.
      if (!facts || !(await auth.roleIn(p, facts.workspace_id))) throw forbidden('agent_id does not belong to one of your workspaces');
      const t = now();
      const id = uuidField('id', req.id) ?? newId();
      const want = { id, user_id: p.userId, workspace_id: facts.workspace_id, agent_id: agent, name, status: 'draft' as const, config, column_map: map, created_at: t, updated_at: t };
      const { row } = await createOnce({
        what: 'a campaign',
        find: () => store.getCampaign(sql, id, 'any'),
        insert: () =>
          store.insertCampaign(sql, want).catch((err: unknown) => {
            // The agent was deleted between the check above and the insert: as if unknown.
            const e = err as { code?: string; constraint_name?: string };
            if (e.code === '23503' && e.constraint_name === 'campaigns_agent_id_fkey') throw forbidden('agent_id does not belong to one of your workspaces');
            throw err;
          }),
        same: (existing) => sameFields(existing, want, ['workspace_id', 'agent_id', 'name', 'config', 'column_map']),
      });
      return view(row);
    },

    async getCampaign(req, ctx) {
      return view(await access.campaign(ctx, req.campaignId));
    },

    async updateCampaign(req, ctx) {
      const row = await access.campaign(ctx, req.campaignId);
      const config = mergeConfig(row.config, configInput(req));
      const saved = await store.updateConfig(sql, row.id, config, now());
      // A running campaign picks the change up at its next claim; a wake re-plans a held one
      // (e.g. a window or schedule that opens sooner now).
      if (saved.status === 'running' || saved.status === 'scheduled') await deps.wake(saved.id);
      return view(saved);
    },

    async uploadCampaignCsv(req, ctx) {
      const row = await access.campaign(ctx, req.campaignId);
      assertUploadable(row);
      const { summary: s, campaignStatus } = await importCsv(sql, row, Readable.from([Buffer.from(req.csv)]), now());
      await wakeAfterUpload(row.id, campaignStatus, deps.wake, deps.logger);
      // The summary is snake_case (the REST body); the message's fields are camelCase.
      return { total: s.total, valid: s.valid, invalid: s.invalid, duplicates: s.duplicates, phoneColumn: s.phone_column, headers: s.headers, preview: s.preview };
    },

    async startCampaign(req, ctx) {
      const row = await access.campaign(ctx, req.campaignId);
      if (!['draft', 'scheduled', 'paused'].includes(row.status)) throw invalid('status', `a ${row.status} campaign cannot be started (only draft, scheduled or paused)`);
      const n = (await store.counters(sql, [row.id])).get(row.id)!;
      if (n.total_calls === 0) throw invalid('total_calls', 'the campaign has no contacts: upload a CSV first');
      // An agent that cannot dial out would fail every contact at once: refuse, naming why.
      const problem = await outboundProblem(sql, row.agent_id, row.config.from_number);
      if (problem) throw problem;
      const t = now();
      const future = row.config.schedule_start !== null && Date.parse(row.config.schedule_start) > t.getTime();
      const moved = await store.transition(sql, row.id, ['draft', 'scheduled', 'paused'], future ? 'scheduled' : 'running', t, { started: !future });
      if (!moved) throw invalid('status', 'the campaign changed state meanwhile; read it and try again');
      await deps.wake(moved.id);
      return view(moved);
    },

    async pauseCampaign(req, ctx) {
      const row = await access.campaign(ctx, req.campaignId);
      const moved = await store.transition(sql, row.id, ['running', 'scheduled'], 'paused', now());
      if (!moved) throw invalid('status', `a ${row.status} campaign cannot be paused (only running or scheduled)`);
      return view(moved);
    },

    async cancelCampaign(req, ctx) {
      const row = await access.campaign(ctx, req.campaignId);
      const t = now();
      const moved = await sql.begin(async (tx) => {
        const m = await store.transition(tx, row.id, ['draft', 'scheduled', 'running', 'paused'], 'cancelled', t, { completed: true });
        if (m) await store.cancelQueued(tx, row.id, t);
        return m;
      });
      if (!moved) throw invalid('status', `a ${row.status} campaign cannot be cancelled (it is final)`);
      return view(moved);
    },

    async listCampaignCalls(req, ctx) {
      const row = await access.campaign(ctx, req.campaignId);
      const { page, perPage } = callsPage(req.page, req.perPage);
      const { rows, total } = await store.listContacts(sql, row.id, req.status.trim(), perPage, (page - 1) * perPage);
      return { calls: rows.map(contactView), total, page, perPage };
    },

    async exportCampaignCsv(req, ctx) {
      const row = await access.campaign(ctx, req.campaignId);
      const chunks: string[] = [];
      for await (const chunk of exportCsv(sql, row)) chunks.push(chunk);
      return { filename: exportFilename(row), csv: chunks.join('') };
    },
  };
}

/**
 * New contacts of a running campaign are dialed now, as at start: its loop may have ended idle
 * (every contact in a call, or only retries not yet due) with its next slice planned up to a
 * minute ahead. Other states dial nothing yet (a resume wakes the loop itself). `status` is the one
 * the import saw as it committed: a campaign started during the import is woken too.
 */
export async function wakeAfterUpload(campaignId: string, status: store.CampaignStatus, wake: (campaignId: string) => Promise<void>, logger: Logger): Promise<void> {
  if (status !== 'running') return;
  // The contacts are stored: a failed wake only delays them (the loop's next slice finds them).
  await wake(campaignId).catch((err: Error) => logger.warn({ campaignId, err: err.message }, 'campaign dialer not woken after an upload'));
}

/** Contacts added to a finished campaign could never be dialed. */
export function assertUploadable(row: store.CampaignRow): void {
  if (store.TERMINAL.has(row.status)) throw invalid('status', `a ${row.status} campaign takes no more contacts`);
}

export function exportFilename(row: store.CampaignRow): string {
  return `campaign-${row.id}.csv`;
}
