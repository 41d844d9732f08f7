/**
 * REST routes of the agents domain (envelope family under /api/v1). Lists put the array in `data`
 * (and pagination in `meta`); creates answer 201. Object fields that proto JSON omits when unset
 * (`telephony` of the detail, a tool's `connector_binding`) are written as null.
 */
import { AgentConfigService, AgentService, CreateAgentRequestSchema } from '../../shared/gen/voiceplane/v1/agents_pb.js';
import { defaultRequest, type RestRequestParts, type RestRoute } from '../http/rest.js';
import { invalid } from '../../shared/errors.js';

const AG = '/api/v1/agents';

type Json = Record<string, unknown>;
const list = (key: string, map: (x: Json) => Json = (x) => x) => (json: Json) => ({
  data: ((json[key] as Json[] | undefined) ?? []).map(map),
  meta: json.meta,
});
const tool = (t: Json): Json => ({ ...t, connector_binding: t.connector_binding ?? null, request_body: t.request_body ?? null });
const detail = (json: Json) => ({ data: { ...json, telephony: json.telephony ?? null } });
/** No telephony written yet: no timestamps (null, not the proto's empty strings). */
const telephony = (json: Json) => ({ data: { ...json, created_at: json.created_at || null, updated_at: json.updated_at || null } });
/** No stored flow yet: no id and no timestamps (null, not the proto's empty strings). */
const flow = (json: Json) => ({ data: json.id === '' ? { ...json, id: null, created_at: null, updated_at: null } : json });

/** `/versions/{n}/rollback`: a non-numeric (or absurd) n names no version: 404, not 400. */
function rollbackRequest(parts: { params: Record<string, string> }): unknown {
  const n = parts.params.n;
  const num = /^\d{1,9}$/.test(n) ? Number(n) : -1;
  return { agent_id: parts.params.agent_id, version_number: num };
}

export const agentRoutes: RestRoute[] = [
  { method: 'POST', path: AG, service: AgentService, rpc: 'createAgent', status: 201, request: createAgentRequest },
  { method: 'GET', path: AG, service: AgentService, rpc: 'listAgents', response: list('agents') },
  { method: 'GET', path: `${AG}/lookup/phone`, service: AgentService, rpc: 'lookupAgentByPhone' },
  { method: 'GET', path: `${AG}/:id`, service: AgentService, rpc: 'getAgent', response: detail },
  { method: 'PUT', path: `${AG}/:id`, service: AgentService, rpc: 'updateAgent' },
  { method: 'DELETE', path: `${AG}/:id`, service: AgentService, rpc: 'deleteAgent' },

  { method: 'POST', path: `${AG}/:agent_id/providers`, service: AgentConfigService, rpc: 'upsertAgentProvider' },
  { method: 'GET', path: `${AG}/:agent_id/providers`, service: AgentConfigService, rpc: 'listAgentProviders', response: list('providers') },
  { method: 'DELETE', path: `${AG}/:agent_id/providers/:provider_type`, service: AgentConfigService, rpc: 'deleteAgentProvider' },

  { method: 'POST', path: `${AG}/:agent_id/tools`, service: AgentConfigService, rpc: 'createTool', status: 201, response: (j) => ({ data: tool(j) }) },
  { method: 'GET', path: `${AG}/:agent_id/tools`, service: AgentConfigService, rpc: 'listTools', response: list('tools', tool) },
  { method: 'GET', path: `${AG}/:agent_id/tools/:tool_id`, service: AgentConfigService, rpc: 'getTool', response: (j) => ({ data: tool(j) }) },
  { method: 'PUT', path: `${AG}/:agent_id/tools/:tool_id`, service: AgentConfigService, rpc: 'updateTool', response: (j) => ({ data: tool(j) }) },
  { method: 'DELETE', path: `${AG}/:agent_id/tools/:tool_id`, service: AgentConfigService, rpc: 'deleteTool' },

  { method: 'POST', path: `${AG}/:agent_id/knowledge-bases`, service: AgentConfigService, rpc: 'createKnowledgeBaseBinding', status: 201 },
  { method: 'GET', path: `${AG}/:agent_id/knowledge-bases`, service: AgentConfigService, rpc: 'listKnowledgeBaseBindings', response: list('knowledge_bases') },
  { method: 'PUT', path: `${AG}/:agent_id/knowledge-bases/:kb_id`, service: AgentConfigService, rpc: 'updateKnowledgeBaseBinding' },
  { method: 'DELETE', path: `${AG}/:agent_id/knowledge-bases/:kb_id`, service: AgentConfigService, rpc: 'deleteKnowledgeBaseBinding' },

  { method: 'GET', path: `${AG}/:agent_id/flow`, service: AgentConfigService, rpc: 'getFlow', response: flow },
  { method: 'PUT', path: `${AG}/:agent_id/flow`, service: AgentConfigService, rpc: 'putFlow' },
  { method: 'POST', path: `${AG}/:agent_id/flow/validate`, service: AgentConfigService, rpc: 'validateFlow' },
  { method: 'GET', path: `${AG}/:agent_id/mode`, service: AgentConfigService, rpc: 'getAgentMode' },
  { method: 'PUT', path: `${AG}/:agent_id/mode`, service: AgentConfigService, rpc: 'putAgentMode' },

  { method: 'PUT', path: `${AG}/:agent_id/telephony`, service: AgentConfigService, rpc: 'putAgentTelephony', response: telephony },
  { method: 'GET', path: `${AG}/:agent_id/telephony`, service: AgentConfigService, rpc: 'getAgentTelephony', response: telephony },

  { method: 'POST', path: `${AG}/:agent_id/versions/publish`, service: AgentConfigService, rpc: 'publishAgent', bodyType: 'none' },
  { method: 'POST', path: `${AG}/:agent_id/versions/:n/rollback`, service: AgentConfigService, rpc: 'rollbackAgent', bodyType: 'none', request: rollbackRequest },
  { method: 'GET', path: `${AG}/:agent_id/versions`, service: AgentConfigService, rpc: 'listAgentVersions', response: list('versions') },
];

/**
 * The spec accepts `connectors` on update only (binding needs the agent, and connector rules):
 * on create the key would be dropped as unknown and the agent made without them, so a non-empty
 * list is refused instead.
 */
function createAgentRequest(parts: RestRequestParts): unknown {
  const body = parts.body as Record<string, unknown> | undefined;
  const connectors = body && typeof body === 'object' && !Array.isArray(body) ? body.connectors : undefined;
  if (Array.isArray(connectors) ? connectors.length > 0 : connectors !== undefined && connectors !== null) {
    throw invalid('connectors', 'is accepted on update only: create the agent, then PUT /agents/{id} with connectors');
  }
  return defaultRequest(CreateAgentRequestSchema, parts);
}
