/**
 * Issue 21, human agents: roster, credentials lifecycle with the dev mailbox, presence over the
 * real `/api/v1/sessions/ws` socket, attendance across midnight and for a range that starts
 * mid-session, adherence of a late login against a Europe/Berlin shift (injected clock), presence
 * alerts (late login, missed shift, long break; cap and filter), shift revive, windows before the
 * shift or agent existed judged by none of attendance, late_login and missed_shift, 403 across owners,
 * the per-IP token bucket (429 then recovery), SMTP_DISABLED, and offline-after-timeout by the
 * sweep (not by the socket's own process).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { realClock, type Clock } from '../../shared/clock.js';
import { randomBytes } from 'node:crypto';
import { newId } from '../../shared/ids.js';

const rnd = () => randomBytes(5).toString('hex');
import { MAX_ATTENDANCE_ROWS } from '../../control-plane/portal/service-presence.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { presenceClient, type PresenceClient } from '../helpers/presence-client.js';

const C = '/api/v1/call-center/agents';
const A = '/api/v1/agent-portal/admin';
const T0 = Date.parse('2026-11-23T06:00:00Z');

let infra: TestInfra;
let cp: ControlPlane;
let cp2: ControlPlane;
let owner: TestUser;
let stranger: TestUser;
let now = T0;
const clock: Clock = { ...realClock, now: () => now };

beforeAll(async () => {
  // Sweeps an hour apart: the test calls `sweep.tick()` itself at chosen clock times.
  infra = await startTestInfra({ portalSweepIntervalS: 3600 });
  const opts = { port: 0, host: '127.0.0.1', jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 } };
  cp = await startControlPlane(infra, { ...opts, portal: { clock } });
  // Second replica: mail switched off and a tiny bucket (rate-limit and SMTP_DISABLED cases).
  cp2 = await startControlPlane({ ...infra, config: { ...infra.config, portalEmailEnabled: false } }, { ...opts, portal: { clock, rate: { ratePerS: 20, burst: 5 }, loginLimits: { portalLoginPerIp: { max: 3, windowMs: 60_000 } } } });
  owner = await createTestUser(cp);
  stranger = await createTestUser(cp);
}, 60_000);

afterAll(async () => {
  await cp2?.close();
  await cp?.close();
  await infra?.close();
});

async function newAgent(extra: Record<string, unknown> = {}): Promise<string> {
  const r = await api(cp, 'POST', C, { token: owner.token, body: { workspace_id: owner.workspaceId, display_name: 'Ana', agent_code: `a-${rnd()}`, ...extra } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data.id;
}

/** A new human agent logged in on a presence socket of the control plane on `port` (the `ready` read). */
async function presenceLoggedIn(port: number) {
  const code = `p-${rnd()}`;
  const id = await newAgent({ agent_code: code });
  await api(cp, 'POST', `${A}/set-password`, { token: owner.token, body: { agent_id: id, password: 'presence-pass' } });
  const tok = (await api(cp, 'POST', '/api/v1/agent-portal/login', { body: { workspace_id: owner.workspaceId, agent_code: code, password: 'presence-pass' } })).body.data.token;
  const c = presenceClient(port);
  await c.open();
  c.send({ type: 'login', token: tok });
  await c.next();
  return { id, c };
}

async function attendance(query: string) {
  const r = await api(cp, 'GET', `${A}/presence/attendance?workspace_id=${owner.workspaceId}&${query}`, { token: owner.token });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as Array<Record<string, any>>;
}

/** A socket client that queues messages so each `next()` awaits the following one. */
describe('roster', () => {
  it('creates, lists, updates and deactivates human agents; codes are unique per workspace', async () => {
    const code = `desk-${rnd()}`;
    const r = await api(cp, 'POST', C, { token: owner.token, body: { workspace_id: owner.workspaceId, display_name: 'Bo', agent_code: code, email: 'Bo@Example.com', max_concurrent_calls: 2, skills: ['billing', 'de'] } });
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ display_name: 'Bo', agent_code: code, email: 'bo@example.com', max_concurrent_calls: 2, skills: ['billing', 'de'], status: 'offline', is_active: true, has_password: false });
    const dup = await api(cp, 'POST', C, { token: owner.token, body: { workspace_id: owner.workspaceId, display_name: 'Other', agent_code: code.toUpperCase() } });
    expect(dup.status).toBe(409);
    const bad = await api(cp, 'POST', C, { token: owner.token, body: { workspace_id: owner.workspaceId, display_name: 'X', agent_code: 'a b', max_concurrent_calls: 0 } });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body.error)).toContain('agent_code');
    const list = await api(cp, 'GET', `${C}?workspace_id=${owner.workspaceId}`, { token: owner.token });
    expect(list.body.data.map((a: { id: string }) => a.id)).toContain(r.body.data.id);
    const upd = await api(cp, 'PATCH', `${C}/${r.body.data.id}`, { token: owner.token, body: { display_name: 'Bo B.', skills: ['sales'] } });
    expect(upd.body.data).toMatchObject({ display_name: 'Bo B.', skills: ['sales'] });
    const del = await api(cp, 'DELETE', `${C}/${r.body.data.id}`, { token: owner.token });
    expect(del.body.data.is_active).toBe(false);
    const after = await api(cp, 'GET', `${C}?workspace_id=${owner.workspaceId}`, { token: owner.token });
    expect(after.body.data.map((a: { id: string }) => a.id)).not.toContain(r.body.data.id);
  });
});

