/**
 * The connector runtime both processes load at start-up: the catalog (checked), the adapters
 * (checked against it) and the base-URL overrides. A bad catalog, an adapter missing one of its
 * provider's actions throws CatalogError; a CONNECTOR_<ID>_BASE_URL naming no provider, ConfigError.
 */
import { ConfigError } from '../config.js';
import { CatalogError, loadCatalog, type Catalog } from './catalog.js';
import { CATALOG_DATA } from './catalog-data.js';
import { ADAPTERS } from './providers/index.js';
import type { ProviderAdapter } from './providers/types.js';

export interface ConnectorRuntime {
  catalog: Catalog;
  adapters: ReadonlyMap<string, ProviderAdapter>;
}

export function loadConnectorRuntime(opts: { catalogData?: unknown; adapters?: ReadonlyMap<string, ProviderAdapter>; baseUrls: Readonly<Record<string, string>> }): ConnectorRuntime {
  const catalog = loadCatalog(opts.catalogData ?? CATALOG_DATA);
  const adapters = opts.adapters ?? ADAPTERS;
  checkAdapters(catalog, adapters);
  // An override names a provider (CONNECTOR_<ID>_BASE_URL), one of its adapter's extra hosts
  // (CONNECTOR_<ID>_<NAME>_BASE_URL) or its OAuth host (CONNECTOR_<ID>_OAUTH_BASE_URL).
  const extraHosts = new Set([...adapters.values()].flatMap((a) => [...Object.keys(a.extraBaseUrls ?? {}), ...(a.oauthBaseUrl ? ['oauth'] : [])].map((name) => `${a.id}_${name}`)));
  for (const id of Object.keys(opts.baseUrls)) {
    if (!catalog.find(id) && !extraHosts.has(id)) throw new ConfigError(`CONNECTOR_${id.toUpperCase()}_BASE_URL`, 'names no provider of the connector catalog');
  }
  return { catalog, adapters };
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
