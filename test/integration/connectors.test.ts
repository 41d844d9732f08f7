/**
 * Issue 18, first slice: the connector catalog, key connections verified by one real vendor
 * request (refused: nothing stored, 400 with the vendor's words), reconnect in place, actions
 * through `POST /connectors/execute/...` against wire-faithful vendor fakes, health after every
 * action (401, 429, 500, timeout), roles (403 for a foreign workspace or a plain member), fencing (a
 * foreign connection is 404), and secrets never in a response, the database or the logs.
 */
import { describe, expect, it } from 'vitest';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { ConnectorService } from '../../shared/gen/voiceplane/v1/connectors_pb.js';
import { newId } from '../../shared/ids.js';
import { ADAPTERS } from '../../shared/connectors/providers/index.js';
import { api } from '../helpers/accounts.js';
import { ALL_SECRETS, C, CALCOM_KEY, CONNECTOR_TIMEOUT_MS, connectorsSuite, HUBSPOT_KEY, HUBSPOT_KEY2, STRIPE_KEY, WRONG_HUBSPOT_KEY, ZENDESK_TOKEN } from '../helpers/connectors.js';

const s = connectorsSuite();
const { hubspot, zendesk, stripe, calcom, ws, connectKey, execute, connections, connectionOf, rowsOf } = s;

describe('catalog', () => {
  it('lists the providers this build can connect, as data, with fields and actions', async () => {
    const res = await api(s.cp, 'GET', `${C}/connectors`, { token: s.member.token });
    expect(res.status).toBe(200);
    const ids = (res.body.data as any[]).map((p) => p.id).sort();
    // Exactly the providers with an adapter.
    expect(ids).toEqual([...ADAPTERS.keys()].sort());
    expect(ids).toEqual(expect.arrayContaining(['calcom', 'freshdesk', 'google_workspace', 'hubspot', 'jira', 'pipedrive', 'servicenow', 'slack', 'stripe', 'twilio', 'zendesk']));
    const z = res.body.data.find((p: any) => p.id === 'zendesk');
    expect(z).toMatchObject({ name: 'Zendesk', auth_kind: 'api_key', oauth_available: false, products: ['helpdesk'] });
    expect(z.credential_fields.map((f: any) => f.key)).toEqual(['subdomain', 'email', 'api_token']);
    expect(z.credential_fields[0]).toMatchObject({ pattern: expect.any(String), pattern_help: expect.any(String), secret: false });
    expect(z.actions.map((a: any) => a.name)).toEqual(['create_ticket', 'find_ticket', 'add_comment']);
    expect(z.actions[0].parameters).toMatchObject({ type: 'object', required: ['subject', 'body'] });
  });

  it('needs a credential (401 in the {detail} family)', async () => {
    const res = await api(s.cp, 'GET', `${C}/connectors`);
    expect(res.status).toBe(401);
    expect(typeof res.body.detail).toBe('string');
  });
});

