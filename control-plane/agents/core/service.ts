/**
 * `AgentService`: agent CRUD and the phone lookup. Every write changes the draft only.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import { AgentService } from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import { AppError, conflict, invalid, notFound } from '../../../shared/errors.js';
import { newId } from '../../../shared/ids.js';
import { canBindConnectors, requireAgentScope, requireConnectorBinding, type Access } from '../access.js';
import type { AgentsDeps } from '../deps.js';
import { listProviderRows } from '../agent-providers/store.js';
import { listKbRows } from '../knowledge/store.js';
import { pageMeta, pageOf } from '../../http/pagination.js';
import { requireE164 } from '../telephony/phone.js';
import { getTelephonyRow, telephonyByNumber } from '../telephony/store.js';
import type { AgentFields } from '../types.js';
import { agentView, kbView, providerView, telephonyView } from '../views.js';
import { AGENT_DEFAULTS, AGENT_FIELD_KEYS, LIMITS, checkAgentFields, checkConnectors } from './fields.js';
import { deleteAgentRow, getAgentRow, insertAgentRow, listAgentRows, updateAgentRow } from './store.js';
import { pathId, uuidField } from '../../http/validate.js';
import { createOnce, sameFields } from '../../http/create-once.js';
import { listToolRows, upsertConnectorTool } from '../tools/store.js';
import { handWrittenToolNamed } from '../tools/handlers.js';
import type { AgentViewCache } from '../view-cache.js';

export function createAgentService(deps: AgentsDeps, access: Access, views: AgentViewCache<object>): ServiceImpl<typeof AgentService> {
  const { sql, secrets, auth } = deps;
  return {
    async createAgent(req, ctx) {
      const p = await access.principal(ctx);
      if (!req.workspaceId) throw invalid('workspace_id', 'is required');
      await access.workspace(p, req.workspaceId, 'edit');
      const fields = checkAgentFields(req, { create: true });
      const id = uuidField('id', req.id) ?? newId();
      const want = { ...AGENT_DEFAULTS, ...(fields as Pick<AgentFields, 'name'>), id, workspace_id: req.workspaceId.toLowerCase(), user_id: p.userId };
      const { row } = await createOnce({
        what: 'an agent',
        find: () => getAgentRow(sql, id, ctx.signal),
        insert: () => insertAgentRow(sql, want, ctx.signal),
        same: (existing) => sameFields(existing, want, ['workspace_id', ...AGENT_FIELD_KEYS]),
      });
      return agentView(row);
    },

    async listAgents(req, ctx) {
      const p = await access.principal(ctx);
      const page = pageOf(req);
      let workspaceIds: string[];
      if (req.workspaceId !== undefined && req.workspaceId !== '') {
        await access.workspace(p, req.workspaceId, 'read');
        workspaceIds = [req.workspaceId.toLowerCase()];
      } else {
        requireAgentScope(p, 'read');
        workspaceIds = await auth.workspaceIds(p);
      }
      const { rows, total } = await listAgentRows(sql, workspaceIds, page, ctx.signal);
      return { agents: rows.map(agentView), meta: pageMeta(page, total) };
    },

    // Cached per agent (view-cache.ts): an unchanged agent is answered without the database. The
    // fence (scope, then membership of the agent's workspace, 404 otherwise) runs on every call.
    async getAgent(req, ctx) {
      const p = await access.principal(ctx);
      requireAgentScope(p, 'read');
      const id = pathId('agent', req.id);
      const entry = await views.load(id, async () => {
        // One round trip on a miss: the four reads run side by side.
        const [agent, providers, telephony, kbs] = await Promise.all([
          getAgentRow(sql, id, ctx.signal),
          listProviderRows(sql, id, ctx.signal),
          getTelephonyRow(sql, id, ctx.signal),
          listKbRows(sql, id, ctx.signal),
        ]);
        if (!agent) return undefined;
        const view = {
          agent: agentView(agent),
          providers: providers.map((r) => providerView(secrets, r)),
          telephony: telephony ? telephonyView(secrets, agent.id, telephony) : undefined,
          knowledgeBases: kbs.map(kbView),
        };
        return { workspaceId: agent.workspace_id, view };
      });
      if (!entry) throw notFound('agent');
      await access.workspace(p, entry.workspaceId, 'read', 'agent');
      return entry.view as Awaited<ReturnType<ServiceImpl<typeof AgentService>['getAgent']>>;
    },

    async updateAgent(req, ctx) {
      const acc = await access.agent(ctx, req.id, 'edit');
      const { agent } = acc;
      const patch = checkAgentFields(req, { create: false });
      const add = checkConnectors(req.connectors);
      // Only a connector the agent does not have yet (a client PUTting back the agent it read adds nothing).
      // Binding (re-binding, re-activating) connector tools is a manager's (or connectors:write's):
      // without it, only a list the agent already has may be sent back, and nothing is bound.
      const have = new Set(agent.connectors.map((c) => c.toLowerCase()));
      const mayBind = canBindConnectors(acc);
      if (!mayBind && add.some((c) => !have.has(c.toLowerCase()))) requireConnectorBinding(acc);
      if (new Set([...agent.connectors, ...add]).size > LIMITS.connectors) throw invalid('connectors', `at most ${LIMITS.connectors} connectors`);
      // Every entry must resolve (UNKNOWN_CONNECTOR / CONNECTOR_NOT_CONNECTED) before anything is
      // written, but for one the agent already has: a client PUTting back the agent it read while
      // that connection is down changes nothing there (its tool stays as it is) rather than failing.
      const bound = [];
      for (const c of deps.connectors && mayBind ? add : []) {
        try {
          bound.push(await deps.connectors!.bindingFor(agent.workspace_id, c));
        } catch (err) {
          if (!(have.has(c.toLowerCase()) && err instanceof AppError && err.code === 'CONNECTOR_NOT_CONNECTED')) throw err;
        }
      }
      // A same-named tool is re-bound with its settings intact; one that is not a connector tool
      // (a hand-written HTTP tool) cannot become one.
      if (bound.length) {
        const byName = new Map((await listToolRows(sql, agent.id, ctx.signal)).map((t) => [t.name, t]));
        const i = bound.findIndex((b) => byName.has(b.providerId) && !byName.get(b.providerId)!.connector_binding);
        if (i >= 0) throw handWrittenToolNamed(bound[i]!.providerId, 'connectors');
      }
      const row = await updateAgentRow(sql, agent.id, { ...patch, add_connectors: add }, ctx.signal);
      if (!row) throw notFound('agent');
      for (const b of bound) {
        await upsertConnectorTool(sql, { id: newId(), agent_id: agent.id, name: b.providerId, description: b.description, connector_binding: b.binding }, ctx.signal);
      }
      return agentView(row);
    },

    async deleteAgent(req, ctx) {
      const { agent } = await access.agent(ctx, req.id, 'delete');
      const result = await deleteAgentRow(sql, agent.id, ctx.signal);
      if (result.kind === 'not_found') throw notFound('agent');
      if (result.kind === 'campaigns_unfinished') {
        // Deleting it would strand (before: silently delete) campaigns that still dial or may be started.
        const more = result.count > result.ids.length ? ` and ${result.count - result.ids.length} more` : '';
        throw conflict(
          `the agent has ${result.count} campaign${result.count === 1 ? '' : 's'} that ${result.count === 1 ? 'is' : 'are'} not finished (draft, scheduled, running or paused): ${result.ids.join(', ')}${more}; cancel ${result.count === 1 ? 'it' : 'them'} (POST /campaigns/{id}/cancel) or let ${result.count === 1 ? 'it' : 'them'} complete, then delete the agent`,
        );
      }
      return { message: 'deleted' };
    },

    async lookupAgentByPhone(req, ctx) {
      const p = await access.principal(ctx);
      requireAgentScope(p, 'read');
      if (!req.phoneNumber) throw invalid('phone_number', 'is required');
      // An unencoded `+` in a query string arrives as a space: accept " 1415..." as "+1415...".
      const raw = /^ \d+$/.test(req.phoneNumber) ? `+${req.phoneNumber.trim()}` : req.phoneNumber;
      const e164 = requireE164('phone_number', raw);
      const t = await telephonyByNumber(sql, e164, ctx.signal);
      const agent = t ? await getAgentRow(sql, t.agent_id, ctx.signal) : undefined;
      // A number bound in a workspace the caller is not in looks exactly like an unbound one.
      if (!t || !agent || !(await auth.roleIn(p, agent.workspace_id))) throw notFound('agent for this phone number');
      return { agent: agentView(agent), telephony: telephonyView(secrets, agent.id, t) };
    },
  };
}
