/** Public shapes of catalog entries and connections (no secret field exists in either). */
import type { ProviderEntry } from '../../shared/connectors/catalog.js';
import { actionCovered, OAUTH_DESCRIPTORS } from '../../shared/connectors/oauth/descriptors.js';
import type { ConnectionRow } from './store.js';

/** `oauthAvailable`: this deployment has the provider's OAuth client (and an adapter to use the grant). */
export function catalogView(p: ProviderEntry, oauthAvailable: boolean) {
  return {
    id: p.id,
    name: p.name,
    description: p.description,
    authKind: p.auth_kinds[0]!,
    oauthAvailable,
    credentialFields: p.credential_fields.map((f) => ({ key: f.key, label: f.label, secret: f.secret, help: f.help, pattern: f.pattern, patternHelp: f.pattern_help })),
    products: p.products,
    actions: p.actions.map((a) => ({ name: a.name, description: a.description, parameters: a.parameters as never, product: a.product })),
  };
}

export function connectionView(r: ConnectionRow, p: ProviderEntry | undefined) {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    providerId: r.provider_id,
    connectorName: p?.name ?? r.provider_id,
    accountLabel: r.account_label,
    authMode: r.auth_mode,
    isActive: r.is_active,
    healthStatus: r.health_status,
    healthDetail: r.health_detail ?? undefined,
    healthCheckedAt: r.health_checked_at?.toISOString(),
    tokenExpiresAt: r.token_expires_at?.toISOString(),
    grantedScopes: r.granted_scopes,
    enabledProducts: r.enabled_products,
    allProducts: p?.products ?? [],
    actions: (p?.actions ?? []).map((a) => ({
      name: a.name,
      product: a.product,
      // Key connections grant every action of their enabled products, OAuth ones only what the
      // granted scopes cover; nothing is usable while disconnected.
      enabled: r.is_active && r.enabled_products.includes(a.product) && (r.auth_mode !== 'oauth' || actionCovered(OAUTH_DESCRIPTORS.get(r.provider_id), a.name, r.granted_scopes)),
      description: a.description,
      parameters: a.parameters as never,
    })),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}
