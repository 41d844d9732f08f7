/**
 * Issue 18, OAuth door (spec doc 1, Connectors API behaviour 3-6): consent through a wire-faithful
 * authorization server fake (Google and HubSpot dialects) and the browser's redirects, the signed
 * single-use state (replayed, tampered, expired, missing), the vendor's refusal, verification
 * failure (revoked, nothing stored), incremental consent, needs_scope on actions and resources,
 * the spreadsheet/sheet pickers, the Google Workspace actions, token refresh before expiry and on
 * a 401 (rotated tokens stored), a refused refresh, disconnect revoking, roles and fencing, and
 * no token in a response, the database or the logs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { saveState, signState, stateKey } from '../../control-plane/connectors/oauth-state.js';
import { GoogleApisFake } from '../fakes/google-apis.js';
import { HubSpotFake } from '../fakes/hubspot.js';
import { OAuthProviderFake } from '../fakes/oauth-provider.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { until } from '../helpers/campaigns.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';

const C = '/api/v1/connectors';
const PUBLIC = 'https://voiceplane.test';
const DASHBOARD = 'https://dash.example/connectors';
const G = 'https://www.googleapis.com/auth/';

const googleAuth = new OAuthProviderFake('google');
const google = new GoogleApisFake(googleAuth);
const hubspotAuth = new OAuthProviderFake('hubspot');
const hubspot = new HubSpotFake();
hubspotAuth.link(hubspot);

let infra: TestInfra;
let cp: ControlPlane;
let owner: TestUser;
let member: TestUser;
let stranger: TestUser;
const ws = () => `${C}/workspace/${owner.workspaceId}`;

beforeAll(async () => {
  await Promise.all([googleAuth.start(), google.start(), hubspotAuth.start(), hubspot.start()]);
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
    // One fake serves every Google host (main, gmail, sheets).
    connectorBaseUrls: { google_workspace: google.url, google_workspace_gmail: google.url, google_workspace_sheets: google.url, hubspot: hubspot.url },
    connectorOAuthClients: { google_workspace: client(googleAuth), hubspot: client(hubspotAuth) },
    connectorTimeoutMs: 1500,
  });
  cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  [owner, member, stranger] = await Promise.all([createTestUser(cp), createTestUser(cp), createTestUser(cp)]);
  const add = await api(cp, 'POST', `/api/v1/auth/workspaces/${owner.workspaceId}/members`, { token: owner.token, body: { email: member.email, role: 'member' } });
  expect(add.status).toBe(201);
  google.spreadsheets.push(
    { id: 'ss-budget', name: 'Budget 2030', modifiedTime: '2030-01-02T10:00:00.000Z', sheets: [{ sheetId: 0, title: 'Leads', index: 0, rows: [] }, { sheetId: 917, title: "Q1 'calls'", index: 1, rows: [] }] },
    { id: 'ss-other', name: 'Roadmap', modifiedTime: '2030-01-01T10:00:00.000Z', sheets: [{ sheetId: 0, title: 'Sheet1', index: 0, rows: [] }] },
  );
}, 60_000);

afterAll(async () => {
  await cp?.close();
  await infra?.close();
  await Promise.all([googleAuth.close(), google.close(), hubspotAuth.close(), hubspot.close()]);
});

/** POST connect, then the browser: the vendor's consent page and its redirect to our callback. */
async function consent(provider: string, body?: unknown, token = owner.token, workspacePath = ws()) {
  const start = await api(cp, 'POST', `${workspacePath}/connect/${provider}`, { token, body });
  expect(start.status, JSON.stringify(start.body)).toBe(200);
  const authUrl = new URL(start.body.auth_url);
  const atVendor = await fetch(authUrl, { redirect: 'manual' });
  expect(atVendor.status).toBe(302);
  const callback = new URL(atVendor.headers.get('location')!);
  expect(callback.origin + callback.pathname).toBe(`${PUBLIC}${C}/oauth/callback`);
  return { authUrl, callback, finish: () => follow(callback) };
}

/** The browser arriving at our callback (a reverse proxy would map PUBLIC to the control plane). */
async function follow(callback: URL) {
  const res = await api(cp, 'GET', callback.pathname + callback.search);
  expect(res.status).toBe(302);
  const to = new URL(String(res.headers.location));
  expect(to.origin + to.pathname).toBe(DASHBOARD);
  return to.searchParams;
}

