/**
 * An OAuth 2.0 authorization server fake in four vendors' dialects (paths and error bodies):
 * Google (`/o/oauth2/v2/auth`, `/token`, `/revoke`, `/v1/userinfo`), HubSpot
 * (`/oauth/authorize`, `/oauth/v1/token`, `DELETE /oauth/v1/refresh-tokens/{t}`,
 * `GET /oauth/v1/access-tokens/{t}`), Slack (`/oauth/v2/authorize`, `POST /api/oauth.v2.access`
 * answering every failure as 200 `{ok: false, error}`, `/api/auth.test`, `/api/auth.revoke`
 * authenticated by the token it revokes; refresh tokens only with `slackTokenRotation`) and
 * Atlassian 3LO (`/authorize` requiring `audience=api.atlassian.com`, `POST /oauth/token` with a
 * JSON body, `GET /oauth/token/accessible-resources`; no revocation endpoint) and Cal.com
 * (`/auth/oauth2/authorize`, `POST /v2/auth/oauth2/token`, RFC 6749 form bodies and errors; its
 * verification call is the API's own `/v2/me`, served by CalcomFake; no revocation endpoint). Authorization-code grants with redirect_uri and PKCE S256
 * checks, refresh grants (optionally rotating the refresh token), revocation, the verification
 * call, and the shared fault injection (429, 500, slow first byte) of VendorFake. Access tokens
 * it issues are accepted by the vendor fakes `link`ed to it, until expired or revoked (a 401
 * exactly like a vendor's for an expired token).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import { VendorFake } from './vendor-base.js';

type Dialect = 'google' | 'hubspot' | 'slack' | 'atlassian' | 'calcom';

/** An Atlassian site as `accessible-resources` lists it; its scopes are the granted ones of its product. */
export interface FakeSite {
  id: string;
  url: string;
  name: string;
  product: 'jira' | 'confluence';
}

interface Grant {
  clientId: string;
  redirectUri: string;
  scopes: string[];
  challenge?: string;
  user: FakeUser;
  used: boolean;
}

export interface FakeUser {
  id: string;
  email: string;
}

const PATHS = {
  google: { authorize: '/o/oauth2/v2/auth', token: '/token', revoke: '/revoke', verify: '/v1/userinfo' },
  hubspot: { authorize: '/oauth/authorize', token: '/oauth/v1/token', revoke: '/oauth/v1/refresh-tokens', verify: '/oauth/v1/access-tokens' },
  slack: { authorize: '/oauth/v2/authorize', token: '/api/oauth.v2.access', revoke: '/api/auth.revoke', verify: '/api/auth.test' },
  calcom: { authorize: '/auth/oauth2/authorize', token: '/v2/auth/oauth2/token', revoke: '/revoke-not-documented', verify: '/v2/me' },
  atlassian: { authorize: '/authorize', token: '/oauth/token', revoke: '/oauth/revoke-not-documented', verify: '/oauth/token/accessible-resources' },
} as const;

/** Slack's error codes for the failures the fake produces (Slack answers codes, not sentences). */
const SLACK_CODES: Record<string, string> = {
  'Malformed auth code.': 'invalid_code',
  redirect_uri_mismatch: 'bad_redirect_uri',
  'Invalid code verifier.': 'invalid_code_verifier',
  'Token has been expired or revoked.': 'invalid_refresh_token',
  unsupported_grant_type: 'invalid_grant_type',
  'verification refused by the test': 'invalid_auth',
};

