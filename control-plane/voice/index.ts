/**
 * The voice domain (issue 4, "Sessions and routing"): session start, text/end routed to the owning
 * engine node through the registry, capabilities and voice health. `startSession` is the entry
 * point telephony uses for inbound and outbound calls.
 */
import { VoiceService } from '../../shared/gen/voiceplane/v1/voice_pb.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import type { LiveAgentConfig } from './agent-view.js';
import type { StartRequest } from './build-config.js';
import { voiceRoutes } from './routes.js';
import { createVoiceService } from './service.js';
import { createVoiceSessions, type StartedSession, type VoiceSessions, type VoiceSessionsDeps } from './sessions.js';

export type { AgentLiveView, LiveAgentConfig, LiveConnections } from './agent-view.js';
export { toAgentLiveView } from './agent-view.js';
export type { StartRequest } from './build-config.js';
export { buildSessionConfig } from './build-config.js';
export type { StartedSession, VoiceSessions } from './sessions.js';

export interface VoiceDomain extends Domain {
  /** Same as `POST /voice/sessions/start`, plus `call_id` and the chosen node; throws AppError. */
  startSession(req: StartRequest, signal?: AbortSignal): Promise<StartedSession>;
  sessions: VoiceSessions;
}

export type VoiceDomainDeps = Pick<ControlPlaneDeps, 'registry' | 'clock' | 'logger'> &
  Partial<ControlPlaneDeps> & {
    /** The agents domain's `liveConfig`: NOT_FOUND for an unknown agent, CONFLICT when never published. */
    liveConfig: (agentId: string, signal?: AbortSignal) => Promise<LiveAgentConfig | undefined | null>;
  } & Pick<VoiceSessionsDeps, 'connectWindowMs' | 'commandTimeoutMs' | 'prewarmTimeoutMs' | 'liveConnections' | 'nodeListTtlMs'>;

export function createVoiceDomain(deps: VoiceDomainDeps): VoiceDomain {
  const sessions = createVoiceSessions(deps);
  let closed = false;
  return {
    services: [{ service: VoiceService, impl: createVoiceService({ ...deps, sessions }) }],
    routes: voiceRoutes,
    sessions,
    startSession: (req, signal) => sessions.start(req, signal),
    async close() {
      if (closed) return;
      closed = true;
      await sessions.close();
    },
  };
}
