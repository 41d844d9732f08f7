/**
 * Issue 17, alerts: a p95 latency rule fires on slow seeded calls, notifies a signed webhook and
 * the dev mailbox, respects its cooldown and resolves when calls are fast again, all on an
 * injected clock; `/alerts/test` computes what the evaluator computes and writes nothing;
 * fencing (another workspace's rule or event is 404, a named foreign workspace 403); bad input is a 400 naming the field; two
 * control planes evaluating at once open one event.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { AlertService } from '../../shared/gen/voiceplane/v1/alerts_pb.js';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { newId } from '../../shared/ids.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { startWebhookReceiver, verifySignature, type WebhookReceiver, type ReceivedRequest } from '../helpers/webhook-receiver.js';
import { createAgent, offsetClock } from '../unit/records/control-plane.js';
import { until } from '../helpers/campaigns.js';
import { createEvaluator, TICK_BUDGET_MS } from '../../control-plane/alerts/evaluator.js';

const R = '/api/v1/alerts/rules';
const E = '/api/v1/alerts/events';
const MIN = 60_000;

let infra: TestInfra;
let cp: ControlPlane;
let cp2: ControlPlane;
let owner: TestUser;
let stranger: TestUser;
let receiver: WebhookReceiver;
let secret: string;
let agentId: string;
const clock = offsetClock();
const ONCALL = 'oncall@example.com';

beforeAll(async () => {
  // A tick an hour apart: the test drives `tick()` itself, so background ticks never race it.
  infra = await startTestInfra({ outboundAllowCidrs: ['127.0.0.0/8'], alertsEvalIntervalS: 3600 });
  const opts = { port: 0, host: '127.0.0.1', jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 } };
  cp = await startControlPlane({ ...infra, clock }, opts);
  cp2 = await startControlPlane({ ...infra, clock }, opts);
  owner = await createTestUser(cp);
  stranger = await createTestUser(cp);
  receiver = await startWebhookReceiver();
  const put = await api(cp, 'PUT', '/api/v1/call-center/settings', { token: owner.token, body: { webhook_url: receiver.url } });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  secret = put.body.data.webhook_secret;
  agentId = await createAgent(cp as never, infra, owner, owner.workspaceId, 'Support line');
  // Each control plane kicks an evaluation at start, and the second can slip in while the first
  // runs: wait until only the hourly successor is queued, so no background tick races the test's
  // own `tick()` (one opened the test's event first in a CI run).
  const dueSoon = async () =>
    (await infra.sql.unsafe(`select count(*)::int as n from "${cp.jobs.schema}".job where name = 'alerts.evaluate' and (state in ('active', 'retry') or (state = 'created' and start_after < now() + interval '1 minute'))`))[0]!.n as number;
  await until(async () => (await dueSoon()) === 0, 15_000, 'start-up evaluations done', 100);
}, 60_000);

afterAll(async () => {
  await cp2?.close();
  await cp?.close();
  await receiver?.close();
  await infra?.close();
});

/** One live conversation of `agent` whose assistant turns took `latencies` (total ms), `agoMs` before the clock's now. */
async function seedTurns(agent: string, latencies: number[], agoMs = 30_000): Promise<void> {
  const convId = newId();
  const at = clock.now() - agoMs;
  await infra.sql`
    insert into conversations (id, session_id, agent_id, workspace_id, status, started_at)
    values (${convId}, ${`s-${convId}`}, ${agent}, ${owner.workspaceId}, 'active', ${new Date(at - 1000)})`;
  for (const [i, ms] of latencies.entries()) {
    await infra.sql`
      insert into messages (id, conversation_id, turn_number, role, content, asr_latency_ms, llm_latency_ms, tts_latency_ms, total_latency_ms, created_at)
      values (${newId()}, ${convId}, ${i + 1}, 'assistant', 'ok', ${Math.round(ms * 0.2)}, ${Math.round(ms * 0.5)}, ${Math.round(ms * 0.3)}, ${ms}, ${new Date(at + i)})`;
  }
}

