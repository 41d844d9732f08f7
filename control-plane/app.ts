/**
 * Builds the control plane from its domains and serves it on one port. `main.ts` and the
 * integration tests both go through here, so tests exercise the real wiring.
 */
import { HealthService } from '../shared/gen/voiceplane/v1/health_pb.js';
import { createHealthService } from './health/service.js';
import { healthRoutes } from './health/routes.js';
import { startControlPlaneServer, type RunningServer } from './http/server.js';
import type { ControlPlaneDeps, Domain } from './domain.js';
import { createAccountsDomain, type AccountsDomain } from './accounts/index.js';
import { createAgentsDomain, type AgentsDomain } from './agents/index.js';
import { createVoiceDomain, type VoiceDomain } from './voice/index.js';
import { createTelephonyDomain, type TelephonyDomain } from './telephony/index.js';
import { createConversationsDomain, type ConversationsDomain } from './conversations/index.js';
import type { TranscriptBus } from '../media-engine/records/bus.js';
import { createAnnotator } from './conversations/annotate.js';
import type { CallEvent } from './telephony/live-calls.js';

export interface ControlPlane {
  server: RunningServer;
  port: number;
  accounts: AccountsDomain;
  agents: AgentsDomain;
  voice: VoiceDomain;
  telephony: TelephonyDomain;
  conversations: ConversationsDomain;
  close(): Promise<void>;
}

export interface ControlPlaneOptions {
  port?: number;
  host?: string;
  /** Live transcript bus shared with an in-process engine's record writer (single-process mode). */
  bus?: TranscriptBus;
}

export async function startControlPlane(deps: ControlPlaneDeps, opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const accounts = await createAccountsDomain(deps);
  const agents = createAgentsDomain({ ...deps, auth: accounts.auth });
  const voice = createVoiceDomain({ ...deps, liveConfig: agents.liveConfig });
  const conversations = await createConversationsDomain({ ...deps, auth: accounts.auth, liveConfig: agents.liveConfig, bus: opts.bus });
  const health: Domain = { services: [{ service: HealthService, impl: createHealthService(deps) }], routes: healthRoutes };
  // Carrier callbacks (final status, AMD verdict, recording) land on the call's conversation too.
  const annotator = createAnnotator(deps);
  const onCallEvent = (ev: CallEvent) => {
    const patch = callEventPatch(ev);
    if (patch && ev.call.session_id) annotator.annotate(ev.call.session_id, patch);
  };
  const telephony = createTelephonyDomain({ ...deps, auth: accounts.auth, liveConfig: agents.liveConfig, findAgentByNumber: agents.findAgentByNumber, voice, onCallEvent });
  const domains: Domain[] = [health, accounts, agents, voice, telephony, conversations];
  const server = await startControlPlaneServer({
    port: opts.port ?? deps.config.httpPort,
    host: opts.host ?? deps.config.host,
    logger: deps.logger,
    maxBodyBytes: deps.config.maxBodyBytes,
    services: domains.flatMap((d) => d.services),
    routes: domains.flatMap((d) => d.routes),
    rawHandlers: domains.flatMap((d) => d.rawHandlers ?? []),
  });
  let closed = false;
  return {
    server,
    port: server.port,
    accounts,
    agents,
    voice,
    telephony,
    conversations,
    async close() {
      if (closed) return;
      closed = true;
      await server.close();
      annotator.close();
      for (const d of domains.reverse()) await d.close?.();
    },
  };
}

function callEventPatch(ev: CallEvent): Record<string, unknown> | undefined {
  const c = ev.call;
  switch (ev.type) {
    case 'ended':
      return { call_id: c.call_id, call_status: ev.detail ?? 'completed', carrier_duration_seconds: ev.durationS ?? null, provider_call_sid: c.provider_call_sid };
    case 'amd':
      return { amd_verdict: c.amd_verdict || ev.detail };
    case 'recording':
      return { recording_url: c.recording_url || ev.detail, recording_sid: c.recording_sid };
    case 'transferred':
      return { transferred_to: c.transferred_to || ev.detail };
    default:
      return undefined;
  }
}
