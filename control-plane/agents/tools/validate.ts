/**
 * Tool request checks. Pure (apart from ajv). Produces the validated subset of fields present in
 * the request; the handler merges it with the stored tool and encrypts `auth_token`.
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { AppError, invalid } from '../../../shared/errors.js';
import type { ConnectorActionJson, ConnectorBindingJson } from '../types.js';
import { intInRange, isPlainObject, oneOf, optionalText, tenantUrl } from '../../http/validate.js';
import { createOutboundPolicy, type OutboundPolicy } from '../../../shared/outbound/index.js';
import { checkJsonSchema } from './json-schema.js';
import { placeholderBeforePath } from '../../../shared/agent/tools.js';

export const TOOL_NAME_RE = /^[a-zA-Z0-9_-]{1,64}$/;
export const ACTION_NAME_RE = /^[a-z0-9_]+__[a-z0-9_]+$/;
export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export const AUTH_TYPES = ['none', 'api_key', 'bearer', 'basic'] as const;
const HEADER_NAME_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

export const TOOL_LIMITS = {
  toolsPerAgent: 128,
  descriptionChars: 4000,
  headers: 50,
  headerValueChars: 4096,
  authTokenChars: 4096,
  responsePathChars: 500,
  requestBodyBytes: 64 * 1024,
  actions: 100,
  connectionIdChars: 200,
};

export const TOOL_DEFAULTS = {
  description: '',
  function_schema: {} as JsonObject,
  endpoint_url: '',
  http_method: 'POST',
  headers: {} as Record<string, string>,
  auth_type: 'none',
  request_body: null as JsonValue | null,
  response_path: '',
  timeout_ms: 10_000,
  retry_count: 0,
  is_active: true,
};

/** Proto request fields (camelCase); `requestBody` already converted to JSON (null = clear). */
export interface ToolInput {
  name?: string;
  description?: string;
  functionSchema?: JsonObject;
  endpointUrl?: string;
  httpMethod?: string;
  headers?: JsonObject;
  authType?: string;
  authToken?: string;
  requestBody?: JsonValue;
  responsePath?: string;
  timeoutMs?: number;
  retryCount?: number;
  isActive?: boolean;
  connectorBinding?: ConnectorBindingInput;
}

export interface ConnectorBindingInput {
  connectionId: string;
  actions: Array<{ name: string; description: string; parameters?: JsonObject; fixed?: JsonObject; fixedLabels?: JsonObject }>;
}

export interface ToolPatch {
  name?: string;
  description?: string;
  function_schema?: JsonObject;
  endpoint_url?: string;
  http_method?: string;
  headers?: Record<string, string>;
  auth_type?: string;
  /** Plain text; "" clears. */
  auth_token?: string;
  request_body?: JsonValue | null;
  response_path?: string;
  timeout_ms?: number;
  retry_count?: number;
  is_active?: boolean;
  connector_binding?: ConnectorBindingJson;
}

export function checkToolName(value: string): string {
  if (!TOOL_NAME_RE.test(value)) throw invalid('name', 'must match ^[a-zA-Z0-9_-]{1,64}$');
  return value;
}

/**
 * `connector` (connector tools): refused together with a hand-written `connector_binding` (400).
 * The spec names `connection_id`; an `actions` list alone is refused too, since `connector` binds
 * every action the grant allows and a list sent with it would otherwise be silently ignored.
 * Resolving it to a connection is the connectors domain's (deps.connectors).
 */
export function checkConnectorRequest(connector: string | undefined, binding: ConnectorBindingInput | undefined): void {
  if (connector === undefined || binding === undefined) return;
  const part = binding.connectionId ? 'connector_binding.connection_id' : 'connector_binding';
  throw new AppError('INVALID_REQUEST', `connector: cannot be combined with ${part} (connector binds every action its connection allows)`, {
    details: [{ field: 'connector', problem: `cannot be combined with ${part}` }],
  });
}