export class OAuthProviderFake extends VendorFake {
  readonly clientId: string;
  readonly clientSecret: string;
  /** The account that consents next. */
  user: FakeUser = { id: '1001', email: 'owner@acme.example' };
  /** Next consent: approve, or send the user back with `error=access_denied`. */
  consent: 'approve' | 'deny' = 'approve';
  /** Scopes the user grants on the next consent (default: all asked). */
  grantOnly?: string[];
  /** `expires_in` of issued access tokens. */
  accessTtlS = 3599;
  /** Issue a new refresh token on every refresh (the old one stops working). */
  rotateRefreshTokens = false;
  /**
   * The next refresh is carried out (a rotated token spent) at once, but answered only after the
   * token endpoint has answered one more request (a slow network back to one replica while another
   * is refused), or after 10 s.
   */
  holdNextRefreshAnswer = false;
  private heldRefreshAnswer?: () => void;
  /** Slack: the app has token rotation on (12 h access tokens and refresh tokens); off, bot tokens never expire. */
  slackTokenRotation = false;
  /** Atlassian: the sites the consenting user can reach, in `accessible-resources` order. */
  sites: FakeSite[] = [{ id: 'c1d2e3f4-0000-4000-8000-00000000a11a', url: 'https://acme.atlassian.net', name: 'acme', product: 'jira' }];
  /** The verification call answers this status (401, 500) instead of the account. */
  verifyFailsWith?: number;
  /** Every token revoked, in order. */
  readonly revoked: string[] = [];
  /** Authorize calls as received (scope, code_challenge, include_granted_scopes, ...). */
  readonly authorizeCalls: URLSearchParams[] = [];
  /** Live access tokens: scopes and user. */
  readonly accessTokens = new Map<string, { scopes: string[]; user: FakeUser }>();
  /** Live refresh tokens. */
  readonly refreshTokens = new Map<string, { scopes: string[]; user: FakeUser }>();
  private readonly codes = new Map<string, Grant>();
  /** Google's incremental consent: what each user granted this client so far. */
  private readonly granted = new Map<string, Set<string>>();
  private readonly linked: VendorFake[] = [];

  constructor(readonly dialect: Dialect) {
    super();
    this.clientId = `${dialect}-client-${randomBytes(4).toString('hex')}`;
    this.clientSecret = `${dialect}-secret-${randomBytes(12).toString('hex')}`;
    this.validKeys.add(`${this.clientId}:${this.clientSecret}`);
  }

  get paths() {
    return PATHS[this.dialect];
  }

  /** The vendor API fake accepts the access tokens issued here (and stops when they expire). */
  link(vendor: VendorFake): void {
    this.linked.push(vendor);
  }

  /** Ends an access token as its expiry would: the verification call and linked vendors answer 401. */
  expireAccessToken(token: string): void {
    this.accessTokens.delete(token);
    this.validKeys.delete(token);
    for (const v of this.linked) v.revoke(token);
  }

  expireAllAccessTokens(): void {
    for (const t of [...this.accessTokens.keys()]) this.expireAccessToken(t);
  }

  scopesOf(token: string): string[] | undefined {
    return this.accessTokens.get(token)?.scopes;
  }

  protected errorBody(status: number, message: string) {
    if (this.dialect === 'slack') return { ok: false, error: status === 429 ? 'ratelimited' : status >= 500 ? 'fatal_error' : (SLACK_CODES[message] ?? message) };
    if (this.dialect === 'hubspot') return { status: status === 400 ? 'BAD_REFRESH_TOKEN' : 'error', message, correlationId: 'c0ffee00-0000-4000-8000-000000000001' };
    if (status === 429) return { error: { code: 429, message, status: 'RESOURCE_EXHAUSTED' } };
    if (status >= 500) return { error: { code: status, message, status: 'INTERNAL' } };
    return { error: status === 401 ? 'invalid_client' : 'invalid_grant', error_description: message };
  }

  /** Slack answers its failures with 200 (only rate limits and outages keep their status). */
  protected override fail(rec: HttpRecord, res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
    if (this.dialect === 'slack' && status < 429) {
      const code = status === 401 ? (rec.path === this.paths.token ? 'bad_client_secret' : this.bearer(rec) ? 'invalid_auth' : 'not_authed') : message;
      return this.sendJson(rec, res, 200, this.errorBody(200, code), headers);
    }
    super.fail(rec, res, status, message, headers);
  }

