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

export interface ControlPlane {
  server: RunningServer;
  port: number;
  accounts: AccountsDomain;
  agents: AgentsDomain;
  voice: VoiceDomain;
  close(): Promise<void>;
}

export async function startControlPlane(deps: ControlPlaneDeps, opts: { port?: number; host?: string } = {}): Promise<ControlPlane> {
  const accounts = await createAccountsDomain(deps);
  const agents = createAgentsDomain({ ...deps, auth: accounts.auth });
  const voice = createVoiceDomain({ ...deps, liveConfig: agents.liveConfig });
  const health: Domain = { services: [{ service: HealthService, impl: createHealthService(deps) }], routes: healthRoutes };
  const domains: Domain[] = [health, accounts, agents, voice];
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
    async close() {
      if (closed) return;
      closed = true;
      await server.close();
      for (const d of domains.reverse()) await d.close?.();
    },
  };
}
