/**
 * The connectors domain (issue 18, first slice: catalog and key connections; docs/connectors.md).
 * The catalog is loaded and checked here, at start-up: a bad catalog, an adapter missing one of
 * its provider's actions, or a CONNECTOR_<ID>_BASE_URL naming no provider stops the process.
 */
import { ConnectorService } from '../../shared/gen/voiceplane/v1/connectors_pb.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import { CatalogError, loadCatalog, type Catalog } from './catalog.js';
import { CATALOG_DATA } from './catalog-data.js';
import { ADAPTERS } from './providers/index.js';
import type { ProviderAdapter } from './providers/types.js';
import { connectorRoutes } from './routes.js';
import { createConnectorBinder } from './binder.js';
import type { ConnectorBinder } from '../agents/deps.js';
import { createConnectorService } from './service.js';

export type ConnectorsDeps = Pick<ControlPlaneDeps, 'config' | 'logger' | 'clock' | 'sql' | 'secrets'> & {
  auth: Auth;
  outbound: OutboundClient;
  /** Catalog data (tests load a bad one). Default: catalog-data.ts. */
  catalogData?: unknown;
  adapters?: ReadonlyMap<string, ProviderAdapter>;
};

export interface ConnectorsDomain extends Domain {
  catalog: Catalog;
  /** Handed to the agents domain: `POST /agents/{id}/tools` with `connector`. */
  binder: ConnectorBinder;
}

export function createConnectorsDomain(deps: ConnectorsDeps): ConnectorsDomain {
  const catalog = loadCatalog(deps.catalogData ?? CATALOG_DATA);
  const adapters = deps.adapters ?? ADAPTERS;
  checkAdapters(catalog, adapters);
  for (const id of Object.keys(deps.config.connectorBaseUrls)) {
    if (!catalog.find(id)) throw new CatalogError(`CONNECTOR_${id.toUpperCase()}_BASE_URL names no provider of the connector catalog`);
  }
  const impl = createConnectorService({
    ...deps,
    catalog,
    adapters,
    baseUrls: deps.config.connectorBaseUrls,
    timeoutMs: deps.config.connectorTimeoutMs,
  });
  return { catalog, binder: createConnectorBinder(deps.sql, catalog), services: [{ service: ConnectorService, impl }] as ServiceBinding[], routes: connectorRoutes };
}

/** An adapter must serve exactly its provider's catalog actions: a gap would be a 404 at call time. */
export function checkAdapters(catalog: Catalog, adapters: ReadonlyMap<string, ProviderAdapter>): void {
  for (const [id, adapter] of adapters) {
    const entry = catalog.find(id);
    if (!entry || entry.id !== id) throw new CatalogError(`connector adapter ${id} has no catalog entry`);
    const missing = entry.actions.filter((a) => !adapter.actions[a.name]).map((a) => a.name);
    const extra = Object.keys(adapter.actions).filter((n) => !entry.actions.some((a) => a.name === n));
    if (missing.length || extra.length) throw new CatalogError(`connector adapter ${id} does not match its catalog actions (missing: ${missing.join(', ') || '-'}; extra: ${extra.join(', ') || '-'})`);
  }
}
