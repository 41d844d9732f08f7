/**
 * REST routes of the Connectors API (spec doc 1; `{detail}` family: listings `{data: [...]}`,
 * errors `{detail}`). Credential and action bodies are the whole request body; path params win.
 */
import { jsonObjectBody } from '../http/rest.js';
import { ConnectorService } from '../../shared/gen/voiceplane/v1/connectors_pb.js';
import type { RestRoute } from '../http/rest.js';
import { invalid } from '../../shared/errors.js';

const C = '/api/v1/connectors';
const S = ConnectorService;
const W = `${C}/workspace/:workspace_id`;

/** Optional fields the spec shows as `null` rather than absent. */
function nullable(conn: Record<string, unknown>): Record<string, unknown> {
  return { ...conn, health_detail: conn.health_detail ?? null, health_checked_at: conn.health_checked_at ?? null, token_expires_at: conn.token_expires_at ?? null };
}

const list = (key: string, map: (x: Record<string, unknown>) => unknown = (x) => x) => (json: Record<string, unknown>) => ({
  data: { data: ((json[key] as Record<string, unknown>[] | undefined) ?? []).map(map) },
});

export const connectorRoutes: RestRoute[] = [
  { method: 'GET', path: `${C}/connectors`, service: S, rpc: 'listCatalog', response: list('providers') },
  { method: 'GET', path: `${W}/connections`, service: S, rpc: 'listConnections', response: list('connections', nullable) },
  {
    method: 'POST',
    path: `${W}/connect/:provider`,
    service: S,
    rpc: 'startOAuth',
    request: ({ params, body }) => {
      const products = jsonObjectBody(body).products;
      return { workspace_id: params.workspace_id, provider: params.provider, ...(products === undefined ? {} : { products }) };
    },
  },
  {
    method: 'POST',
    path: `${W}/connect-key/:provider`,
    service: S,
    rpc: 'connectKey',
    request: ({ params, body }) => ({ workspace_id: params.workspace_id, provider: params.provider, credentials: jsonObjectBody(body) }),
    response: (json) => ({ data: nullable(json) }),
  },
  { method: 'GET', path: `${W}/connections/:connection_id/agents`, service: S, rpc: 'listConnectionAgents', response: list('agents') },
  { method: 'DELETE', path: `${W}/connections/:connection_id`, service: S, rpc: 'disconnect' },
  // Legacy agent connector routes (bearer required here, docs/connectors.md "Choices").
  {
    method: 'GET',
    path: `${C}/agents/:agent_id/connectors`,
    service: S,
    rpc: 'listAgentConnectors',
    response: list('connectors', (x) => {
      const { connection, ...tool } = x as { connection: Record<string, unknown>; bound_actions?: unknown };
      return { ...nullable(connection), ...tool, bound_actions: tool.bound_actions ?? [] };
    }),
  },
  {
    method: 'POST',
    path: `${C}/agents/:agent_id/connectors`,
    service: S,
    rpc: 'enableAgentConnector',
    request: ({ params, body }) => {
      const id = (body as { connection_id?: unknown } | undefined)?.connection_id;
      if (id === undefined || id === null || id === '') throw invalid('connection_id', 'is required');
      if (typeof id !== 'string') throw invalid('connection_id', 'must be a string');
      return { agent_id: params.agent_id, connection_id: id };
    },
  },
  { method: 'DELETE', path: `${C}/agents/:agent_id/connectors/:connection_id`, service: S, rpc: 'disableAgentConnector' },
  {
    method: 'GET',
    path: `${W}/connections/:connection_id/resources/:kind`,
    service: S,
    rpc: 'listResources',
    response: (json) => ({ data: { data: json.data ?? [] } }),
  },
  // The vendor's redirect: always 302 (the service sets Location), never an error page of ours.
  {
    method: 'GET',
    path: `${C}/oauth/callback`,
    service: S,
    rpc: 'oAuthCallback',
    status: 302,
    request: ({ query }) => {
      const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) ?? '';
      return { state: one(query.state), code: one(query.code), error: one(query.error), error_description: one(query.error_description) };
    },
  },
  {
    method: 'POST',
    path: `${C}/execute/:connection_id/:action`,
    service: S,
    rpc: 'executeAction',
    request: ({ params, body }) => ({ connection_id: params.connection_id, action: params.action, body: jsonObjectBody(body) }),
    response: (json) => ({ data: { data: json.data ?? null } }),
  },
];