async function connectionOf(provider: string) {
  const res = await api(cp, 'GET', `${ws()}/connections`, { token: owner.token });
  expect(res.status).toBe(200);
  return (res.body.data as any[]).find((c) => c.provider_id === provider);
}

async function storedCred(provider: string): Promise<{ access_token: string; refresh_token?: string } | undefined> {
  const [row] = await infra.sql<Array<{ secret_enc: string | null }>>`select secret_enc from connector_connections where provider_id = ${provider}`;
  return row?.secret_enc ? JSON.parse(infra.secrets.decrypt(row.secret_enc)) : undefined;
}

const execute = (id: string, action: string, body: unknown, token = owner.token) => api(cp, 'POST', `${C}/execute/${id}/${action}`, { token, body });
const resources = (id: string, kind: string, query = '', token = owner.token) => api(cp, 'GET', `${ws()}/connections/${id}/resources/${kind}${query}`, { token });

describe('catalog and start', () => {
  it('oauth_available is true exactly for the providers with a configured client', async () => {
    const res = await api(cp, 'GET', `${C}/connectors`, { token: member.token });
    const byId = Object.fromEntries((res.body.data as any[]).map((p) => [p.id, p]));
    expect(byId.google_workspace).toMatchObject({ auth_kind: 'oauth', oauth_available: true, credential_fields: [], products: ['calendar', 'mail', 'sheets'] });
    expect(byId.hubspot.oauth_available).toBe(true);
    expect(byId.calcom.oauth_available).toBe(false);
    expect(byId.stripe.oauth_available).toBe(false);
  });

  it('answers 404 without an OAuth door, 500 without a client, 400 naming products, 403 below manager or outside', async () => {
    expect((await api(cp, 'POST', `${ws()}/connect/stripe`, { token: owner.token })).status).toBe(404);
    expect((await api(cp, 'POST', `${ws()}/connect/nope`, { token: owner.token })).status).toBe(404);
    const noClient = await api(cp, 'POST', `${ws()}/connect/calcom`, { token: owner.token });
    expect(noClient.status).toBe(500);
    expect(noClient.body.detail).toMatch(/no OAuth client/);
    // The spec's 500 for a deployment without that client, not a bug: a warning without a stack.
    const logged = infra.logLines.map((l) => JSON.parse(l) as { level: number; msg: string; reason?: string }).filter((l) => /no OAuth client/.test(l.reason ?? '') || (l.level >= 50 && /request failed/.test(l.msg)));
    expect(logged.map((l) => [l.level, l.msg])).toEqual([[40, 'request refused by the deployment configuration']]);
    const bad = await api(cp, 'POST', `${ws()}/connect/google_workspace`, { token: owner.token, body: { products: ['calendar', 'drive'] } });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/^products: unknown product drive/);
    expect((await api(cp, 'POST', `${ws()}/connect/google_workspace`, { token: member.token })).status).toBe(403);
    expect((await api(cp, 'POST', `${ws()}/connect/google_workspace`, { token: stranger.token })).status).toBe(403);
  });

  it('the default finish page says how the connection ended, with every value escaped', async () => {
    const page = async (q: string) => {
      const res = await fetch(`http://127.0.0.1:${cp.port}/dashboard/connectors${q}`);
      return { status: res.status, type: res.headers.get('content-type'), csp: res.headers.get('content-security-policy'), text: await res.text() };
    };
    const ok = await page('?connected=hubspot');
    expect(ok).toMatchObject({ status: 200, type: 'text/html; charset=utf-8', csp: "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'" });
    expect(ok.text).toContain('<p>hubspot is connected. You can close this window.</p>');
    const failed = await page(`?error=access_denied&provider=slack&reason=${encodeURIComponent('<script>alert(1)</script>')}`);
    expect(failed.text).toContain('Connecting slack failed (access_denied): &lt;script&gt;alert(1)&lt;/script&gt;.');
    expect(failed.text).not.toContain('<script>');
    expect((await page('')).text).toContain('No connection was finished here');
    // Only identifiers are shown as provider and code: other text there is not echoed.
    expect((await page(`?connected=${encodeURIComponent('Your account is locked, call +1 555')}`)).text).toContain('No connection was finished here');
  });

  it('builds the consent URL: signed state, PKCE S256 for Google, offline access and incremental consent, none of it for HubSpot PKCE', async () => {
    const res = await api(cp, 'POST', `${ws()}/connect/Google Workspace`, { token: owner.token, body: { products: ['mail'] } });
    const q = new URL(res.body.auth_url).searchParams;
    expect(Object.fromEntries(q)).toMatchObject({ response_type: 'code', client_id: googleAuth.clientId, redirect_uri: `${PUBLIC}${C}/oauth/callback`, code_challenge_method: 'S256', access_type: 'offline', include_granted_scopes: 'true' });
    expect(q.get('scope')!.split(' ')).toEqual(['openid', 'email', `${G}gmail.send`]);
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')!.split('.')).toHaveLength(2);
    const hs = new URL((await api(cp, 'POST', `${ws()}/connect/hubspot`, { token: owner.token })).body.auth_url).searchParams;
    expect(hs.get('code_challenge')).toBeNull();
    expect(hs.get('scope')).toContain('crm.objects.contacts.write');
  });
});

