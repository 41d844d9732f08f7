/**
 * The OAuth door of each provider that has one (catalog `auth_kinds` includes `oauth`): the
 * vendor's documented endpoints, the scopes asked per product, the scopes each action needs, and
 * the verification call that labels the account. Data plus two tiny functions per vendor; the
 * flow itself (oauth/flow.ts) is the same authorization-code flow for all of them.
 *
 * Jira (Atlassian 3LO) tokens call `api.atlassian.com/ex/jira/{cloudId}` instead of the site:
 * its verification call (accessible-resources) finds the cloud id, sealed with the tokens
 * (`credentialOf`), and the Jira adapter's `oauthBaseUrl` uses it.
 */

export interface OAuthDescriptor {
  providerId: string;
  authorizeUrl: string;
  tokenUrl: string;
  /**
   * How a token is revoked: Google `POST token=` (RFC 7009), HubSpot `DELETE .../{refresh_token}`,
   * Slack `auth.revoke` authenticated by the access token it revokes (it answers `{ok, revoked}`).
   */
  revoke?: { url: string; style: 'form' | 'delete_refresh_token_path' | 'bearer_access_token' };
  /** Token endpoint body: RFC 6749 form (default), or JSON where the vendor documents only that (Atlassian). */
  tokenBody?: 'form' | 'json';
  /** The verification call: bearer GET (Google userinfo) or the token in the path (HubSpot token info). */
  verify: { url: string; style: 'bearer' | 'token_in_path' };
  /** The account label from the verification answer. */
  label(info: any): string;
  /**
   * Fields the verification answer adds to the sealed credential (Jira: `cloud_id`, `site`), or a
   * string saying why this grant is unusable (then the connect fails and the grant is revoked).
   */
  credentialOf?(info: any): Record<string, string> | string;
  /** Scopes the verification answer reports (HubSpot), when the token answer has none. */
  scopesOf?(info: Record<string, any>): string[] | undefined;
  /** Asked on every consent, whatever the products (e.g. `openid email` for the label). */
  baseScopes: string[];
  /** Asked per product. */
  productScopes: Record<string, string[]>;
  /** Per action: ANY of these scopes covers it (a broader scope counts). Absent: the product's grant covers it. */
  actionScopes?: Record<string, string[]>;
  /** Per resource kind (suite only): any of these scopes covers the listing, and the product to reconnect. */
  resourceScopes?: Record<string, { anyOf: string[]; product: string }>;
  /** Separator of `scope` in the authorize URL (HubSpot and Google: space). */
  scopeSeparator: string;
  /** PKCE S256 (RFC 7636) where the vendor supports it. */
  pkce: boolean;
  /** Extra authorize parameters (offline access, incremental consent). */
  authorizeParams: Record<string, string>;
}

const G = 'https://www.googleapis.com/auth/';

const googleWorkspace: OAuthDescriptor = {
  providerId: 'google_workspace',
  // https://developers.google.com/identity/protocols/oauth2/web-server
  authorizeUrl: 'https://accounts.google.com/o/oauth2/v2/auth',
  tokenUrl: 'https://oauth2.googleapis.com/token',
  revoke: { url: 'https://oauth2.googleapis.com/revoke', style: 'form' },
  verify: { url: 'https://openidconnect.googleapis.com/v1/userinfo', style: 'bearer' },
  label: (info) => String(info.email ?? info.name ?? `Google account ${String(info.sub ?? '')}`),
  baseScopes: ['openid', 'email'],
  productScopes: {
    calendar: [`${G}calendar.events`, `${G}calendar.freebusy`],
    mail: [`${G}gmail.send`],
    // drive.metadata.readonly is the "listing permission" of spec behaviour 6 (spreadsheet picker).
    sheets: [`${G}spreadsheets`, `${G}drive.metadata.readonly`],
  },
  actionScopes: {
    list_free_slots: [`${G}calendar.freebusy`, `${G}calendar.readonly`, `${G}calendar`],
    create_event: [`${G}calendar.events`, `${G}calendar`],
    send_email: [`${G}gmail.send`, `${G}gmail.compose`, `${G}gmail.modify`, 'https://mail.google.com/'],
    append_row: [`${G}spreadsheets`],
  },
  resourceScopes: {
    spreadsheets: { anyOf: [`${G}drive.metadata.readonly`, `${G}drive.readonly`, `${G}drive`], product: 'sheets' },
    sheets: { anyOf: [`${G}spreadsheets`, `${G}spreadsheets.readonly`], product: 'sheets' },
  },
  scopeSeparator: ' ',
  pkce: true,
  // Refresh token (offline), consent shown so one is issued on every grant, incremental consent.
  authorizeParams: { access_type: 'offline', prompt: 'consent', include_granted_scopes: 'true' },
};

const hubspot: OAuthDescriptor = {
  providerId: 'hubspot',
  // https://developers.hubspot.com/docs/api/oauth-quickstart-guide
  authorizeUrl: 'https://app.hubspot.com/oauth/authorize',
  tokenUrl: 'https://api.hubapi.com/oauth/v1/token',
  revoke: { url: 'https://api.hubapi.com/oauth/v1/refresh-tokens', style: 'delete_refresh_token_path' },
  verify: { url: 'https://api.hubapi.com/oauth/v1/access-tokens', style: 'token_in_path' },
  label: (info) => `HubSpot portal ${String(info.hub_id ?? info.hub_domain ?? '')}`,
  scopesOf: (info) => (Array.isArray(info.scopes) ? info.scopes.map(String) : undefined),
  baseScopes: ['oauth'],
  productScopes: { crm: ['crm.objects.contacts.read', 'crm.objects.contacts.write', 'crm.objects.deals.write'] },
  actionScopes: {
    find_contact: ['crm.objects.contacts.read'],
    create_contact: ['crm.objects.contacts.write'],
    create_note: ['crm.objects.contacts.write'],
    create_deal: ['crm.objects.deals.write'],
  },
  scopeSeparator: ' ',
  // HubSpot's authorization-code flow documents no PKCE.
  pkce: false,
  authorizeParams: {},
};

