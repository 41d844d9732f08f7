/**
 * Issue 18: the six key adapters (Slack, Jira, Pipedrive, Twilio, Freshdesk, ServiceNow) against
 * wire-faithful fakes. Per vendor: a refused credential (one vendor request, 400 with the
 * vendor's words, nothing stored), a connect labelled with the account, every catalog action with
 * the request asserted on the fake's side, and one fault mapped to its status and health.
 */
import { describe, expect, it } from 'vitest';
import { api } from '../helpers/accounts.js';
import { C, CONNECTOR_TIMEOUT_MS, connectorsSuite } from '../helpers/connectors.js';
import { FreshdeskFake } from '../fakes/freshdesk.js';
import { JiraFake } from '../fakes/jira.js';
import { PipedriveFake } from '../fakes/pipedrive.js';
import { ServiceNowFake } from '../fakes/servicenow.js';
import { SlackFake } from '../fakes/slack.js';
import { TwilioFake } from '../fakes/twilio.js';

const SLACK_TOKEN = 'xoxb-1111111111-2222222222-AbCdEfGhIjKlMnOpQrStUvWx';
const JIRA_TOKEN = 'ATATT3xFfGF0jiraTokenForConnectorTests000001';
const PIPEDRIVE_TOKEN = '0123456789abcdef0123456789abcdef01234567';
const TWILIO_SID = `AC${'0a1b2c3d'.repeat(4)}`;
const TWILIO_TOKEN = 'twilioAuthToken0000000000000001';
const FRESHDESK_KEY = 'fdKeyAbCdEfGhIjKlMnOpQr';
const SERVICENOW_PASSWORD = 'snowPassword-0001!';
const SECRETS = [SLACK_TOKEN, JIRA_TOKEN, PIPEDRIVE_TOKEN, TWILIO_TOKEN, FRESHDESK_KEY, SERVICENOW_PASSWORD];

const slack = new SlackFake();
const jira = new JiraFake();
const pipedrive = new PipedriveFake();
const twilio = new TwilioFake();
const freshdesk = new FreshdeskFake();
const servicenow = new ServiceNowFake();

const s = connectorsSuite({
  fakes: [slack, jira, pipedrive, twilio, freshdesk, servicenow],
  baseUrls: () => ({
    slack: slack.url,
    jira: `${jira.url}/{site}`,
    pipedrive: pipedrive.url,
    twilio: twilio.url,
    // Lookup v2 is another host (lookups.twilio.com): mounted under /lookups of the same fake.
    twilio_lookups: `${twilio.url}/lookups`,
    freshdesk: `${freshdesk.url}/{domain}`,
    servicenow: `${servicenow.url}/{instance}`,
  }),
});
const { connectKey, execute, connectionOf, rowsOf } = s;

const basicOf = (h: string | undefined) => Buffer.from((h ?? '').replace(/^Basic /, ''), 'base64').toString('utf8');

/** A refused credential: exactly one vendor request, 400 with the vendor's words, no row. */
async function expectRefused(fake: { requests: unknown[] }, provider: string, body: unknown, reason: string | RegExp) {
  const before = fake.requests.length;
  const res = await connectKey(provider, body);
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  if (typeof reason === 'string') expect(res.body.detail).toContain(reason);
  else expect(res.body.detail).toMatch(reason);
  expect(fake.requests.length - before).toBe(1);
  expect(await rowsOf(provider)).toEqual([]);
}

