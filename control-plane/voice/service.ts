/**
 * `VoiceService` implementation: maps proto messages to the session operations in `sessions.ts`.
 * The same object serves REST (`routes.ts`, raw JSON), Connect and gRPC.
 */
import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import { AppError } from '../../shared/errors.js';
import { VoiceService, type StartVoiceSessionRequest } from '../../shared/gen/voiceplane/v1/voice_pb.js';
import type { StartRequest } from './build-config.js';
import { voiceCapabilities } from './capabilities.js';
import { createVoiceSessions, noNodeReason, type VoiceSessions, type VoiceSessionsDeps } from './sessions.js';

export type VoiceServiceDeps = VoiceSessionsDeps & {
  /** Shared with the domain's programmatic `startSession`; built from the deps when absent. */
  sessions?: VoiceSessions;
};

export function createVoiceService(deps: VoiceServiceDeps): ServiceImpl<typeof VoiceService> {
  const sessions = deps.sessions ?? createVoiceSessions(deps);
  return {
    async startSession(req, ctx) {
      const s = await sessions.start(fromProto(req), ctx.signal);
      return { sessionId: s.session_id, agentId: s.agent_id, welcomeMessage: s.welcome_message, status: s.status, wsUrl: s.ws_url };
    },
    async injectText(req) {
      const r = await sessions.injectText(req.sessionId, req.text, req.role);
      return { sessionId: r.session_id, status: r.status, text: r.text };
    },
    async endSession(req) {
      const r = await sessions.end(req.sessionId);
      return { sessionId: r.session_id, status: r.status };
    },
    capabilities() {
      return voiceCapabilities();
    },
    live() {
      return { status: 'ok', service: 'voice' };
    },
    async ready() {
      const nodes = await sessions.engineNodes();
      // Ready means a start can be placed: a draining node (or one whose records are down) takes none.
      const open = nodes.filter((n) => !n.draining && !n.unavailable);
      if (open.length === 0) throw new AppError('SERVICE_UNAVAILABLE', noNodeReason(nodes), { retryAfterS: 1 });
      const freeSlots = open.reduce((sum, n) => sum + Math.max(0, n.capacity - n.load), 0);
      return { status: 'ok', service: 'voice', engineNodes: open.length, freeSlots };
    },
  };
}

/** Proto (camelCase, defaults for absent fields) -> the wire-shaped StartRequest. */
export function fromProto(m: StartVoiceSessionRequest): StartRequest {
  const req: StartRequest = {
    agent_id: m.agentId,
    user_id: m.userId,
    workspace_id: m.workspaceId,
    welcome_message: m.welcomeMessage,
    welcome_message_override: m.welcomeMessageOverride,
    welcome_mode: m.welcomeMode,
    system_prompt: m.systemPrompt,
    system_message_override: m.systemMessageOverride,
    language: m.language,
    voice: m.voice,
    tts_voice: m.ttsVoice,
    tts_model: m.ttsModel,
    tts_provider: m.ttsProvider,
    dynamic_variables: m.dynamicVariables,
    context: m.context,
    user_background: m.userBackground,
    call_details: m.callDetails ? toJson(ValueSchema, m.callDetails) : undefined,
    knowledge_base_ids: m.knowledgeBaseIds,
    kb_mode: m.kbMode,
    max_turns: m.maxTurns,
    session_metadata: m.sessionMetadata,
    call_direction: m.callDirection,
    connection_type: m.connectionType,
    telephony_provider: m.telephonyProvider,
  };
  return req;
}
