/**
 * Issue 18, OAuth doors of Slack, Jira (Atlassian 3LO) and Cal.com end to end, against the Slack,
 * Atlassian and Cal.com dialects of the authorization server fake and the vendor API fakes: consent
 * URL, code exchange (Slack's 200 `ok:false` failures, Atlassian's JSON token body), the
 * verification call (Slack `auth.test`; Atlassian `accessible-resources`, whose first Jira site
 * gives the cloud id), revoke on verification failure and on disconnect (Slack `auth.revoke`),
 * an action through `execute` with the OAuth token, and refresh with rotated refresh tokens.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { CalcomFake } from '../fakes/calcom.js';
import { JiraFake } from '../fakes/jira.js';
import { OAuthProviderFake } from '../fakes/oauth-provider.js';
import { SlackFake } from '../fakes/slack.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';

const C = '/api/v1/connectors';
const PUBLIC = 'https://voiceplane.test';
const DASHBOARD = 'https://dash.example/connectors';
const CLOUD_ID = 'c1d2e3f4-0000-4000-8000-00000000a11a';

const slackAuth = new OAuthProviderFake('slack');
const slack = new SlackFake();
slackAuth.link(slack);
const atlassian = new OAuthProviderFake('atlassian');
const jira = new JiraFake();
atlassian.link(jira);
jira.allowCloud(CLOUD_ID, 'acme.atlassian.net');
const calAuth = new OAuthProviderFake('calcom');
const calcom = new CalcomFake();
calAuth.link(calcom);

let infra: TestInfra;
let cp: ControlPlane;
let owner: TestUser;
const ws = () => `${C}/workspace/${owner.workspaceId}`;

beforeAll(async () => {
  await Promise.all([slackAuth.start(), slack.start(), atlassian.start(), jira.start(), calAuth.start(), calcom.start()]);
  const client = (f: OAuthProviderFake) => ({
    clientId: f.clientId,
    clientSecret: f.clientSecret,
    authorizeUrl: f.url + f.paths.authorize,
    tokenUrl: f.url + f.paths.token,
    revokeUrl: f.url + f.paths.revoke,
    userinfoUrl: f.url + f.paths.verify,
  });
  infra = await startTestInfra({
    publicBaseUrl: PUBLIC,
    connectorsDashboardUrl: DASHBOARD,
    connectorBaseUrls: { slack: slack.url, jira: `${jira.url}/{site}`, jira_oauth: `${jira.url}/ex/jira/{cloud_id}`, calcom: calcom.url },
    // Cal.com's verification call is its API's /v2/me (the Cal.com API fake).
    connectorOAuthClients: { slack: client(slackAuth), jira: client(atlassian), calcom: { ...client(calAuth), userinfoUrl: `${calcom.url}/v2/me` } },
    connectorTimeoutMs: 1500,
  });
  cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  owner = await createTestUser(cp);
  slack.channels.push({ id: 'C0SUPPORT', name: 'support', is_member: true });
  calcom.slots.set(77, ['2030-03-04T09:00:00.000Z', '2030-03-04T09:30:00.000Z']);
}, 60_000);

afterAll(async () => {
  await cp?.close();
  await infra?.close();
  await Promise.all([slackAuth.close(), slack.close(), atlassian.close(), jira.close(), calAuth.close(), calcom.close()]);
});

/** POST connect, then the browser: the vendor's consent page and its redirect to our callback. */
async function consent(provider: string, body?: unknown) {
  const start = await api(cp, 'POST', `${ws()}/connect/${provider}`, { token: owner.token, body });
  expect(start.status, JSON.stringify(start.body)).toBe(200);
  const authUrl = new URL(start.body.auth_url);
  const atVendor = await fetch(authUrl, { redirect: 'manual' });
  expect(atVendor.status).toBe(302);
  const callback = new URL(atVendor.headers.get('location')!);
  expect(callback.origin + callback.pathname).toBe(`${PUBLIC}${C}/oauth/callback`);
  return { authUrl, callback, finish: () => follow(callback) };
}

async function follow(callback: URL) {
  const res = await api(cp, 'GET', callback.pathname + callback.search);
  expect(res.status).toBe(302);
  const to = new URL(String(res.headers.location));
  expect(to.origin + to.pathname).toBe(DASHBOARD);
  return Object.fromEntries(to.searchParams);
}

async function connectionOf(provider: string) {
  const res = await api(cp, 'GET', `${ws()}/connections`, { token: owner.token });
  expect(res.status).toBe(200);
  return (res.body.data as any[]).find((c) => c.provider_id === provider);
}