const alertRequests = (kind: string) => receiver.requests.filter((r) => r.headers['webhook-event-type'] === `alert.${kind}`);
async function nextAlert(kind: string, n: number): Promise<ReceivedRequest> {
  await expect.poll(() => alertRequests(kind).length, { timeout: 15_000, interval: 100 }).toBeGreaterThanOrEqual(n);
  return alertRequests(kind)[n - 1];
}
const eventsOf = async (ruleId: string, token = owner.token) => (await api(cp, 'GET', `${E}?limit=200`, { token })).body.data.filter((e: any) => e.rule_id === ruleId);

describe('p95_latency_ms > 500: fire, notify, cooldown, resolve', () => {
  it('runs the whole cycle on the injected clock', { timeout: 60_000 }, async () => {
    const body = {
      name: 'Slow replies',
      metric: 'p95_latency_ms',
      component: 'total',
      scope: { type: 'agent', agent_id: agentId },
      operator: 'greater_than',
      threshold: 500,
      window_minutes: 5,
      cooldown_minutes: 10,
      channels: { email: [ONCALL], webhook: [receiver.url] },
    };
    const created = await api(cp, 'POST', R, { token: owner.token, body });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const rule = created.body.data;
    expect(rule).toMatchObject({ metric: 'p95_latency_ms', component: 'total', scope: { type: 'agent', agent_id: agentId }, operator: 'greater_than', threshold: 500, enabled: true, workspace_id: owner.workspaceId });
    // Not evaluated yet: null (as in the alert webhook body), not "".
    expect(rule).toMatchObject({ last_evaluated_at: null, last_value: null });

    // Nothing recorded yet: no data, no fire.
    const empty = await api(cp, 'POST', '/api/v1/alerts/test', { token: owner.token, body });
    expect(empty.body.data).toEqual({ observed_value: null, threshold: 500, operator: 'greater_than', fired: false });

    await seedTurns(agentId, [300, 400, 900, 1000, 1200]);
    const tested = await api(cp, 'POST', '/api/v1/alerts/test', { token: owner.token, body });
    expect(tested.status).toBe(200);
    expect(tested.body.data.fired).toBe(true);
    expect(tested.body.data.observed_value).toBeGreaterThan(1000);
    // `/alerts/test` has no side effects.
    expect(await eventsOf(rule.id)).toEqual([]);

    const [outcome] = (await cp.alerts.evaluator.tick()).filter((o) => o.ruleId === rule.id);
    expect(outcome).toEqual({ ruleId: rule.id, value: tested.body.data.observed_value, action: 'opened' });
    // Same clock, same data: the route and the evaluator agree on the value.
    const fired = await nextAlert('fired', 1);
    expect(verifySignature(secret, fired)).toBe(true);
    expect(fired.headers['webhook-id']).toBe(fired.json.id);
    expect(fired.json).toMatchObject({ type: 'alert.fired', data: { rule_id: rule.id, metric: 'p95_latency_ms', component: 'total', observed_value: outcome.value, threshold: 500, status: 'active' } });
    // Either replica's worker may send it: each process has its own development mailbox.
    const mails = () => [cp, cp2].flatMap((app) => app.accounts.mailbox!.messages(ONCALL));
    await expect.poll(() => mails().length, { timeout: 15_000 }).toBe(1);
    expect(mails()[0].subject).toBe(`[Voiceplane] Alert fired: Slow replies: p95_latency_ms (total) = ${outcome.value} (greater_than 500)`);
    expect(mails()[0].text).toContain(`Rule: Slow replies (${rule.id})`);
    expect((await api(cp, 'GET', '/api/v1/alerts/active-count', { token: owner.token })).body.data).toEqual({ count: 1 });
    await expect
      .poll(async () => (await eventsOf(rule.id))[0]?.notifications.map((n: any) => `${n.channel}:${n.kind}:${n.status}:${n.attempts}`).sort(), { timeout: 15_000, interval: 100 })
      .toEqual(['email:fired:delivered:1', 'webhook:fired:delivered:1']);
    for (const n of (await eventsOf(rule.id))[0].notifications) expect(n).toMatchObject({ last_error: null, delivered_at: expect.any(String) });

    // An active event has no resolution yet: null, not "".
    expect((await eventsOf(rule.id))[0]).toMatchObject({ status: 'active', resolved_at: null, resolution: null, resolved_by: null });
    const evaluated = (await api(cp, 'GET', R, { token: owner.token })).body.data.find((r: any) => r.id === rule.id);
    expect(Date.parse(evaluated.last_evaluated_at)).toBeGreaterThan(0);
    expect(evaluated.last_value).toBe(outcome.value);

    // Still firing: the open event stays the only one.
    expect((await cp.alerts.evaluator.tick()).find((o) => o.ruleId === rule.id)?.action).toBe('unchanged');

    // Resolved by hand while still firing: no new event inside the cooldown (10 min after the first).
    const [ev] = await eventsOf(rule.id);
    const resolved = await api(cp, 'POST', `${E}/${ev.id}/resolve`, { token: owner.token });
    expect(resolved.status).toBe(200);
    expect(resolved.body.data).toEqual({ resolved: true });
    expect((await eventsOf(rule.id))[0]).toMatchObject({ status: 'resolved', resolution: 'manual', resolved_by: owner.userId });
    clock.advance(4 * MIN);
    await seedTurns(agentId, [800, 900, 950]);
    expect((await cp.alerts.evaluator.tick()).find((o) => o.ruleId === rule.id)?.action).toBe('cooldown');
    expect(await eventsOf(rule.id)).toHaveLength(1);

    // Past the cooldown and still slow: a second event.
    clock.advance(7 * MIN);
    await seedTurns(agentId, [700, 800, 900]);
    expect((await cp.alerts.evaluator.tick()).find((o) => o.ruleId === rule.id)?.action).toBe('opened');
    await nextAlert('fired', 2);

    // Calls are fast again (the slow ones left the window): resolved automatically, and notified.
    clock.advance(6 * MIN);
    await seedTurns(agentId, [200, 250, 300, 310]);
    const before = clock.now();
    const clear = (await cp.alerts.evaluator.tick()).find((o) => o.ruleId === rule.id)!;
    const after = clock.now();
    expect(clear.action).toBe('resolved');
    expect(clear.value).toBeLessThanOrEqual(500);
    const events = await eventsOf(rule.id);
    expect(events.map((e: any) => [e.status, e.resolution])).toEqual([
      ['resolved', 'auto'],
      ['resolved', 'manual'],
    ]);
    // Resolved by the evaluator: nobody resolved it.
    expect(events[0].resolved_by).toBeNull();
    // Resolution time is the injected clock's (17 minutes ahead of the wall clock here).
    expect(Date.parse(events[0].resolved_at)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(events[0].resolved_at)).toBeLessThanOrEqual(after);
    const res = await nextAlert('resolved', 1);
    expect(verifySignature(secret, res)).toBe(true);
    expect(res.json.data).toMatchObject({ event_id: events[0].id, status: 'resolved', resolution: 'auto' });
    expect((await api(cp, 'GET', '/api/v1/alerts/active-count', { token: owner.token })).body.data).toEqual({ count: 0 });
    expect((await api(cp, 'GET', `${E}?status=active`, { token: owner.token })).body.data.filter((e: any) => e.rule_id === rule.id)).toEqual([]);
  });
});

