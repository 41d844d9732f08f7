/**
 * Runs one connector action for one connection: the code behind both `POST
 * /connectors/execute/{connection_id}/{action}` (control plane) and connector tools on calls
 * (engine). Resolves the action, checks the body against the catalog, opens the sealed
 * credential, calls the vendor through the outbound client and records the connection's health
 * after every vendor answer. Failures come out as AppError with the spec's statuses.
 *
 * OAuth connections: an action the grant does not cover is 403 NEEDS_SCOPE (spec behaviour 6);
 * the access token is refreshed before the action when it expires within `refreshSkewMs`, and
 * once more on a vendor 401 (then the action is retried once: a 401 means it did not run).
 * Refreshed tokens are sealed and stored (a rotated refresh token replaces the old one); a
 * refused refresh leaves health `reconnect_needed`. Concurrent actions share one refresh per
 * process; across replicas, a refused refresh first waits briefly for the tokens another replica's
 * refresh stores (a rotating vendor refuses all but the first).
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { SecretBox } from '../secrets.js';
import type { Sql } from '../db/client.js';
import type { OutboundClient } from '../outbound/index.js';
import { AppError, invalid, notFound } from '../errors.js';
import type { Catalog, ProviderEntry } from './catalog.js';
import { checkActionBody } from './input.js';
import { VendorError, vendorHttp, type VendorHttp } from './providers/http.js';
import type { ActionContext, Credential, ProviderAdapter } from './providers/types.js';
import { credentialOf, setHealth, storeRefreshed, type ConnectionRow, type HealthStatus } from './connection-store.js';
import { actionCovered, OAUTH_DESCRIPTORS } from './oauth/descriptors.js';
import { OAuthError, refreshAccessToken, type OAuthClient } from './oauth/tokens.js';

/** Refresh this long before the vendor's expiry: a token that dies mid-request costs a 401 round trip. */
export const DEFAULT_REFRESH_SKEW_MS = 60_000;
/** How long a refused refresh waits for another replica's concurrent refresh to store its tokens. */
const REFUSED_REFRESH_WAIT_MS = 3000;
const REFUSED_REFRESH_POLL_MS = 100;

export interface ConnectorExecutorDeps {
  sql: Sql;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  outbound: OutboundClient;
  catalog: Catalog;
  adapters: ReadonlyMap<string, ProviderAdapter>;
  /** Per provider id; `{field}` filled from the credential. Default: the adapter's production URL. */
  baseUrls: Readonly<Record<string, string>>;
  timeoutMs: number;
  /**
   * This deployment's OAuth clients (`resolveOAuthClients(config.connectorOAuthClients, catalog)`),
   * needed to refresh access tokens. Without one an OAuth connection runs on its current token
   * until the vendor refuses it (health `reconnect_needed`).
   */
  oauthClients?: ReadonlyMap<string, OAuthClient>;
  /** Default DEFAULT_REFRESH_SKEW_MS. */
  refreshSkewMs?: number;
}

export interface ConnectorExecutor {
  /** A vendor HTTP helper for one adapter and credential (connect-key's verify uses it too). */
  http(adapter: ProviderAdapter, cred: Credential, signal: AbortSignal): VendorHttp;
  /**
   * Runs `action` (catalog name, or the tool form `<provider>__<action>`) on the connection.
   * Unknown action: 404; disconnected: CONNECTOR_NOT_CONNECTED; body against the schema: 400
   * naming the field; not covered by the OAuth grant: NEEDS_SCOPE; vendor failures: `actionFailure`.
   */
  execute(row: ConnectionRow, action: string, body: unknown, signal: AbortSignal): Promise<unknown>;
}

/** The dashboard pickers (`GET .../resources/{kind}`), with the same credential handling as actions. */
export interface ConnectorResources {
  /** Not a provider with pickers: 404; unknown kind: 400 naming `kind`; not covered by the grant: NEEDS_SCOPE. */
  resources(row: ConnectionRow, kind: string, query: Readonly<Record<string, string | undefined>>, signal: AbortSignal): Promise<Array<Record<string, unknown>>>;
}

