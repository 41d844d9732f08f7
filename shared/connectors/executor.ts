/**
 * Runs one connector action for one connection: the code behind both `POST
 * /connectors/execute/{connection_id}/{action}` (control plane) and connector tools on calls
 * (engine). Resolves the action, checks the body against the catalog, opens the sealed
 * credential, calls the vendor through the outbound client and records the connection's health
 * after every vendor answer. Failures come out as AppError with the spec's statuses.
 */
import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import type { SecretBox } from '../secrets.js';
import type { Sql } from '../db/client.js';
import type { OutboundClient } from '../outbound/index.js';
import { AppError, notFound } from '../errors.js';
import type { Catalog, ProviderEntry } from './catalog.js';
import { checkActionBody } from './input.js';
import { VendorError, vendorHttp, type VendorHttp } from './providers/http.js';
import type { Credential, ProviderAdapter } from './providers/types.js';
import { secretOf, setHealth, type ConnectionRow, type HealthStatus } from './connection-store.js';

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
}

export interface ConnectorExecutor {
  /** A vendor HTTP helper for one adapter and credential (connect-key's verify uses it too). */
  http(adapter: ProviderAdapter, cred: Credential, signal: AbortSignal): VendorHttp;
  /**
   * Runs `action` (catalog name, or the tool form `<provider>__<action>`) on the connection.
   * Unknown action: 404; disconnected: CONNECTOR_NOT_CONNECTED; body against the schema: 400
   * naming the field; vendor failures: `actionFailure`.
   */
  execute(row: ConnectionRow, action: string, body: unknown, signal: AbortSignal): Promise<unknown>;
}

export function createConnectorExecutor(deps: ConnectorExecutorDeps): ConnectorExecutor {
  const { sql, clock, catalog, adapters, secrets } = deps;
  const now = () => new Date(clock.now());

  function http(adapter: ProviderAdapter, cred: Credential, signal: AbortSignal): VendorHttp {
    // Placeholders take credential fields the catalog pattern already restricted to DNS labels.
    const fill = (template: string) => template.replace(/\{([a-z_]+)\}/g, (_, k: string) => cred[k] ?? '');
    const baseUrl = fill(deps.baseUrls[adapter.id] ?? adapter.defaultBaseUrl);
    const extraBaseUrls = Object.fromEntries(Object.entries(adapter.extraBaseUrls ?? {}).map(([name, url]) => [name, fill(deps.baseUrls[`${adapter.id}_${name}`] ?? url)]));
    return vendorHttp({ outbound: deps.outbound, baseUrl, extraBaseUrls, headers: adapter.headers(cred), secrets: Object.values(cred), timeoutMs: deps.timeoutMs, signal });
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
    const sealed = row.is_active ? await secretOf(sql, row.id) : undefined;
    if (!sealed) throw new AppError('CONNECTOR_NOT_CONNECTED', `${entry.name} is disconnected; connect it again first`);
    const cred = JSON.parse(secrets.decrypt(sealed)) as Credential;
    try {
      const data = await run({ http: http(adapter, cred, signal), cred, now: () => clock.now() }, input);
      await setHealth(sql, row.id, 'ok', null, now());
      // Adapters return plain JSON; undefined members are dropped as JSON.stringify would.
      return JSON.parse(JSON.stringify(data ?? null)) as unknown;
    } catch (err) {
      if (!(err instanceof VendorError)) throw err;
      const health = healthAfter(err);
      if (health) await setHealth(sql, row.id, health, `${err.reason}`.slice(0, 300), now());
      deps.logger.warn({ provider: row.provider_id, connectionId: row.id, action: name, kind: err.kind, status: err.status }, 'connector action failed');
      throw actionFailure(entry, err);
    }
  }

  return { http, execute };
}

/** Health each vendor answer leaves behind; a refused input (4xx) says nothing about the connection. */
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
