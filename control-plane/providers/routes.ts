/** REST routes of the provider registry (envelope family). `/providers/health` belongs to the health domain. */
import { ProviderRegistryService } from '../../shared/gen/voiceplane/v1/providers_pb.js';
import type { RestRoute } from '../http/rest.js';
import { route } from '../agents/routes.js';

const P = '/api/v1/providers';
const list = (key: string) => (json: Record<string, unknown>) => ({ data: json[key] ?? [], meta: json.meta });

export const providerRoutes: RestRoute[] = [
  route({ method: 'POST', path: P, service: ProviderRegistryService, rpc: 'createProviderDefinition', status: 201 }),
  route({ method: 'GET', path: P, service: ProviderRegistryService, rpc: 'listProviderDefinitions', response: list('providers') }),
  route({ method: 'POST', path: `${P}/user-config`, service: ProviderRegistryService, rpc: 'createUserProviderConfig', status: 201 }),
  route({ method: 'GET', path: `${P}/user-config`, service: ProviderRegistryService, rpc: 'listUserProviderConfigs', response: list('configs') }),
  route({ method: 'GET', path: `${P}/resolve`, service: ProviderRegistryService, rpc: 'resolveProvider' }),
  route({ method: 'GET', path: `${P}/:id`, service: ProviderRegistryService, rpc: 'getProviderDefinition' }),
];