/** `policy`: the outbound address policy the endpoint URL must pass (shared/outbound); default: no exceptions. */
export function checkToolInput(req: ToolInput, policy: OutboundPolicy = createOutboundPolicy()): ToolPatch {
  const out: ToolPatch = {};
  if (req.name !== undefined) out.name = checkToolName(req.name);
  if (req.description !== undefined) out.description = optionalText('description', req.description, TOOL_LIMITS.descriptionChars);
  if (req.functionSchema !== undefined) {
    checkJsonSchema('function_schema', req.functionSchema);
    out.function_schema = req.functionSchema;
  }
  if (req.endpointUrl !== undefined) {
    out.endpoint_url = tenantUrl('endpoint_url', req.endpointUrl, policy);
    if (out.endpoint_url && placeholderBeforePath(out.endpoint_url)) {
      throw invalid('endpoint_url', 'a {{placeholder}} may fill the path or the query, never the scheme, host or port (the caller would choose where the tool token goes)');
    }
  }
  if (req.httpMethod !== undefined) out.http_method = oneOf('http_method', req.httpMethod.toUpperCase(), HTTP_METHODS);
  if (req.headers !== undefined) out.headers = checkHeaders(req.headers);
  if (req.authType !== undefined) out.auth_type = oneOf('auth_type', req.authType === '' ? 'none' : req.authType, AUTH_TYPES);
  if (req.authToken !== undefined) {
    if (req.authToken.length > TOOL_LIMITS.authTokenChars) throw invalid('auth_token', `must be at most ${TOOL_LIMITS.authTokenChars} characters`);
    out.auth_token = req.authToken;
  }
  if (req.requestBody !== undefined) out.request_body = checkRequestBody(req.requestBody);
  if (req.responsePath !== undefined) out.response_path = optionalText('response_path', req.responsePath, TOOL_LIMITS.responsePathChars);
  if (req.timeoutMs !== undefined) out.timeout_ms = intInRange('timeout_ms', req.timeoutMs, 1, 60_000);
  if (req.retryCount !== undefined) out.retry_count = intInRange('retry_count', req.retryCount, 0, 5);
  if (req.isActive !== undefined) out.is_active = req.isActive;
  if (req.connectorBinding !== undefined) out.connector_binding = checkConnectorBinding(req.connectorBinding);
  return out;
}

function checkHeaders(h: JsonObject): Record<string, string> {
  const entries = Object.entries(h);
  if (entries.length > TOOL_LIMITS.headers) throw invalid('headers', `at most ${TOOL_LIMITS.headers} headers`);
  const out: Record<string, string> = {};
  for (const [k, v] of entries) {
    if (!HEADER_NAME_RE.test(k)) throw invalid('headers', `${k.slice(0, 64)} is not a valid header name`);
    if (typeof v !== 'string') throw invalid(`headers.${k}`, 'must be a string');
    if (v.length > TOOL_LIMITS.headerValueChars || /[\r\n]/.test(v)) throw invalid(`headers.${k}`, `must be at most ${TOOL_LIMITS.headerValueChars} characters without line breaks`);
    out[k] = v;
  }
  return out;
}

/** Object or string; null clears it. */
function checkRequestBody(v: JsonValue): JsonValue | null {
  if (v === null) return null;
  if (typeof v !== 'string' && !isPlainObject(v)) throw invalid('request_body', 'must be an object or a string');
  if (JSON.stringify(v).length > TOOL_LIMITS.requestBodyBytes) throw invalid('request_body', `must be at most ${TOOL_LIMITS.requestBodyBytes} bytes of JSON`);
  return v;
}

export function checkConnectorBinding(b: ConnectorBindingInput): ConnectorBindingJson {
  const connectionId = b.connectionId.trim();
  if (!connectionId) throw invalid('connector_binding.connection_id', 'is required');
  if (connectionId.length > TOOL_LIMITS.connectionIdChars) throw invalid('connector_binding.connection_id', 'is too long');
  if (b.actions.length === 0) throw invalid('connector_binding.actions', 'must list at least one action');
  if (b.actions.length > TOOL_LIMITS.actions) throw invalid('connector_binding.actions', `at most ${TOOL_LIMITS.actions} actions`);
  const seen = new Set<string>();
  const actions: ConnectorActionJson[] = b.actions.map((a, i) => {
    const at = `connector_binding.actions[${i}]`;
    if (!ACTION_NAME_RE.test(a.name)) throw invalid(`${at}.name`, 'must match ^[a-z0-9_]+__[a-z0-9_]+$ (<provider_id>__<action>)');
    if (seen.has(a.name)) throw invalid(`${at}.name`, `duplicate action ${a.name}`);
    seen.add(a.name);
    if (a.description.length > TOOL_LIMITS.descriptionChars) throw invalid(`${at}.description`, 'is too long');
    if (a.parameters === undefined) throw invalid(`${at}.parameters`, 'is required (a JSON Schema)');
    checkJsonSchema(`${at}.parameters`, a.parameters);
    const action: ConnectorActionJson = { name: a.name, description: a.description, parameters: a.parameters, fixed: a.fixed ?? {} };
    if (a.fixedLabels !== undefined) action.fixed_labels = a.fixedLabels;
    return action;
  });
  return { connection_id: connectionId, actions };
}
