/**
 * REST routes of the agents domain (envelope family under /api/v1). Lists put the array in `data`
 * (and pagination in `meta`); creates answer 201. Object fields that proto JSON omits when unset
 * (`telephony` of the detail, a tool's `connector_binding`) are written as null.
 */
import type { DescMessage, DescService } from '@bufbuild/protobuf';
import { AgentConfigService, AgentService } from '../../shared/gen/voiceplane/v1/agents_pb.js';
import type { RestRoute } from '../http/rest.js';
import { restRequest } from './rest-request.js';

const AG = '/api/v1/agents';

type Json = Record<string, unknown>;
const list = (key: string, map: (x: Json) => Json = (x) => x) => (json: Json) => ({
  data: ((json[key] as Json[] | undefined) ?? []).map(map),
  meta: json.meta,
});
const tool = (t: Json): Json => ({ ...t, connector_binding: t.connector_binding ?? null, request_body: t.request_body ?? null });
const detail = (json: Json) => ({ data: { ...json, telephony: json.telephony ?? null } });

export function methodInput(service: DescService, rpc: string): DescMessage {
  const m = service.methods.find((x) => x.localName === rpc);
  if (!m) throw new Error(`${service.typeName} has no method ${rpc}`);
  return m.input;
}

/** Every route decodes through `restRequest` (shape check of object fields) unless it brings its own. */
export function route(r: RestRoute): RestRoute {
  return { ...r, request: r.request ?? restRequest(methodInput(r.service, r.rpc)) };
}

/** `/versions/{n}/rollback`: a non-numeric (or absurd) n names no version: 404, not 400. */
function rollbackRequest(parts: { params: Record<string, string> }): unknown {
  const n = parts.params.n;
  const num = /^\d{1,9}$/.test(n) ? Number(n) : -1;
  return { agent_id: parts.params.agent_id, version_number: num };
}

export const agentRoutes: RestRoute[] = [
  route({ method: 'POST', path: AG, service: AgentService, rpc: 'createAgent', status: 201 }),
  route({ method: 'GET', path: AG, service: AgentService, rpc: 'listAgents', response: list('agents') }),
  route({ method: 'GET', path: `${AG}/lookup/phone`, service: AgentService, rpc: 'lookupAgentByPhone' }),
  route({ method: 'GET', path: `${AG}/:id`, service: AgentService, rpc: 'getAgent', response: detail }),
  route({ method: 'PUT', path: `${AG}/:id`, service: AgentService, rpc: 'updateAgent' }),
  route({ method: 'DELETE', path: `${AG}/:id`, service: AgentService, rpc: 'deleteAgent' }),

  route({ method: 'POST', path: `${AG}/:agent_id/providers`, service: AgentConfigService, rpc: 'upsertAgentProvider' }),
  route({ method: 'GET', path: `${AG}/:agent_id/providers`, service: AgentConfigService, rpc: 'listAgentProviders', response: list('providers') }),
  route({ method: 'DELETE', path: `${AG}/:agent_id/providers/:provider_type`, service: AgentConfigService, rpc: 'deleteAgentProvider' }),

  route({ method: 'POST', path: `${AG}/:agent_id/tools`, service: AgentConfigService, rpc: 'createTool', status: 201, response: (j) => ({ data: tool(j) }) }),
  route({ method: 'GET', path: `${AG}/:agent_id/tools`, service: AgentConfigService, rpc: 'listTools', response: list('tools', tool) }),
  route({ method: 'GET', path: `${AG}/:agent_id/tools/:tool_id`, service: AgentConfigService, rpc: 'getTool', response: (j) => ({ data: tool(j) }) }),
  route({ method: 'PUT', path: `${AG}/:agent_id/tools/:tool_id`, service: AgentConfigService, rpc: 'updateTool', response: (j) => ({ data: tool(j) }) }),
  route({ method: 'DELETE', path: `${AG}/:agent_id/tools/:tool_id`, service: AgentConfigService, rpc: 'deleteTool' }),

  route({ method: 'POST', path: `${AG}/:agent_id/knowledge-bases`, service: AgentConfigService, rpc: 'createKnowledgeBaseBinding', status: 201 }),
  route({ method: 'GET', path: `${AG}/:agent_id/knowledge-bases`, service: AgentConfigService, rpc: 'listKnowledgeBaseBindings', response: list('knowledge_bases') }),
  route({ method: 'PUT', path: `${AG}/:agent_id/knowledge-bases/:kb_id`, service: AgentConfigService, rpc: 'updateKnowledgeBaseBinding' }),
  route({ method: 'DELETE', path: `${AG}/:agent_id/knowledge-bases/:kb_id`, service: AgentConfigService, rpc: 'deleteKnowledgeBaseBinding' }),

  route({ method: 'GET', path: `${AG}/:agent_id/flow`, service: AgentConfigService, rpc: 'getFlow' }),
  route({ method: 'PUT', path: `${AG}/:agent_id/flow`, service: AgentConfigService, rpc: 'putFlow' }),
  route({ method: 'POST', path: `${AG}/:agent_id/flow/validate`, service: AgentConfigService, rpc: 'validateFlow' }),
  route({ method: 'GET', path: `${AG}/:agent_id/mode`, service: AgentConfigService, rpc: 'getAgentMode' }),
  route({ method: 'PUT', path: `${AG}/:agent_id/mode`, service: AgentConfigService, rpc: 'putAgentMode' }),

  route({ method: 'PUT', path: `${AG}/:agent_id/telephony`, service: AgentConfigService, rpc: 'putAgentTelephony' }),
  route({ method: 'GET', path: `${AG}/:agent_id/telephony`, service: AgentConfigService, rpc: 'getAgentTelephony' }),

  route({ method: 'POST', path: `${AG}/:agent_id/versions/publish`, service: AgentConfigService, rpc: 'publishAgent', bodyType: 'none' }),
  route({ method: 'POST', path: `${AG}/:agent_id/versions/:n/rollback`, service: AgentConfigService, rpc: 'rollbackAgent', bodyType: 'none', request: rollbackRequest }),
  route({ method: 'GET', path: `${AG}/:agent_id/versions`, service: AgentConfigService, rpc: 'listAgentVersions', response: list('versions') }),
];
