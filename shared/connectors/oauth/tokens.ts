/**
 * The token endpoint side of the OAuth door (RFC 6749 authorization-code and refresh grants,
 * RFC 7009 revocation) and the verification call, for every provider through its descriptor.
 * Requests go through the outbound client like every vendor request (vendorHttp), and every
 * token, code and client secret is scrubbed from the reasons they can produce.
 */
import type { OutboundClient } from '../../outbound/index.js';
import type { Catalog } from '../catalog.js';
import { ConfigError, type ConnectorOAuthClientConfig } from '../../config.js';
import { VendorError, vendorHttp } from '../providers/http.js';
import type { Credential } from '../providers/types.js';
import { OAUTH_DESCRIPTORS, type OAuthDescriptor } from './descriptors.js';

/** A provider's OAuth door with this deployment's client: descriptor endpoints unless overridden. */
export interface OAuthClient {
  descriptor: OAuthDescriptor;
  clientId: string;
  clientSecret: string;
  authorizeUrl: string;
  tokenUrl: string;
  revokeUrl?: string;
  verifyUrl: string;
}

/** Configured clients by provider id; an id without an OAuth door stops start-up (ConfigError). */
export function resolveOAuthClients(config: Readonly<Record<string, ConnectorOAuthClientConfig>>, catalog: Catalog): ReadonlyMap<string, OAuthClient> {
  const out = new Map<string, OAuthClient>();
  for (const [id, c] of Object.entries(config)) {
    const d = OAUTH_DESCRIPTORS.get(id);
    if (!d || !catalog.find(id)?.auth_kinds.includes('oauth')) throw new ConfigError(`CONNECTOR_${id.toUpperCase()}_OAUTH_CLIENT_ID`, 'names no provider with an OAuth door');
    out.set(id, {
      descriptor: d,
      clientId: c.clientId,
      clientSecret: c.clientSecret,
      authorizeUrl: c.authorizeUrl ?? d.authorizeUrl,
      tokenUrl: c.tokenUrl ?? d.tokenUrl,
      revokeUrl: c.revokeUrl ?? d.revoke?.url,
      verifyUrl: c.userinfoUrl ?? d.verify.url,
    });
  }
  return out;
}

export interface TokenDeps {
  outbound: OutboundClient;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** What a token endpoint answered, normalised. */
export interface TokenSet {
  accessToken: string;
  refreshToken?: string;
  /** Seconds; absent when the vendor does not say (the token is then treated as long-lived). */
  expiresInS?: number;
  /** Granted scopes when the vendor lists them (Google, Slack); HubSpot reports them on verify. */
  scopes?: string[];
}

/**
 * - `refused`: the vendor said no (invalid_grant, revoked refresh token, bad client): reconnect.
 * - `unavailable`: 429, 5xx, timeout, unreachable: try again later.
 */
export class OAuthError extends Error {
  override name = 'OAuthError';
  constructor(
    readonly kind: 'refused' | 'unavailable',
    readonly reason: string,
  ) {
    super(reason);
  }
}

function oauthErrorOf(err: unknown): OAuthError {
  if (err instanceof OAuthError) return err;
  if (err instanceof VendorError) return new OAuthError(err.kind === 'unavailable' || err.kind === 'rate_limited' ? 'unavailable' : 'refused', err.reason);
  throw err;
}

async function tokenRequest(deps: TokenDeps, client: OAuthClient, form: Record<string, string | undefined>, secrets: string[]): Promise<TokenSet> {
  const http = vendorHttp({ outbound: deps.outbound, baseUrl: client.tokenUrl, headers: {}, secrets: [client.clientSecret, ...secrets], timeoutMs: deps.timeoutMs, signal: deps.signal });
  let res: Record<string, any>;
  try {
    const body = { ...form, client_id: client.clientId, client_secret: client.clientSecret };
    if (client.descriptor.tokenBody === 'json') {
      // JSON has no "absent" form field: drop the undefined ones (e.g. no PKCE verifier).
      res = await http.request('', { method: 'POST', json: Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined)) });
    } else {
      res = await http.request('', { method: 'POST', form: body });
    }
  } catch (err) {
    throw oauthErrorOf(err);
  }
  // Slack answers every failure as 200 `{ok: false, error}`.
  if (res?.ok === false || typeof res?.access_token !== 'string' || res.access_token === '') {
    throw new OAuthError('refused', String(res?.error ?? 'the token endpoint answered without an access_token').slice(0, 300));
  }
  const expires = Number(res.expires_in);
  return {
    accessToken: res.access_token,
    refreshToken: typeof res.refresh_token === 'string' && res.refresh_token ? res.refresh_token : undefined,
    expiresInS: Number.isFinite(expires) && expires > 0 ? expires : undefined,
    scopes: typeof res.scope === 'string' ? res.scope.split(/[ ,]+/).filter(Boolean) : undefined,
  };
}

