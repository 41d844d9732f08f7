/**
 * Pure parts of the OAuth door: the signed state, PKCE, OAuth client configuration, scope
 * coverage, and the Google adapter's free-slot and RFC 2822 helpers.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../shared/config.js';
import { loadCatalog } from '../../../shared/connectors/catalog.js';
import { CATALOG_DATA } from '../../../shared/connectors/catalog-data.js';
import { actionCovered, OAUTH_DESCRIPTORS, scopesFor } from '../../../shared/connectors/oauth/descriptors.js';
import { resolveOAuthClients } from '../../../shared/connectors/oauth/tokens.js';
import { freeSlots, rfc2822 } from '../../../shared/connectors/providers/google-workspace.js';
import { pkcePair, readState, signState, stateKey } from '../../../control-plane/connectors/oauth-state.js';

const key = stateKey(new Uint8Array(32).fill(7));
const payload = { workspaceId: 'w1', userId: 'u1', providerId: 'google_workspace', products: ['calendar'], nonce: 'n1', expiresAt: 1_900_000_000_000 };

describe('state', () => {
  it('round-trips what it signed and refuses any change', () => {
    const s = signState(key, payload);
    expect(readState(key, s)).toEqual(payload);
    const [body, sig] = s.split('.');
    const other = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body!, 'base64url').toString()), w: 'w2' })).toString('base64url');
    expect(readState(key, `${other}.${sig}`)).toBe('tampered');
    expect(readState(key, `${body}.${sig}x`)).toBe('tampered');
    expect(readState(key, `${body}.${sig}.x`)).toBe('tampered');
    expect(readState(stateKey(new Uint8Array(32).fill(8)), s)).toBe('tampered');
    expect(readState(key, '')).toBe('missing');
    expect(readState(key, 'a'.repeat(5000))).toBe('tampered');
  });

  it('PKCE S256: the challenge is the base64url SHA-256 of a 43-character verifier', () => {
    const { verifier, challenge } = pkcePair();
    expect(verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(challenge).toBe(createHash('sha256').update(verifier).digest('base64url'));
  });
});

describe('OAuth clients', () => {
  const catalog = loadCatalog(CATALOG_DATA);

  it('reads CONNECTOR_<ID>_OAUTH_* and refuses half a client', () => {
    const c = loadConfig({ CONNECTOR_GOOGLE_WORKSPACE_OAUTH_CLIENT_ID: 'id', CONNECTOR_GOOGLE_WORKSPACE_OAUTH_CLIENT_SECRET: 's', CONNECTOR_GOOGLE_WORKSPACE_OAUTH_TOKEN_URL: 'http://127.0.0.1:9/token' });
    expect(c.connectorOAuthClients).toEqual({ google_workspace: { clientId: 'id', clientSecret: 's', tokenUrl: 'http://127.0.0.1:9/token', authorizeUrl: undefined, revokeUrl: undefined, userinfoUrl: undefined } });
    expect(() => loadConfig({ CONNECTOR_HUBSPOT_OAUTH_CLIENT_ID: 'id' })).toThrow(/CONNECTOR_HUBSPOT_OAUTH_CLIENT_SECRET/);
    expect(() => loadConfig({ CONNECTOR_HUBSPOT_OAUTH_CLIENT_SECRET: 's' })).toThrow(ConfigError);
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://vp.example/' }).connectorsDashboardUrl).toBe('https://vp.example/dashboard/connectors');
    const clients = resolveOAuthClients(c.connectorOAuthClients, catalog);
    expect(clients.get('google_workspace')).toMatchObject({ tokenUrl: 'http://127.0.0.1:9/token', authorizeUrl: 'https://accounts.google.com/o/oauth2/v2/auth' });
  });

  it('refuses a client for a provider without an OAuth door', () => {
    expect(() => resolveOAuthClients({ stripe: { clientId: 'a', clientSecret: 'b' } }, catalog)).toThrow(ConfigError);
    expect(() => resolveOAuthClients({ pipedrive: { clientId: 'a', clientSecret: 'b' } }, catalog)).toThrow(/CONNECTOR_PIPEDRIVE_OAUTH_CLIENT_ID names no provider/);
    // Jira has its 3LO door now (accessible-resources gives the cloud id).
    expect(resolveOAuthClients({ jira: { clientId: 'a', clientSecret: 'b' } }, catalog).get('jira')).toMatchObject({ tokenUrl: 'https://auth.atlassian.com/oauth/token' });
  });

  it('Jira: the first accessible resource with Jira scopes is the site; a bad cloud id or none at all is refused', () => {
    const j = OAUTH_DESCRIPTORS.get('jira')!;
    const resources = [
      { id: 'conf-1', url: 'https://wiki.atlassian.net', name: 'wiki', scopes: ['read:confluence-content.all'] },
      { id: '1324a887-45db-1bf4-1e99-ef0ff456d421', url: 'https://acme.atlassian.net', name: 'acme', scopes: ['write:jira-work', 'read:jira-work'] },
      { id: 'other-jira', url: 'https://second.atlassian.net', name: 'second', scopes: ['read:jira-work'] },
    ];
    expect(j.credentialOf!(resources)).toEqual({ cloud_id: '1324a887-45db-1bf4-1e99-ef0ff456d421', site: 'acme.atlassian.net' });
    expect(j.label(resources)).toBe('acme.atlassian.net');
    expect(j.credentialOf!([resources[0]])).toBe('the grant gives access to no Jira site');
    expect(j.credentialOf!({ error: 'x' })).toBe('the grant gives access to no Jira site');
    // The cloud id becomes a URL path segment: nothing but an id passes.
    expect(j.credentialOf!([{ ...resources[1], id: '../../evil' }])).toMatch(/cloud id/);
  });

  it('every descriptor matches the catalog: an OAuth door, its products, its actions', () => {
    for (const d of OAUTH_DESCRIPTORS.values()) {
      const entry = catalog.find(d.providerId)!;
      expect(entry.auth_kinds).toContain('oauth');
      expect(Object.keys(d.productScopes).sort()).toEqual([...entry.products].sort());
      for (const a of Object.keys(d.actionScopes ?? {})) expect(entry.actions.map((x) => x.name)).toContain(a);
    }
  });

  it('scope coverage: any listed scope covers an action; asked scopes per product', () => {
    const g = OAUTH_DESCRIPTORS.get('google_workspace')!;
    expect(scopesFor(g, ['mail'])).toEqual(['openid', 'email', 'https://www.googleapis.com/auth/gmail.send']);
    expect(actionCovered(g, 'create_event', ['https://www.googleapis.com/auth/calendar'])).toBe(true);
    expect(actionCovered(g, 'create_event', ['https://www.googleapis.com/auth/calendar.freebusy'])).toBe(false);
    expect(actionCovered(undefined, 'anything', [])).toBe(true);
  });
});

describe('Google Workspace helpers', () => {
  const t = (hm: string) => Date.parse(`2030-03-04T${hm}:00.000Z`);
  const iso = (hm: string) => new Date(t(hm)).toISOString();

  it('free slots skip busy intervals (overlapping, unsorted, outside the window)', () => {
    const busy = [
      { start: iso('10:00'), end: iso('10:20') },
      { start: iso('09:10'), end: iso('09:40') },
      { start: iso('09:30'), end: iso('09:50') },
      { start: iso('07:00'), end: iso('08:00') },
    ];
    const { slots, truncated } = freeSlots(t('09:00'), t('11:00'), 30 * 60_000, busy);
    expect(slots.map((s) => s.start)).toEqual([iso('10:20')]);
    expect(truncated).toBe(false);
    expect(freeSlots(t('09:00'), t('09:50'), 10 * 60_000, []).slots).toHaveLength(5);
  });

  it('bounds the slots it returns', () => {
    const r = freeSlots(t('00:00'), t('00:00') + 30 * 24 * 3600_000, 5 * 60_000, []);
    expect(r.slots).toHaveLength(50);
    expect(r.truncated).toBe(true);
  });

  it('builds a base64url RFC 2822 message with flattened, encoded headers', () => {
    const raw = rfc2822('a@b.example', 'Grüße\r\nBcc: x@y.example', 'body');
    expect(raw).toMatch(/^[A-Za-z0-9_-]+$/);
    const text = Buffer.from(raw, 'base64url').toString('utf8');
    expect(text).toContain(`Subject: =?UTF-8?B?${Buffer.from('Grüße Bcc: x@y.example').toString('base64')}?=\r\n`);
    expect(text).not.toMatch(/^Bcc:/m);
    expect(text.endsWith(`\r\n\r\n${Buffer.from('body').toString('base64')}`)).toBe(true);
  });
});
