/**
 * The connectors domain (issue 18: catalog, key and OAuth connections; docs/connectors.md).
 * The catalog is loaded and checked here, at start-up: a bad catalog, an adapter missing one of
 * its provider's actions, a CONNECTOR_<ID>_BASE_URL naming no provider, or an OAuth client
 * configured for a provider without an OAuth door stops the process.
 */
import { ConnectorService } from '../../shared/gen/voiceplane/v1/connectors_pb.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import type { Catalog } from '../../shared/connectors/catalog.js';
import { loadConnectorRuntime } from '../../shared/connectors/index.js';
import { createConnectorExecutor } from '../../shared/connectors/executor.js';
import type { ProviderAdapter } from '../../shared/connectors/providers/types.js';
import { resolveOAuthClients } from '../../shared/connectors/oauth/tokens.js';
import { connectorRoutes } from './routes.js';
import { createOAuthDoor } from './oauth.js';
import { stateKey } from './oauth-state.js';
import { createConnectorBinder } from './binder.js';
import type { ConnectorBinder } from '../agents/deps.js';
import { createConnectorService } from './service.js';
import { liveConnections } from './live-connections.js';
import type { LiveConnections } from '../voice/agent-view.js';
import { connectorFinishPage } from './finish-page.js';
import { oauthSecretsOf } from './store.js';
import type { WorkspaceDeleteHook } from '../accounts/workspace-service.js';

export type ConnectorsDeps = Pick<ControlPlaneDeps, 'config' | 'logger' | 'clock' | 'sql' | 'secrets' | 'jwtKey'> & Partial<Pick<ControlPlaneDeps, 'registry'>> & {
  auth: Auth;
  outbound: OutboundClient;
  /** Catalog data (tests load a bad one). Default: catalog-data.ts. */
  catalogData?: unknown;
  adapters?: ReadonlyMap<string, ProviderAdapter>;
  /** The accounts domain's workspace-delete hooks: OAuth grants are revoked when their workspace is deleted. */
  onWorkspaceDelete?: (hook: WorkspaceDeleteHook) => void;
};

export interface ConnectorsDomain extends Domain {
  catalog: Catalog;
  /** Handed to the agents domain: `POST /agents/{id}/tools` with `connector`. */
  binder: ConnectorBinder;
  /** Handed to the voice domain: which bound connections are live at session start. */
  liveConnections: LiveConnections;
}

export function createConnectorsDomain(deps: ConnectorsDeps): ConnectorsDomain {
  const { catalog, adapters } = loadConnectorRuntime({ catalogData: deps.catalogData, adapters: deps.adapters, baseUrls: deps.config.connectorBaseUrls });
  const oauthClients = resolveOAuthClients(deps.config.connectorOAuthClients, catalog);
  const timeoutMs = deps.config.connectorTimeoutMs;
  const executor = createConnectorExecutor({ ...deps, catalog, adapters, baseUrls: deps.config.connectorBaseUrls, timeoutMs, oauthClients });
  const oauth = createOAuthDoor({
    ...deps,
    catalog,
    clients: oauthClients,
    stateKey: stateKey(deps.jwtKey),
    callbackUrl: `${deps.config.publicBaseUrl}/api/v1/connectors/oauth/callback`,
    dashboardUrl: deps.config.connectorsDashboardUrl,
    timeoutMs,
  });
  // The cascade drops the only copy of the tokens: read them first, revoke once the delete committed
  // (best effort, as on disconnect: the grant would otherwise outlive everything that could end it).
  deps.onWorkspaceDelete?.(async (workspaceId) => {
    const grants = (await oauthSecretsOf(deps.sql, workspaceId)).flatMap((g) => {
      const client = oauthClients.get(g.provider_id);
      return client ? [{ client, provider: g.provider_id, secret_enc: g.secret_enc }] : [];
    });
    if (!grants.length) return undefined;
    return async () => {
      deps.logger.info({ workspaceId, providers: grants.map((g) => g.provider) }, 'workspace deleted: revoking its OAuth grants at the vendors');
      await Promise.all(
        grants.map(async (g) => {
          let cred: Record<string, string>;
          try {
            cred = JSON.parse(deps.secrets.decrypt(g.secret_enc)) as Record<string, string>;
          } catch (err) {
            // One unreadable secret (a rotated SECRETS_KEY) must not keep the others alive.
            return deps.logger.warn({ err, workspaceId, provider: g.provider }, 'OAuth grant not revoked: its stored secret cannot be read');
          }
          await oauth.revokeQuietly(g.client, cred, g.provider);
        }),
      );
    };
  });
  const binder = createConnectorBinder(deps.sql, catalog);
  const impl = createConnectorService({ ...deps, catalog, adapters, executor, binder, invalidations: deps.registry?.invalidations, oauthClients, oauth });
  return {
    catalog,
    binder,
    liveConnections: (workspaceId, ids, signal) => liveConnections(deps.sql, workspaceId, ids, signal),
    services: [{ service: ConnectorService, impl }] as ServiceBinding[],
    routes: connectorRoutes,
    rawHandlers: [connectorFinishPage],
  };
}