describe('credentials', () => {
  it('set, reset (temp password and mailed token), send-credentials, audit; the temp password is never logged', async () => {
    const email = `agent-${rnd()}@example.com`;
    const code = `c-${rnd()}`;
    const id = await newAgent({ agent_code: code, email });
    const login = (password: string) => api(cp, 'POST', '/api/v1/agent-portal/login', { body: { workspace_id: owner.workspaceId, agent_code: code, password } });

    expect((await api(cp, 'POST', `${A}/set-password`, { token: owner.token, body: { agent_id: id, password: 'short' } })).status).toBe(400);
    const set = await api(cp, 'POST', `${A}/set-password`, { token: owner.token, body: { agent_id: id, password: 'first-password' } });
    expect(set.body.data).toEqual({ status: 'password_set' });
    expect((await login('first-password')).status).toBe(200);
    expect((await login('wrong-password')).status).toBe(401);

    const reset = await api(cp, 'POST', `${A}/reset-password`, { token: owner.token, body: { agent_id: id, send_email: false } });
    expect(reset.status).toBe(200);
    const temp: string = reset.body.data.temp_password;
    expect(reset.body.data.email_sent).toBe(false);
    expect(temp.length).toBeGreaterThanOrEqual(8);
    expect((await login('first-password')).status).toBe(401);
    expect((await login(temp)).status).toBe(200);

    const sent = await api(cp, 'POST', `${A}/send-credentials`, { token: owner.token, body: { agent_id: id, temp_password: temp } });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.data).toEqual({ status: 'email_sent' });
    expect(cp.accounts.mailbox!.messages(email).at(-1)!.text).toContain(temp);
    const wrongTemp = await api(cp, 'POST', `${A}/send-credentials`, { token: owner.token, body: { agent_id: id, temp_password: 'not-the-password' } });
    expect(wrongTemp.status).toBe(400);

    // Reset by mail: a single-use token valid one hour.
    const byMail = await api(cp, 'POST', `${A}/reset-password`, { token: owner.token, body: { agent_id: id, send_email: true } });
    expect(byMail.body.data).toMatchObject({ email_sent: true });
    expect(byMail.body.data.temp_password).toBeUndefined();
    const token = /Reset token: (\S+)/.exec(cp.accounts.mailbox!.messages(email).at(-1)!.text)![1];
    const confirm = (t: string, password: string) => api(cp, 'POST', '/api/v1/agent-portal/reset-password', { body: { token: t, password } });
    expect((await confirm(token, 'chosen-by-agent')).status).toBe(200);
    expect((await login('chosen-by-agent')).status).toBe(200);
    const reused = await confirm(token, 'another-password');
    expect(reused.status).toBe(400);
    expect(reused.body.error.code).toBe('INVALID_TOKEN');
    await api(cp, 'POST', `${A}/reset-password`, { token: owner.token, body: { agent_id: id, send_email: true } });
    const late = /Reset token: (\S+)/.exec(cp.accounts.mailbox!.messages(email).at(-1)!.text)![1];
    now += 61 * 60_000;
    expect((await confirm(late, 'too-late-password')).body.error.code).toBe('INVALID_TOKEN');

    const audit = await api(cp, 'GET', `${A}/password-audit?agent_id=${id}`, { token: owner.token });
    const actions = audit.body.data.map((e: { action: string }) => e.action);
    expect(actions).toEqual(expect.arrayContaining(['set_password', 'reset_password', 'send_credentials', 'password_changed']));
    const setEntry = audit.body.data.find((e: { action: string }) => e.action === 'set_password');
    expect(setEntry).toMatchObject({ performed_by: owner.email, performed_by_id: owner.userId });
    expect(setEntry.ip_address).toMatch(/^(::ffff:)?127\./);
    expect(infra.logLines.join('\n')).not.toContain(temp);
  });

  it('the mailed link opens a page whose form sets the password (no script); a used token is refused there too', async () => {
    const email = `page-${rnd()}@example.com`;
    const code = `pg-${rnd()}`;
    const id = await newAgent({ agent_code: code, email });
    expect((await api(cp, 'POST', `${A}/reset-password`, { token: owner.token, body: { agent_id: id, send_email: true } })).status).toBe(200);
    const link = /(http\S+\/agent-portal\/reset-password\?token=\S+)/.exec(cp.accounts.mailbox!.messages(email).at(-1)!.text)![1]!;
    const url = new URL(link);
    const token = url.searchParams.get('token')!;
    const page = await api(cp, 'GET', `${url.pathname}${url.search}`, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['content-security-policy']).toContain("form-action 'self'");
    expect(String(page.body)).toContain(`name="token" value="${token}"`);
    const post = (fields: Record<string, string>) =>
      api(cp, 'POST', url.pathname, { rawBody: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' } });
    const differ = await post({ token, password: 'page-password-1', password_again: 'page-password-2' });
    expect([differ.status, String(differ.body).includes('The two passwords differ')]).toEqual([400, true]);
    const short = await post({ token, password: 'short', password_again: 'short' });
    expect(short.status).toBe(400);
    const done = await post({ token, password: 'page-password-1', password_again: 'page-password-1' });
    expect([done.status, String(done.body).includes('Password changed')]).toEqual([200, true]);
    expect((await api(cp, 'POST', '/api/v1/agent-portal/login', { body: { workspace_id: owner.workspaceId, agent_code: code, password: 'page-password-1' } })).status).toBe(200);
    const again = await post({ token, password: 'page-password-2', password_again: 'page-password-2' });
    expect([again.status, String(again.body).includes('Ask your administrator for a new reset link')]).toEqual([400, true]);
    expect((await api(cp, 'GET', url.pathname, { headers: { accept: 'text/html' } })).status).toBe(400);
  });

  it('NO_EMAIL for an agent without email; SMTP_DISABLED when portal mail is off', async () => {
    const noMail = await newAgent();
    await api(cp, 'POST', `${A}/set-password`, { token: owner.token, body: { agent_id: noMail, password: 'some-password' } });
    const r = await api(cp, 'POST', `${A}/send-credentials`, { token: owner.token, body: { agent_id: noMail, temp_password: 'some-password' } });
    expect([r.status, r.body.error.code]).toEqual([400, 'NO_EMAIL']);
    const withMail = await newAgent({ email: 'someone@example.com' });
    const off = await api(cp2, 'POST', `${A}/reset-password`, { token: owner.token, body: { agent_id: withMail, send_email: true } });
    expect([off.status, off.body.error.code]).toEqual([503, 'SMTP_DISABLED']);
  });

  it('a mail server that cannot be reached is 502 UPSTREAM_UNAVAILABLE (the spec\'s code for a proxied service)', async () => {
    const withMail = await newAgent({ email: 'someone@example.com' });
    // Port 1 on loopback: connection refused at once.
    const unreachable = await startControlPlane({ ...infra, config: { ...infra.config, smtpUrl: 'smtp://127.0.0.1:1' } }, { port: 0, host: '127.0.0.1' });
    try {
      const r = await api(unreachable, 'POST', `${A}/reset-password`, { token: owner.token, body: { agent_id: withMail, send_email: true } });
      expect([r.status, r.body.error.code]).toEqual([502, 'UPSTREAM_UNAVAILABLE']);
    } finally {
      await unreachable.close();
    }
  });
});

describe('presence socket', () => {
  it('login, status changes, heartbeats and a clean close are recorded; /sessions/active lists the socket', async () => {
    now = Date.parse('2026-11-25T09:00:00Z');
    const code = `p-${rnd()}`;
    const id = await newAgent({ agent_code: code });
    await api(cp, 'POST', `${A}/set-password`, { token: owner.token, body: { agent_id: id, password: 'presence-pass' } });
    const tok = (await api(cp, 'POST', '/api/v1/agent-portal/login', { body: { workspace_id: owner.workspaceId, agent_code: code, password: 'presence-pass' } })).body.data.token;
    const c = presenceClient(cp.port);
    await c.open();
    c.send({ type: 'login', token: tok });
    const ready = await c.next();
    expect(ready).toMatchObject({ type: 'ready', agent_id: id, status: 'available' });
    const realtime = async () => (await api(cp, 'GET', `${A}/presence/realtime?workspace_id=${owner.workspaceId}`, { token: owner.token })).body.data.find((r: { id: string }) => r.id === id);
    expect((await realtime()).status).toBe('available');
    now += 60_000;
    c.send({ type: 'status', status: 'break' });
    expect(await c.next()).toMatchObject({ type: 'status', status: 'break' });
    c.send({ type: 'status', status: 'asleep' });
    expect((await c.next()).code).toBe('INVALID_REQUEST');
    c.send({ type: 'heartbeat' });
    expect((await c.next()).type).toBe('heartbeat_ack');
    expect(await realtime()).toMatchObject({ status: 'break', agent_code: code });
    const active = await api(cp, 'GET', '/api/v1/sessions/active', { token: owner.token });
    expect(active.body.data.find((s: { agent_id: string }) => s.agent_id === id)).toMatchObject({ session_id: ready.session_id, status: 'break' });
    expect((await api(cp, 'GET', '/api/v1/sessions/active')).status).toBe(401);
    now += 30_000;
    c.ws.close();
    await c.closed;
    await expect.poll(async () => (await realtime()).status, { timeout: 5000 }).toBe('offline');
    const tl = await api(cp, 'GET', `${A}/presence/timeline/${id}?date=2026-11-25`, { token: owner.token });
    expect(tl.body.data.map((e: { event_type: string; status: string }) => `${e.event_type}:${e.status}`)).toEqual(['login:available', 'status_change:break', 'disconnect:offline']);
    const [row] = await attendance(`from=2026-11-25&agent_id=${id}`);
    expect(row).toMatchObject({ online_seconds: 90, available_seconds: 60, break_seconds: 30, session_count: 1, break_count: 1 });
  });

  it('a socket that falls silent is closed 4008 and its session ends at its last message, as the sweep would end it', { timeout: 20_000 }, async () => {
    // A replica whose sockets time out after 5 s (the minimum), on real timers; the clock the
    // records are stamped with is the test's.
    const quick = await startControlPlane({ ...infra, config: { ...infra.config, portalHeartbeatTimeoutS: 5 } }, { port: 0, host: '127.0.0.1', portal: { clock } });
    try {
      now = Date.parse('2026-11-26T12:00:00Z');
      const { id, c } = await presenceLoggedIn(quick.port);
      now += 30_000;
      c.send({ type: 'heartbeat' });
      expect((await c.next()).type).toBe('heartbeat_ack');
      now += 40_000; // silence: the socket's own timer closes it
      expect(await c.closed).toBe(4008);
      await expect.poll(async () => (await api(cp, 'GET', `${A}/presence/timeline/${id}?date=2026-11-26`, { token: owner.token })).body.data.at(-1)?.event_type, { timeout: 5000 }).toBe('heartbeat_timeout');
      const last = (await api(cp, 'GET', `${A}/presence/timeline/${id}?date=2026-11-26`, { token: owner.token })).body.data.at(-1);
      expect(last.created_at).toBe('2026-11-26T12:00:30.000Z');
    } finally {
      await quick.close();
    }
  });

  it('a session ended at its last message never ends before that message\'s status change (stamped a moment later)', async () => {
    now = Date.parse('2026-11-27T12:00:00Z');
    const { id, c } = await presenceLoggedIn(cp.port);
    now += 10_000;
    c.send({ type: 'status', status: 'break' });
    expect((await c.next()).type).toBe('status');
    const [a] = await infra.sql<{ presence_session_id: string }[]>`select presence_session_id from human_agents where id = ${id}`;
    // The socket's timeout ends the session at the message's arrival, which can precede the
    // change's own stamp by the handling time: here 300 ms.
    expect(await cp.portal.presence.logout(id, a!.presence_session_id, 'heartbeat_timeout', 'socket', now - 300)).toBe(true);
    const timeline = (await api(cp, 'GET', `${A}/presence/timeline/${id}?date=2026-11-27`, { token: owner.token })).body.data as Array<{ event_type: string; created_at: string }>;
    expect(timeline.map((e) => e.event_type).slice(-2)).toEqual(['status_change', 'heartbeat_timeout']);
    expect(timeline.at(-1)!.created_at).toBe(new Date(now).toISOString());
    const [s] = await infra.sql<{ ended_at: Date; last_span_end: Date }[]>`
      select s.ended_at, (select max(ended_at) from human_agent_status_spans where session_id = s.id) as last_span_end
      from human_agent_sessions s where s.id = ${a!.presence_session_id}`;
    expect(s!.ended_at.getTime()).toBe(now);
    expect(s!.last_span_end.getTime()).toBe(now);
    c.ws.close();
  });

  it('a new password or a deactivation ends the presence socket at once (no message needed), on whichever replica holds it', async () => {
    now = Date.parse('2026-11-25T09:00:00Z');
    for (const [holder, change] of [[cp, 'password'], [cp2, 'password'], [cp2, 'deactivate']] as const) {
      const { id, c } = await presenceLoggedIn(holder.port);
      const res = change === 'password'
        ? await api(cp, 'POST', `${A}/set-password`, { token: owner.token, body: { agent_id: id, password: 'another-pass-1' } })
        : await api(cp, 'DELETE', `${C}/${id}`, { token: owner.token });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect((await c.next()).code).toBe('SESSION_ENDED');
      expect(await c.closed).toBe(4009);
      const rt = (await api(cp, 'GET', `${A}/presence/realtime?workspace_id=${owner.workspaceId}&include_inactive=true`, { token: owner.token })).body.data as Array<{ id: string; status: string }>;
      if (change === 'password') expect(rt.find((r) => r.id === id)?.status).toBe('offline');
    }
  });

  it('a socket without heartbeat goes offline by the sweep job, and its next message learns the session ended', async () => {
    now = Date.parse('2026-11-25T12:00:00Z');
    const { id, c } = await presenceLoggedIn(cp.port);
    now += 60_000;
    c.send({ type: 'heartbeat' });
    expect((await c.next()).type).toBe('heartbeat_ack');
    // The process holding the socket never notices (its timer is real time); another replica's sweep does.
    now += 10 * 60_000;
    const swept = await cp2.portal.sweep.tick();
    expect(swept.timedOut).toBeGreaterThanOrEqual(1);
    const tl = await api(cp, 'GET', `${A}/presence/timeline/${id}?date=2026-11-25`, { token: owner.token });
    const last = tl.body.data.at(-1);
    expect(last).toMatchObject({ event_type: 'heartbeat_timeout', status: 'offline', source: 'sweep' });
    expect(last.created_at).toBe('2026-11-25T12:01:00.000Z');
    c.send({ type: 'heartbeat' });
    expect((await c.next()).code).toBe('SESSION_ENDED');
    expect(await c.closed).toBe(4009);
  });
});

describe('attendance', () => {
  it('credits a session across midnight to both days; first_login and session_count stay with the login day', async () => {
    const id = await newAgent();
    now = Date.parse('2026-11-20T22:00:00Z');
    const s = await cp.portal.presence.login(id, '10.0.0.1', 'test');
    now = Date.parse('2026-11-21T02:00:00Z');
    await cp.portal.presence.logout(id, s.sessionId, 'logout', 'test');
    now = Date.parse('2026-11-22T12:00:00Z');
    const rows = await attendance(`from=2026-11-20&to=2026-11-21&agent_id=${id}`);
    expect(rows.map((r) => [r.date, r.online_seconds, r.available_seconds, r.session_count, r.first_login ?? null, r.last_logout ?? null])).toEqual([
      ['2026-11-20', 7200, 7200, 1, '2026-11-20T22:00:00.000Z', null],
      ['2026-11-21', 7200, 7200, 0, null, '2026-11-21T02:00:00.000Z'],
    ]);
    // A range that starts mid-session: only the covered part, no login that day.
    const mid = await attendance(`from=2026-11-21&to=2026-11-21&agent_id=${id}`);
    expect(mid).toHaveLength(1);
    expect(mid[0]).toMatchObject({ date: '2026-11-21', online_seconds: 7200, session_count: 0 });
    expect(mid[0].first_login).toBeNull(); // listed by the spec on every row: null, not absent
  });

  it('an open session counts up to now; bad dates are INVALID_PARAM', async () => {
    const id = await newAgent();
    now = Date.parse('2026-11-26T10:00:00Z');
    await cp.portal.presence.login(id, '10.0.0.1', 'test');
    now = Date.parse('2026-11-26T10:30:00Z');
    const [row] = await attendance(`from=2026-11-26&agent_id=${id}`);
    expect(row).toMatchObject({ online_seconds: 1800, session_count: 1 });
    for (const q of ['from=2026-13-01', 'from=2026-11-26&to=2026-11-25', 'to=yesterday']) {
      const r = await api(cp, 'GET', `${A}/presence/attendance?workspace_id=${owner.workspaceId}&${q}`, { token: owner.token });
      expect([r.status, r.body.error.code], q).toEqual([400, 'INVALID_PARAM']);
    }
  });

  it('a range holding more status changes than MAX_ATTENDANCE_ROWS is a 400 asking for a narrower read', async () => {
    const id = await newAgent();
    now = Date.parse('2026-11-27T00:00:00Z');
    const s = await cp.portal.presence.login(id, '10.0.0.3', 'test');
    // An agent flipping status every second all day: more spans than one read takes.
    await infra.sql`
      insert into human_agent_status_spans (id, agent_id, session_id, status, started_at, ended_at)
      select gen_random_uuid(), ${id}, ${s.sessionId}, case when i % 2 = 0 then 'available' else 'busy' end,
             ${new Date(now)}::timestamptz + make_interval(secs => i), ${new Date(now)}::timestamptz + make_interval(secs => i + 1)
      from generate_series(1, ${MAX_ATTENDANCE_ROWS}) as i`;
    now = Date.parse('2026-11-28T12:00:00Z');
    const r = await api(cp, 'GET', `${A}/presence/attendance?workspace_id=${owner.workspaceId}&from=2026-11-27&to=2026-11-28&agent_id=${id}`, { token: owner.token });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain('fewer days or one agent_id');
    await cp.portal.presence.logout(id, s.sessionId, 'logout', 'test');
  });

  it('adherence of a late login against a Europe/Berlin shift, and the late_login alert', async () => {
    // The agent exists before its shift (windows before either are not judged).
    now = Date.parse('2026-11-23T12:00:00Z');
    const id = await newAgent();
    // Tuesday 09:00-17:00 Berlin = 08:00-16:00 UTC in November.
    const sh = await api(cp, 'POST', `${A}/presence/shifts`, { token: owner.token, body: { agent_id: id, day_of_week: 2, shift_start: '09:00', shift_end: '17:00', timezone: 'Europe/Berlin' } });
    expect(sh.status, JSON.stringify(sh.body)).toBe(201);
    now = Date.parse('2026-11-24T08:30:00Z');
    const s = await cp.portal.presence.login(id, '10.0.0.2', 'test');
    now = Date.parse('2026-11-24T15:30:00Z');
    await cp.portal.presence.logout(id, s.sessionId, 'logout', 'test');
    now = Date.parse('2026-11-24T18:00:00Z');
    const [row] = await attendance(`from=2026-11-24&agent_id=${id}`);
    expect(row).toMatchObject({
      scheduled_start: '2026-11-24T08:00:00.000Z',
      scheduled_end: '2026-11-24T16:00:00.000Z',
      late_login_seconds: 1800,
      early_logout_seconds: 1800,
      shift_adherence_pct: 87.5,
      online_seconds: 7 * 3600,
    });
    const alerts = (await api(cp, 'GET', `${A}/presence/alerts?workspace_id=${owner.workspaceId}`, { token: owner.token })).body.data;
    const late = alerts.find((a: { agent_id: string; alert_type: string }) => a.agent_id === id && a.alert_type === 'late_login');
    expect(late).toMatchObject({ severity: 'warning', acknowledged: false });
    expect(late.details.late_seconds).toBe(1800);
  });
});

describe('alerts and shifts', () => {
  it('missed shift and long break come from the sweep once each; acknowledged ones leave the unacknowledged filter', async () => {
    now = Date.parse('2026-11-27T06:00:00Z');
    const missed = await newAgent();
    // Friday 2026-11-27, 07:00-08:00 UTC.
    await api(cp, 'POST', `${A}/presence/shifts`, { token: owner.token, body: { agent_id: missed, day_of_week: 5, shift_start: '07:00', shift_end: '08:00' } });
    const onBreak = await newAgent();
    const s = await cp.portal.presence.login(onBreak, '10.0.0.3', 'test');
    now += 60_000;
    await cp.portal.presence.setStatus(onBreak, s.sessionId, 'break', 'test');
    now = Date.parse('2026-11-27T08:05:00Z');
    await cp.portal.presence.heartbeat(onBreak, s.sessionId);
    await cp.portal.sweep.tick();
    await cp.portal.sweep.tick();
    const all = (await api(cp, 'GET', `${A}/presence/alerts?workspace_id=${owner.workspaceId}`, { token: owner.token })).body.data;
    expect(all.filter((a: { agent_id: string }) => a.agent_id === missed).map((a: { alert_type: string }) => a.alert_type)).toEqual(['missed_shift']);
    const br = all.filter((a: { agent_id: string }) => a.agent_id === onBreak);
    expect(br.map((a: { alert_type: string }) => a.alert_type)).toEqual(['long_break']);
    const ack = await api(cp, 'POST', `${A}/presence/alerts/${br[0].id}/acknowledge`, { token: owner.token });
    expect(ack.status).toBe(200);
    const open = (await api(cp, 'GET', `${A}/presence/alerts?workspace_id=${owner.workspaceId}&unacknowledged=true`, { token: owner.token })).body.data;
    expect(open.some((a: { id: string }) => a.id === br[0].id)).toBe(false);
    expect(open.some((a: { agent_id: string }) => a.agent_id === missed)).toBe(true);
  });

  it('at most 100 alerts, newest first', async () => {
    const id = await newAgent();
    const base = Date.parse('2026-10-01T00:00:00Z');
    for (let i = 0; i < 105; i++) {
      await infra.sql`insert into human_agent_alerts (id, agent_id, workspace_id, alert_type, severity, message, dedupe_key, created_at)
        values (${newId()}, ${id}, ${owner.workspaceId}, 'late_login', 'warning', ${`n${i}`}, ${`t:${id}:${i}`}, ${new Date(base + i * 60_000)})`;
    }
    const r = (await api(cp, 'GET', `${A}/presence/alerts?workspace_id=${owner.workspaceId}`, { token: owner.token })).body.data;
    expect(r).toHaveLength(100);
    const times = r.map((a: { created_at: string }) => Date.parse(a.created_at));
    expect([...times].sort((x, y) => y - x)).toEqual(times);
  });

  it('shifts upsert on agent+day+start, soft delete, and revive on re-post', async () => {
    const id = await newAgent();
    const body = { agent_id: id, day_of_week: 1, shift_start: '08:00', shift_end: '16:00', timezone: 'Europe/Berlin' };
    // day_of_week is required: missing, it is not taken as 0 (a Sunday shift nobody asked for).
    const { day_of_week: _, ...noDay } = body;
    const missing = await api(cp, 'POST', `${A}/presence/shifts`, { token: owner.token, body: noDay });
    expect([missing.status, missing.body.error?.details?.[0]?.field]).toEqual([400, 'day_of_week']);
    const first = await api(cp, 'POST', `${A}/presence/shifts`, { token: owner.token, body });
    expect(first.body.data).toMatchObject({ status: 'shift_created' });
    const list = async () => (await api(cp, 'GET', `${A}/presence/shifts/${id}`, { token: owner.token })).body.data;
    expect(await list()).toHaveLength(1);
    expect((await api(cp, 'DELETE', `${A}/presence/shifts/${first.body.data.id}`, { token: owner.token })).status).toBe(200);
    expect(await list()).toEqual([]);
    // A malformed id is 400 naming it (after authentication: no bearer is 401 whatever the id).
    const malformed = await api(cp, 'DELETE', `${A}/presence/shifts/abc`, { token: owner.token });
    expect([malformed.status, malformed.body.error.details?.[0]?.field]).toEqual([400, 'shift_id']);
    expect((await api(cp, 'DELETE', `${A}/presence/shifts/abc`, {})).status).toBe(401);
    const again = await api(cp, 'POST', `${A}/presence/shifts`, { token: owner.token, body: { ...body, shift_end: '17:00' } });
    expect(again.body.data.id).toBe(first.body.data.id);
    expect(await list()).toMatchObject([{ id: first.body.data.id, shift_end: '17:00', timezone: 'Europe/Berlin' }]);
    const bad = await api(cp, 'POST', `${A}/presence/shifts`, { token: owner.token, body: { ...body, timezone: 'Mars/Olympus' } });
    expect([bad.status, JSON.stringify(bad.body.error)]).toEqual([400, expect.stringContaining('timezone')]);
  });
});

describe('which shift windows are judged: those starting at or after max(shift created_at, agent created_at)', () => {
  const shift = async (body: Record<string, unknown>) => {
    const r = await api(cp, 'POST', `${A}/presence/shifts`, { token: owner.token, body });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body.data.id as string;
  };
  const alertsOf = async (id: string, type: string) =>
    ((await api(cp, 'GET', `${A}/presence/alerts?workspace_id=${owner.workspaceId}`, { token: owner.token })).body.data as Array<{ agent_id: string; alert_type: string; details: Record<string, unknown> }>).filter(
      (a) => a.agent_id === id && a.alert_type === type,
    );
  const noSchedule = (row: Record<string, unknown>) => {
    for (const k of ['scheduled_start', 'scheduled_end', 'late_login_seconds', 'early_logout_seconds', 'shift_adherence_pct']) expect(row, k).not.toHaveProperty(k);
  };

  it('an agent and a Monday shift created today are not absent on the Mondays before; the next Monday is judged', async () => {
    // The audit's case: ann1 and her Monday 09:00-17:00 Berlin (08:00-16:00Z) shift, both created
    // on Monday 2026-11-30 after that day's window began.
    now = Date.parse('2026-11-30T09:00:00Z');
    const id = await newAgent({ agent_code: `ann1-${rnd()}` });
    now = Date.parse('2026-11-30T09:05:00Z');
    await shift({ agent_id: id, day_of_week: 1, shift_start: '09:00', shift_end: '17:00', timezone: 'Europe/Berlin' });
    now = Date.parse('2026-11-30T18:00:00Z');
    expect(await attendance(`from=2026-09-30&to=2026-11-30&agent_id=${id}`)).toEqual([]);
    // Next Monday she never logs in: that window is judged like any other, by the read and the sweep.
    now = Date.parse('2026-12-07T16:30:00Z');
    const rows = await attendance(`from=2026-10-07&to=2026-12-07&agent_id=${id}`);
    expect(rows.map((r) => [r.date, r.scheduled_start, r.late_login_seconds, r.shift_adherence_pct])).toEqual([['2026-12-07', '2026-12-07T08:00:00.000Z', 28800, 0]]);
    await cp.portal.sweep.tick();
    expect((await alertsOf(id, 'missed_shift')).map((a) => a.details.scheduled_start)).toEqual(['2026-12-07T08:00:00.000Z']);
  });

  it('a shift posted after its start time today raises no late_login and no schedule that day; next week it does', async () => {
    now = Date.parse('2026-11-30T06:00:00Z');
    const id = await newAgent();
    // Monday 06:11-14:00 UTC, posted at 06:21 (the audit's alert said late_seconds 629).
    now = Date.parse('2026-11-30T06:21:00Z');
    await shift({ agent_id: id, day_of_week: 1, shift_start: '06:11', shift_end: '14:00' });
    now = Date.parse('2026-11-30T06:21:29Z');
    const s = await cp.portal.presence.login(id, '10.0.0.7', 'test');
    now = Date.parse('2026-11-30T13:00:00Z');
    await cp.portal.presence.logout(id, s.sessionId, 'logout', 'test');
    expect(await alertsOf(id, 'late_login')).toEqual([]);
    const [today] = await attendance(`from=2026-11-30&agent_id=${id}`);
    expect(today).toMatchObject({ date: '2026-11-30', session_count: 1 });
    noSchedule(today);
    // The same late login a week later is judged.
    now = Date.parse('2026-12-07T06:21:29Z');
    const s2 = await cp.portal.presence.login(id, '10.0.0.7', 'test');
    await cp.portal.presence.logout(id, s2.sessionId, 'logout', 'test');
    expect((await alertsOf(id, 'late_login')).map((a) => a.details.late_seconds)).toEqual([629]);
  });

  it('a revived shift is judged from its revival; an edit of a live shift keeps its created_at', async () => {
    now = Date.parse('2026-11-02T06:00:00Z');
    const id = await newAgent();
    const body = { agent_id: id, day_of_week: 1, shift_start: '08:00', shift_end: '09:00' };
    const shiftId = await shift(body);
    now = Date.parse('2026-11-03T00:00:00Z');
    expect((await api(cp, 'DELETE', `${A}/presence/shifts/${shiftId}`, { token: owner.token })).status).toBe(200);
    // Revived on Monday 2026-11-16 at 10:00, after that day's 08:00-09:00 window, which passed
    // while the shift was deleted: neither the read nor the sweep may call it (or 11-09) missed.
    now = Date.parse('2026-11-16T10:00:00Z');
    expect(await shift(body)).toBe(shiftId);
    const [revived] = (await api(cp, 'GET', `${A}/presence/shifts/${id}`, { token: owner.token })).body.data;
    expect(revived.created_at).toBe('2026-11-16T10:00:00.000Z');
    await cp.portal.sweep.tick();
    expect(await alertsOf(id, 'missed_shift')).toEqual([]);
    expect(await attendance(`from=2026-11-02&to=2026-11-16&agent_id=${id}`)).toEqual([]);
    // Editing the live shift's end (same agent, day, start) keeps created_at: 11-23 stays judged.
    now = Date.parse('2026-11-23T10:00:00Z');
    expect(await shift({ ...body, shift_end: '09:30' })).toBe(shiftId);
    const [edited] = (await api(cp, 'GET', `${A}/presence/shifts/${id}`, { token: owner.token })).body.data;
    expect([edited.created_at, edited.shift_end]).toEqual(['2026-11-16T10:00:00.000Z', '09:30']);
    const rows = await attendance(`from=2026-11-16&to=2026-11-23&agent_id=${id}`);
    expect(rows.map((r) => [r.date, r.late_login_seconds, r.shift_adherence_pct])).toEqual([['2026-11-23', 5400, 0]]);
  });
});

describe('deactivated agents', () => {
  it('shift windows while an agent was deactivated are judged by neither attendance nor the sweep; before and after they are', async () => {
    now = Date.parse('2026-11-02T06:00:00Z');
    const id = await newAgent();
    const sh = await api(cp, 'POST', `${A}/presence/shifts`, { token: owner.token, body: { agent_id: id, day_of_week: 1, shift_start: '08:00', shift_end: '09:00' } });
    expect(sh.status).toBe(201);
    now = Date.parse('2026-11-03T00:00:00Z');
    expect((await api(cp, 'DELETE', `${C}/${id}`, { token: owner.token })).body.data.is_active).toBe(false);
    // Reactivated on Monday 11-16 after that day's window, which passed while she was inactive.
    now = Date.parse('2026-11-16T10:00:00Z');
    const back = await api(cp, 'PATCH', `${C}/${id}`, { token: owner.token, body: { is_active: true } });
    expect(back.body.data.is_active).toBe(true);
    await cp.portal.sweep.tick();
    const missed = async () =>
      ((await api(cp, 'GET', `${A}/presence/alerts?workspace_id=${owner.workspaceId}`, { token: owner.token })).body.data as Array<{ agent_id: string; alert_type: string; details: Record<string, unknown> }>)
        .filter((a) => a.agent_id === id && a.alert_type === 'missed_shift')
        .map((a) => a.details.scheduled_start);
    expect(await missed()).toEqual([]);
    const judged = async (to: string) => (await attendance(`from=2026-11-02&to=${to}&agent_id=${id}`)).map((r) => [r.date, r.shift_adherence_pct]);
    expect(await judged('2026-11-16')).toEqual([['2026-11-02', 0]]);
    now = Date.parse('2026-11-23T10:00:00Z');
    expect(await judged('2026-11-23')).toEqual([['2026-11-02', 0], ['2026-11-23', 0]]);
    await cp.portal.sweep.tick();
    expect(await missed()).toEqual(['2026-11-23T08:00:00.000Z']);
    // Deactivated for good: the following Mondays are not judged.
    expect((await api(cp, 'DELETE', `${C}/${id}`, { token: owner.token })).status).toBe(200);
    now = Date.parse('2026-12-15T10:00:00Z');
    expect(await judged('2026-12-15')).toEqual([['2026-11-02', 0], ['2026-11-23', 0]]);
  });

  it('concurrent deactivations, reactivations and edits leave is_active and the open inactive period in step', async () => {
    const id = await newAgent();
    const state = async () => {
      const [row] = await infra.sql<{ is_active: boolean; open: number }[]>`
        select is_active, (select count(*)::int from human_agent_inactive_periods where agent_id = ${id} and ended_at is null) as open
        from human_agents where id = ${id}`;
      return row!;
    };
    for (let round = 0; round < 8; round++) {
      const answers = await Promise.all([
        api(cp, 'DELETE', `${C}/${id}`, { token: owner.token }),
        api(cp2, 'PATCH', `${C}/${id}`, { token: owner.token, body: { is_active: true } }),
        api(cp, 'PATCH', `${C}/${id}`, { token: owner.token, body: { display_name: `Ana ${round}` } }),
      ]);
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
      const s = await state();
      expect(s.open, `round ${round}: is_active ${s.is_active}`).toBe(s.is_active ? 0 : 1);
    }
  });
});

describe('access and limits', () => {
  it('another owner gets 403 on the agent and the workspace', async () => {
    const id = await newAgent({ email: 'x@example.com' });
    const calls: Array<[string, string, unknown?]> = [
      ['POST', `${A}/set-password`, { agent_id: id, password: 'password-1' }],
      ['POST', `${A}/reset-password`, { agent_id: id, send_email: false }],
      ['POST', `${A}/send-credentials`, { agent_id: id, temp_password: 'password-1' }],
      ['GET', `${A}/password-audit?agent_id=${id}`],
      ['GET', `${A}/presence/realtime?workspace_id=${owner.workspaceId}`],
      ['GET', `${A}/presence/attendance?workspace_id=${owner.workspaceId}`],
      // In the stranger's own workspace, naming the owner's agent: 403 as on the per-agent routes.
      ['GET', `${A}/presence/attendance?workspace_id=${stranger.workspaceId}&agent_id=${id}`],
      ['GET', `${A}/presence/timeline/${id}`],
      ['GET', `${A}/presence/alerts?workspace_id=${owner.workspaceId}`],
      ['POST', `${A}/presence/shifts`, { agent_id: id, day_of_week: 1, shift_start: '08:00', shift_end: '09:00' }],
      ['GET', `${A}/presence/shifts/${id}`],
      ['GET', `${C}/${id}`],
      ['POST', C, { workspace_id: owner.workspaceId, display_name: 'X', agent_code: 'x1' }],
    ];
    for (const [method, path, body] of calls) {
      const r = await api(cp, method, path, { token: stranger.token, body });
      expect([r.status, r.body?.error?.code], `${method} ${path}`).toEqual([403, 'FORBIDDEN']);
    }
  });

  it('the per-IP token bucket answers 429 with Retry-After, then recovers', async () => {
    const ip = '127.9.9.9';
    const hit = () => api(cp2, 'GET', `${A}/presence/realtime?workspace_id=${owner.workspaceId}`, { token: owner.token, localAddress: ip });
    const statuses: number[] = [];
    let limited = await hit();
    for (let i = 0; i < 30 && limited.status !== 429; i++) {
      statuses.push(limited.status);
      limited = await hit();
    }
    // Burst 5 (plus what refilled meanwhile at 20/s), then refused.
    expect(statuses.length).toBeGreaterThanOrEqual(5);
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Another address is unaffected.
    expect((await api(cp2, 'GET', `${A}/presence/realtime?workspace_id=${owner.workspaceId}`, { token: owner.token, localAddress: '127.9.9.10' })).status).toBe(200);
    await expect.poll(async () => (await hit()).status, { timeout: 3000, interval: 100 }).toBe(200);
    // A flood of bad credentials is limited as well: the bucket comes before the credential check
    // (each unknown key costs a database lookup), over REST and Connect alike.
    const bad = (ip2: string) => api(cp2, 'GET', `${A}/presence/realtime?workspace_id=${owner.workspaceId}`, { token: 'vpk_not_a_key_at_all_0000', localAddress: ip2 });
    const badStatuses: number[] = [];
    for (let i = 0; i < 30; i++) {
      const r = await bad('127.9.9.11');
      badStatuses.push(r.status);
      if (r.status === 429) break;
    }
    expect(badStatuses.at(-1)).toBe(429);
    expect(badStatuses.slice(0, -1).every((x) => x === 401)).toBe(true);
  });

  it('login attempts are limited per agent code (10/min) and per IP, each attempt costing a password hash', { timeout: 45_000 }, async () => {
    const code = `lim-${rnd()}`;
    const id = await newAgent({ agent_code: code });
    expect((await api(cp, 'POST', `${A}/set-password`, { token: owner.token, body: { agent_id: id, password: 'limit-password' } })).status).toBe(200);
    const login = (app: ControlPlane, agentCode: string, password: string, ip: string) =>
      api(app, 'POST', '/api/v1/agent-portal/login', { body: { workspace_id: owner.workspaceId, agent_code: agentCode, password }, localAddress: ip });
    // The limits count in fixed one-minute windows of the wall clock (accounts/rate-limit.ts): the
    // attempts below (a password hash each, ~5 s in CI) must not straddle a minute's end, where
    // the count starts again (it did in CI). Started in a fresh window when less than 20 s is left.
    const leftMs = 60_000 - (Date.now() % 60_000);
    if (leftMs < 20_000) await new Promise((r) => setTimeout(r, leftMs + 50));
    // From ten addresses, so only the code's limit can apply; the code's letter case does not matter.
    for (let i = 0; i < 10; i++) expect((await login(cp, i % 2 ? code.toUpperCase() : code, 'wrong-password', `127.9.7.${i + 1}`)).status).toBe(401);
    const limited = await login(cp, code, 'limit-password', '127.9.7.20');
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Per IP (3/min on the second replica): other codes from that address are refused too.
    const ip = '127.9.6.1';
    for (let i = 0; i < 3; i++) expect((await login(cp2, `other-${i}-${rnd()}`, 'x-password', ip)).status).toBe(401);
    expect((await login(cp2, `other-${rnd()}`, 'x-password', ip)).status).toBe(429);
    expect((await login(cp2, `other-${rnd()}`, 'x-password', '127.9.6.2')).status).toBe(401);
  });

  it('the logins take application/json only: a cross-site form or text/plain post (no CORS preflight) is refused unread', async () => {
    const body = JSON.stringify({ workspace_id: owner.workspaceId, agent_code: 'x', password: 'y-password' });
    for (const path of ['/api/v1/agent-portal/login', '/api/v1/auth/login']) {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
        const r = await api(cp, 'POST', path, { rawBody: body, headers: { 'content-type': type } });
        expect([r.status, r.body.error.code], `${path} ${type}`).toEqual([400, 'INVALID_BODY']);
      }
      const json = await api(cp, 'POST', path, { rawBody: body, headers: { 'content-type': 'application/json; charset=utf-8' } });
      expect(json.status, path).not.toBe(415);
      expect(json.body.error?.code, path).not.toBe('INVALID_BODY');
    }
  });
});

