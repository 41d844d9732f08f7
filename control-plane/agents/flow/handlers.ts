/** Conversation flow (draft; saved even when invalid) and the agent's mode. */
import type { ServiceImpl } from '@connectrpc/connect';
import type { AgentConfigService, FlowGraph, FlowVariable } from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import { invalid, notFound } from '../../../shared/errors.js';
import { newId } from '../../../shared/ids.js';
import type { Access } from '../access.js';
import type { AgentsDeps } from '../deps.js';
import { touchAgent, updateAgentRow } from '../core/store.js';
import { AGENT_MODES, type FlowGraphJson, type FlowVariableJson } from '../types.js';
import { oneOf } from '../../http/validate.js';
import { flowErrorsView, flowView } from '../views.js';
import { getFlowRow, putFlowRow } from './store.js';
import { checkFlowInput, validateFlow } from './validate.js';

type Impl = ServiceImpl<typeof AgentConfigService>;

export function graphJson(g: FlowGraph): FlowGraphJson {
  return {
    nodes: g.nodes.map((n) => ({ id: n.id, type: n.type, label: n.label, ...(n.config ? { config: n.config } : {}) })),
    edges: g.edges.map((e) => ({ from: e.from, to: e.to, ...(e.condition ? { condition: e.condition } : {}) })),
    start_node_id: g.startNodeId,
  };
}

function variablesJson(vs: FlowVariable[]): FlowVariableJson[] {
  return vs.map((v) => ({ name: v.name, type: v.type }));
}

export function flowHandlers(deps: AgentsDeps, access: Access): Pick<Impl, 'getFlow' | 'putFlow' | 'validateFlow' | 'getAgentMode' | 'putAgentMode'> {
  const { sql } = deps;
  return {
    async getFlow(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'read');
      return flowView(agent.id, await getFlowRow(sql, agent.id, ctx.signal));
    },

    async putFlow(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      if (!req.graph) throw invalid('graph', 'is required');
      const graph = graphJson(req.graph);
      const variables = variablesJson(req.variables);
      checkFlowInput(graph, variables);
      const row = await putFlowRow(sql, { agent_id: agent.id, id: newId(), graph, variables }, ctx.signal);
      await touchAgent(sql, agent.id, ctx.signal);
      return flowView(agent.id, row);
    },

    async validateFlow(req, ctx) {
      await access.agent(ctx, req.agentId, 'read');
      if (!req.graph) throw invalid('graph', 'is required');
      const graph = graphJson(req.graph);
      checkFlowInput(graph, []);
      const errors = flowErrorsView(validateFlow(graph));
      return { isValid: errors.length === 0, errors, validationErrors: errors };
    },

    async getAgentMode(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'read');
      return { mode: agent.mode };
    },

    async putAgentMode(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      if (!req.mode) throw invalid('mode', `is required (one of ${AGENT_MODES.join(', ')})`);
      const mode = oneOf('mode', req.mode, AGENT_MODES)!;
      const row = await updateAgentRow(sql, agent.id, { mode }, ctx.signal);
      if (!row) throw notFound('agent');
      return { mode: row.mode };
    },
  };
}