describe('p95_latency_ms: which replies count', () => {
  it('a reply cut before any audio (total 0) is no sample of the total wait; it still is of a component', async () => {
    const agent = await createAgent(cp as never, infra, owner, owner.workspaceId, 'Cut replies');
    await seedTurns(agent, [0, 1300]);
    const test = async (component: string) =>
      (await api(cp, 'POST', '/api/v1/alerts/test', { token: owner.token, body: { name: 'p95', metric: 'p95_latency_ms', component, scope: { type: 'agent', agent_id: agent }, operator: 'greater_than', threshold: 500, window_minutes: 60 } })).body.data;
    expect((await test('total')).observed_value).toBe(1300);
    // llm: 0 and 650 -> continuous p95 617.5 (a component's 0 is a measured 0).
    expect((await test('llm')).observed_value).toBe(617.5);
  });
});

describe('REST shape: unset is null', () => {
  it('a workspace rule without component reads null where nothing is set; read back and sent again it is accepted', async () => {
    const created = await api(cp, 'POST', R, { token: owner.token, body: { name: 'Errors', metric: 'error_rate', operator: 'greater_than', threshold: 50 } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const expected = { component: null, scope: { type: 'workspace', agent_id: null }, last_evaluated_at: null, last_value: null };
    expect(created.body.data).toMatchObject(expected);
    expect((await api(cp, 'GET', R, { token: owner.token })).body.data.find((r: any) => r.id === created.body.data.id)).toMatchObject(expected);
    const put = await api(cp, 'PUT', `${R}/${created.body.data.id}`, { token: owner.token, body: { threshold: 60 } });
    expect(put.body.data).toMatchObject({ ...expected, threshold: 60 });
    // A rule read back and sent again (nulls included) is accepted unchanged.
    const { id: _id, workspace_id: _ws, created_at: _c, updated_at: _u, ...again } = put.body.data;
    const roundTrip = await api(cp, 'PUT', `${R}/${created.body.data.id}`, { token: owner.token, body: again });
    expect(roundTrip.status, JSON.stringify(roundTrip.body)).toBe(200);
    expect(roundTrip.body.data).toMatchObject({ ...expected, threshold: 60 });
    await api(cp, 'DELETE', `${R}/${created.body.data.id}`, { token: owner.token });
  });
});

describe('retried creates', () => {
  it('a client-chosen id: the same body answers the same rule, another body is 409, a bad id is 400', async () => {
    const id = newId();
    const body = { id, name: 'Retried', metric: 'call_volume', operator: 'greater_than', threshold: 5, channels: { email: [ONCALL] } };
    const first = await api(cp, 'POST', R, { token: owner.token, body });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.data.id).toBe(id);
    const again = await api(cp, 'POST', R, { token: owner.token, body });
    expect(again.body.data).toEqual(first.body.data);
    expect((await api(cp, 'POST', R, { token: owner.token, body: { ...body, threshold: 6 } })).status).toBe(409);
    expect((await api(cp, 'POST', R, { token: owner.token, body: { ...body, id: 'nope' } })).body.error.details[0].field).toBe('id');
    expect((await api(cp, 'GET', R, { token: owner.token })).body.data.filter((r: any) => r.id === id)).toHaveLength(1);
    await api(cp, 'DELETE', `${R}/${id}`, { token: owner.token });
  });
});

describe('two evaluators at once', () => {
  it('a tick stops taking rules after its time budget; the rules it left go first next tick', async () => {
    const ids: string[] = [];
    for (const name of ['Budget A', 'Budget B']) {
      const r = await api(cp, 'POST', R, { token: owner.token, body: { name, metric: 'call_volume', operator: 'greater_than', threshold: 1e6, window_minutes: 10 } });
      expect(r.status).toBe(201);
      ids.push(r.body.data.id);
    }
    // Every look at the monotonic clock moves it 15 s: one rule fits in TICK_BUDGET_MS (20 s), the next does not.
    let t = 0;
    const slow = { ...clock, monotonicMs: () => (t += 15_000) };
    const e = createEvaluator({ sql: infra.sql, jobs: cp.jobs, clock: slow, logger: infra.logger, registry: infra.registry, notifier: cp.alerts.notifier, intervalS: 3600 });
    expect(TICK_BUDGET_MS).toBe(20_000);
    const first = await e.tick();
    expect(first).toHaveLength(1);
    const second = await e.tick();
    expect(second).toHaveLength(1);
    expect(second[0]!.ruleId).not.toBe(first[0]!.ruleId);
    for (const id of ids) await api(cp, 'DELETE', `${R}/${id}`, { token: owner.token });
  });

  it('two control planes ticking together open one event per rule', { timeout: 30_000 }, async () => {
    const created = await api(cp, 'POST', R, { token: owner.token, body: { name: 'Busy', metric: 'call_volume', operator: 'greater_than_or_equal', threshold: 1, window_minutes: 10, cooldown_minutes: 0 } });
    expect(created.status).toBe(201);
    const ruleId = created.body.data.id;
    await seedTurns(agentId, [100], 60_000);
    // Force the race: hold the rule's row until both evaluators have computed the value and wait
    // on it, then let them go together.
    const holder = await infra.sql.reserve();
    await holder`begin`;
    await holder`select id from alert_rules where id = ${ruleId} for update`;
    const ticks = [cp.alerts.evaluator.tick(), cp2.alerts.evaluator.tick()];
    const waiting = async () =>
      (await infra.sql<{ n: number }[]>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock' and query ilike '%alert_rules%'`)[0].n;
    try {
      await expect.poll(waiting, { timeout: 10_000, interval: 20 }).toBe(2);
    } finally {
      await holder`commit`;
      holder.release();
    }
    const outcomes = (await Promise.all(ticks)).map((all) => all.find((o) => o.ruleId === ruleId)?.action).sort();
    expect(outcomes).toEqual(['opened', 'unchanged']);
    for (let i = 0; i < 3; i++) await Promise.all([cp.alerts.evaluator.tick(), cp2.alerts.evaluator.tick(), cp.alerts.evaluator.tick()]);
    const events = await eventsOf(ruleId);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ status: 'active', metric: 'call_volume' });
    expect(events[0].observed_value).toBeGreaterThanOrEqual(1);
    await api(cp, 'DELETE', `${R}/${created.body.data.id}`, { token: owner.token });
  });
});

