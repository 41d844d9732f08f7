/**
 * The OAuth door (spec doc 1, Connectors API behaviour 3-6): `start` builds the consent URL with
 * a signed single-use state and PKCE; `callback` checks the state, exchanges the code, runs the
 * provider's verification call, stores the connection and answers where to send the browser.
 * The callback never throws for a vendor or state problem: the browser always lands on the
 * dashboard with `?connected=<provider_id>` or `?error=<code>&reason=<text>`.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { SecretBox } from '../../shared/secrets.js';
import type { Sql } from '../../shared/db/client.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import { AppError, invalid } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Catalog, ProviderEntry } from '../../shared/connectors/catalog.js';
import { scopesFor } from '../../shared/connectors/oauth/descriptors.js';
import { exchangeCode, OAuthError, revokeToken, verifyToken, type OAuthClient, type TokenDeps } from '../../shared/connectors/oauth/tokens.js';
import { ROLE_RANK, type WorkspaceRole } from '../http/auth.js';
import * as store from './store.js';
import { newNonce, pkcePair, readState, saveState, signState, STATE_TTL_MS, takeState, type StateProblem } from './oauth-state.js';

export interface OAuthDoorDeps {
  sql: Sql;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  outbound: OutboundClient;
  catalog: Catalog;
  clients: ReadonlyMap<string, OAuthClient>;
  stateKey: Buffer;
  /** `<PUBLIC_BASE_URL>/api/v1/connectors/oauth/callback`: the redirect URI registered at each vendor. */
  callbackUrl: string;
  dashboardUrl: string;
  timeoutMs: number;
}

export interface CallbackQuery {
  state: string;
  code: string;
  error: string;
  errorDescription: string;
}

/** Longest vendor `error` / `error_description` echoed to the dashboard. */
const MAX_REASON_CHARS = 200;