describe('audit fixes: passwords, health aliases, check order, socket, reset token', () => {
  it('password length counts characters (code points), not UTF-16 units, on set-password and the reset confirmation', async () => {
    const email = `emoji-${rnd()}@example.com`;
    const code = `e-${rnd()}`;
    const id = await newAgent({ agent_code: code, email });
    const set = (password: string) => api(cp, 'POST', `${A}/set-password`, { token: owner.token, body: { agent_id: id, password } });
    // Four emoji: 8 UTF-16 units, 4 characters.
    const four = await set('😀😀😀😀');
    expect([four.status, four.body.error?.code, four.body.error?.details?.[0]?.field]).toEqual([400, 'INVALID_REQUEST', 'password']);
    expect((await set('😀'.repeat(7))).status).toBe(400);
    expect((await set('😀'.repeat(8))).status).toBe(200);
    // 200 emoji: 200 characters (400 units) is within the 256-character maximum; 257 is not.
    expect((await set('😀'.repeat(200))).status).toBe(200);
    expect((await set('a'.repeat(257))).status).toBe(400);
    const login = (password: string) => api(cp, 'POST', '/api/v1/agent-portal/login', { body: { workspace_id: owner.workspaceId, agent_code: code, password } });
    expect((await login('😀'.repeat(200))).status).toBe(200);

    await api(cp, 'POST', `${A}/reset-password`, { token: owner.token, body: { agent_id: id, send_email: true } });
    const token = /Reset token: (\S+)/.exec(cp.accounts.mailbox!.messages(email).at(-1)!.text)![1];
    const confirm = (password: string) => api(cp, 'POST', '/api/v1/agent-portal/reset-password', { body: { token, password } });
    const short = await confirm('🙂🙂🙂🙂');
    expect([short.status, short.body.error?.code, short.body.error?.details?.[0]?.field]).toEqual([400, 'INVALID_REQUEST', 'password']);
    expect((await confirm('🙂'.repeat(8))).status).toBe(200);
    expect((await login('🙂'.repeat(8))).status).toBe(200);
  });

  it('/agent-portal/healthz, /live and /ready answer like /agent-portal/health, without a bearer', async () => {
    const health = await api(cp, 'GET', '/api/v1/agent-portal/health');
    expect(health.status).toBe(200);
    expect(health.body).toMatchObject({ status: 'ok', service: 'control-plane' });
    for (const alias of ['healthz', 'live', 'ready']) {
      const r = await api(cp, 'GET', `/api/v1/agent-portal/${alias}`);
      expect(r.status, alias).toBe(200);
      expect(r.body, alias).toMatchObject({ status: 'ok', service: 'control-plane', version: health.body.version });
    }
  });

  it('agent_id missing is "is required", malformed "must be a UUID"', async () => {
    const missing = await api(cp, 'GET', `${A}/password-audit`, { token: owner.token });
    expect([missing.status, missing.body.error.message]).toEqual([400, 'agent_id: is required']);
    const bad = await api(cp, 'GET', `${A}/password-audit?agent_id=nope`, { token: owner.token });
    expect([bad.status, bad.body.error.message]).toEqual([400, 'agent_id: must be a UUID']);
  });

  it('every bearer portal route answers 401 before looking at the request', async () => {
    const id = newId();
    const calls: Array<[string, string, unknown?]> = [
      ['POST', `${A}/set-password`, {}],
      ['POST', `${A}/set-password`, { agent_id: 'nope', password: 'x' }],
      ['POST', `${A}/reset-password`, {}],
      ['POST', `${A}/send-credentials`, {}],
      ['GET', `${A}/password-audit`],
      ['GET', `${A}/presence/realtime`],
      ['GET', `${A}/presence/attendance?from=yesterday`],
      ['GET', `${A}/presence/timeline/${id}?date=not-a-date`],
      ['GET', `${A}/presence/alerts`],
      ['POST', `${A}/presence/alerts/not-a-uuid/acknowledge`],
      ['POST', `${A}/presence/alerts/${id}/acknowledge`],
      ['POST', `${A}/presence/shifts`, { day_of_week: 9 }],
      ['GET', `${A}/presence/shifts/not-a-uuid`],
      ['DELETE', `${A}/presence/shifts/not-a-uuid`],
      ['DELETE', `${A}/presence/shifts/${id}`],
      ['POST', C, {}],
      ['GET', `${C}?limit=0`],
      ['PATCH', `${C}/${id}`, { max_concurrent_calls: 0 }],
      ['POST', `/api/v1/call-center/calls/${id}/handoff`],
      ['GET', '/api/v1/sessions/active?workspace_id=nope'],
    ];
    for (const [method, path, body] of calls) {
      for (const headers of [{}, { authorization: 'Bearer not-a-real-key-0123456789' }] as Record<string, string>[]) {
        const r = await api(cp, method, path, { body, headers });
        expect([r.status, r.body?.error?.code], `${method} ${path} ${JSON.stringify(headers)}`).toEqual([401, 'UNAUTHORIZED']);
      }
    }
    // With a credential the same body is judged: 400 naming the field.
    const bad = await api(cp, 'POST', `${A}/set-password`, { token: owner.token, body: {} });
    expect([bad.status, bad.body.error.code, bad.body.error.details[0].field]).toEqual([400, 'INVALID_REQUEST', 'password']);
  });

  it('a presence socket that sends anything but login first gets UNAUTHORIZED and is closed 4001 at once', async () => {
    for (const first of [{ type: 'heartbeat' }, { type: 'status', status: 'busy' }, { type: 'logout' }, 'not json', Buffer.from('{"type":"login"}')]) {
      const c = presenceClient(cp.port);
      await c.open();
      const t0 = Date.now();
      if (typeof first === 'string' || Buffer.isBuffer(first)) c.ws.send(first);
      else c.send(first);
      const what = typeof first === 'string' ? first : Buffer.isBuffer(first) ? 'a binary frame' : first.type;
      expect(await c.next(), what).toMatchObject({ type: 'error', code: 'UNAUTHORIZED' });
      expect(await c.closed, what).toBe(4001);
      // Not the 10 s login timeout (4008).
      expect(Date.now() - t0).toBeLessThan(5000);
    }
  });

  it('reset-password: a missing token or password is INVALID_REQUEST naming it; an unknown token is INVALID_TOKEN', async () => {
    const confirm = (body: unknown) => api(cp, 'POST', '/api/v1/agent-portal/reset-password', { body });
    for (const [body, field] of [
      [{}, 'token'],
      [{ password: 'long-enough-password' }, 'token'],
      [{ token: '', password: 'long-enough-password' }, 'token'],
      [{ token: 'some-token' }, 'password'],
    ] as const) {
      const r = await confirm(body);
      expect([r.status, r.body.error?.code, r.body.error?.details?.[0]?.field], JSON.stringify(body)).toEqual([400, 'INVALID_REQUEST', field]);
    }
    const unknown = await confirm({ token: 'never-issued-token', password: 'long-enough-password' });
    expect([unknown.status, unknown.body.error?.code]).toEqual([400, 'INVALID_TOKEN']);
  });
});