describe('fencing', () => {
  it("another workspace's rule and event are 404; an agent of another workspace is 404; a named foreign workspace is 403", { timeout: 20_000 }, async () => {
    const created = await api(cp, 'POST', R, { token: owner.token, body: { name: 'Fenced', metric: 'call_volume', operator: 'greater_than', threshold: 0, window_minutes: 60, cooldown_minutes: 0 } });
    const id = created.body.data.id;
    await cp.alerts.evaluator.tick();
    const [ev] = await eventsOf(id);
    expect(ev?.status).toBe('active');
    const t = stranger.token;
    expect((await api(cp, 'PUT', `${R}/${id}`, { token: t, body: { name: 'Mine now' } })).status).toBe(404);
    expect((await api(cp, 'DELETE', `${R}/${id}`, { token: t })).status).toBe(404);
    expect((await api(cp, 'POST', `${E}/${ev.id}/resolve`, { token: t })).status).toBe(404);
    // A foreign id answers exactly as an unknown one (no "workspace not found" to tell it exists).
    const unknown = '0190a0a0-0000-7000-8000-00000000dead';
    for (const [method, path] of [['DELETE', `${R}/`], ['POST', `${E}/`]] as const) {
      const suffix = method === 'POST' ? '/resolve' : '';
      const foreignAnswer = await api(cp, method, `${path}${method === 'POST' ? ev.id : id}${suffix}`, { token: t });
      const unknownAnswer = await api(cp, method, `${path}${unknown}${suffix}`, { token: t });
      expect(foreignAnswer.body).toEqual({ ...unknownAnswer.body, timestamp: foreignAnswer.body.timestamp });
    }
    // A named workspace of another organization: 403 FORBIDDEN (spec doc 3's error table).
    for (const path of [`${R}?workspace_id=${owner.workspaceId}`, `${E}?workspace_id=${owner.workspaceId}`, `/api/v1/alerts/active-count?workspace_id=${owner.workspaceId}`]) {
      const res = await api(cp, 'GET', path, { token: t });
      expect([path, res.status, res.body.error?.code]).toEqual([path, 403, 'FORBIDDEN']);
    }
    // The stranger's own views are empty.
    expect((await api(cp, 'GET', R, { token: t })).body.data).toEqual([]);
    expect((await api(cp, 'GET', E, { token: t })).body.data).toEqual([]);
    expect((await api(cp, 'GET', '/api/v1/alerts/active-count', { token: t })).body.data).toEqual({ count: 0 });
    const foreignAgent = await api(cp, 'POST', R, { token: t, body: { name: 'x', metric: 'call_volume', operator: 'greater_than', scope: { type: 'agent', agent_id: agentId } } });
    expect(foreignAgent.status).toBe(404);
    const foreignTest = await api(cp, 'POST', '/api/v1/alerts/test', { token: t, body: { metric: 'call_volume', operator: 'greater_than', scope: { type: 'agent', agent_id: agentId } } });
    expect(foreignTest.status).toBe(404);
    // Still the owner's, unchanged and still active.
    expect((await eventsOf(id))[0].status).toBe('active');
    expect((await api(cp, 'DELETE', `${R}/${id}`, { token: owner.token })).body.data).toEqual({ deleted: true });
    expect((await api(cp, 'DELETE', `${R}/${id}`, { token: owner.token })).status).toBe(404);
  });
});