async function storedCred(provider: string): Promise<Record<string, string> | undefined> {
  const [row] = await infra.sql<Array<{ secret_enc: string | null }>>`select secret_enc from connector_connections where provider_id = ${provider} and workspace_id = ${owner.workspaceId}`;
  return row?.secret_enc ? JSON.parse(infra.secrets.decrypt(row.secret_enc)) : undefined;
}

const execute = (id: string, action: string, body: unknown) => api(cp, 'POST', `${C}/execute/${id}/${action}`, { token: owner.token, body });

describe('Slack over OAuth v2', () => {
  it('consent URL: Slack authorize, comma-separated bot scopes, no PKCE', async () => {
    const res = await api(cp, 'POST', `${ws()}/connect/slack`, { token: owner.token });
    const url = new URL(res.body.auth_url);
    expect(url.pathname).toBe('/oauth/v2/authorize');
    expect(url.searchParams.get('scope')).toBe('chat:write,channels:read,users:read,users:read.email');
    expect(url.searchParams.get('code_challenge')).toBeNull();
  });

  it('oauth.v2.access failures (200 ok:false) end as token_exchange_failed with the Slack code', async () => {
    const { callback } = await consent('slack');
    const bogus = new URL(callback);
    bogus.searchParams.set('code', 'code-never-issued');
    expect(await follow(bogus)).toMatchObject({ error: 'token_exchange_failed', reason: 'invalid_code', provider: 'slack' });
    expect(slackAuth.requests.at(-1)).toMatchObject({ path: '/api/oauth.v2.access', status: 200 });
    expect(await connectionOf('slack')).toBeUndefined();
  });

  it('auth.test refusing the token: nothing stored, the token revoked through auth.revoke', async () => {
    slackAuth.verifyFailsWith = 401;
    try {
      expect(await (await consent('slack')).finish()).toMatchObject({ error: 'verification_failed', reason: 'invalid_auth', provider: 'slack' });
    } finally {
      slackAuth.verifyFailsWith = undefined;
    }
    expect(await connectionOf('slack')).toBeUndefined();
    const revoke = slackAuth.requests.at(-1)!;
    expect(revoke.path).toBe('/api/auth.revoke');
    expect(revoke.headers.authorization).toBe(`Bearer ${slackAuth.revoked.at(-1)}`);
    expect(slackAuth.revoked.at(-1)).toMatch(/^xoxb-/);
  });

  it('round trip: bot token stored sealed (no expiry without rotation), send_message with it, disconnect revokes', async () => {
    expect(await (await consent('slack')).finish()).toEqual({ connected: 'slack' });
    const conn = await connectionOf('slack');
    expect(conn).toMatchObject({ auth_mode: 'oauth', account_label: 'Slack Acme Support', enabled_products: ['messaging'], health_status: 'ok', token_expires_at: null });
    expect(conn.granted_scopes).toEqual(['chat:write', 'channels:read', 'users:read', 'users:read.email']);
    const cred = await storedCred('slack');
    expect(cred!.access_token).toMatch(/^xoxb-/);
    expect(cred!.refresh_token).toBeUndefined();
    const res = await execute(conn.id, 'slack__send_message', { channel: '#support', text: 'Caller wants a callback' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ channel: 'C0SUPPORT' });
    expect(slack.requests.at(-1)!.headers.authorization).toBe(`Bearer ${cred!.access_token}`);
    expect(slack.messages.at(-1)).toMatchObject({ channel: 'C0SUPPORT', text: 'Caller wants a callback' });
    const del = await api(cp, 'DELETE', `${ws()}/connections/${conn.id}`, { token: owner.token });
    expect(del.status).toBe(200);
    expect(slackAuth.revoked.at(-1)).toBe(cred!.access_token);
    expect(await storedCred('slack')).toBeUndefined();
    // The revoked token no longer works at Slack.
    expect(slackAuth.accessTokens.has(cred!.access_token)).toBe(false);
  });

  it('token rotation on: expiring token + refresh token; an expired token is refreshed (rotated) and the message sent', async () => {
    slackAuth.slackTokenRotation = true;
    try {
      expect(await (await consent('slack')).finish()).toEqual({ connected: 'slack' });
      const conn = await connectionOf('slack');
      expect(Date.parse(conn.token_expires_at)).toBeGreaterThan(Date.now() + 3000_000);
      const before = await storedCred('slack');
      expect(before!.access_token).toMatch(/^xoxe\.xoxb-1-/);
      expect(before!.refresh_token).toMatch(/^xoxe-1-/);
      slackAuth.expireAccessToken(before!.access_token);
      const res = await execute(conn.id, 'send_message', { channel: 'C0SUPPORT', text: 'after rotation' });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const after = await storedCred('slack');
      expect(after!.access_token).not.toBe(before!.access_token);
      expect(after!.refresh_token).not.toBe(before!.refresh_token);
      expect(slackAuth.refreshTokens.has(before!.refresh_token!)).toBe(false);
      expect(slackAuth.refreshTokens.has(after!.refresh_token!)).toBe(true);
      const refresh = slackAuth.requests.filter((r) => r.path === '/api/oauth.v2.access').at(-1)!;
      expect(new URLSearchParams(refresh.rawBody).get('grant_type')).toBe('refresh_token');
      expect(slack.messages.at(-1)!.text).toBe('after rotation');
      expect((await connectionOf('slack')).health_status).toBe('ok');
      // A refresh Slack refuses (200 ok:false invalid_refresh_token) leaves reconnect_needed.
      slackAuth.refreshTokens.delete(after!.refresh_token!);
      slackAuth.expireAccessToken(after!.access_token);
      const refused = await execute(conn.id, 'send_message', { channel: 'C0SUPPORT', text: 'x' });
      expect(refused.status).toBe(502);
      expect(await connectionOf('slack')).toMatchObject({ health_status: 'reconnect_needed', health_detail: 'token refresh: invalid_refresh_token' });
    } finally {
      slackAuth.slackTokenRotation = false;
    }
  });
});

