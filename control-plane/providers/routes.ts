/** REST routes of the provider registry (envelope family). `/providers/health` belongs to the health domain. */
import { ProviderRegistryService } from '../../shared/gen/voiceplane/v1/providers_pb.js';
import type { RestRoute } from '../http/rest.js';

const P = '/api/v1/providers';
const list = (key: string) => (json: Record<string, unknown>) => ({ data: json[key] ?? [], meta: json.meta });

export const providerRoutes: RestRoute[] = [
  { method: 'POST', path: P, service: ProviderRegistryService, rpc: 'createProviderDefinition', status: 201 },
  { method: 'GET', path: P, service: ProviderRegistryService, rpc: 'listProviderDefinitions', response: list('providers') },
  { method: 'POST', path: `${P}/user-config`, service: ProviderRegistryService, rpc: 'createUserProviderConfig', status: 201 },
  { method: 'GET', path: `${P}/user-config`, service: ProviderRegistryService, rpc: 'listUserProviderConfigs', response: list('configs') },
  { method: 'GET', path: `${P}/resolve`, service: ProviderRegistryService, rpc: 'resolveProvider' },
  { method: 'GET', path: `${P}/:id`, service: ProviderRegistryService, rpc: 'getProviderDefinition' },
];
