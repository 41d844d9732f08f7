/**
 * Knowledge bases of an agent: bindings of workspace memory items (the agent's workspace only).
 * `always`: the item's content goes into every call's context; `on_demand`: looked up when needed.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { AgentConfigService } from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import { invalid, notFound } from '../../../shared/errors.js';
import { newId } from '../../../shared/ids.js';
import type { Access } from '../access.js';
import type { AgentsDeps } from '../deps.js';
import { touchAgent } from '../core/store.js';
import { KB_MODES } from '../types.js';
import { pathId, oneOf } from '../../http/validate.js';
import { kbView } from '../views.js';
import { deleteKbRow, getKbRow, listKbRows, memoryItemInWorkspace, updateKbRow, upsertKbRow } from './store.js';

type Impl = ServiceImpl<typeof AgentConfigService>;
/** Bindings per agent: enforced by the database (migration 0004); documented here. */
export const MAX_KB_BINDINGS = 100;

export function knowledgeHandlers(
  deps: AgentsDeps,
  access: Access,
): Pick<Impl, 'createKnowledgeBaseBinding' | 'listKnowledgeBaseBindings' | 'updateKnowledgeBaseBinding' | 'deleteKnowledgeBaseBinding'> {
  const { sql } = deps;
  return {
    async createKnowledgeBaseBinding(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      if (!req.knowledgeBaseId) throw invalid('knowledge_base_id', 'is required');
      const mode = oneOf('mode', req.mode ?? 'always', KB_MODES)!;
      const kbId = pathId('knowledge base', req.knowledgeBaseId);
      // Another workspace's memory item looks exactly like a missing one.
      if (!(await memoryItemInWorkspace(sql, agent.workspace_id, kbId, ctx.signal))) throw notFound('knowledge base');
      // MAX_KB_BINDINGS is enforced by the database on insert (409 LIMIT_REACHED, migration 0004).
      const id = await upsertKbRow(sql, { id: newId(), agent_id: agent.id, knowledge_base_id: kbId, mode }, ctx.signal);
      await touchAgent(sql, agent.id, ctx.signal);
      const row = await getKbRow(sql, agent.id, id, ctx.signal);
      if (!row) throw notFound('knowledge base');
      return kbView(row);
    },

    async listKnowledgeBaseBindings(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'read');
      return { knowledgeBases: (await listKbRows(sql, agent.id, ctx.signal)).map(kbView) };
    },

    async updateKnowledgeBaseBinding(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      const existing = await getKbRow(sql, agent.id, pathId('knowledge base binding', req.kbId), ctx.signal);
      if (!existing) throw notFound('knowledge base binding');
      const mode = oneOf('mode', req.mode, KB_MODES);
      await updateKbRow(sql, existing.id, { mode, is_active: req.isActive }, ctx.signal);
      await touchAgent(sql, agent.id, ctx.signal);
      const row = await getKbRow(sql, agent.id, existing.id, ctx.signal);
      if (!row) throw notFound('knowledge base binding');
      return kbView(row);
    },

    async deleteKnowledgeBaseBinding(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      const existing = await getKbRow(sql, agent.id, pathId('knowledge base binding', req.kbId), ctx.signal);
      if (!existing) throw notFound('knowledge base binding');
      await deleteKbRow(sql, existing.id, ctx.signal);
      await touchAgent(sql, agent.id, ctx.signal);
      return { message: 'deleted' };
    },
  };
}