describe('Jira over Atlassian OAuth 2.0 (3LO)', () => {
  it('consent URL: audience api.atlassian.com, prompt=consent, offline_access and the Jira scopes', async () => {
    const res = await api(cp, 'POST', `${ws()}/connect/jira`, { token: owner.token });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const q = new URL(res.body.auth_url).searchParams;
    expect(Object.fromEntries(q)).toMatchObject({ audience: 'api.atlassian.com', prompt: 'consent', response_type: 'code', client_id: atlassian.clientId });
    expect(q.get('scope')!.split(' ')).toEqual(['offline_access', 'read:jira-work', 'write:jira-work', 'read:jira-user']);
  });

  it('a grant reaching no Jira site fails verification; nothing stored', async () => {
    const sites = atlassian.sites;
    atlassian.sites = [];
    try {
      expect(await (await consent('jira')).finish()).toMatchObject({ error: 'verification_failed', reason: 'the grant gives access to no Jira site', provider: 'jira' });
    } finally {
      atlassian.sites = sites;
    }
    expect(await connectionOf('jira')).toBeUndefined();
  });

  it('round trip: the first Jira site of accessible-resources is sealed (cloud id, site); actions call api.atlassian.com/ex/jira/{cloudId} with the bearer token', async () => {
    // A Confluence site listed first (the user granted a Confluence scope too) is skipped.
    atlassian.sites = [{ id: 'conf-0000-wiki', url: 'https://wiki.atlassian.net', name: 'wiki', product: 'confluence' }, ...atlassian.sites];
    atlassian.grantOnly = ['offline_access', 'read:jira-work', 'write:jira-work', 'read:jira-user', 'read:confluence-content.all'];
    try {
      expect(await (await consent('jira')).finish()).toEqual({ connected: 'jira' });
    } finally {
      atlassian.grantOnly = undefined;
    }
    const token = atlassian.requests.find((r) => r.path === '/oauth/token')!;
    expect(token.headers['content-type']).toMatch(/^application\/json/);
    expect(token.body).toMatchObject({ grant_type: 'authorization_code', client_id: atlassian.clientId, redirect_uri: `${PUBLIC}${C}/oauth/callback` });
    const conn = await connectionOf('jira');
    expect(conn).toMatchObject({ auth_mode: 'oauth', account_label: 'acme.atlassian.net', enabled_products: ['issues'], health_status: 'ok' });
    expect(conn.actions.every((a: any) => a.enabled)).toBe(true);
    const cred = await storedCred('jira');
    expect(cred).toMatchObject({ cloud_id: CLOUD_ID, site: 'acme.atlassian.net' });
    expect(cred!.refresh_token).toMatch(/^eyJrt\./);
    const res = await execute(conn.id, 'jira__create_issue', { project_key: 'OPS', summary: 'Caller reports outage', description: 'Line 1\nLine 2' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ key: 'OPS-1', url: 'https://acme.atlassian.net/browse/OPS-1' });
    const rec = jira.requests.at(-1)!;
    expect(rec.path).toBe(`/ex/jira/${CLOUD_ID}/rest/api/3/issue`);
    expect(rec.headers.authorization).toBe(`Bearer ${cred!.access_token}`);
  });

  it('an expired access token is refreshed with rotation (JSON body), the rotated refresh token stored', async () => {
    const { id } = await connectionOf('jira');
    const before = await storedCred('jira');
    atlassian.rotateRefreshTokens = true;
    try {
      atlassian.expireAccessToken(before!.access_token);
      const res = await execute(id, 'find_issue', { issue_key: 'OPS-1' });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data).toMatchObject({ key: 'OPS-1', summary: 'Caller reports outage', description: 'Line 1\nLine 2' });
    } finally {
      atlassian.rotateRefreshTokens = false;
    }
    const refresh = atlassian.requests.filter((r) => r.path === '/oauth/token').at(-1)!;
    expect(refresh.body).toMatchObject({ grant_type: 'refresh_token', refresh_token: before!.refresh_token });
    const after = await storedCred('jira');
    expect(after).toMatchObject({ cloud_id: CLOUD_ID, site: 'acme.atlassian.net' });
    expect(after!.access_token).not.toBe(before!.access_token);
    expect(after!.refresh_token).not.toBe(before!.refresh_token);
    expect(atlassian.refreshTokens.has(before!.refresh_token!)).toBe(false);
    // The 401 on the old token, then the retried read with the new one.
    expect(jira.requests.slice(-2).map((r) => r.status)).toEqual([401, 200]);
    expect(jira.requests.at(-1)!.headers.authorization).toBe(`Bearer ${after!.access_token}`);
    // Disconnect: Atlassian documents no revocation endpoint, so nothing is called there.
    const calls = atlassian.requests.length;
    expect((await api(cp, 'DELETE', `${ws()}/connections/${id}`, { token: owner.token })).status).toBe(200);
    expect(atlassian.requests.length).toBe(calls);
    expect(await storedCred('jira')).toBeUndefined();
  });
});