describe('bad input: 400 naming the field', () => {
  const base = { name: 'r', metric: 'error_rate', operator: 'greater_than', threshold: 5 };
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['unknown metric', { ...base, metric: 'cpu' }, 'metric'],
    ['missing metric', { ...base, metric: '' }, 'metric'],
    ['unknown operator', { ...base, operator: 'gt' }, 'operator'],
    ['missing name', { ...base, name: ' ' }, 'name'],
    ['negative window', { ...base, window_minutes: -5 }, 'window_minutes'],
    ['window over a day', { ...base, window_minutes: 1441 }, 'window_minutes'],
    ['negative cooldown', { ...base, cooldown_minutes: -1 }, 'cooldown_minutes'],
    ['component on another metric', { ...base, component: 'asr' }, 'component'],
    ['unknown component', { ...base, metric: 'p95_latency_ms', component: 'gpu' }, 'component'],
    ['unknown scope type', { ...base, scope: { type: 'org' } }, 'scope.type'],
    ['agent scope without agent', { ...base, scope: { type: 'agent' } }, 'scope.agent_id'],
    ['agent scope on a workspace metric', { ...base, metric: 'webhook_dead_count', scope: { type: 'agent', agent_id: newId() } }, 'scope'],
    ['bad email', { ...base, channels: { email: ['nope'] } }, 'channels.email[0]'],
    ['private webhook address', { ...base, channels: { webhook: ['https://10.1.2.3/hook'] } }, 'channels.webhook[0]'],
    ['plain http slack', { ...base, channels: { slack: ['http://hooks.example.com/x'] } }, 'channels.slack[0]'],
    ['workspace not a UUID', { ...base, workspace_id: 'abc' }, 'workspace_id'],
    // JSON types: the full path, not `body` or the leaf name alone.
    ['channels not an object', { ...base, channels: 'x' }, 'channels'],
    ['scope not an object', { ...base, scope: 'workspace' }, 'scope'],
    ['a channel list not an array', { ...base, channels: { slack: 'x' } }, 'channels.slack'],
    ['a channel target not a string', { ...base, channels: { email: [5] } }, 'channels.email[0]'],
    ['threshold not a number', { ...base, threshold: '5' }, 'threshold'],
  ];
  it.each(cases)('%s', async (_what, body, field) => {
    const res = await api(cp, 'POST', R, { token: owner.token, body });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error.code).toBe('INVALID_REQUEST');
    expect(res.body.error.details[0].field).toBe(field);
  });

  it('a number out of range (1e309) in a channel list names its place', async () => {
    const raw = `{"name":"r","metric":"error_rate","operator":"greater_than","channels":{"email":[1e309]}}`;
    const res = await api(cp, 'POST', R, { token: owner.token, rawBody: raw });
    expect([res.status, res.body.error?.code, res.body.error?.details?.[0]?.field]).toEqual([400, 'INVALID_REQUEST', 'channels.email[0]']);
    const put = await api(cp, 'POST', '/api/v1/alerts/test', { token: owner.token, rawBody: `{"metric":"error_rate","operator":"equals","scope":"agent"}` });
    expect([put.status, put.body.error?.details?.[0]?.field]).toEqual([400, 'scope']);
  });

  it('PUT, /alerts/test and the events query check their fields too', async () => {
    const created = await api(cp, 'POST', R, { token: owner.token, body: base });
    expect(created.status).toBe(201);
    const put = await api(cp, 'PUT', `${R}/${created.body.data.id}`, { token: owner.token, body: { operator: 'between' } });
    expect([put.status, put.body.error.details[0].field]).toEqual([400, 'operator']);
    const test = await api(cp, 'POST', '/api/v1/alerts/test', { token: owner.token, body: { metric: 'latency', operator: 'equals' } });
    expect([test.status, test.body.error.details[0].field]).toEqual([400, 'metric']);
    for (const [q, field] of [
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      ['status=open', 'status'],
    ]) {
      const res = await api(cp, 'GET', `${E}?${q}`, { token: owner.token });
      expect([res.status, res.body.error.details[0].field]).toEqual([400, field]);
    }
    // A webhook channel needs the workspace webhook secret (the stranger has none).
    const noSecret = await api(cp, 'POST', R, { token: stranger.token, body: { ...base, channels: { webhook: [receiver.url] } } });
    expect([noSecret.status, noSecret.body.error.details[0].field]).toEqual([400, 'channels.webhook']);
    await api(cp, 'DELETE', `${R}/${created.body.data.id}`, { token: owner.token });
  });
});