async function connected(provider: string, body: unknown): Promise<{ id: string; account_label: string }> {
  const res = await connectKey(provider, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  expect(res.body).toMatchObject({ provider_id: provider, is_active: true, health_status: 'ok' });
  expect(await rowsOf(provider)).toHaveLength(1);
  return res.body;
}

it('the catalog lists the six as connectable providers', async () => {
  const res = await api(s.cp, 'GET', `${C}/connectors`, { token: s.member.token });
  expect(res.status).toBe(200);
  const ids = (res.body.data as any[]).map((p) => p.id);
  expect(ids).toEqual(expect.arrayContaining(['slack', 'jira', 'pipedrive', 'twilio', 'freshdesk', 'servicenow']));
  const tw = res.body.data.find((p: any) => p.id === 'twilio');
  expect(tw.credential_fields.map((f: any) => f.key)).toEqual(['account_sid', 'auth_token', 'from_number']);
});

describe('Slack', () => {
  const body = { api_key: SLACK_TOKEN };

  it('refuses a token Slack answers invalid_auth (HTTP 200, ok false), connects a valid one', async () => {
    await expectRefused(slack, 'slack', body, 'Slack refused the credential: invalid_auth');
    slack.validKeys.add(SLACK_TOKEN);
    const con = await connected('slack', body);
    expect(con.account_label).toBe('Slack Acme Support (bot voicebot)');
    const rec = slack.requests.at(-1)!;
    expect(`${rec.method} ${rec.path}`).toBe('POST /api/auth.test');
    expect(rec.headers.authorization).toBe(`Bearer ${SLACK_TOKEN}`);
  });

  it('send_message, list_channels (one bounded page) and find_user; Slack error codes map to statuses', async () => {
    slack.channels.push({ id: 'C0SUPPORT', name: 'support', is_member: true }, { id: 'C0RANDOM', name: 'random', is_member: false }, { id: 'C0OLD', name: 'old', is_member: true, is_archived: true });
    slack.users.push({ id: 'U0ANA', name: 'ana', real_name: 'Ana Diaz', email: 'ana@acme.example', tz: 'Europe/Madrid' });
    const { id } = await connectionOf('slack');
    const sent = await execute(id, 'send_message', { channel: '#support', text: 'Caller +14155550100 wants a callback' });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.data).toEqual({ channel: 'C0SUPPORT', ts: expect.stringMatching(/^\d+\.\d+$/) });
    const post = slack.requests.at(-1)!;
    expect(post.headers['content-type']).toMatch(/^application\/json/);
    expect(post.body).toEqual({ channel: '#support', text: 'Caller +14155550100 wants a callback' });
    expect(slack.messages.at(-1)).toMatchObject({ channel: 'C0SUPPORT', text: 'Caller +14155550100 wants a callback' });

    const list = await execute(id, 'list_channels', {});
    expect(list.body.data).toEqual({ channels: [expect.objectContaining({ id: 'C0SUPPORT', name: 'support', is_member: true }), expect.objectContaining({ id: 'C0RANDOM', is_member: false })], truncated: false });
    const q = slack.requests.at(-1)!.query;
    expect([q.get('types'), q.get('exclude_archived'), q.get('limit')]).toEqual(['public_channel', 'true', '200']);

    const user = await execute(id, 'find_user', { email: 'ana@acme.example' });
    expect(user.body.data).toEqual({ id: 'U0ANA', name: 'ana', real_name: 'Ana Diaz', email: 'ana@acme.example', tz: 'Europe/Madrid' });
    expect(slack.requests.at(-1)!.query.get('email')).toBe('ana@acme.example');

    const nobody = await execute(id, 'find_user', { email: 'nobody@acme.example' });
    expect(nobody.status).toBe(404);
    expect(nobody.body.detail).toContain('users_not_found');
    const nochannel = await execute(id, 'send_message', { channel: 'C0NOPE', text: 'x' });
    expect(nochannel.status).toBe(404);
    const notIn = await execute(id, 'send_message', { channel: 'C0RANDOM', text: 'x' });
    expect(notIn.status).toBe(400);
    expect(notIn.body.detail).toContain('not_in_channel');
    expect((await connectionOf('slack')).health_status).toBe('ok');
  });

  it('a revoked token (token_revoked on HTTP 200) marks it reconnect_needed; 429 ratelimited marks it error', async () => {
    const { id } = await connectionOf('slack');
    slack.faults.once({ status429RetryAfterS: 30 });
    const limited = await execute(id, 'list_channels', {});
    expect(limited.status).toBe(502);
    expect(limited.body.detail).toContain('rate limiting');
    expect(await connectionOf('slack')).toMatchObject({ health_status: 'error', health_detail: 'ratelimited' });
    slack.revoke(SLACK_TOKEN);
    const res = await execute(id, 'list_channels', {});
    expect(res.status).toBe(502);
    expect(res.body.detail).toContain('reconnected');
    expect(await connectionOf('slack')).toMatchObject({ health_status: 'reconnect_needed', health_detail: 'token_revoked' });
  });
});

