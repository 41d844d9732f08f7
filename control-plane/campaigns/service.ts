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
  /** Makes sure the campaign's dial job is queued (start, resume). */
  kick: (campaignId: string) => Promise<void>;
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
        insert: () => store.insertCampaign(sql, want),
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
      // A running campaign picks the change up at its next claim; a kick re-plans a held one
      // (e.g. a window or schedule that opens sooner now).
      if (saved.status === 'running' || saved.status === 'scheduled') await deps.kick(saved.id);
      return view(saved);
    },

    async uploadCampaignCsv(req, ctx) {
      const row = await access.campaign(ctx, req.campaignId);
      assertUploadable(row);
      const s = await importCsv(sql, row, Readable.from([Buffer.from(req.csv)]), now());
      // The summary is snake_case (the REST body); the message's fields are camelCase.
      return { total: s.total, valid: s.valid, invalid: s.invalid, duplicates: s.duplicates, phoneColumn: s.phone_column, headers: s.headers, preview: s.preview };
    },

    async startCampaign(req, ctx) {
      const row = await access.campaign(ctx, req.campaignId);
      if (!['draft', 'scheduled', 'paused'].includes(row.status)) throw invalid('status', `a ${row.status} campaign cannot be started (only draft, scheduled or paused)`);
      const n = (await store.counters(sql, [row.id])).get(row.id)!;
      if (n.total_calls === 0) throw invalid('total_calls', 'the campaign has no contacts: upload a CSV first');
      if (!row.config.from_number) {
        const facts = await store.agentFacts(sql, row.agent_id);
        if (!facts?.live_phone_number) throw invalid('from_number', 'no caller ID: set from_number or attach (and publish) a phone number on the agent');
      }
      const t = now();
      const future = row.config.schedule_start !== null && Date.parse(row.config.schedule_start) > t.getTime();
      const moved = await store.transition(sql, row.id, ['draft', 'scheduled', 'paused'], future ? 'scheduled' : 'running', t, { started: !future });
      if (!moved) throw invalid('status', 'the campaign changed state meanwhile; read it and try again');
      await deps.kick(moved.id);
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

/** Contacts added to a finished campaign could never be dialed. */
export function assertUploadable(row: store.CampaignRow): void {
  if (store.TERMINAL.has(row.status)) throw invalid('status', `a ${row.status} campaign takes no more contacts`);
}

export function exportFilename(row: store.CampaignRow): string {
  return `campaign-${row.id}.csv`;
}
