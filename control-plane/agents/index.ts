/**
 * The agents domain: agent configuration (draft), published versions and the live configuration
 * resolver, plus the provider registry. REST and gRPC/Connect share one implementation.
 */
import { AgentConfigService, AgentService } from '../../shared/gen/voiceplane/v1/agents_pb.js';
import { ProviderRegistryService } from '../../shared/gen/voiceplane/v1/providers_pb.js';
import type { Domain } from '../domain.js';
import type { ServiceBinding } from '../http/server.js';
import { createProviderRegistryService, providerRoutes } from '../providers/index.js';
import { createAccess } from './access.js';
import { createAgentConfigService } from './config-service.js';
import { createAgentService } from './core/service.js';
import type { AgentsDeps } from './deps.js';
import { agentRoutes } from './routes.js';
import type { LiveAgentConfig } from './types.js';
import { createLiveResolver } from './versions/live.js';
import { AgentViewCache, withAgentNotices } from './view-cache.js';

export type { AgentsDeps } from './deps.js';
export type { LiveAgentConfig, LiveProvider, LiveTool, LiveTelephony, LiveKnowledgeItem, ProviderType } from './types.js';
export { NotPublishedError } from './versions/live.js';

export interface AgentsDomain extends Domain {
  /**
   * The live (published) configuration of an agent, secrets decrypted: internal use only, never a
   * response body or a log line. Throws NOT_FOUND for an unknown agent and `NotPublishedError`
   * (code CONFLICT) when it was never published.
   */
  liveConfig: (agentId: string, signal?: AbortSignal) => Promise<LiveAgentConfig>;
  /** Inbound calls (no auth): the live configuration of the agent bound to this E.164 number. */
  findAgentByNumber: (phoneNumber: string, signal?: AbortSignal) => Promise<LiveAgentConfig | undefined>;
}

export function createAgentsDomain(deps: AgentsDeps): AgentsDomain {
  const access = createAccess(deps);
  const live = createLiveResolver(deps);
  const views = new AgentViewCache<object>({ ttlMs: deps.config.cacheTtlMs, clock: deps.clock }, deps.registry?.invalidations);
  // Nothing is cached until the subscription is live (a notice could be missed before).
  const started = views.start().catch((err: unknown) => deps.logger.warn({ err }, 'agent view cache disabled: no change notices'));
  // The live configuration of each agent, for session starts (one Postgres read and a decrypt per
  // start before: ~20 % of the control plane's CPU in the routing bench). Same notices as the
  // views: publish and rollback are AgentConfigService methods, memory item edits and deletes
  // publish a workspace notice. Decrypted secrets stay in process memory for at most the TTL.
  const liveConfigs = new AgentViewCache<LiveAgentConfig>({ ttlMs: deps.config.cacheTtlMs, clock: deps.clock }, deps.registry?.invalidations);
  const liveStarted = liveConfigs.start().catch((err: unknown) => deps.logger.warn({ err }, 'live configuration cache disabled: no change notices'));
  async function liveConfig(agentId: string): Promise<LiveAgentConfig> {
    // The shared load runs without a caller's signal: one caller hanging up must not fail the
    // others waiting on the same read (it is one bounded query).
    const entry = await liveConfigs.load(agentId.toLowerCase(), async () => {
      const config = await live.liveConfig(agentId);
      return { workspaceId: config.workspace_id, view: config };
    });
    return entry!.view;
  }
  const services = [
    { service: AgentService, impl: withAgentNotices(AgentService, createAgentService(deps, access, views), views, deps.logger) },
    { service: AgentConfigService, impl: withAgentNotices(AgentConfigService, createAgentConfigService(deps, access), views, deps.logger) },
    { service: ProviderRegistryService, impl: createProviderRegistryService(deps, access) },
  ] as ServiceBinding[];
  return {
    services,
    routes: [...agentRoutes, ...providerRoutes],
    async close() {
      await Promise.all([started, liveStarted]);
      await Promise.all([views.stop(), liveConfigs.stop()]);
    },
    liveConfig,
    findAgentByNumber: live.findAgentByNumber,
  };
}