describe('Jira', () => {
  const body = { site: 'acme.atlassian.net', email: 'bot@acme.example', api_token: JIRA_TOKEN };

  it('refuses a wrong token with the Jira message, an unknown site as not found, connects', async () => {
    await expectRefused(jira, 'jira', body, 'Client must be authenticated');
    jira.allow('acme.atlassian.net', 'bot@acme.example', JIRA_TOKEN);
    await expectRefused(jira, 'jira', { ...body, site: 'nosuch.atlassian.net' }, /not found/);
    const bad = await connectKey('jira', { ...body, site: 'evil.example.com' });
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/^site:/);
    const con = await connected('jira', body);
    expect(con.account_label).toBe('Support Bot @ acme.atlassian.net');
    const rec = jira.requests.at(-1)!;
    expect(rec.path).toBe('/acme.atlassian.net/rest/api/3/myself');
    expect(basicOf(rec.headers.authorization)).toBe(`bot@acme.example:${JIRA_TOKEN}`);
  });

  it('create_issue (description as ADF), find_issue (ADF read back as text), add_comment', async () => {
    const { id } = await connectionOf('jira');
    const created = await execute(id, 'create_issue', { project_key: 'OPS', summary: 'Heater broken', description: 'Caller reports no heat\nRoom 12' });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.data).toEqual({ id: expect.any(String), key: 'OPS-1', url: 'https://acme.atlassian.net/browse/OPS-1' });
    expect(jira.requests.at(-1)!.body.fields).toEqual({
      project: { key: 'OPS' },
      summary: 'Heater broken',
      issuetype: { name: 'Task' },
      description: { type: 'doc', version: 1, content: [{ type: 'paragraph', content: [{ type: 'text', text: 'Caller reports no heat' }] }, { type: 'paragraph', content: [{ type: 'text', text: 'Room 12' }] }] },
    });
    const found = await execute(id, 'find_issue', { issue_key: 'OPS-1' });
    expect(found.body.data).toMatchObject({ key: 'OPS-1', summary: 'Heater broken', status: 'To Do', issue_type: 'Task', description: 'Caller reports no heat\nRoom 12' });
    expect(jira.requests.at(-1)!.query.get('fields')).toContain('summary');
    const comment = await execute(id, 'add_comment', { issue_key: 'OPS-1', body: 'Technician booked' });
    expect(comment.status).toBe(200);
    expect(comment.body.data).toMatchObject({ id: expect.any(String), issue_key: 'OPS-1' });
    expect(jira.issues.get('OPS-1')!.comments[0].body.content[0].content[0].text).toBe('Technician booked');

    const missing = await execute(id, 'find_issue', { issue_key: 'OPS-999' });
    expect(missing.status).toBe(404);
    expect(missing.body.detail).toContain('Issue does not exist');
    const badProject = await execute(id, 'create_issue', { project_key: 'NOPE', summary: 'x' });
    expect(badProject.status).toBe(400);
    expect(badProject.body.detail).toContain('project: valid project is required');
    expect((await execute(id, 'find_issue', { issue_key: '../../myself' })).status).toBe(400);
  });

  it('a 500 marks it error with 502; the next success heals it', async () => {
    const { id } = await connectionOf('jira');
    jira.faults.once({ status500: true });
    const res = await execute(id, 'find_issue', { issue_key: 'OPS-1' });
    expect(res.status).toBe(502);
    expect(res.body.detail).toContain('unavailable');
    expect(await connectionOf('jira')).toMatchObject({ health_status: 'error', health_detail: 'internal server error' });
    expect((await execute(id, 'find_issue', { issue_key: 'OPS-1' })).status).toBe(200);
    expect((await connectionOf('jira')).health_status).toBe('ok');
  });
});