describe('Cal.com over OAuth', () => {
  it('round trip: PKCE S256, labelled from /v2/me, slots with the bearer token, a 401 refreshed with rotation', async () => {
    const { authUrl, finish } = await consent('calcom');
    expect(authUrl.pathname).toBe('/auth/oauth2/authorize');
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(await finish()).toEqual({ connected: 'calcom' });
    const exchange = calAuth.requests.find((r) => r.path === '/v2/auth/oauth2/token')!;
    expect(new URLSearchParams(exchange.rawBody).get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43,}$/);
    const conn = await connectionOf('calcom');
    expect(conn).toMatchObject({ auth_mode: 'oauth', account_label: 'lee@clinic.example', enabled_products: ['scheduling'], health_status: 'ok' });
    const before = await storedCred('calcom');
    const body = { event_type_id: 77, start: '2030-03-04', end: '2030-03-05' };
    const res = await execute(conn.id, 'calcom__list_free_slots', body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.slots).toEqual(['2030-03-04T09:00:00.000Z', '2030-03-04T09:30:00.000Z']);
    expect(calcom.requests.at(-1)!.headers).toMatchObject({ authorization: `Bearer ${before!.access_token}`, 'cal-api-version': '2024-09-04' });
    calAuth.rotateRefreshTokens = true;
    try {
      calAuth.expireAccessToken(before!.access_token);
      expect((await execute(conn.id, 'list_free_slots', body)).status).toBe(200);
    } finally {
      calAuth.rotateRefreshTokens = false;
    }
    const after = await storedCred('calcom');
    expect(after!.refresh_token).not.toBe(before!.refresh_token);
    expect(calAuth.refreshTokens.has(after!.refresh_token!)).toBe(true);
    expect(calcom.requests.slice(-2).map((r) => r.status)).toEqual([401, 200]);
  });
});

describe('secrets', () => {
  it('no token or client secret in a listing, the database in clear, or the logs', async () => {
    const secrets = [slackAuth.clientSecret, atlassian.clientSecret, ...slackAuth.revoked, ...slackAuth.accessTokens.keys(), ...slackAuth.refreshTokens.keys(), ...atlassian.accessTokens.keys(), ...atlassian.refreshTokens.keys(), calAuth.clientSecret, ...calAuth.refreshTokens.keys()];
    expect(secrets.length).toBeGreaterThan(4);
    const listing = JSON.stringify((await api(cp, 'GET', `${ws()}/connections`, { token: owner.token })).body);
    const dump = JSON.stringify(await infra.sql`select * from connector_connections`);
    const logs = infra.logLines.join('\n');
    for (const s of secrets) {
      expect(listing).not.toContain(s);
      expect(dump).not.toContain(s);
      expect(logs).not.toContain(s);
    }
  });
});