describe('key connect', () => {
  it('refuses a credential the vendor refuses: 400 with its reason, nothing stored', async () => {
    const before = hubspot.requests.length;
    const res = await connectKey('hubspot', { api_key: WRONG_HUBSPOT_KEY });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('Authentication credentials not found');
    expect(hubspot.requests.length - before).toBe(1);
    expect(await rowsOf('hubspot')).toEqual([]);
    expect(await connections()).toEqual([]);
  });

  it('checks the form before calling the vendor, naming the field', async () => {
    const before = hubspot.requests.length;
    const missing = await connectKey('hubspot', {});
    expect(missing.status).toBe(400);
    // A JSON null body is not an object (it read as {} before).
    const nul = await api(s.cp, 'POST', `${ws()}/connect-key/hubspot`, { token: s.owner.token, rawBody: 'null' });
    expect(nul.status).toBe(400);
    expect(JSON.stringify(nul.body)).toContain('must be a JSON object');
    expect(missing.body.detail).toMatch(/^api_key: is required/);
    const malformed = await connectKey('hubspot', { api_key: 'not-a-token' });
    expect(malformed.status).toBe(400);
    expect(malformed.body.detail).toMatch(/^api_key: is not in the expected form/);
    expect(malformed.body.detail).not.toContain('not-a-token');
    const zd = await connectKey('zendesk', { subdomain: 'acme.evil.example', email: 'a@b.c', api_token: 'x' });
    expect(zd.status).toBe(400);
    expect(zd.body.detail).toMatch(/^subdomain:/);
    expect(hubspot.requests.length).toBe(before);
  });

  it('answers 404 for an unknown provider and for one without a key door', async () => {
    expect((await connectKey('nope', { api_key: 'x' })).status).toBe(404);
    expect((await connectKey('google_workspace', { api_key: 'x' })).status).toBe(404);
  });

  it('connects (provider name accepted case-insensitively), labelled with the account, secret never returned', async () => {
    const res = await connectKey('HubSpot', { api_key: HUBSPOT_KEY });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ provider_id: 'hubspot', connector_name: 'HubSpot', account_label: 'HubSpot portal 4455667', auth_mode: 'api_key', is_active: true, health_status: 'ok', health_detail: null, workspace_id: s.owner.workspaceId });
    expect(res.body.actions.every((a: any) => a.enabled)).toBe(true);
    expect(JSON.stringify(res.body)).not.toContain(HUBSPOT_KEY);
    const [row] = await rowsOf('hubspot');
    expect(row!.id).toBe(res.body.id);
    expect(row!.secret_enc).toMatch(/^v1\./);
    expect(row!.secret_enc).not.toContain(HUBSPOT_KEY);
    expect(hubspot.requests.at(-1)!.headers.authorization).toBe(`Bearer ${HUBSPOT_KEY}`);
  });

  it('reconnects in place: same id, new credential used from then on', async () => {
    const first = await connectionOf('hubspot');
    hubspot.validKeys.add(HUBSPOT_KEY2);
    const res = await connectKey('hubspot', { api_key: HUBSPOT_KEY2 });
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(first.id);
    expect(await rowsOf('hubspot')).toHaveLength(1);
    hubspot.revoke(HUBSPOT_KEY);
    const found = await execute(first.id, 'find_contact', { email: 'nobody@example.com' });
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(hubspot.requests.at(-1)!.headers.authorization).toBe(`Bearer ${HUBSPOT_KEY2}`);
  });

  it('per-tenant host: an unknown Zendesk subdomain is a 400 naming it, nothing stored', async () => {
    const res = await connectKey('zendesk', { subdomain: 'nosuchdesk', email: 'agent@acme.example', api_token: ZENDESK_TOKEN });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/not found/);
    expect(await rowsOf('zendesk')).toEqual([]);
  });

  it('a vendor outage during verify is a 502 and stores nothing', async () => {
    stripe.faults.once({ status500: true });
    const res = await connectKey('stripe', { api_key: STRIPE_KEY });
    expect(res.status).toBe(502);
    expect(await rowsOf('stripe')).toEqual([]);
  });

  it('a verify answer without the account id (another shape) is a 502 and stores nothing, never "portal undefined"', async () => {
    stripe.faults.once({ unexpectedBody: { ok: true } });
    const res = await connectKey('stripe', { api_key: STRIPE_KEY });
    expect(res.status, JSON.stringify(res.body)).toBe(502);
    expect(res.body.detail).toContain('shape this connector does not understand');
    expect(await rowsOf('stripe')).toEqual([]);
  });
});