describe('callback refusals', () => {
  it('refuses a replayed, tampered, missing or expired state; nothing is stored', async () => {
    const { callback, finish } = await consent('google_workspace', { products: ['calendar'] });
    const state = callback.searchParams.get('state')!;
    // Tampered first (the signature check comes before the single use).
    const [body, sig] = state.split('.');
    const forged = new URL(callback);
    const payload = JSON.parse(Buffer.from(body!, 'base64url').toString());
    forged.searchParams.set('state', `${Buffer.from(JSON.stringify({ ...payload, w: stranger.workspaceId })).toString('base64url')}.${sig}`);
    expect(Object.fromEntries(await follow(forged))).toMatchObject({ error: 'invalid_state', reason: 'tampered' });
    const missing = new URL(callback);
    missing.searchParams.delete('state');
    expect(Object.fromEntries(await follow(missing))).toMatchObject({ error: 'invalid_state', reason: 'missing' });
    // The real one works once, then is replayed.
    expect((await finish()).get('connected')).toBe('google_workspace');
    expect(Object.fromEntries(await follow(callback))).toMatchObject({ error: 'invalid_state', reason: 'replayed' });
    // Expired: a state this deployment signed whose ten minutes are over.
    const key = stateKey(infra.jwtKey);
    const old = { workspaceId: owner.workspaceId, userId: owner.userId, providerId: 'google_workspace', products: ['mail'], nonce: 'expired-nonce-0001', expiresAt: Date.now() - 1000 };
    await saveState(infra.sql, old, null, new Date(Date.now() - 11 * 60_000));
    const expired = new URL(callback);
    expired.searchParams.set('state', signState(key, old));
    expect(Object.fromEntries(await follow(expired))).toMatchObject({ error: 'invalid_state', reason: 'expired', provider: 'google_workspace' });
    const conn = await connectionOf('google_workspace');
    expect(conn.enabled_products).toEqual(['calendar']);
  });

  it('a manager removed or demoted after the start cannot finish the connect: access_denied, nothing stored', async () => {
    for (const change of ['remove', 'demote'] as const) {
      const manager = await createTestUser(cp);
      const members = `/api/v1/auth/workspaces/${owner.workspaceId}/members`;
      expect((await api(cp, 'POST', members, { token: owner.token, body: { email: manager.email, role: 'manager' } })).status).toBe(201);
      const { callback } = await consent('hubspot', undefined, manager.token);
      const changed =
        change === 'remove'
          ? await api(cp, 'DELETE', `${members}/${manager.userId}`, { token: owner.token })
          : await api(cp, 'POST', members, { token: owner.token, body: { email: manager.email, role: 'member' } });
      expect(changed.status, change).toBeLessThan(300);
      const params = Object.fromEntries(await follow(callback));
      expect(params, change).toMatchObject({ error: 'access_denied', provider: 'hubspot' });
      expect(params.reason).toMatch(/no longer a manager/);
      expect(await connectionOf('hubspot')).toBeUndefined();
    }
  });

  it('passes the vendor refusal on (access_denied) and stores nothing', async () => {
    hubspotAuth.consent = 'deny';
    try {
      const { finish } = await consent('hubspot');
      expect(Object.fromEntries(await finish())).toMatchObject({ error: 'access_denied', reason: 'The user denied access', provider: 'hubspot' });
    } finally {
      hubspotAuth.consent = 'approve';
    }
    expect(await connectionOf('hubspot')).toBeUndefined();
  });

  it('a code exchange that times out or is refused: error redirect, nothing stored', async () => {
    const slow = await consent('hubspot');
    // The next request of the authorization server is the code exchange (the consent page consumed its own).
    hubspotAuth.faults.once({ slowFirstByteMs: 2500 });
    const params = await slow.finish();
    expect(Object.fromEntries(params)).toMatchObject({ error: 'token_exchange_failed', provider: 'hubspot' });
    expect(params.get('reason')).toMatch(/no answer within 1500 ms/);
    // A code the vendor did not issue (with a good state) is refused at the token endpoint, in its words.
    const again = await consent('hubspot');
    const bogus = new URL(again.callback);
    bogus.searchParams.set('code', 'code-never-issued');
    expect(Object.fromEntries(await follow(bogus))).toMatchObject({ error: 'token_exchange_failed', reason: 'Malformed auth code.' });
    expect(await connectionOf('hubspot')).toBeUndefined();
  });

  it('verification failure: nothing stored, the token revoked at the vendor', async () => {
    hubspotAuth.verifyFailsWith = 401;
    const revokedBefore = hubspotAuth.revoked.length;
    try {
      const { finish } = await consent('hubspot');
      expect(Object.fromEntries(await finish())).toMatchObject({ error: 'verification_failed', provider: 'hubspot' });
    } finally {
      hubspotAuth.verifyFailsWith = undefined;
    }
    expect(await connectionOf('hubspot')).toBeUndefined();
    expect(hubspotAuth.revoked.length).toBe(revokedBefore + 1);
    expect(hubspotAuth.revoked.at(-1)).toMatch(/^rt-/);
  });
});