describe('Pipedrive', () => {
  const body = { api_key: PIPEDRIVE_TOKEN };

  it('refuses a token Pipedrive refuses, connects with the token in x-api-token (never in the URL)', async () => {
    await expectRefused(pipedrive, 'pipedrive', body, 'unauthorized access');
    pipedrive.validKeys.add(PIPEDRIVE_TOKEN);
    const con = await connected('pipedrive', body);
    expect(con.account_label).toBe('sales@acme.example @ Acme Ltd');
    const rec = pipedrive.requests.at(-1)!;
    expect(rec.path).toBe('/v1/users/me');
    expect(rec.headers['x-api-token']).toBe(PIPEDRIVE_TOKEN);
    expect(rec.query.has('api_token')).toBe(false);
  });

  it('create_person, find_person (persons search), create_deal on the person', async () => {
    const { id } = await connectionOf('pipedrive');
    const p = await execute(id, 'create_person', { name: 'Bo Lee', email: 'bo@example.com', phone: '+14155550111' });
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    expect(p.body.data).toEqual({ id: expect.any(Number), name: 'Bo Lee', emails: ['bo@example.com'], phones: ['+14155550111'], organization: null });
    expect(pipedrive.requests.at(-1)!.body).toEqual({ name: 'Bo Lee', email: [{ value: 'bo@example.com', primary: true, label: 'work' }], phone: [{ value: '+14155550111', primary: true, label: 'work' }] });
    const found = await execute(id, 'find_person', { term: 'bo@example.com' });
    expect(found.body.data).toEqual({ persons: [expect.objectContaining({ id: p.body.data.id, name: 'Bo Lee', emails: ['bo@example.com'] })] });
    const q = pipedrive.requests.at(-1)!.query;
    expect([q.get('term'), q.get('fields'), q.get('limit')]).toEqual(['bo@example.com', 'email,phone,name', '10']);
    const deal = await execute(id, 'create_deal', { title: 'Bo renewal', value: 900, person_id: p.body.data.id });
    expect(deal.body.data).toMatchObject({ title: 'Bo renewal', value: 900, status: 'open', person_id: p.body.data.id });
    expect(pipedrive.requests.at(-1)!.body).toEqual({ title: 'Bo renewal', value: 900, person_id: p.body.data.id });
    const short = await execute(id, 'find_person', { term: 'b' });
    expect(short.status).toBe(400);
    expect(short.body.detail).toMatch(/^term:/);
    const noPerson = await execute(id, 'create_deal', { title: 'x', person_id: 999999 });
    expect(noPerson.status).toBe(400);
    expect(noPerson.body.detail).toContain('Person not found');
  });

  it('a 429 is a 502 "rate limiting" and health error', async () => {
    const { id } = await connectionOf('pipedrive');
    pipedrive.faults.once({ status429RetryAfterS: 2 });
    const res = await execute(id, 'find_person', { term: 'bo' });
    expect(res.status).toBe(502);
    expect(res.body.detail).toContain('rate limiting');
    expect(await connectionOf('pipedrive')).toMatchObject({ health_status: 'error', health_detail: 'rate limit exceeded' });
  });
});

describe('Twilio', () => {
  const body = { account_sid: TWILIO_SID, auth_token: TWILIO_TOKEN, from_number: '+14155550100' };

  it('refuses a wrong auth token ("Authenticate"), connects with Basic sid:token', async () => {
    await expectRefused(twilio, 'twilio', body, 'Authenticate');
    twilio.allow(TWILIO_SID, TWILIO_TOKEN);
    twilio.numbers.add('+14155550100');
    const con = await connected('twilio', body);
    expect(con.account_label).toBe(`Acme Clinic (${TWILIO_SID}), from +14155550100`);
    const rec = twilio.requests.at(-1)!;
    expect(`${rec.method} ${rec.path}`).toBe(`GET /2010-04-01/Accounts/${TWILIO_SID}.json`);
    expect(basicOf(rec.headers.authorization)).toBe(`${TWILIO_SID}:${TWILIO_TOKEN}`);
  });

  it('send_sms (form-encoded, From = from_number), list_messages, lookup_number on the Lookups host', async () => {
    const { id } = await connectionOf('twilio');
    const sent = await execute(id, 'send_sms', { to: '+1 (415) 555-0199', body: 'Your booking is confirmed' });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.data).toMatchObject({ sid: expect.stringMatching(/^SM/), status: 'queued', to: '+14155550199', from: '+14155550100' });
    const post = twilio.requests.at(-1)!;
    expect(post.path).toBe(`/2010-04-01/Accounts/${TWILIO_SID}/Messages.json`);
    expect(post.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(post.rawBody))).toEqual({ To: '+14155550199', From: '+14155550100', Body: 'Your booking is confirmed' });

    const list = await execute(id, 'list_messages', { to: '+14155550199' });
    expect(list.body.data.messages).toEqual([expect.objectContaining({ sid: sent.body.data.sid, body: 'Your booking is confirmed' })]);
    expect(twilio.requests.at(-1)!.query.get('PageSize')).toBe('20');

    const look = await execute(id, 'lookup_number', { number: '+14155550199' });
    expect(look.status, JSON.stringify(look.body)).toBe(200);
    expect(look.body.data).toEqual({ phone_number: '+14155550199', valid: true, country_code: 'US', national_format: '(415) 555-0199', line_type: 'mobile', carrier: 'Acme Wireless' });
    const lr = twilio.requests.at(-1)!;
    expect(lr.path).toBe('/lookups/v2/PhoneNumbers/%2B14155550199');
    expect(lr.query.get('Fields')).toBe('line_type_intelligence');
    expect(basicOf(lr.headers.authorization)).toBe(`${TWILIO_SID}:${TWILIO_TOKEN}`);

    twilio.numbers.delete('+14155550100');
    const refused = await execute(id, 'send_sms', { to: '+14155550199', body: 'x' });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toContain('not a valid, SMS-capable inbound phone number');
    twilio.numbers.add('+14155550100');
  });

  it('a revoked auth token (401) marks it reconnect_needed; reconnecting heals it in place', async () => {
    const before = await connectionOf('twilio');
    twilio.revoke(`${TWILIO_SID}:${TWILIO_TOKEN}`);
    const res = await execute(before.id, 'list_messages', { to: '+14155550199' });
    expect(res.status).toBe(502);
    expect(await connectionOf('twilio')).toMatchObject({ health_status: 'reconnect_needed', health_detail: 'Authenticate' });
    twilio.allow(TWILIO_SID, TWILIO_TOKEN);
    expect((await connectKey('twilio', body)).body).toMatchObject({ id: before.id, health_status: 'ok' });
  });
});

