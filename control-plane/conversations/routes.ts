/**
 * REST routes of the conversations domain (envelope family under /api/v1/conversations). Static
 * segments win over parameters (`/conversations/summary` before `/conversations/:id`). The SSE
 * stream and the signed audio links are raw handlers (see index.ts), not table routes.
 */
import { ConversationService } from '../../shared/gen/voiceplane/v1/conversations_pb.js';
import type { RestRoute } from '../http/rest.js';

const C = '/api/v1/conversations';
const S = ConversationService;

export const conversationRoutes: RestRoute[] = [
  {
    method: 'GET',
    path: C,
    service: S,
    rpc: 'listConversations',
    response: (json) => ({ data: json.conversations, meta: json.meta }),
  },
  { method: 'POST', path: C, service: S, rpc: 'createConversation', status: 201 },
  { method: 'GET', path: `${C}/summary`, service: S, rpc: 'getConversationSummary' },
  { method: 'GET', path: `${C}/by-session/:session_id`, service: S, rpc: 'getConversationBySession' },
  { method: 'GET', path: `${C}/agent/:agent_id/count`, service: S, rpc: 'countAgentConversations' },
  { method: 'POST', path: `${C}/messages`, service: S, rpc: 'createConversationMessage', status: 201 },
  { method: 'PATCH', path: `${C}/messages/:message_id`, service: S, rpc: 'updateConversationMessage' },
  { method: 'POST', path: `${C}/tool-calls`, service: S, rpc: 'createToolCall', status: 201 },
  // Liveness needs no bearer; `ready` also checks the database (503 when it fails).
  { method: 'GET', path: `${C}/health`, service: S, rpc: 'live' },
  { method: 'GET', path: `${C}/healthz`, service: S, rpc: 'live' },
  { method: 'GET', path: `${C}/live`, service: S, rpc: 'live' },
  { method: 'GET', path: `${C}/ready`, service: S, rpc: 'ready' },
  { method: 'GET', path: `${C}/:id`, service: S, rpc: 'getConversation' },
  { method: 'PUT', path: `${C}/:id`, service: S, rpc: 'updateConversation' },
  { method: 'GET', path: `${C}/:id/messages`, service: S, rpc: 'listConversationMessages', response: (json) => ({ data: json.messages }) },
];