describe('Google Workspace', () => {
  let id: string;

  it('connected with calendar only: labelled, scoped, sealed; uncovered actions disabled and 403 needs_scope', async () => {
    const conn = await connectionOf('google_workspace');
    id = conn.id;
    expect(conn).toMatchObject({ auth_mode: 'oauth', account_label: 'owner@acme.example', health_status: 'ok', enabled_products: ['calendar'], is_active: true });
    expect(conn.granted_scopes).toEqual(expect.arrayContaining([`${G}calendar.events`, `${G}calendar.freebusy`]));
    expect(Date.parse(conn.token_expires_at)).toBeGreaterThan(Date.now() + 3000_000);
    expect(Object.fromEntries(conn.actions.map((a: any) => [a.name, a.enabled]))).toEqual({ list_free_slots: true, create_event: true, send_email: false, append_row: false });
    const cred = await storedCred('google_workspace');
    expect(googleAuth.accessTokens.has(cred!.access_token)).toBe(true);
    expect(cred!.refresh_token).toMatch(/^1\/\//);
    const before = google.requests.length;
    const mail = await execute(id, 'send_email', { to: 'x@y.example', subject: 'Hi', body: 'Hello' });
    expect(mail.status).toBe(403);
    expect(mail.body).toMatchObject({ needs_scope: true, reconnect_products: ['mail'] });
    expect(mail.body.detail).toMatch(/^needs_scope/);
    const list = await resources(id, 'spreadsheets');
    expect(list.status).toBe(403);
    expect(list.body).toMatchObject({ needs_scope: true, reconnect_products: ['sheets'] });
    expect(google.requests.length).toBe(before);
    // A hand-written binding is held to the same grant: an uncovered action is refused when bound.
    const agent = await api(cp, 'POST', '/api/v1/agents', { token: owner.token, body: { workspace_id: owner.workspaceId, name: 'Grant check' } });
    const bind = (action: string) =>
      api(cp, 'POST', `/api/v1/agents/${agent.body.data.id}/tools`, {
        token: owner.token,
        body: { name: `t_${action}`, connector_binding: { connection_id: id, actions: [{ name: `google_workspace__${action}`, description: 'd', parameters: { type: 'object' } }] } },
      });
    const refused = await bind('send_email');
    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([{ field: 'connector_binding.actions[0].name', problem: 'is not granted by this connection: reconnect it with the mail product' }]);
    expect((await bind('create_event')).status).toBe(201);
  });

  it('runs the calendar actions against the Calendar API', async () => {
    google.busy.push({ start: '2030-03-04T09:30:00.000Z', end: '2030-03-04T10:15:00.000Z' });
    const slots = await execute(id, 'google_workspace__list_free_slots', { start: '2030-03-04T09:00:00Z', end: '2030-03-04T11:00:00Z', duration_minutes: 30 });
    expect(slots.status, JSON.stringify(slots.body)).toBe(200);
    expect(slots.body.data.slots.map((s: any) => s.start)).toEqual(['2030-03-04T09:00:00.000Z', '2030-03-04T10:15:00.000Z']);
    const ev = await execute(id, 'create_event', { start: '2030-03-04T09:00:00Z', end: '2030-03-04T09:30:00Z', summary: 'Demo', attendee_email: 'caller@example.com' });
    expect(ev.status).toBe(200);
    expect(ev.body.data).toMatchObject({ id: expect.stringMatching(/^evt/), status: 'confirmed' });
    expect(google.events.at(-1)).toMatchObject({ summary: 'Demo', attendees: [{ email: 'caller@example.com' }], sendUpdates: 'all' });
  });

  it('incremental consent keeps the grant; a grant without the listing permission gets needs_scope until reconnected', async () => {
    // The user grants sheets but not the Drive listing scope (a connection from before it existed).
    googleAuth.grantOnly = [`${G}spreadsheets`];
    try {
      expect((await (await consent('google_workspace', { products: ['sheets'] })).finish()).get('connected')).toBe('google_workspace');
    } finally {
      googleAuth.grantOnly = undefined;
    }
    expect(googleAuth.authorizeCalls.at(-1)!.get('include_granted_scopes')).toBe('true');
    let conn = await connectionOf('google_workspace');
    expect(conn.id).toBe(id);
    expect(conn.enabled_products).toEqual(['calendar', 'sheets']);
    expect(conn.granted_scopes).toEqual(expect.arrayContaining([`${G}calendar.events`, `${G}spreadsheets`]));
    const denied = await resources(id, 'spreadsheets', '?q=budget', member.token);
    expect(denied.status).toBe(403);
    expect(denied.body.reconnect_products).toEqual(['sheets']);
    const row = await execute(id, 'append_row', { spreadsheet_id: 'ss-budget', sheet: "Q1 'calls'", values: ['Ada', '+15550100', 3] });
    expect(row.status, JSON.stringify(row.body)).toBe(200);
    expect(row.body.data).toMatchObject({ spreadsheet_id: 'ss-budget', updated_rows: 1 });
    expect(google.spreadsheets[0]!.sheets[1]!.rows).toEqual([['Ada', '+15550100', 3]]);
    // Restarting OAuth for sheets fixes it (spec behaviour 6).
    expect((await (await consent('google_workspace', { products: ['sheets'] })).finish()).get('connected')).toBe('google_workspace');
    conn = await connectionOf('google_workspace');
    expect(conn.granted_scopes).toContain(`${G}drive.metadata.readonly`);
    const list = await resources(id, 'spreadsheets', '?q=budget', member.token);
    expect(list.status, JSON.stringify(list.body)).toBe(200);
    expect(list.body.data).toEqual([{ id: 'ss-budget', name: 'Budget 2030', modified_at: '2030-01-02T10:00:00.000Z', url: 'https://docs.google.com/spreadsheets/d/ss-budget/edit' }]);
    const sheets = await resources(id, 'sheets', '?spreadsheet_id=ss-budget', member.token);
    expect(sheets.body.data).toEqual([{ id: 0, title: 'Leads', index: 0 }, { id: 917, title: "Q1 'calls'", index: 1 }]);
    expect((await resources(id, 'sheets', '', member.token)).body.detail).toMatch(/^spreadsheet_id: is required/);
    const kind = await resources(id, 'folders');
    expect(kind.status).toBe(400);
    expect(kind.body.detail).toMatch(/^kind:/);
    expect((await resources(id, 'sheets', '?spreadsheet_id=nope')).status).toBe(404);
  });

  it('sends mail through Gmail as a base64url RFC 2822 message, without header injection', async () => {
    expect((await (await consent('google_workspace', { products: ['mail'] })).finish()).get('connected')).toBe('google_workspace');
    expect((await connectionOf('google_workspace')).enabled_products).toEqual(['calendar', 'mail', 'sheets']);
    const res = await execute(id, 'send_email', { to: 'caller@example.com', subject: 'Your booking\r\nBcc: evil@example.com', body: 'See you on Tuesday. Grüße' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const msg = google.sentMessages.at(-1)!;
    expect(msg).toContain('To: caller@example.com\r\n');
    expect(msg).toContain('Subject: Your booking Bcc: evil@example.com\r\n');
    expect(msg).not.toMatch(/^Bcc:/m);
    expect(Buffer.from(msg.split('\r\n\r\n')[1]!.replace(/\r\n/g, ''), 'base64').toString('utf8')).toBe('See you on Tuesday. Grüße');
  });

  it('refreshes an expired access token on a vendor 401 and stores the rotated tokens', async () => {
    const before = await storedCred('google_workspace');
    googleAuth.rotateRefreshTokens = true;
    googleAuth.expireAccessToken(before!.access_token);
    const res = await execute(id, 'list_free_slots', { start: '2030-03-05T09:00:00Z', end: '2030-03-05T10:00:00Z' });
    googleAuth.rotateRefreshTokens = false;
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const after = await storedCred('google_workspace');
    expect(after!.access_token).not.toBe(before!.access_token);
    expect(after!.refresh_token).not.toBe(before!.refresh_token);
    expect(googleAuth.refreshTokens.has(after!.refresh_token!)).toBe(true);
    expect((await connectionOf('google_workspace')).health_status).toBe('ok');
  });

  it('refreshes before the action when the token is about to expire', async () => {
    const [row] = await infra.sql<Array<{ token_expires_at: Date }>>`
      update connector_connections set token_expires_at = now() + interval '20 seconds' where id = ${id} returning token_expires_at`;
    const before = await storedCred('google_workspace');
    const tokenCalls = googleAuth.requests.filter((r) => r.path === '/token').length;
    const res = await execute(id, 'list_free_slots', { start: '2030-03-05T09:00:00Z', end: '2030-03-05T10:00:00Z' });
    expect(res.status).toBe(200);
    expect(googleAuth.requests.filter((r) => r.path === '/token').length).toBe(tokenCalls + 1);
    expect((await storedCred('google_workspace'))!.access_token).not.toBe(before!.access_token);
    expect(Date.parse((await connectionOf('google_workspace')).token_expires_at)).toBeGreaterThan(row!.token_expires_at.getTime() + 3000_000);
    // The old access token was never sent to the API: no 401 round trip.
    expect(google.requests.at(-1)!.status).toBe(200);
  });

  it('ten actions racing on an expired token with rotation: one refresh, shared by all', async () => {
    const cred = await storedCred('google_workspace');
    googleAuth.rotateRefreshTokens = true;
    googleAuth.expireAccessToken(cred!.access_token);
    const tokenCallsBefore = googleAuth.requests.filter((r) => r.path === '/token').length;
    const body = { start: '2030-03-05T09:00:00Z', end: '2030-03-05T10:00:00Z' };
    try {
      const all = await Promise.all(Array.from({ length: 10 }, () => execute(id, 'list_free_slots', body)));
      expect(all.map((r) => r.status)).toEqual(Array(10).fill(200));
    } finally {
      googleAuth.rotateRefreshTokens = false;
    }
    const refreshes = googleAuth.requests.filter((r) => r.path === '/token').slice(tokenCallsBefore);
    expect(refreshes.map((r) => r.status)).toEqual([200]);
    expect(googleAuth.refreshTokens.has((await storedCred('google_workspace'))!.refresh_token!)).toBe(true);
    expect((await connectionOf('google_workspace')).health_status).toBe('ok');
  });

  it('two replicas racing with rotation: the refused one waits for the tokens the other stores after answering late', async () => {
    const cp2 = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
    try {
      const cred = await storedCred('google_workspace');
      googleAuth.rotateRefreshTokens = true;
      googleAuth.expireAccessToken(cred!.access_token);
      // The first refresh spends the refresh token at once but is answered only after the second
      // has been refused: the loser is refused before the winner has stored anything.
      googleAuth.holdNextRefreshAnswer = true;
      const tokenCallsBefore = googleAuth.requests.filter((r) => r.path === '/token').length;
      const body = { start: '2030-03-05T09:00:00Z', end: '2030-03-05T10:00:00Z' };
      const a = execute(id, 'list_free_slots', body);
      // Sent once the first refresh has spent the token (the fake clears the flag as it does).
      await until(() => !googleAuth.holdNextRefreshAnswer, 5000, 'first refresh carried out');
      const b = api(cp2, 'POST', `${C}/execute/${id}/list_free_slots`, { token: owner.token, body });
      expect([(await a).status, (await b).status]).toEqual([200, 200]);
      const refreshes = googleAuth.requests.filter((r) => r.path === '/token').slice(tokenCallsBefore);
      expect(refreshes.map((r) => r.status).sort()).toEqual([200, 400]);
      expect((await connectionOf('google_workspace')).health_status).toBe('ok');
    } finally {
      googleAuth.rotateRefreshTokens = false;
      googleAuth.holdNextRefreshAnswer = false;
      await cp2.close();
    }
  });

  it('a token endpoint outage leaves health error (not reconnect_needed), and the next action recovers', async () => {
    googleAuth.expireAccessToken((await storedCred('google_workspace'))!.access_token);
    googleAuth.faults.once({ status500: true });
    const body = { start: '2030-03-05T09:00:00Z', end: '2030-03-05T10:00:00Z' };
    const res = await execute(id, 'list_free_slots', body);
    expect(res.status).toBe(502);
    expect(res.body.detail).toMatch(/could not refresh/);
    expect(await connectionOf('google_workspace')).toMatchObject({ health_status: 'error', health_detail: expect.stringMatching(/^token refresh: /) });
    expect((await execute(id, 'list_free_slots', body)).status).toBe(200);
    expect((await connectionOf('google_workspace')).health_status).toBe('ok');
  });

  it('a refused refresh leaves health reconnect_needed', async () => {
    const cred = await storedCred('google_workspace');
    googleAuth.refreshTokens.delete(cred!.refresh_token!);
    googleAuth.expireAccessToken(cred!.access_token);
    const res = await execute(id, 'create_event', { start: '2030-03-04T09:00:00Z', end: '2030-03-04T09:30:00Z', summary: 'x' });
    expect(res.status).toBe(502);
    expect(res.body.detail).toMatch(/reconnected/);
    const conn = await connectionOf('google_workspace');
    expect(conn.health_status).toBe('reconnect_needed');
    expect(conn.health_detail).toMatch(/^token refresh: /);
    // Reconnecting in place heals it.
    expect((await (await consent('google_workspace', { products: ['calendar'] })).finish()).get('connected')).toBe('google_workspace');
    expect(await connectionOf('google_workspace')).toMatchObject({ id, health_status: 'ok' });
  });

  it('fences resources and actions: another workspace gets 403 / 404, a non-suite connection 404', async () => {
    expect((await resources(id, 'spreadsheets', '', stranger.token)).status).toBe(403);
    const foreign = await api(cp, 'GET', `${C}/workspace/${stranger.workspaceId}/connections/${id}/resources/spreadsheets`, { token: stranger.token });
    expect(foreign.status).toBe(404);
    const theirs = await execute(id, 'list_free_slots', { start: '2030-03-05T09:00:00Z', end: '2030-03-05T10:00:00Z' }, stranger.token);
    const missing = await execute('0190a000-0000-7000-8000-00000000dead', 'list_free_slots', {}, stranger.token);
    // A foreign connection answers exactly like a missing one.
    expect([theirs.status, theirs.body]).toEqual([404, missing.body]);
  });
});

describe('HubSpot over OAuth', () => {
  it('round trip: labelled from the token info, bearer access token on the CRM API, disconnect revokes', async () => {
    expect((await (await consent('hubspot')).finish()).get('connected')).toBe('hubspot');
    const conn = await connectionOf('hubspot');
    expect(conn).toMatchObject({ auth_mode: 'oauth', account_label: 'HubSpot portal 4455667', enabled_products: ['crm'] });
    expect(conn.granted_scopes).toContain('crm.objects.contacts.write');
    expect(conn.actions.every((a: any) => a.enabled)).toBe(true);
    const res = await execute(conn.id, 'create_contact', { email: 'ada@example.com' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const cred = await storedCred('hubspot');
    expect(hubspot.requests.at(-1)!.headers.authorization).toBe(`Bearer ${cred!.access_token}`);
    expect((await resources(conn.id, 'spreadsheets')).status).toBe(404);
    // Disconnect: purged locally, the refresh token revoked at HubSpot.
    const del = await api(cp, 'DELETE', `${ws()}/connections/${conn.id}`, { token: owner.token });
    expect(del.status).toBe(200);
    expect(hubspotAuth.revoked.at(-1)).toBe(cred!.refresh_token);
    expect(await storedCred('hubspot')).toBeUndefined();
  });

  it('deleting a workspace revokes its OAuth grants at the vendor (the cascade drops the only copy of the tokens)', async () => {
    const created = await api(cp, 'POST', '/api/v1/auth/workspaces', { token: owner.token, body: { name: 'Short-lived' } });
    expect(created.status).toBe(201);
    const wsId = created.body.data.id as string;
    const params = await (await consent('hubspot', undefined, owner.token, `${C}/workspace/${wsId}`)).finish();
    expect(params.get('connected')).toBe('hubspot');
    const [row] = await infra.sql<Array<{ secret_enc: string }>>`select secret_enc from connector_connections where workspace_id = ${wsId}`;
    const refreshToken = (JSON.parse(infra.secrets.decrypt(row!.secret_enc)) as { refresh_token: string }).refresh_token;
    const revokedBefore = hubspotAuth.revoked.length;
    expect((await api(cp, 'DELETE', `/api/v1/auth/workspaces/${wsId}`, { token: owner.token })).status).toBe(200);
    expect(hubspotAuth.revoked.slice(revokedBefore)).toEqual([refreshToken]);
    expect((await infra.sql`select 1 from connector_connections where workspace_id = ${wsId}`).length).toBe(0);
  });

  it('a revoke the vendor refuses is logged; the local purge happens anyway', async () => {
    expect((await (await consent('hubspot')).finish()).get('connected')).toBe('hubspot');
    const conn = await connectionOf('hubspot');
    hubspotAuth.faults.once({ status500: true });
    const del = await api(cp, 'DELETE', `${ws()}/connections/${conn.id}`, { token: owner.token });
    expect(del.status).toBe(200);
    expect(await storedCred('hubspot')).toBeUndefined();
    expect((await connectionOf('hubspot')).is_active).toBe(false);
    expect(infra.logLines.some((l) => l.includes('connector token revoke failed'))).toBe(true);
  });
});

describe('secrets', () => {
  it('no token, code or client secret in a response, the database in clear, or the logs', async () => {
    const secrets = [
      googleAuth.clientSecret,
      hubspotAuth.clientSecret,
      ...googleAuth.accessTokens.keys(),
      ...googleAuth.refreshTokens.keys(),
      ...googleAuth.revoked,
      ...hubspotAuth.revoked,
      ...hubspotAuth.accessTokens.keys(),
    ];
    expect(secrets.length).toBeGreaterThan(4);
    const listing = JSON.stringify((await api(cp, 'GET', `${ws()}/connections`, { token: owner.token })).body);
    const dump = JSON.stringify(await infra.sql`select * from connector_connections`) + JSON.stringify(await infra.sql`select * from connector_oauth_states`);
    const logs = infra.logLines.join('\n');
    for (const s of secrets) {
      expect(listing).not.toContain(s);
      expect(dump).not.toContain(s);
      expect(logs).not.toContain(s);
    }
    // Authorization codes went through the callback's query string: never logged.
    for (const q of googleAuth.authorizeCalls) expect(logs).not.toContain(q.get('code_challenge')!);
  });
});