export function exchangeCode(deps: TokenDeps, client: OAuthClient, p: { code: string; redirectUri: string; verifier?: string }): Promise<TokenSet> {
  return tokenRequest(deps, client, { grant_type: 'authorization_code', code: p.code, redirect_uri: p.redirectUri, code_verifier: p.verifier }, [p.code, p.verifier ?? '']);
}

export function refreshAccessToken(deps: TokenDeps, client: OAuthClient, refreshToken: string): Promise<TokenSet> {
  return tokenRequest(deps, client, { grant_type: 'refresh_token', refresh_token: refreshToken }, [refreshToken]);
}

/**
 * The verification call: the account label, the scopes when the vendor reports them there, and
 * the fields it adds to the sealed credential (Jira's cloud id and site).
 */
export async function verifyToken(deps: TokenDeps, client: OAuthClient, accessToken: string): Promise<{ label: string; scopes?: string[]; credential?: Record<string, string> }> {
  const d = client.descriptor;
  const inPath = d.verify.style === 'token_in_path';
  const http = vendorHttp({
    outbound: deps.outbound,
    baseUrl: client.verifyUrl,
    headers: inPath ? {} : { authorization: `Bearer ${accessToken}` },
    secrets: [accessToken, client.clientSecret],
    timeoutMs: deps.timeoutMs,
    signal: deps.signal,
  });
  let info: Record<string, any>;
  try {
    info = await http.request(inPath ? `/${encodeURIComponent(accessToken)}` : '');
  } catch (err) {
    throw oauthErrorOf(err);
  }
  if (!info || typeof info !== 'object' || info.ok === false) throw new OAuthError('refused', String(info?.error ?? 'the verification call answered no account').slice(0, 300));
  const credential = d.credentialOf?.(info);
  if (typeof credential === 'string') throw new OAuthError('refused', credential);
  return { label: d.label(info).slice(0, 200), scopes: d.scopesOf?.(info), credential };
}

/** Revokes the grant at the vendor (the refresh token when there is one: it ends the whole grant). */
export async function revokeToken(deps: TokenDeps, client: OAuthClient, cred: Credential): Promise<void> {
  const d = client.descriptor;
  if (!client.revokeUrl || !d.revoke) return;
  const secrets = [cred.access_token ?? '', cred.refresh_token ?? '', client.clientSecret];
  const bearer = d.revoke.style === 'bearer_access_token';
  const headers: Record<string, string> = bearer && cred.access_token ? { authorization: `Bearer ${cred.access_token}` } : {};
  const http = vendorHttp({ outbound: deps.outbound, baseUrl: client.revokeUrl, headers, secrets, timeoutMs: deps.timeoutMs, signal: deps.signal });
  try {
    if (d.revoke.style === 'delete_refresh_token_path') {
      if (!cred.refresh_token) return;
      await http.request(`/${encodeURIComponent(cred.refresh_token)}`, { method: 'DELETE' });
    } else if (bearer) {
      if (!cred.access_token) return;
      // Slack: 200 `{ok: false, error}` is a refusal too.
      const res = await http.request<{ ok?: boolean; error?: string }>('', { method: 'POST' });
      if (res?.ok === false) throw new OAuthError('refused', String(res.error ?? 'revoke refused').slice(0, 300));
    } else {
      await http.request('', { method: 'POST', form: { token: cred.refresh_token ?? cred.access_token, client_id: client.clientId, client_secret: client.clientSecret } });
    }
  } catch (err) {
    throw oauthErrorOf(err);
  }
}