export function createOAuthDoor(deps: OAuthDoorDeps) {
  const { sql, clock, secrets, catalog } = deps;
  const tokenDeps = (signal?: AbortSignal): TokenDeps => ({ outbound: deps.outbound, timeoutMs: deps.timeoutMs, signal });

  function dashboard(params: Record<string, string>): string {
    const url = new URL(deps.dashboardUrl);
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v.slice(0, MAX_REASON_CHARS));
    return url.toString();
  }

  /** The requested products: omitted means all; an unknown one is 400 naming `products`. */
  function productsOf(entry: ProviderEntry, requested: readonly string[]): string[] {
    if (requested.length === 0) return [...entry.products];
    if (requested.length > entry.products.length * 2) throw invalid('products', `must list at most the provider's products (${entry.products.join(', ')})`);
    for (const p of requested) if (!entry.products.includes(p)) throw invalid('products', `unknown product ${p.slice(0, 50)}; ${entry.name} has ${entry.products.join(', ')}`);
    return [...new Set(requested)];
  }

  async function start(entry: ProviderEntry, workspaceId: string, userId: string, requested: readonly string[]): Promise<string> {
    const client = deps.clients.get(entry.id);
    // The spec's answer for a provider this deployment has no OAuth client for.
    // The spec's 500; the catalog already said `oauth_available: false`, so it is no bug of ours.
    if (!client) throw new AppError('INTERNAL', `no OAuth client is registered for ${entry.id} in this deployment`, { configured: true });
    const products = productsOf(entry, requested);
    const d = client.descriptor;
    const pkce = d.pkce ? pkcePair() : undefined;
    const payload = { workspaceId, userId, providerId: entry.id, products, nonce: newNonce(), expiresAt: clock.now() + STATE_TTL_MS };
    await saveState(sql, payload, pkce ? secrets.encrypt(pkce.verifier) : null, new Date(clock.now()));
    const url = new URL(client.authorizeUrl);
    const q = url.searchParams;
    q.set('response_type', 'code');
    q.set('client_id', client.clientId);
    q.set('redirect_uri', deps.callbackUrl);
    const scopes = scopesFor(d, products);
    if (scopes.length) q.set('scope', scopes.join(d.scopeSeparator));
    q.set('state', signState(deps.stateKey, payload));
    if (pkce) {
      q.set('code_challenge', pkce.challenge);
      q.set('code_challenge_method', 'S256');
    }
    for (const [k, v] of Object.entries(d.authorizeParams)) q.set(k, v);
    return url.toString();
  }

  /** The user who started a flow still may connect in its workspace: the org owner, or a member ranked manager or above. Read fresh (no cache): a callback is rare. */
  async function mayStillConnect(workspaceId: string, userId: string): Promise<boolean> {
    const [row] = await sql<{ is_org_owner: boolean; role: WorkspaceRole | null; workspace: boolean }[]>`
      select u.is_org_owner, m.role, exists (select 1 from workspaces w where w.id = ${workspaceId}) as workspace
      from users u left join workspace_members m on m.user_id = u.id and m.workspace_id = ${workspaceId}
      where u.id = ${userId}`;
    if (!row?.workspace) return false;
    return row.is_org_owner || (row.role !== null && ROLE_RANK[row.role] >= ROLE_RANK.manager);
  }

  /** Where the browser goes after the vendor's redirect. */
  async function callback(query: CallbackQuery, signal: AbortSignal): Promise<string> {
    const fail = (error: string, reason: string, provider?: string) => {
      deps.logger.warn({ provider, error: error.slice(0, 50), reason: reason.slice(0, MAX_REASON_CHARS) }, 'connector oauth callback refused');
      return dashboard({ error, reason, ...(provider ? { provider } : {}) });
    };
    const read = readState(deps.stateKey, query.state);
    if (typeof read === 'string') return fail('invalid_state', read);
    const state = read;
    if (state.expiresAt <= clock.now()) {
      await takeState(sql, state.nonce);
      return fail('invalid_state', 'expired' satisfies StateProblem, state.providerId);
    }
    const pending = await takeState(sql, state.nonce);
    if (!pending || pending.workspace_id !== state.workspaceId || pending.provider_id !== state.providerId) return fail('invalid_state', 'replayed' satisfies StateProblem, state.providerId);
    const provider = state.providerId;
    // Removed from the workspace or demoted below manager since the start: the flow is void (the
    // code is never exchanged, so there is no grant to revoke).
    if (!(await mayStillConnect(state.workspaceId, state.userId))) {
      deps.logger.warn({ workspaceId: state.workspaceId, userId: state.userId, provider }, 'connector oauth callback refused: the user may no longer connect in this workspace');
      return fail('access_denied', 'the user who started this connect is no longer a manager (or above) of the workspace', provider);
    }
    if (query.error) return fail(query.error.slice(0, 50), query.errorDescription || query.error, provider);
    if (!query.code) return fail('invalid_request', 'the provider sent no authorization code', provider);
    const entry = catalog.find(provider);
    const client = deps.clients.get(provider);
    if (!entry || !client) return fail('server_error', `no OAuth client is registered for ${provider}`, provider);

    const verifier = pending.verifier_enc ? secrets.decrypt(pending.verifier_enc) : undefined;
    let tokens;
    try {
      tokens = await exchangeCode(tokenDeps(signal), client, { code: query.code, redirectUri: deps.callbackUrl, verifier });
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      return fail('token_exchange_failed', err.reason, provider);
    }
    const cred = { access_token: tokens.accessToken, ...(tokens.refreshToken ? { refresh_token: tokens.refreshToken } : {}) };
    let account: { label: string; scopes?: string[]; credential?: Record<string, string> };
    try {
      account = await verifyToken(tokenDeps(signal), client, tokens.accessToken);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      // Spec behaviour 3: nothing stored, and the grant does not outlive the failed connect.
      await revokeQuietly(client, cred, provider);
      return fail('verification_failed', err.reason, provider);
    }

    // Incremental consent: the same account keeps what it granted before (Google also merges
    // server-side with include_granted_scopes); another account starts afresh.
    const existing = (await store.listConnections(sql, state.workspaceId)).find((c) => c.provider_id === provider);
    const same = existing?.is_active && existing.auth_mode === 'oauth' && existing.account_label === account.label ? existing : undefined;
    let refreshToken = tokens.refreshToken;
    if (!refreshToken && same) {
      const sealed = await store.secretOf(sql, same.id);
      refreshToken = sealed ? (JSON.parse(secrets.decrypt(sealed)) as { refresh_token?: string }).refresh_token : undefined;
    }
    const granted = tokens.scopes ?? account.scopes ?? scopesFor(client.descriptor, state.products);
    const { row, reactivated } = await store.upsertConnection(sql, {
      id: newId(),
      workspace_id: state.workspaceId,
      provider_id: provider,
      account_label: account.label,
      auth_mode: 'oauth',
      // The verification's fields (Jira cloud id and site) first: the tokens can never be shadowed.
      secret_enc: secrets.encrypt(JSON.stringify({ ...account.credential, access_token: tokens.accessToken, ...(refreshToken ? { refresh_token: refreshToken } : {}) })),
      enabled_products: entry.products.filter((p) => state.products.includes(p) || same?.enabled_products.includes(p)),
      granted_scopes: [...new Set([...(same?.granted_scopes ?? []), ...granted])],
      token_expires_at: tokens.expiresInS === undefined ? null : new Date(clock.now() + tokens.expiresInS * 1000),
      now: new Date(clock.now()),
    });
    deps.logger.info({ workspaceId: state.workspaceId, userId: state.userId, provider, connectionId: row.id, reactivatedTools: reactivated, products: row.enabled_products }, 'connector connected (oauth)');
    return dashboard({ connected: provider });
  }

  /** Best effort: a failed revoke is logged and never blocks the local outcome. */
  async function revokeQuietly(client: OAuthClient, cred: Record<string, string>, provider: string): Promise<void> {
    try {
      await revokeToken(tokenDeps(), client, cred);
    } catch (err) {
      deps.logger.warn({ provider, kind: err instanceof OAuthError ? err.kind : 'error', reason: err instanceof OAuthError ? err.reason : String(err) }, 'connector token revoke failed');
    }
  }

  return { start, callback, revokeQuietly };
}

export type OAuthDoor = ReturnType<typeof createOAuthDoor>;
