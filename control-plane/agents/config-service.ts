/**
 * `AgentConfigService`: everything configured on an agent besides its own fields (providers,
 * tools, knowledge bases, flow, mode, telephony) plus versions. One handler module per capability.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { AgentConfigService } from '../../shared/gen/voiceplane/v1/agents_pb.js';
import type { Access } from './access.js';
import type { AgentsDeps } from './deps.js';
import { agentProviderHandlers } from './agent-providers/handlers.js';
import { flowHandlers } from './flow/handlers.js';
import { knowledgeHandlers } from './knowledge/handlers.js';
import { telephonyHandlers } from './telephony/handlers.js';
import { toolHandlers } from './tools/handlers.js';
import { versionHandlers } from './versions/handlers.js';

export function createAgentConfigService(deps: AgentsDeps, access: Access): ServiceImpl<typeof AgentConfigService> {
  return {
    ...agentProviderHandlers(deps, access),
    ...toolHandlers(deps, access),
    ...knowledgeHandlers(deps, access),
    ...flowHandlers(deps, access),
    ...telephonyHandlers(deps, access),
    ...versionHandlers(deps, access),
  };
}