export function createConnectorExecutor(deps: ConnectorExecutorDeps): ConnectorExecutor & ConnectorResources {
  const { sql, clock, catalog, adapters, secrets } = deps;
  const now = () => new Date(clock.now());
  const skewMs = deps.refreshSkewMs ?? DEFAULT_REFRESH_SKEW_MS;
  const open = (sealed: string) => JSON.parse(secrets.decrypt(sealed)) as Credential;

  function http(adapter: ProviderAdapter, cred: Credential, signal: AbortSignal): VendorHttp {
    // Placeholders take credential fields the catalog pattern already restricted to DNS labels.
    const fill = (template: string) => template.replace(/\{([a-z_]+)\}/g, (_, k: string) => cred[k] ?? '');
    // An OAuth token may call another host than a key (Jira 3LO: api.atlassian.com/ex/jira/{cloud_id}).
    const oauthBase = cred.access_token && adapter.oauthBaseUrl ? (deps.baseUrls[`${adapter.id}_oauth`] ?? adapter.oauthBaseUrl) : undefined;
    const baseUrl = fill(oauthBase ?? deps.baseUrls[adapter.id] ?? adapter.defaultBaseUrl);
    const extraBaseUrls = Object.fromEntries(Object.entries(adapter.extraBaseUrls ?? {}).map(([name, url]) => [name, fill(deps.baseUrls[`${adapter.id}_${name}`] ?? url)]));
    // An OAuth credential (`access_token`) is a bearer token whatever the adapter sends for a key.
    const headers = cred.access_token ? { ...adapter.headers(cred), authorization: `Bearer ${cred.access_token}` } : adapter.headers(cred);
    // Scrubbed from the vendor's words: every credential value but the fields the catalog says are
    // not secret (a subdomain, an account id), which only make an error unreadable when hidden.
    const plain = new Set((catalog.find(adapter.id)?.credential_fields ?? []).filter((f) => !f.secret).map((f) => f.key));
    const secretValues = Object.entries(cred).flatMap(([k, v]) => (plain.has(k) || typeof v !== 'string' ? [] : [v]));
    return vendorHttp({ outbound: deps.outbound, baseUrl, extraBaseUrls, headers, secrets: secretValues, timeoutMs: deps.timeoutMs, signal });
  }

  /**
   * Refreshes in flight in this process, by connection: concurrent actions on one expired token
   * share one refresh. A vendor that rotates refresh tokens (Jira, Cal.com, Slack) spends the token
   * on the first request, so ten parallel refreshes were one success and nine refusals.
   */
  const refreshing = new Map<string, { sealed: string; done: Promise<{ sealed: string; cred: Credential }> }>();

  /** New tokens for `cred`; the credential to use next (possibly one a concurrent refresh stored). */
  function refresh(row: ConnectionRow, entry: ProviderEntry, client: OAuthClient, sealed: string, cred: Credential): Promise<{ sealed: string; cred: Credential }> {
    const running = refreshing.get(row.id);
    if (running?.sealed === sealed) return running.done;
    // Shared, so no caller's signal: one caller hanging up must not fail the others (the vendor
    // request is bounded by timeoutMs).
    const flight = { sealed, done: refreshOnce(row, entry, client, sealed, cred) };
    refreshing.set(row.id, flight);
    void flight.done.then(
      () => refreshing.get(row.id) === flight && refreshing.delete(row.id),
      () => refreshing.get(row.id) === flight && refreshing.delete(row.id),
    );
    return flight.done;
  }

  /**
   * After a refused refresh: the credential another replica stored meanwhile, if one appears within
   * the bound. Its refresh may have spent our refresh token before answering, so it can land a
   * moment after our refusal; polled, because the refusal is rare and no replica announces tokens.
   */
  async function storedByAnother(id: string, sealed: string): Promise<string | undefined> {
    // Counted in polls, not read off the clock (a test clock may stand still).
    const polls = Math.ceil(Math.min(deps.timeoutMs, REFUSED_REFRESH_WAIT_MS) / REFUSED_REFRESH_POLL_MS);
    for (let i = 0; ; i++) {
      const c = await credentialOf(sql, id);
      if (!c) return undefined;
      if (c.secret_enc !== sealed) return c.secret_enc;
      if (i >= polls) return undefined;
      await new Promise((r) => setTimeout(r, REFUSED_REFRESH_POLL_MS));
    }
  }

  async function refreshOnce(row: ConnectionRow, entry: ProviderEntry, client: OAuthClient, sealed: string, cred: Credential): Promise<{ sealed: string; cred: Credential }> {
    // A refresh that finished since this action read the credential: its tokens, no second refresh.
    const latest = await credentialOf(sql, row.id);
    if (latest && latest.secret_enc !== sealed) return { sealed: latest.secret_enc, cred: open(latest.secret_enc) };
    try {
      const t = await refreshAccessToken({ outbound: deps.outbound, timeoutMs: deps.timeoutMs }, client, cred.refresh_token!);
      const next: Credential = { ...cred, access_token: t.accessToken, refresh_token: t.refreshToken ?? cred.refresh_token! };
      const nextSealed = secrets.encrypt(JSON.stringify(next));
      const expiresAt = t.expiresInS === undefined ? null : new Date(clock.now() + t.expiresInS * 1000);
      if (await storeRefreshed(sql, row.id, { previous: sealed, next: nextSealed, expiresAt, now: now() })) {
        deps.logger.info({ provider: row.provider_id, connectionId: row.id, rotated: t.refreshToken !== undefined }, 'connector token refreshed');
        return { sealed: nextSealed, cred: next };
      }
      return current(row, entry);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      // A concurrent refresh (another replica's) may have rotated the refresh token we used: its tokens are good.
      const stored = err.kind === 'refused' ? await storedByAnother(row.id, sealed) : (await credentialOf(sql, row.id))?.secret_enc;
      if (stored && stored !== sealed) return { sealed: stored, cred: open(stored) };
      const health: HealthStatus = err.kind === 'refused' ? 'reconnect_needed' : 'error';
      await setHealth(sql, row.id, health, `token refresh: ${err.reason}`.slice(0, 300), now());
      deps.logger.warn({ provider: row.provider_id, connectionId: row.id, kind: err.kind }, 'connector token refresh failed');
      throw err.kind === 'refused'
        ? new AppError('BAD_GATEWAY', `${entry.name} refused to refresh the access token (${err.reason}); the connection needs to be reconnected`)
        : new AppError('BAD_GATEWAY', `${entry.name} could not refresh the access token: ${err.reason}`);
    }
  }

  async function current(row: ConnectionRow, entry: ProviderEntry): Promise<{ sealed: string; cred: Credential; expiresAt: Date | null }> {
    const c = await credentialOf(sql, row.id);
    if (!c) throw new AppError('CONNECTOR_NOT_CONNECTED', `${entry.name} is disconnected; connect it again first`);
    return { sealed: c.secret_enc, cred: open(c.secret_enc), expiresAt: c.token_expires_at };
  }

  /**
   * Runs `fn` with the connection's credential: refresh when due, once more on a vendor 401,
   * health after the vendor's answer, vendor failures mapped by `actionFailure`.
   */
  async function withCredential<T>(row: ConnectionRow, entry: ProviderEntry, adapter: ProviderAdapter, what: string, signal: AbortSignal, fn: (ctx: ActionContext) => Promise<T>): Promise<T> {
    const first = await current(row, entry);
    let { sealed, cred } = first;
    const client = row.auth_mode === 'oauth' && cred.refresh_token ? deps.oauthClients?.get(row.provider_id) : undefined;
    let refreshed = false;
    if (client && first.expiresAt && first.expiresAt.getTime() - skewMs <= clock.now()) {
      ({ sealed, cred } = await refresh(row, entry, client, sealed, cred));
      refreshed = true;
    }
    const attempt = () => fn({ http: http(adapter, cred, signal), cred, now: () => clock.now() }).catch((err: unknown) => unexpectedShape(entry, what, err));
    try {
      let data: T;
      try {
        data = await attempt();
      } catch (err) {
        // An expired or revoked access token: refresh once and run again (a 401 means it did not run).
        if (!(err instanceof VendorError && err.status === 401 && client && !refreshed)) throw err;
        ({ sealed, cred } = await refresh(row, entry, client, sealed, cred));
        refreshed = true;
        data = await attempt();
      }
      await setHealth(sql, row.id, 'ok', null, now());
      return data;
    } catch (err) {
      if (!(err instanceof VendorError)) throw err;
      const health = healthAfter(err);
      if (health) await setHealth(sql, row.id, health, `${err.reason}`.slice(0, 300), now());
      deps.logger.warn({ provider: row.provider_id, connectionId: row.id, action: what, kind: err.kind, status: err.status }, 'connector action failed');
      throw actionFailure(entry, err);
    }
  }

  async function execute(row: ConnectionRow, action: string, body: unknown, signal: AbortSignal): Promise<unknown> {
    const entry = catalog.find(row.provider_id);
    const adapter = adapters.get(row.provider_id);
    const name = action.startsWith(`${row.provider_id}__`) ? action.slice(row.provider_id.length + 2) : action;
    // Own keys only: a path segment such as `constructor` must never reach Object.prototype.
    const run = adapter && Object.hasOwn(adapter.actions, name) ? adapter.actions[name] : undefined;
    const validate = catalog.validator(row.provider_id, name);
    if (!entry || !adapter || !run || !validate) throw notFound(`action ${action.slice(0, 100)}`);
    const input = checkActionBody(validate, body as Parameters<typeof checkActionBody>[1]);
    if (!row.is_active) throw new AppError('CONNECTOR_NOT_CONNECTED', `${entry.name} is disconnected; connect it again first`);
    if (row.auth_mode === 'oauth') assertGranted(entry, row, name);
    const data = await withCredential(row, entry, adapter, name, signal, (ctx) => run(ctx, input));
    // Adapters return plain JSON; undefined members are dropped as JSON.stringify would.
    return JSON.parse(JSON.stringify(data ?? null)) as unknown;
  }

  async function resources(row: ConnectionRow, kind: string, query: Readonly<Record<string, string | undefined>>, signal: AbortSignal): Promise<Array<Record<string, unknown>>> {
    const entry = catalog.find(row.provider_id);
    const adapter = adapters.get(row.provider_id);
    if (!entry || !adapter?.resources) throw notFound(`resources of ${row.provider_id}`);
    const list = Object.hasOwn(adapter.resources, kind) ? adapter.resources[kind] : undefined;
    if (!list) throw invalid('kind', `must be one of ${Object.keys(adapter.resources).join(', ')}`);
    if (!row.is_active) throw new AppError('CONNECTOR_NOT_CONNECTED', `${entry.name} is disconnected; connect it again first`);
    const need = OAUTH_DESCRIPTORS.get(entry.id)?.resourceScopes?.[kind];
    if (row.auth_mode === 'oauth' && need && !(row.enabled_products.includes(need.product) && need.anyOf.some((s) => row.granted_scopes.includes(s)))) {
      throw needsScope(entry, `listing ${kind} is not covered by the ${entry.name} grant`, [need.product]);
    }
    const rows = await withCredential(row, entry, adapter, `resources.${kind}`, signal, (ctx) => list(ctx, query));
    return JSON.parse(JSON.stringify(rows)) as Array<Record<string, unknown>>;
  }

  return { http, execute, resources };
}