describe('roles and fencing', () => {
  it('members list, only owner/admin/manager connect; a foreign workspace is 403', async () => {
    expect((await api(s.cp, 'GET', `${ws()}/connections`, { token: s.member.token })).status).toBe(200);
    const byMember = await connectKey('stripe', { api_key: STRIPE_KEY }, s.member.token);
    expect(byMember.status).toBe(403);
    expect(typeof byMember.body.detail).toBe('string');
    expect((await api(s.cp, 'GET', `${ws()}/connections`, { token: s.stranger.token })).status).toBe(403);
    expect((await connectKey('stripe', { api_key: STRIPE_KEY }, s.stranger.token)).status).toBe(403);
    expect((await api(s.cp, 'GET', `${C}/workspace/not-a-uuid/connections`, { token: s.owner.token })).status).toBe(403);
    expect(await rowsOf('stripe')).toEqual([]);
  });

  it('API keys need connectors:read to list and connectors:write to connect or execute', async () => {
    const c = await api(s.cp, 'POST', '/api/v1/auth/api-keys', { token: s.owner.token, body: { name: 'crm-reader', scopes: ['connectors:read'] } });
    expect(c.status).toBe(201);
    const key = c.body.data.key as string;
    expect((await api(s.cp, 'GET', `${ws()}/connections`, { token: key })).status).toBe(200);
    expect((await api(s.cp, 'GET', `${C}/connectors`, { token: key })).status).toBe(200);
    const write = await connectKey('stripe', { api_key: STRIPE_KEY }, key);
    expect(write.status).toBe(403);
    expect(write.body.detail).toContain('connectors:write');
    const hs = await connectionOf('hubspot');
    expect((await execute(hs.id, 'find_contact', { email: 'x@example.com' }, key)).status).toBe(403);
    const other = await api(s.cp, 'POST', '/api/v1/auth/api-keys', { token: s.owner.token, body: { name: 'agents-only', scopes: ['agents:read'] } });
    expect((await api(s.cp, 'GET', `${ws()}/connections`, { token: other.body.data.key })).status).toBe(403);
  });

  it('another tenant cannot run, list or disconnect a connection: 404/403, never its data', async () => {
    const hs = await connectionOf('hubspot');
    expect((await execute(hs.id, 'find_contact', { email: 'x@example.com' }, s.stranger.token)).status).toBe(404);
    expect((await execute(newId(), 'find_contact', { email: 'x@example.com' })).status).toBe(404);
    // The stranger's own workspace, the owner's connection id: not in that workspace.
    expect((await api(s.cp, 'DELETE', `${C}/workspace/${s.stranger.workspaceId}/connections/${hs.id}`, { token: s.stranger.token })).status).toBe(404);
    expect((await api(s.cp, 'GET', `${C}/workspace/${s.stranger.workspaceId}/connections/${hs.id}/agents`, { token: s.stranger.token })).status).toBe(404);
    expect((await execute(hs.id, 'find_contact', { email: 'x@example.com' }, s.member.token)).status).toBe(403);
    expect((await connectionOf('hubspot')).is_active).toBe(true);
  });
});

