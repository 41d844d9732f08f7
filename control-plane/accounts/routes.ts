/**
 * REST routes of the accounts domain (envelope family under /api/v1). Lists put the array in
 * `data` and pagination in `meta`. Creates answer 201.
 */
import { ApiKeyService, AuthService, DevMailboxService, MemoryService, WorkspaceService } from '../../shared/gen/voiceplane/v1/accounts_pb.js';
import { AppError, invalid } from '../../shared/errors.js';
import type { RestRequestParts, RestRoute } from '../http/rest.js';

const A = '/api/v1/auth';
/**
 * Memory writes: body plus path params, with `metadata` checked here because a non-object sent to
 * a google.protobuf.Struct fails decoding without naming the field.
 */
function memoryBody(parts: RestRequestParts): unknown {
  const body = parts.body === undefined ? {} : parts.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new AppError('INVALID_BODY', 'request body must be a JSON object');
  const metadata = (body as Record<string, unknown>).metadata;
  if (metadata !== undefined && metadata !== null && (typeof metadata !== 'object' || Array.isArray(metadata))) {
    throw invalid('metadata', 'must be an object');
  }
  return { ...body, ...parts.params };
}

const list = (key: string) => (json: Record<string, unknown>) => ({ data: json[key], meta: json.meta });

export const accountRoutes: RestRoute[] = [
  { method: 'POST', path: `${A}/register`, service: AuthService, rpc: 'register' },
  { method: 'POST', path: `${A}/verify-otp`, service: AuthService, rpc: 'verifyOtp' },
  { method: 'POST', path: `${A}/resend-otp`, service: AuthService, rpc: 'resendOtp' },
  { method: 'POST', path: `${A}/login`, service: AuthService, rpc: 'login', jsonContentTypeOnly: true },
  { method: 'POST', path: `${A}/refresh`, service: AuthService, rpc: 'refresh' },
  // The token travels only in X-Auth-Token (read from the headers by the service); the body is ignored.
  { method: 'POST', path: `${A}/validate`, service: AuthService, rpc: 'validate', request: () => ({}) },
  { method: 'GET', path: `${A}/me`, service: AuthService, rpc: 'me' },

  { method: 'POST', path: `${A}/api-keys`, service: ApiKeyService, rpc: 'createApiKey', status: 201 },
  { method: 'GET', path: `${A}/api-keys`, service: ApiKeyService, rpc: 'listApiKeys', response: list('api_keys') },
  { method: 'DELETE', path: `${A}/api-keys/:id`, service: ApiKeyService, rpc: 'revokeApiKey' },

  { method: 'POST', path: `${A}/workspaces`, service: WorkspaceService, rpc: 'createWorkspace', status: 201 },
  { method: 'GET', path: `${A}/workspaces`, service: WorkspaceService, rpc: 'listWorkspaces', response: list('workspaces') },
  { method: 'GET', path: `${A}/workspaces/:id`, service: WorkspaceService, rpc: 'getWorkspace' },
  { method: 'PUT', path: `${A}/workspaces/:id`, service: WorkspaceService, rpc: 'updateWorkspace' },
  { method: 'DELETE', path: `${A}/workspaces/:id`, service: WorkspaceService, rpc: 'deleteWorkspace' },
  { method: 'GET', path: `${A}/workspaces/:id/members`, service: WorkspaceService, rpc: 'listMembers', response: list('members') },
  { method: 'POST', path: `${A}/workspaces/:id/members`, service: WorkspaceService, rpc: 'addMember', status: 201 },
  { method: 'DELETE', path: `${A}/workspaces/:id/members/:user_id`, service: WorkspaceService, rpc: 'removeMember' },

  { method: 'POST', path: `${A}/workspaces/:workspace_id/memory`, service: MemoryService, rpc: 'createMemoryItem', status: 201, request: memoryBody },
  { method: 'GET', path: `${A}/workspaces/:workspace_id/memory`, service: MemoryService, rpc: 'listMemoryItems', response: list('items') },
  { method: 'PUT', path: `${A}/workspaces/:workspace_id/memory/:memory_id`, service: MemoryService, rpc: 'updateMemoryItem', request: memoryBody },
  { method: 'DELETE', path: `${A}/workspaces/:workspace_id/memory/:memory_id`, service: MemoryService, rpc: 'deleteMemoryItem' },
];

/**
 * Only registered while the development mailbox is active (never in production); read with the
 * organization API key only (index.ts `devMailboxService`).
 */
export const devMailboxRoutes: RestRoute[] = [
  { method: 'GET', path: '/api/v1/dev/mailbox', service: DevMailboxService, rpc: 'listMessages', response: list('messages') },
];