  /** Token endpoint parameters: Atlassian documents a JSON body, the others RFC 6749 form bodies. */
  private form(rec: HttpRecord): URLSearchParams {
    if (this.dialect === 'atlassian') {
      if (!String(rec.headers['content-type']).startsWith('application/json') || !rec.body || typeof rec.body !== 'object') return new URLSearchParams();
      return new URLSearchParams(Object.entries(rec.body as Record<string, unknown>).map(([k, v]): [string, string] => [k, String(v)]));
    }
    return new URLSearchParams(rec.rawBody);
  }

  protected credentialOf(rec: HttpRecord): string | undefined {
    const p = this.paths;
    // Slack's auth.revoke is authenticated by the token it revokes (header, or a `token` form field).
    if (this.dialect === 'slack' && rec.path === p.revoke) return this.bearer(rec) ?? (this.form(rec).get('token') || undefined);
    if (rec.path === p.token || (rec.path === p.revoke && this.dialect === 'google')) {
      const f = this.form(rec);
      return `${f.get('client_id') ?? ''}:${f.get('client_secret') ?? ''}`;
    }
    if (this.dialect === 'hubspot' && rec.path.startsWith(`${p.verify}/`)) return decodeURIComponent(rec.path.slice(p.verify.length + 1));
    if (this.dialect === 'hubspot' && rec.path.startsWith(`${p.revoke}/`)) return `${this.clientId}:${this.clientSecret}`;
    return this.bearer(rec);
  }

  protected override async handle(rec: HttpRecord, req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The consent page is the user's browser, not an API call: no credential, no faults.
    if (rec.method === 'GET' && rec.path === this.paths.authorize) return this.authorize(rec, res);
    return super.handle(rec, req, res);
  }

  private authorize(rec: HttpRecord, res: ServerResponse): void {
    const q = rec.query;
    this.authorizeCalls.push(q);
    const redirect = new URL(q.get('redirect_uri') ?? 'http://invalid.example/');
    if (q.get('client_id') !== this.clientId) return this.sendJson(rec, res, 400, { error: 'invalid_client' });
    // Atlassian refuses an authorize request without the API audience.
    if (this.dialect === 'atlassian' && q.get('audience') !== 'api.atlassian.com') return this.sendJson(rec, res, 400, { error: 'invalid_request', error_description: 'audience is required' });
    redirect.searchParams.set('state', q.get('state') ?? '');
    if (this.consent === 'deny') {
      redirect.searchParams.set('error', 'access_denied');
      redirect.searchParams.set('error_description', 'The user denied access');
    } else {
      const asked = (q.get('scope') ?? '').split(/[ ,]+/).filter(Boolean);
      const scopes = this.grantOnly ?? asked;
      const code = `code-${randomBytes(12).toString('hex')}`;
      this.codes.set(code, { clientId: this.clientId, redirectUri: redirect.origin + redirect.pathname, scopes, challenge: q.get('code_challenge') ?? undefined, user: this.user, used: false });
      redirect.searchParams.set('code', code);
      if (this.dialect === 'google' && q.get('include_granted_scopes') === 'true') {
        const all = this.granted.get(this.user.id) ?? new Set<string>();
        for (const s of scopes) all.add(s);
        this.granted.set(this.user.id, all);
        this.codes.get(code)!.scopes = [...all];
      }
    }
    rec.status = 302;
    res.writeHead(302, { location: redirect.toString() });
    res.end();
  }

  private refreshTokenPrefix(): string {
    return { google: '1//', hubspot: 'rt-', slack: 'xoxe-1-', atlassian: 'eyJrt.', calcom: 'calrt_' }[this.dialect];
  }