describe('Connect', () => {
  it('the same service over Connect: a rule round-trips, a bad operator is INVALID_ARGUMENT, a stranger gets NOT_FOUND', { timeout: 20_000 }, async () => {
    const client = createClient(AlertService, createConnectTransport({ baseUrl: `http://127.0.0.1:${cp.port}`, httpVersion: '2' }));
    const headers = { authorization: `Bearer ${owner.token}` };
    const rule = await client.createAlertRule({ name: 'Over Connect', metric: 'tool_error_rate', operator: 'greater_than_or_equal', threshold: 10 }, { headers });
    expect(rule).toMatchObject({ workspaceId: owner.workspaceId, metric: 'tool_error_rate', windowMinutes: 5, cooldownMinutes: 15, scope: { type: 'workspace' } });
    const bad = await client.createAlertRule({ name: 'x', metric: 'tool_error_rate', operator: '>=' }, { headers }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ConnectError);
    expect((bad as ConnectError).code).toBe(Code.InvalidArgument);
    const foreign = await client.deleteAlertRule({ ruleId: rule.id }, { headers: { authorization: `Bearer ${stranger.token}` } }).catch((e: unknown) => e);
    expect((foreign as ConnectError).code).toBe(Code.NotFound);
    expect(await client.deleteAlertRule({ ruleId: rule.id }, { headers })).toMatchObject({ deleted: true });
  });
});