/** An OAuth grant covers an action when its product was consented and a scope it needs was granted. */
function assertGranted(entry: ProviderEntry, row: ConnectionRow, actionName: string): void {
  const product = entry.actions.find((a) => a.name === actionName)!.product;
  if (row.enabled_products.includes(product) && actionCovered(OAUTH_DESCRIPTORS.get(entry.id), actionName, row.granted_scopes)) return;
  throw needsScope(entry, `${actionName} is not covered by the ${entry.name} grant`, [product]);
}

/** 403 `{detail, needs_scope: true, reconnect_products}`: restarting OAuth for those products fixes it. */
export function needsScope(entry: ProviderEntry, what: string, products: string[]): AppError {
  return new AppError('NEEDS_SCOPE', `needs_scope: ${what}; reconnect ${entry.name} with products ${products.join(', ')}`, {
    body: { needs_scope: true, reconnect_products: products },
  });
}

/** Health each vendor answer leaves behind; a refused input (4xx) says nothing about the connection. */
/**
 * The adapters read the vendor's answer as its documentation describes it. A 2xx answer in another
 * shape (a proxy, an API version change) makes them throw a TypeError: that is the vendor's answer
 * failing, not our request, so it is a 502 like any unusable answer, never a 500.
 */
function unexpectedShape(entry: ProviderEntry, action: string, err: unknown): never {
  if (err instanceof TypeError) throw new VendorError('unavailable', `${entry.name} answered ${action} in a shape this connector does not understand (${err.message.slice(0, 200)})`);
  throw err;
}

function healthAfter(err: VendorError): HealthStatus | undefined {
  if (err.kind === 'auth') return 'reconnect_needed';
  if (err.kind === 'unavailable' || err.kind === 'rate_limited') return 'error';
  return undefined;
}

function actionFailure(entry: ProviderEntry, err: VendorError): AppError {
  switch (err.kind) {
    case 'auth':
      return new AppError('BAD_GATEWAY', `${entry.name} refused the stored credential (${err.reason}); the connection needs to be reconnected`);
    case 'not_found':
      return new AppError('NOT_FOUND', `${entry.name}: ${err.reason}`);
    case 'rejected':
      return new AppError('INVALID_REQUEST', `${entry.name} refused the request: ${err.reason}`);
    case 'rate_limited':
      return new AppError('BAD_GATEWAY', `${entry.name} is rate limiting this account: ${err.reason}`);
    default:
      return new AppError('BAD_GATEWAY', `${entry.name} is unavailable: ${err.reason}`);
  }
}