const slack: OAuthDescriptor = {
  providerId: 'slack',
  // https://api.slack.com/authentication/oauth-v2 (bot token; Slack answers errors as 200 `ok:false`).
  // With token rotation on (an app setting) `oauth.v2.access` also issues `expires_in` (12 h) and
  // a refresh token that rotates on every refresh; without it the bot token never expires.
  authorizeUrl: 'https://slack.com/oauth/v2/authorize',
  tokenUrl: 'https://slack.com/api/oauth.v2.access',
  // auth.revoke revokes the token that authenticates the call; a refresh token cannot be passed.
  revoke: { url: 'https://slack.com/api/auth.revoke', style: 'bearer_access_token' },
  verify: { url: 'https://slack.com/api/auth.test', style: 'bearer' },
  label: (info) => `Slack ${String(info.team ?? info.url ?? '')}`,
  baseScopes: [],
  productScopes: { messaging: ['chat:write', 'channels:read', 'users:read', 'users:read.email'] },
  actionScopes: { send_message: ['chat:write'], list_channels: ['channels:read'], find_user: ['users:read.email'] },
  scopeSeparator: ',',
  pkce: false,
  authorizeParams: {},
};

const calcom: OAuthDescriptor = {
  providerId: 'calcom',
  // https://cal.com/help/apps-and-integrations/oauth: a standard authorization-code flow with a
  // client Cal.com registers and reviews. The API v2 token endpoint is the RFC 6749 one (form or
  // JSON bodies, both grants, PKCE). No scopes asked: the documented ones (READ_BOOKING,
  // READ_PROFILE) do not cover booking, and Cal.com grants per client. No revocation endpoint
  // is documented, so disconnect only purges locally.
  authorizeUrl: 'https://app.cal.com/auth/oauth2/authorize',
  tokenUrl: 'https://api.cal.com/v2/auth/oauth2/token',
  verify: { url: 'https://api.cal.com/v2/me', style: 'bearer' },
  label: (info) => String(info.data?.email ?? info.data?.username ?? 'Cal.com user'),
  baseScopes: [],
  productScopes: { scheduling: [] },
  scopeSeparator: ' ',
  pkce: true,
  authorizeParams: {},
};

/** Atlassian's classic Jira scopes on the resource (`accessible-resources` lists Confluence sites too). */
const isJiraScope = (s: string) => /:jira-/.test(s);

const jira: OAuthDescriptor = {
  providerId: 'jira',
  // https://developer.atlassian.com/cloud/jira/platform/oauth-2-3lo-apps/
  authorizeUrl: 'https://auth.atlassian.com/authorize',
  tokenUrl: 'https://auth.atlassian.com/oauth/token',
  // Atlassian documents no revocation endpoint for 3LO (the user removes the app in their account).
  verify: { url: 'https://api.atlassian.com/oauth/token/accessible-resources', style: 'bearer' },
  // Choice (docs/connectors.md): the FIRST resource carrying Jira scopes is the connected site.
  label: (info) => {
    const r = jiraResource(info);
    return r ? String(r.url ?? r.name).replace(/^https:\/\//, '') : 'Jira';
  },
  credentialOf: (info) => {
    const r = jiraResource(info);
    if (!r) return 'the grant gives access to no Jira site';
    // The cloud id becomes a path segment of every API URL: an id, nothing else.
    if (typeof r.id !== 'string' || !/^[A-Za-z0-9-]{1,64}$/.test(r.id)) return 'accessible-resources answered an unusable cloud id';
    return { cloud_id: r.id, site: String(r.url ?? '').replace(/^https:\/\//, '').replace(/\/$/, '') };
  },
  baseScopes: ['offline_access'],
  productScopes: { issues: ['read:jira-work', 'write:jira-work', 'read:jira-user'] },
  actionScopes: { create_issue: ['write:jira-work'], add_comment: ['write:jira-work'], find_issue: ['read:jira-work'] },
  scopeSeparator: ' ',
  tokenBody: 'json',
  pkce: false,
  // `audience` selects the API; `prompt=consent` shows the site picker on every grant.
  authorizeParams: { audience: 'api.atlassian.com', prompt: 'consent' },
};

function jiraResource(info: unknown): Record<string, any> | undefined {
  if (!Array.isArray(info)) return undefined;
  return info.find((r) => r && typeof r === 'object' && Array.isArray(r.scopes) && r.scopes.some((s: unknown) => typeof s === 'string' && isJiraScope(s)));
}

export const OAUTH_DESCRIPTORS: ReadonlyMap<string, OAuthDescriptor> = new Map([googleWorkspace, hubspot, slack, calcom, jira].map((d) => [d.providerId, d]));

/** Scopes asked for `products` (deduplicated, in a stable order). */
export function scopesFor(d: OAuthDescriptor, products: readonly string[]): string[] {
  return [...new Set([...d.baseScopes, ...products.flatMap((p) => d.productScopes[p] ?? [])])];
}

/** Does the grant cover `action`? A provider or action without scope data is covered by its product. */
export function actionCovered(d: OAuthDescriptor | undefined, action: string, granted: readonly string[]): boolean {
  const need = d?.actionScopes?.[action];
  return !need || need.some((s) => granted.includes(s));
}
