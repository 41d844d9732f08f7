/**
 * A provider adapter: how one vendor's REST API is called. Adapters read no env and hold no
 * state; the credential, the HTTP helper (with the configured base URL) and the clock come in
 * per call. Action bodies arrive already checked against the catalog's `parameters`.
 */
import type { VendorHttp } from './http.js';

export type Credential = Readonly<Record<string, string>>;

export interface ActionContext {
  http: VendorHttp;
  cred: Credential;
  /** Epoch ms (vendor timestamps such as HubSpot's `hs_timestamp`). */
  now(): number;
}

export interface ProviderAdapter {
  id: string;
  /** Production base URL; `{field}` is replaced by that credential field (per-tenant hosts). */
  defaultBaseUrl: string;
  /**
   * Other hosts of the same vendor by name (Twilio Lookups lives on lookups.twilio.com), used
   * with `request(path, {base: name})`. Overridable as CONNECTOR_<ID>_<NAME>_BASE_URL.
   */
  extraBaseUrls?: Readonly<Record<string, string>>;
  /**
   * Base URL when the credential is an OAuth token, if it differs from the key's (Jira 3LO calls
   * `api.atlassian.com/ex/jira/{cloud_id}`). Overridable as CONNECTOR_<ID>_OAUTH_BASE_URL.
   */
  oauthBaseUrl?: string;
  /** Headers on every request: the credential and API version headers. An OAuth credential's bearer access token replaces `authorization` (executor). */
  headers(cred: Credential): Record<string, string>;
  /** ONE real request proving the credential works; returns the label of the account found. */
  verify(ctx: ActionContext): Promise<{ accountLabel: string }>;
  /**
   * Pickers for the dashboard (`GET .../resources/{kind}`; the suite's `spreadsheets` and
   * `sheets`): rows of plain JSON. The query is the route's query string, unchecked.
   */
  resources?: Record<string, (ctx: ActionContext, query: Readonly<Record<string, string | undefined>>) => Promise<Array<Record<string, unknown>>>>;
  /** Keyed by the catalog action name; every catalog action of the provider has one. */
  actions: Record<string, (ctx: ActionContext, body: Record<string, any>) => Promise<unknown>>;
}

export function basic(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
}

/**
 * The account id a verify answer must carry: a label of "portal undefined" would be stored for an
 * answer in another shape (a proxy, an API change). A TypeError, as the adapters' other shape
 * failures: the connect route answers it 502 and stores nothing.
 */
export function accountId(value: unknown, field: string): string {
  if ((typeof value === 'string' && value.trim() !== '') || (typeof value === 'number' && Number.isFinite(value))) return String(value);
  throw new TypeError(`the account answer has no ${field}`);
}