describe('hand-off offers (no carrier)', () => {
  async function connected(name: string) {
    const code = `o-${rnd()}`;
    const id = await newAgent({ agent_code: code, display_name: name });
    await api(cp, 'POST', `${A}/set-password`, { token: owner.token, body: { agent_id: id, password: 'offer-password' } });
    const tok = (await api(cp, 'POST', '/api/v1/agent-portal/login', { body: { workspace_id: owner.workspaceId, agent_code: code, password: 'offer-password' } })).body.data.token;
    const c = presenceClient(cp.port);
    await c.open();
    c.send({ type: 'login', token: tok });
    expect((await c.next()).type).toBe('ready');
    return { id, c };
  }

  it('an offer made on another replica reaches the socket; a declined offer goes to the next free agent, an expired one to nobody (no_agent), and an accept without a live call fails cleanly', async () => {
    now = Date.parse('2026-11-28T10:00:00Z');
    const a = await connected('First');
    now += 1000;
    const b = await connected('Second');
    const callId = newId();
    // Asked on the other replica: the offer reaches this one's socket through the registry bus.
    const r = await cp2.portal.handoff.request({ workspaceId: owner.workspaceId, callId, sessionId: `s-${rnd()}`, aiAgentId: newId() });
    expect(r).toMatchObject({ status: 'offered', humanAgentId: a.id });
    const offerA = await a.c.next();
    expect(offerA).toMatchObject({ type: 'offer', call_id: callId });
    a.c.send({ type: 'offer.decline', offer_id: offerA.offer_id });
    expect(await a.c.next()).toMatchObject({ type: 'offer.declined' });
    const offerB = await b.c.next();
    expect(offerB).toMatchObject({ type: 'offer', call_id: callId });
    expect(offerB.offer_id).not.toBe(offerA.offer_id);
    // B lets it run out: the sweep expires it and nobody else is free.
    now += 21_000;
    await cp.portal.sweep.tick();
    const rows = await infra.sql<{ status: string; human_agent_id: string | null }[]>`select status, human_agent_id from human_handoffs where call_id = ${callId} order by offered_at, status`;
    expect(rows.map((x) => x.status)).toEqual(['declined', 'expired', 'no_agent']);
    // A second call: offered to the longest-idle agent; accepting it without a live carrier call fails.
    const callId2 = newId();
    const r2 = await cp.portal.handoff.request({ workspaceId: owner.workspaceId, callId: callId2, sessionId: `s-${rnd()}`, aiAgentId: newId() });
    expect(r2.status).toBe('offered');
    const who = r2.status === 'offered' && r2.humanAgentId === a.id ? a : b;
    const o = await who.c.next();
    // Ids that are not UUIDs are named, not an INTERNAL error.
    for (const [msg, text] of [
      [{ type: 'offer.accept', offer_id: 'x' }, 'offer_id must be a UUID'],
      [{ type: 'offer.decline' }, 'offer_id is required'],
      [{ type: 'call.end', call_id: 'x' }, 'call_id must be a UUID'],
    ] as const) {
      who.c.send(msg);
      expect(await who.c.next()).toEqual({ type: 'error', code: 'INVALID_REQUEST', message: text });
    }
    who.c.send({ type: 'offer.accept', offer_id: o.offer_id });
    expect(await who.c.next()).toMatchObject({ type: 'call.failed', offer_id: o.offer_id });
    const [row] = await infra.sql<{ status: string; conversation_id: string | null }[]>`select status, conversation_id from human_handoffs where id = ${o.offer_id}`;
    expect(row).toEqual({ status: 'ended', conversation_id: null });
    // Asked again for that call: the person whose accept failed (they did not decline) is offered
    // it again, here the only one free.
    const other = who === a ? b : a;
    await infra.sql`update human_agents set status = 'offline' where id = ${other.id}`;
    const r3 = await cp.portal.handoff.request({ workspaceId: owner.workspaceId, callId: callId2, sessionId: `s-${rnd()}`, aiAgentId: newId() });
    expect(r3).toMatchObject({ status: 'offered', humanAgentId: who.id });
    a.c.ws.close();
    b.c.ws.close();
  });
});