describe('actions through the execute route', () => {
  it('HubSpot: create, find (also as <provider>__<action>) and a note on the contact', async () => {
    const hs = await connectionOf('hubspot');
    const created = await execute(hs.id, 'create_contact', { email: 'ana@example.com', first_name: 'Ana', phone: '+14155550100' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.data).toMatchObject({ email: 'ana@example.com', first_name: 'Ana' });
    const found = await execute(hs.id, 'hubspot__find_contact', { phone: '+14155550100' });
    expect(found.body.data).toEqual({ total: 1, contacts: [expect.objectContaining({ id: created.body.data.id, email: 'ana@example.com' })] });
    const note = await execute(hs.id, 'create_note', { contact_id: created.body.data.id, body: 'Caller asked for a callback' });
    expect(note.status).toBe(200);
    expect(hubspot.notes.at(-1)!.associations).toEqual([{ to: { id: created.body.data.id }, types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: 202 }] }]);
    const deal = await execute(hs.id, 'create_deal', { name: 'Ana renewal', amount: 1200, contact_id: created.body.data.id });
    expect(deal.body.data).toMatchObject({ name: 'Ana renewal' });
  });

  it('checks the body against the action parameters, naming the field; unknown action 404', async () => {
    const hs = await connectionOf('hubspot');
    const before = hubspot.requests.length;
    const missing = await execute(hs.id, 'create_contact', { first_name: 'No email' });
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toBe('email: is required');
    const wrong = await execute(hs.id, 'create_note', { contact_id: 'abc', body: 'x' });
    expect(wrong.status).toBe(400);
    expect(wrong.body.detail).toMatch(/^contact_id:/);
    const extra = await execute(hs.id, 'create_contact', { email: 'a@example.com', password: 'x' });
    expect(extra.body.detail).toBe('password: is not a parameter of this action');
    expect((await execute(hs.id, 'delete_everything', {})).status).toBe(404);
    expect((await execute(hs.id, 'constructor', {})).status).toBe(404);
    expect((await execute(hs.id, '__proto__', {})).status).toBe(404);
    expect((await execute(hs.id, 'stripe__find_customer', { email: 'a@example.com' })).status).toBe(404);
    expect(hubspot.requests.length).toBe(before);
  });

  it('Zendesk: Basic email/token auth on the tenant subdomain; create, find and comment on a ticket', async () => {
    const con = await connectKey('zendesk', { subdomain: 'acme', email: 'agent@acme.example', api_token: ZENDESK_TOKEN });
    expect(con.status, JSON.stringify(con.body)).toBe(200);
    expect(con.body.account_label).toBe('agent@acme.example @ acme.zendesk.com');
    const auth = zendesk.requests.at(-1)!.headers.authorization!;
    expect(Buffer.from(auth.slice(6), 'base64').toString()).toBe(`agent@acme.example/token:${ZENDESK_TOKEN}`);
    expect(zendesk.requests.at(-1)!.path).toBe('/acme/api/v2/users/me.json');
    const id = con.body.id;
    const t = await execute(id, 'create_ticket', { subject: 'Broken heater', body: 'Caller reports no heat', requester_email: 'bo@example.com', priority: 'high' });
    expect(t.status, JSON.stringify(t.body)).toBe(200);
    expect(t.body.data).toMatchObject({ subject: 'Broken heater', status: 'new', priority: 'high' });
    const f = await execute(id, 'find_ticket', { ticket_id: t.body.data.id });
    expect(f.body.data).toMatchObject({ id: t.body.data.id, description: 'Caller reports no heat' });
    const c = await execute(id, 'add_comment', { ticket_id: t.body.data.id, body: 'Technician booked', public: false });
    expect(c.body.data.status).toBe('open');
    expect(zendesk.tickets.get(t.body.data.id).comments.at(-1)).toEqual({ body: 'Technician booked', public: false });
    const missing = await execute(id, 'find_ticket', { ticket_id: 999999 });
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toContain('Not found');
    expect((await connectionOf('zendesk')).health_status).toBe('ok');
  });

  it('Stripe: form-encoded customers and a payment link over an ad-hoc price', async () => {
    const con = await connectKey('stripe', { api_key: STRIPE_KEY });
    expect(con.status, JSON.stringify(con.body)).toBe(200);
    expect(con.body.account_label).toBe('Stripe Acme Dental');
    const id = con.body.id;
    const cus = await execute(id, 'create_customer', { email: 'cy@example.com', name: 'Cy' });
    expect(cus.body.data).toMatchObject({ id: expect.stringMatching(/^cus_/), email: 'cy@example.com' });
    const found = await execute(id, 'find_customer', { email: 'cy@example.com' });
    expect(found.body.data.customers).toEqual([expect.objectContaining({ id: cus.body.data.id })]);
    const link = await execute(id, 'create_payment_link', { amount: 4500, currency: 'usd', product_name: 'Cleaning deposit' });
    expect(link.status, JSON.stringify(link.body)).toBe(200);
    expect(link.body.data).toMatchObject({ url: expect.stringMatching(/^https:\/\/buy\.stripe\.com\//), amount: 4500, currency: 'usd' });
    const [price, pl] = stripe.requests.slice(-2);
    expect(price!.path).toBe('/v1/prices');
    expect(new URLSearchParams(price!.rawBody).get('product_data[name]')).toBe('Cleaning deposit');
    expect(new URLSearchParams(pl!.rawBody).get('line_items[0][price]')).toBe(link.body.data.price_id);
  });

  it('Cal.com: free slots, then a booking that takes the slot', async () => {
    const con = await connectKey('calcom', { api_key: CALCOM_KEY });
    expect(con.status, JSON.stringify(con.body)).toBe(200);
    const id = con.body.id;
    const slots = await execute(id, 'list_free_slots', { event_type_id: 77, start: '2030-03-04', end: '2030-03-06', time_zone: 'Europe/London' });
    expect(slots.status, JSON.stringify(slots.body)).toBe(200);
    expect(slots.body.data).toEqual({ slots: ['2030-03-04T09:00:00.000Z', '2030-03-04T09:30:00.000Z', '2030-03-05T14:00:00.000Z'], truncated: false });
    expect(calcom.requests.at(-1)!.query.get('timeZone')).toBe('Europe/London');
    const booked = await execute(id, 'book', { event_type_id: 77, start: '2030-03-04T09:30:00.000Z', name: 'Dee', email: 'dee@example.com', phone: '+447700900123' });
    expect(booked.status, JSON.stringify(booked.body)).toBe(200);
    expect(booked.body.data).toMatchObject({ status: 'accepted', start: '2030-03-04T09:30:00.000Z' });
    expect(calcom.bookings.at(-1).attendees[0]).toEqual({ name: 'Dee', email: 'dee@example.com', timeZone: 'UTC', phoneNumber: '+447700900123' });
    const again = await execute(id, 'book', { event_type_id: 77, start: '2030-03-04T09:30:00.000Z', name: 'Eve', email: 'eve@example.com' });
    expect(again.status).toBe(400);
    expect(again.body.detail).toContain('not available');
    expect((await connectionOf('calcom')).health_status).toBe('ok');
  });
});

describe('health follows every action', () => {
  it('500, 429 and a timeout mark it error; success marks it ok again', async () => {
    const cal = await connectionOf('calcom');
    const q = { event_type_id: 77, start: '2030-03-04', end: '2030-03-06' };
    calcom.faults.once({ status500: true });
    expect((await execute(cal.id, 'list_free_slots', q)).status).toBe(502);
    expect(await connectionOf('calcom')).toMatchObject({ health_status: 'error', health_detail: 'internal server error' });
    calcom.faults.once({ status429RetryAfterS: 3 });
    const limited = await execute(cal.id, 'list_free_slots', q);
    expect(limited.status).toBe(502);
    expect(limited.body.detail).toContain('rate limiting');
    calcom.faults.once({ slowFirstByteMs: 4000 });
    const slow = await execute(cal.id, 'list_free_slots', q);
    expect(slow.status).toBe(502);
    expect(await connectionOf('calcom')).toMatchObject({ health_status: 'error', health_detail: `no answer within ${CONNECTOR_TIMEOUT_MS} ms` });
    expect((await execute(cal.id, 'list_free_slots', q)).status).toBe(200);
    const after = await connectionOf('calcom');
    expect(after).toMatchObject({ health_status: 'ok', health_detail: null });
    expect(Date.parse(after.health_checked_at)).toBeGreaterThan(Date.parse(cal.health_checked_at));
  });

  it('a 2xx answer in a shape the adapter does not know is a 502 and health error, never a 500', async () => {
    const cal = await connectionOf('calcom');
    const hub = await connectionOf('hubspot');
    calcom.faults.once({ unexpectedBody: { data: { '2030-03-04': 'not a list' } } });
    const slots = await execute(cal.id, 'list_free_slots', { event_type_id: 77, start: '2030-03-04', end: '2030-03-06' });
    expect(slots.status, JSON.stringify(slots.body)).toBe(502);
    expect(slots.body.detail).toContain('shape this connector does not understand');
    expect((await connectionOf('calcom')).health_status).toBe('error');
    hubspot.faults.once({ unexpectedBody: { total: 1 } });
    expect((await execute(hub.id, 'find_contact', { email: 'a@b.example' })).status).toBe(502);
    expect((await execute(hub.id, 'find_contact', { email: 'a@b.example' })).status).toBe(200);
    expect((await execute(cal.id, 'list_free_slots', { event_type_id: 77, start: '2030-03-04', end: '2030-03-06' })).status).toBe(200);
  });

  it('a refused stored credential (401) marks it reconnect_needed; reconnecting heals it', async () => {
    const st = await connectionOf('stripe');
    stripe.revoke(STRIPE_KEY);
    const res = await execute(st.id, 'find_customer', { email: 'cy@example.com' });
    expect(res.status).toBe(502);
    expect(res.body.detail).toContain('reconnected');
    expect(await connectionOf('stripe')).toMatchObject({ health_status: 'reconnect_needed', health_detail: 'Invalid API Key provided' });
    stripe.validKeys.add(STRIPE_KEY);
    expect((await connectKey('stripe', { api_key: STRIPE_KEY })).body).toMatchObject({ id: st.id, health_status: 'ok' });
  });
});

describe('OAuth door without a configured client (connectors.oauth.test.ts has the flow)', () => {
  it('a key-only provider has no OAuth door (404); an OAuth provider has no client configured (500)', async () => {
    expect((await api(s.cp, 'POST', `${ws()}/connect/stripe`, { token: s.owner.token, body: {} })).status).toBe(404);
    const g = await api(s.cp, 'POST', `${ws()}/connect/google_workspace`, { token: s.owner.token, body: {} });
    expect(g.status).toBe(500);
    expect(g.body.detail).toContain('no OAuth client');
    expect((await api(s.cp, 'POST', `${ws()}/connect/google_workspace`, { token: s.member.token, body: {} })).status).toBe(403);
  });
});

it('the same service over Connect: list, execute (JSON value back), errors as Connect codes', async () => {
  const client = createClient(ConnectorService, createConnectTransport({ baseUrl: `http://127.0.0.1:${s.cp.port}`, httpVersion: '2' }));
  const headers = { authorization: `Bearer ${s.owner.token}` };
  const { connections } = await client.listConnections({ workspaceId: s.owner.workspaceId }, { headers });
  const hs = connections.find((c) => c.providerId === 'hubspot')!;
  expect(hs).toMatchObject({ isActive: true, healthStatus: 'ok', connectorName: 'HubSpot' });
  const res = await client.executeAction({ connectionId: hs.id, action: 'find_contact', body: { email: 'ana@example.com' } }, { headers });
  expect(toJson(ValueSchema, res.data!)).toMatchObject({ total: 1, contacts: [{ email: 'ana@example.com' }] });
  const err = await client.connectKey({ workspaceId: s.owner.workspaceId, provider: 'hubspot', credentials: {} }, { headers }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ConnectError);
  expect((err as ConnectError).code).toBe(Code.InvalidArgument);
  const foreign = await client.executeAction({ connectionId: hs.id, action: 'find_contact', body: {} }, { headers: { authorization: `Bearer ${s.stranger.token}` } }).catch((e: unknown) => e);
  expect((foreign as ConnectError).code).toBe(Code.NotFound);
});

it('no credential ever reaches the logs', () => {
  const log = s.infra.logLines.join('');
  expect(log).toContain('connector connected');
  for (const s of ALL_SECRETS) expect(log).not.toContain(s);
});
