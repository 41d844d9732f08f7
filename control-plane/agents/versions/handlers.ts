/** Publish, rollback and the version listing. */
import type { ServiceImpl } from '@connectrpc/connect';
import type { AgentConfigService } from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import { notFound } from '../../../shared/errors.js';
import type { Access } from '../access.js';
import type { AgentsDeps } from '../deps.js';
import { iso } from '../db.js';
import { pageMeta, pageOf } from '../../http/pagination.js';
import { PROVIDER_TYPES } from '../types.js';
import { ownerFallbacks } from '../../providers/resolve.js';
import { listVersionRows, publishDraft, rollbackTo } from './store.js';

type Impl = ServiceImpl<typeof AgentConfigService>;

export function versionHandlers(deps: AgentsDeps, access: Access): Pick<Impl, 'publishAgent' | 'rollbackAgent' | 'listAgentVersions'> {
  const { sql, logger } = deps;
  return {
    async publishAgent(req, ctx) {
      const { agent, principal } = await access.agent(ctx, req.agentId, 'publish');
      // The owner's own provider configurations fill the types the agent lacks (frozen into the version).
      const fallbacks = await ownerFallbacks(sql, agent.id, agent.user_id, [...PROVIDER_TYPES]);
      // Simulation tests' publish gate (control-plane/simtests/gate.ts): may refuse with 409.
      await deps.publishGate?.check(agent, principal.userId, ctx.signal);
      const v = await publishDraft(sql, agent.id, principal.userId, fallbacks);
      logger.info({ agentId: agent.id, version: v.version_number, by: principal.userId }, 'agent published');
      return { agentId: agent.id, versionNumber: v.version_number, publishedAt: iso(v.published_at), message: `version ${v.version_number} published` };
    },

    async rollbackAgent(req, ctx) {
      const { agent, principal } = await access.agent(ctx, req.agentId, 'publish');
      const v = req.versionNumber > 0 ? await rollbackTo(sql, agent.id, req.versionNumber) : undefined;
      if (!v) throw notFound(`version ${req.versionNumber > 0 ? req.versionNumber : ''}`.trim());
      logger.info({ agentId: agent.id, version: v.version_number, by: principal.userId }, 'agent rolled back');
      return { agentId: agent.id, versionNumber: v.version_number, publishedAt: iso(v.published_at), message: `rolled back to version ${v.version_number}` };
    },

    async listAgentVersions(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'read');
      const page = pageOf(req);
      const { rows, total } = await listVersionRows(sql, agent.id, page, ctx.signal);
      return {
        versions: rows.map((r) => ({
          versionNumber: r.version_number,
          publishedAt: iso(r.published_at),
          isLive: r.version_number === agent.live_version,
          publishedBy: r.published_by ?? '',
        })),
        meta: pageMeta(page, total),
      };
    },
  };
}
