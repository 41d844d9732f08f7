/**
 * The provider registry. Hosted by the agents domain (`createAgentsDomain` adds its service and
 * routes), since resolution reads agent providers and publishing reads user configurations.
 */
export { createProviderRegistryService } from './service.js';
export { providerRoutes } from './routes.js';
export { resolveProvider, type ResolvedProviderRow, type ResolveSource } from './resolve.js';