describe('Freshdesk', () => {
  const body = { domain: 'acme.freshdesk.com', api_key: FRESHDESK_KEY };

  it('refuses a wrong key, connects with Basic api_key:X on the tenant domain', async () => {
    await expectRefused(freshdesk, 'freshdesk', body, 'You have to be logged in');
    freshdesk.allow('acme.freshdesk.com', FRESHDESK_KEY);
    const con = await connected('freshdesk', body);
    expect(con.account_label).toBe('desk@acme.example @ acme.freshdesk.com');
    const rec = freshdesk.requests.at(-1)!;
    expect(rec.path).toBe('/acme.freshdesk.com/api/v2/agents/me');
    expect(basicOf(rec.headers.authorization)).toBe(`${FRESHDESK_KEY}:X`);
  });

  it('create_ticket (open, priority code), find_ticket, add_note; an unknown ticket is 404', async () => {
    const { id } = await connectionOf('freshdesk');
    const t = await execute(id, 'create_ticket', { subject: 'Refund', description: 'Caller wants a refund', email: 'cy@example.com', priority: 'high' });
    expect(t.status, JSON.stringify(t.body)).toBe(200);
    expect(t.body.data).toMatchObject({ id: expect.any(Number), subject: 'Refund', status: 'open', priority: 'high', description: 'Caller wants a refund' });
    expect(freshdesk.requests.at(-1)!.body).toEqual({ subject: 'Refund', description: 'Caller wants a refund', email: 'cy@example.com', status: 2, priority: 3 });
    const f = await execute(id, 'find_ticket', { ticket_id: t.body.data.id });
    expect(f.body.data).toMatchObject({ id: t.body.data.id, subject: 'Refund' });
    const n = await execute(id, 'add_note', { ticket_id: t.body.data.id, body: 'Refund approved' });
    expect(n.body.data).toMatchObject({ ticket_id: t.body.data.id, private: true });
    expect(freshdesk.requests.at(-1)!.body).toEqual({ body: 'Refund approved', private: true });
    expect((await execute(id, 'find_ticket', { ticket_id: 999999 })).status).toBe(404);
  });

  it('a timeout is a 502 and health error; the next success heals it', async () => {
    const { id } = await connectionOf('freshdesk');
    freshdesk.faults.once({ slowFirstByteMs: CONNECTOR_TIMEOUT_MS + 2500 });
    const res = await execute(id, 'find_ticket', { ticket_id: 1 });
    expect(res.status).toBe(502);
    expect(await connectionOf('freshdesk')).toMatchObject({ health_status: 'error', health_detail: `no answer within ${CONNECTOR_TIMEOUT_MS} ms` });
    expect((await execute(id, 'find_ticket', { ticket_id: 1 })).status).toBe(200);
    expect((await connectionOf('freshdesk')).health_status).toBe('ok');
  });
});

