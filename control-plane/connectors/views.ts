/** Public shapes of catalog entries and connections (no secret field exists in either). */
import type { ProviderEntry } from '../../shared/connectors/catalog.js';
import type { ConnectionRow } from './store.js';

export function catalogView(p: ProviderEntry) {
  return {
    id: p.id,
    name: p.name,
    description: p.description,
    authKind: p.auth_kinds[0]!,
    // No OAuth client can be configured in this slice (docs/connectors.md, "Status").
    oauthAvailable: false,
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
      // Key connections grant every action of their enabled products; nothing is usable while disconnected.
      enabled: r.is_active && r.enabled_products.includes(a.product),
      description: a.description,
      parameters: a.parameters as never,
    })),
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}