  private issue(rec: HttpRecord, res: ServerResponse, scopes: string[], user: FakeUser, refreshToken?: string): void {
    const prefix = { google: 'ya29.', hubspot: 'CJ', slack: this.slackTokenRotation ? 'xoxe.xoxb-1-' : 'xoxb-', atlassian: 'eyJat.', calcom: 'calat_' }[this.dialect];
    const access = `${prefix}${randomBytes(24).toString('hex')}`;
    this.accessTokens.set(access, { scopes, user });
    this.validKeys.add(access);
    for (const v of this.linked) v.validKeys.add(access);
    if (this.dialect === 'slack') {
      // oauth.v2.access: a bot token; expiry and refresh token only with token rotation.
      const body: Record<string, unknown> = { ok: true, app_id: 'A0FAKE', authed_user: { id: `U${user.id}` }, scope: scopes.join(','), token_type: 'bot', access_token: access, bot_user_id: 'U0BOT', team: { id: 'T0ACME', name: 'Acme Support' }, enterprise: null, is_enterprise_install: false };
      if (this.slackTokenRotation) Object.assign(body, { expires_in: this.accessTtlS, refresh_token: refreshToken });
      return this.sendJson(rec, res, 200, body);
    }
    const body: Record<string, unknown> = { access_token: access, token_type: 'Bearer', expires_in: this.accessTtlS };
    if (refreshToken) body.refresh_token = refreshToken;
    // Atlassian lists the granted scopes space-separated.
    if (this.dialect === 'atlassian') body.scope = scopes.join(' ');
    // Google lists the granted scopes; HubSpot reports them on the token info call only.
    if (this.dialect === 'google') body.scope = scopes.join(' ');
    this.sendJson(rec, res, 200, body);
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const p = this.paths;
    if (rec.method === 'POST' && rec.path === p.token) {
      // A held refresh answer goes out just after this request's answer.
      const release = this.heldRefreshAnswer;
      this.heldRefreshAnswer = undefined;
      if (release) setImmediate(release);
      const f = this.form(rec);
      if (f.get('grant_type') === 'authorization_code') {
        const grant = this.codes.get(f.get('code') ?? '');
        if (!grant || grant.used) return this.fail(rec, res, 400, 'Malformed auth code.');
        grant.used = true;
        if (f.get('redirect_uri') !== grant.redirectUri) return this.fail(rec, res, 400, 'redirect_uri_mismatch');
        if (grant.challenge) {
          const verifier = f.get('code_verifier') ?? '';
          if (createHash('sha256').update(verifier).digest('base64url') !== grant.challenge) return this.fail(rec, res, 400, 'Invalid code verifier.');
        }
        // Slack issues a refresh token only with token rotation; Atlassian only for offline_access.
        const wantsRefresh = this.dialect === 'slack' ? this.slackTokenRotation : this.dialect === 'atlassian' ? grant.scopes.includes('offline_access') : true;
        const refresh = wantsRefresh ? `${this.refreshTokenPrefix()}${randomBytes(24).toString('hex')}` : undefined;
        if (refresh) this.refreshTokens.set(refresh, { scopes: grant.scopes, user: grant.user });
        return this.issue(rec, res, grant.scopes, grant.user, refresh);
      }
      if (f.get('grant_type') === 'refresh_token') {
        const token = f.get('refresh_token') ?? '';
        const held = this.refreshTokens.get(token);
        // Atlassian answers an unknown (e.g. already rotated) refresh token with 403.
        if (!held) return this.fail(rec, res, this.dialect === 'atlassian' ? 403 : 400, 'Token has been expired or revoked.');
        let next: string | undefined;
        // Slack with token rotation always rotates the refresh token.
        if (this.rotateRefreshTokens || this.dialect === 'slack') {
          this.refreshTokens.delete(token);
          next = `${this.refreshTokenPrefix()}${randomBytes(24).toString('hex')}`;
          this.refreshTokens.set(next, held);
        }
        if (this.holdNextRefreshAnswer) {
          this.holdNextRefreshAnswer = false;
          let sent = false;
          const answer = () => {
            if (sent) return;
            sent = true;
            clearTimeout(bound);
            this.issue(rec, res, held.scopes, held.user, next);
          };
          const bound = setTimeout(answer, 10_000);
          this.heldRefreshAnswer = answer;
          return;
        }
        return this.issue(rec, res, held.scopes, held.user, next);
      }
      return this.fail(rec, res, 400, 'unsupported_grant_type');
    }
    if (this.dialect === 'google' && rec.method === 'POST' && rec.path === p.revoke) {
      const token = this.form(rec).get('token') ?? '';
      if (!this.revokeToken(token)) return this.fail(rec, res, 400, 'Token expired or revoked');
      return this.sendJson(rec, res, 200, {});
    }
    if (this.dialect === 'slack' && rec.method === 'POST' && rec.path === p.revoke) {
      this.revokeToken(this.credentialOf(rec)!);
      return this.sendJson(rec, res, 200, { ok: true, revoked: true });
    }
    if (this.dialect === 'hubspot' && rec.method === 'DELETE' && rec.path.startsWith(`${p.revoke}/`)) {
      if (!this.revokeToken(decodeURIComponent(rec.path.slice(p.revoke.length + 1)))) return this.fail(rec, res, 404, 'refresh token not found');
      rec.status = 204;
      res.writeHead(204);
      return void res.end();
    }
    // Slack methods take GET or POST.
    if ((rec.method === 'GET' || (this.dialect === 'slack' && rec.method === 'POST')) && (rec.path === p.verify || rec.path.startsWith(`${p.verify}/`))) {
      if (this.verifyFailsWith) return this.fail(rec, res, this.verifyFailsWith, 'verification refused by the test');
      const token = this.dialect === 'hubspot' ? decodeURIComponent(rec.path.slice(p.verify.length + 1)) : this.bearer(rec)!;
      const held = this.accessTokens.get(token)!;
      if (this.dialect === 'slack') {
        return this.sendJson(rec, res, 200, { ok: true, url: 'https://acme-support.slack.com/', team: 'Acme Support', user: 'voicebot', team_id: 'T0ACME', user_id: 'U0BOT', bot_id: 'B0BOT', is_enterprise_install: false });
      }
      if (this.dialect === 'atlassian') {
        // The sites the grant reaches, each with the granted scopes of its product.
        const scopesFor = (product: string) => held.scopes.filter((s) => s.includes(`:${product}-`));
        return this.sendJson(rec, res, 200, this.sites.filter((site) => scopesFor(site.product).length).map((site) => ({ id: site.id, url: site.url, name: site.name, scopes: scopesFor(site.product), avatarUrl: 'https://site-admin-avatar-cdn.prod.public.atl-paas.net/avatars/240/flag.png' })));
      }
      if (this.dialect === 'hubspot') {
        return this.sendJson(rec, res, 200, { token, user: held.user.email, hub_domain: 'acme.hubspot.com', scopes: held.scopes, hub_id: 4455667, app_id: 99, expires_in: this.accessTtlS, user_id: Number(held.user.id), token_type: 'access' });
      }
      return this.sendJson(rec, res, 200, { sub: held.user.id, email: held.user.email, email_verified: true });
    }
    return this.fail(rec, res, 404, `no route ${rec.method} ${rec.path}`);
  }

  /** RFC 7009: a refresh token ends its grant (and every access token of it); an access token ends itself. */
  private revokeToken(token: string): boolean {
    const refresh = this.refreshTokens.get(token);
    if (refresh) {
      this.refreshTokens.delete(token);
      for (const [t, a] of this.accessTokens) if (a.user.id === refresh.user.id) this.expireAccessToken(t);
    } else if (this.accessTokens.has(token)) {
      this.expireAccessToken(token);
    } else {
      return false;
    }
    this.revoked.push(token);
    return true;
  }
}