describe('ServiceNow', () => {
  const body = { instance: 'acme', username: 'voice.integration', password: SERVICENOW_PASSWORD };

  it('refuses a wrong password, connects after reading the incident table once', async () => {
    await expectRefused(servicenow, 'servicenow', body, 'User Not Authenticated');
    servicenow.allow('acme', 'voice.integration', SERVICENOW_PASSWORD);
    const con = await connected('servicenow', body);
    expect(con.account_label).toBe('voice.integration @ acme.service-now.com');
    const rec = servicenow.requests.at(-1)!;
    expect(`${rec.method} ${rec.path}`).toBe('GET /acme/api/now/table/incident');
    expect(rec.query.get('sysparm_limit')).toBe('1');
    expect(basicOf(rec.headers.authorization)).toBe(`voice.integration:${SERVICENOW_PASSWORD}`);
  });

  it('create_incident, find_incident by number, add_work_note by sys_id; the number cannot widen the query', async () => {
    const { id } = await connectionOf('servicenow');
    const inc = await execute(id, 'create_incident', { short_description: 'Printer on fire', description: 'Floor 3', urgency: '1' });
    expect(inc.status, JSON.stringify(inc.body)).toBe(200);
    expect(inc.body.data).toMatchObject({ sys_id: expect.stringMatching(/^[0-9a-f]{32}$/), number: expect.stringMatching(/^INC\d+$/), short_description: 'Printer on fire', urgency: '1', state: '1' });
    expect(servicenow.requests.at(-1)!.body).toEqual({ short_description: 'Printer on fire', description: 'Floor 3', urgency: '1' });
    const found = await execute(id, 'find_incident', { number: inc.body.data.number });
    expect(found.body.data).toMatchObject({ sys_id: inc.body.data.sys_id, description: 'Floor 3' });
    expect(servicenow.requests.at(-1)!.query.get('sysparm_query')).toBe(`number=${inc.body.data.number}`);
    const note = await execute(id, 'add_work_note', { sys_id: inc.body.data.sys_id, note: 'Caller evacuated' });
    expect(note.body.data).toMatchObject({ sys_id: inc.body.data.sys_id, state: '2' });
    const patch = servicenow.requests.at(-1)!;
    expect(patch.method).toBe('PATCH');
    expect(patch.body).toEqual({ work_notes: 'Caller evacuated' });
    expect(servicenow.incidents[0].work_notes).toEqual(['Caller evacuated']);

    const before = servicenow.requests.length;
    const widened = await execute(id, 'find_incident', { number: 'INC1^ORactive=true' });
    expect(widened.status).toBe(400);
    expect(widened.body.detail).toMatch(/^number:/);
    expect(servicenow.requests.length).toBe(before);
    const none = await execute(id, 'find_incident', { number: 'INC9999999' });
    expect(none.status).toBe(404);
    expect((await execute(id, 'add_work_note', { sys_id: 'f'.repeat(32), note: 'x' })).status).toBe(404);
  });

  it('a refused password (401) marks it reconnect_needed with 502', async () => {
    const { id } = await connectionOf('servicenow');
    servicenow.revoke(`voice.integration:${SERVICENOW_PASSWORD}`);
    const res = await execute(id, 'find_incident', { number: 'INC0010001' });
    expect(res.status).toBe(502);
    expect(res.body.detail).toContain('reconnected');
    expect(await connectionOf('servicenow')).toMatchObject({ health_status: 'reconnect_needed', health_detail: 'User Not Authenticated' });
  });
});

it('no credential of the six reaches a response body, the database or the logs', async () => {
  const rows = await s.infra.sql<Array<{ secret_enc: string | null; account_label: string }>>`select secret_enc, account_label from connector_connections`;
  const dump = JSON.stringify(rows) + JSON.stringify(await s.connections());
  const log = s.infra.logLines.join('');
  for (const secret of SECRETS) {
    expect(dump).not.toContain(secret);
    expect(log).not.toContain(secret);
  }
});
