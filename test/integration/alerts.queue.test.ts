/**
 * Issue 17, alerts on the job queue: two control planes with a 1 s evaluation interval run the
 * `alerts.evaluate` chain themselves (nobody calls `tick()`) and open one event between them;
 * Slack notifications carry `{text, blocks}`; a webhook notification that gets a 503 is retried
 * (recorded attempts, last error) and one that gets a 400 is dead at once; the live metrics
 * (`active_calls`, `node_down`) come from the registry.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { LiveCalls, newCallRecord } from '../../control-plane/telephony/live-calls.js';
import { newId } from '../../shared/ids.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { offsetClock } from '../unit/records/control-plane.js';
import { startEngineNode } from '../../media-engine/node.js';
import { recordLiveNodes } from '../../control-plane/alerts/metrics.js';
import { loadConfig } from '../../shared/config.js';
import { realClock } from '../../shared/clock.js';

const R = '/api/v1/alerts/rules';
const E = '/api/v1/alerts/events';

let infra: TestInfra;
let a: ControlPlane;
let b: ControlPlane;
let owner: TestUser;
let hooks: WebhookReceiver;
let slack: WebhookReceiver;
let secret: string;
const clock = offsetClock();

beforeAll(async () => {
  infra = await startTestInfra({ outboundAllowCidrs: ['127.0.0.0/8'], alertsEvalIntervalS: 1 });
  // Notification retries 1 s apart (production: 10 s doubling).
  const opts = { port: 0, host: '127.0.0.1', jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1, queues: { 'alerts.notify': { retryDelaySeconds: 1, retryBackoff: false } } } };
  a = await startControlPlane({ ...infra, clock }, opts);
  b = await startControlPlane({ ...infra, clock }, opts);
  owner = await createTestUser(a);
  hooks = await startWebhookReceiver('/hooks/alerts');
  slack = await startWebhookReceiver('/services/T000/B000/XXXX');
  const put = await api(a, 'PUT', '/api/v1/call-center/settings', { token: owner.token, body: { webhook_url: hooks.url } });
  secret = put.body.data.webhook_secret;
}, 60_000);

afterAll(async () => {
  await b?.close();
  await a?.close();
  await hooks?.close();
  await slack?.close();
  await infra?.close();
});

const eventsOf = async (ruleId: string) => (await api(a, 'GET', `${E}?limit=200`, { token: owner.token })).body.data.filter((e: any) => e.rule_id === ruleId);
const ruleById = async (id: string) => (await api(a, 'GET', R, { token: owner.token })).body.data.find((r: any) => r.id === id);

async function seedCall(): Promise<void> {
  const id = newId();
  await infra.sql`
    insert into conversations (id, session_id, agent_id, workspace_id, status, started_at)
    values (${id}, ${`s-${id}`}, ${newId()}, ${owner.workspaceId}, 'active', ${new Date(clock.now() - 10_000)})`;
}

describe('the evaluation chain on the queue', () => {
  it('two replicas tick every second and open one event; Slack gets {text, blocks}; webhooks are retried or dead', { timeout: 60_000 }, async () => {
    // 503 then 200: retried by the queue. Then a 400 for the second rule: dead at once.
    hooks.respond({ status: 503 });
    await seedCall();
    const created = await api(a, 'POST', R, {
      token: owner.token,
      body: { name: 'Any call', metric: 'call_volume', operator: 'greater_than', threshold: 0, window_minutes: 10, cooldown_minutes: 0, channels: { slack: [slack.url], webhook: [hooks.url] } },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.data.id;
    await expect.poll(async () => (await eventsOf(id)).length, { timeout: 15_000, interval: 200 }).toBe(1);
    // Several more ticks by either replica: still one event.
    const first = (await ruleById(id)).last_evaluated_at;
    await expect.poll(async () => Date.parse((await ruleById(id)).last_evaluated_at), { timeout: 15_000, interval: 200 }).toBeGreaterThan(Date.parse(first) + 2000);
    expect(await eventsOf(id)).toHaveLength(1);
    expect((await ruleById(id)).last_value).toBe(1);

    const s = await slack.until(1);
    expect(s.json.text).toMatch(/^Alert fired: Any call: call_volume = 1 \(greater_than 0\)$/);
    expect(s.json.blocks[0]).toMatchObject({ type: 'section', text: { type: 'mrkdwn' } });
    const hook = await hooks.until(2);
    expect(verifySignature(secret, hook)).toBe(true);
    expect(hook.headers['webhook-id']).toBe(hooks.requests[0].headers['webhook-id']);
    expect(hook.raw.equals(hooks.requests[0].raw)).toBe(true);
    await expect
      .poll(async () => (await eventsOf(id))[0].notifications.find((n: any) => n.channel === 'webhook'), { timeout: 10_000, interval: 100 })
      .toMatchObject({ status: 'delivered', attempts: 2, kind: 'fired' });
    expect(slack.requests).toHaveLength(1);
    await api(a, 'DELETE', `${R}/${id}`, { token: owner.token });

    hooks.respond({ status: 400 });
    const before = hooks.requests.length;
    const dead = await api(a, 'POST', R, { token: owner.token, body: { name: 'Dead hook', metric: 'call_volume', operator: 'greater_than_or_equal', threshold: 1, window_minutes: 10, channels: { webhook: [hooks.url] } } });
    await hooks.until(before + 1);
    await expect
      .poll(async () => (await eventsOf(dead.body.data.id))[0]?.notifications[0], { timeout: 10_000, interval: 100 })
      .toMatchObject({ status: 'dead', attempts: 1, last_error: 'HTTP 400' });
    await api(a, 'DELETE', `${R}/${dead.body.data.id}`, { token: owner.token });
    expect(hooks.requests.length).toBe(before + 1);
  });
});

describe('live metrics from the registry', () => {
  it('active_calls counts the workspace live calls; node_down counts a node seen alive that stopped heartbeating', { timeout: 30_000 }, async () => {
    const test = async (body: object) => (await api(a, 'POST', '/api/v1/alerts/test', { token: owner.token, body: { operator: 'greater_than', threshold: 0, ...body } })).body.data;
    const calls = new LiveCalls(infra.registry, clock);
    const agentId = newId();
    expect((await test({ metric: 'active_calls' })).observed_value).toBe(0);
    for (let i = 0; i < 2; i++) {
      await calls.put(newCallRecord({ call_id: newId(), agent_id: i ? agentId : newId(), workspace_id: owner.workspaceId, user_id: owner.userId, direction: 'inbound', status: 'in_progress' }), 0);
    }
    expect(await test({ metric: 'active_calls' })).toEqual({ observed_value: 2, threshold: 0, operator: 'greater_than', fired: true });

    const nodeId = `node-${newId()}`;
    await infra.registry.nodes.heartbeat({ nodeId, wsUrl: 'ws://127.0.0.1:1', capacity: 10, load: 0, updatedAtMs: clock.now() }, 60_000);
    await a.alerts.evaluator.tick();
    expect((await test({ metric: 'node_down' })).observed_value).toBe(0);
    await infra.registry.nodes.removeNode(nodeId);
    expect(await test({ metric: 'node_down', window_minutes: 5 })).toMatchObject({ observed_value: 1, fired: true });
    // Seen longer ago than the window: no longer counted.
    clock.advance(6 * 60_000);
    expect((await test({ metric: 'node_down', window_minutes: 5 })).observed_value).toBe(0);
  });
});

describe('node_down and clean shutdowns', () => {
  it('an engine node that closes cleanly is not counted as down (it paged on every deploy)', { timeout: 30_000 }, async () => {
    const test = async () => (await api(a, 'POST', '/api/v1/alerts/test', { token: owner.token, body: { metric: 'node_down', operator: 'greater_than', threshold: 0, window_minutes: 5 } })).body.data;
    const before = (await test()).observed_value as number;
    const node = await startEngineNode({ config: loadConfig({}, { enginePort: 0, host: '127.0.0.1' }), logger: infra.logger, clock: realClock, registry: infra.registry, sql: infra.sql, port: 0 });
    await expect.poll(async () => (await infra.registry.nodes.listNodes()).some((n) => n.nodeId === node.nodeId), { timeout: 5000, interval: 50 }).toBe(true);
    await a.alerts.evaluator.tick();
    const [seen] = await infra.sql`select 1 from alert_engine_nodes where node_id = ${node.nodeId}`;
    expect(seen).toBeDefined();
    await node.close();
    expect((await test()).observed_value).toBe(before);
  });

  it('a tick that listed the node just before it left cannot count it as down', { timeout: 30_000 }, async () => {
    const test = async () => (await api(a, 'POST', '/api/v1/alerts/test', { token: owner.token, body: { metric: 'node_down', operator: 'greater_than', threshold: 0, window_minutes: 5 } })).body.data;
    const before = (await test()).observed_value as number;
    const node = await startEngineNode({ config: loadConfig({}, { enginePort: 0, host: '127.0.0.1' }), logger: infra.logger, clock: realClock, registry: infra.registry, sql: infra.sql, port: 0 });
    await expect.poll(async () => (await infra.registry.nodes.listNodes()).some((n) => n.nodeId === node.nodeId), { timeout: 5000, interval: 50 }).toBe(true);
    // The tick's listing, taken while the node was live, is written after the node has left.
    const listed = await infra.registry.nodes.listNodes();
    await node.close();
    const staleRegistry = { calls: infra.registry.calls, nodes: { ...infra.registry.nodes, listNodes: async () => listed } };
    await recordLiveNodes({ sql: infra.sql, registry: staleRegistry as typeof infra.registry }, clock.now());
    expect((await test()).observed_value).toBe(before);
  });
});

describe('the recorded metrics', () => {
  it('error_rate, tool_error_rate, failed_call_rate and webhook_dead_count count what is in the window', { timeout: 30_000 }, async () => {
    const test = async (body: object) => (await api(a, 'POST', '/api/v1/alerts/test', { token: owner.token, body: { operator: 'greater_than', threshold: 20, window_minutes: 10, ...body } })).body.data;
    const ws = owner.workspaceId;
    const now = clock.now();
    const agent = newId();
    const conv = async (status: string, endedAgoMs: number | null) => {
      const id = newId();
      await infra.sql`
        insert into conversations (id, session_id, agent_id, workspace_id, status, started_at, ended_at)
        values (${id}, ${`s-${id}`}, ${agent}, ${ws}, ${status}, ${new Date(now - 3600_000)}, ${endedAgoMs === null ? null : new Date(now - endedAgoMs)})`;
      return id;
    };
    // Ended in the window: 1 failed of 4. Ended an hour ago: not counted.
    const live = await conv('active', null);
    for (const st of ['completed', 'completed', 'failed', 'completed']) await conv(st, 60_000);
    await conv('failed', 3_000_000);
    expect(await test({ metric: 'failed_call_rate' })).toMatchObject({ observed_value: 25, fired: true });

    // Pipeline steps in the window: 3 errors of 10; one old error outside the window.
    const msg = newId();
    await infra.sql`insert into messages (id, conversation_id, turn_number, role, created_at) values (${msg}, ${live}, 1, 'assistant', ${new Date(now - 30_000)})`;
    for (let i = 0; i < 11; i++) {
      const old = i === 10;
      await infra.sql`
        insert into pipeline_events (id, conversation_id, agent_id, workspace_id, turn_number, event_type, status, provider, latency_ms, created_at)
        values (${newId()}, ${live}, ${agent}, ${ws}, 1, 'llm', ${i < 3 || old ? 'error' : 'success'}, 'sim', 100, ${new Date(now - (old ? 1_800_000 : 30_000))})`;
    }
    expect(await test({ metric: 'error_rate' })).toMatchObject({ observed_value: 30, fired: true });

    // Tool calls: 1 failed of 4.
    for (const st of ['success', 'error', 'success', 'success']) {
      await infra.sql`
        insert into tool_calls (id, message_id, conversation_id, tool_name, status, created_at)
        values (${newId()}, ${msg}, ${live}, 'lookup', ${st}, ${new Date(now - 20_000)})`;
    }
    expect(await test({ metric: 'tool_error_rate' })).toMatchObject({ observed_value: 25, fired: true });

    // Dead deliveries: two in the window count; a dead test ping and an old dead one do not.
    const dead = async (test: boolean, agoMs: number) =>
      infra.sql`
        insert into webhook_deliveries (id, workspace_id, event_id, event_type, test, status, body, created_at, updated_at)
        values (${newId()}, ${ws}, ${newId()}, 'call.completed', ${test}, 'dead', '{}', ${new Date(now - agoMs)}, ${new Date(now - agoMs)})`;
    await dead(false, 60_000);
    await dead(false, 120_000);
    await dead(true, 60_000);
    await dead(false, 3_600_000);
    expect(await test({ metric: 'webhook_dead_count', operator: 'greater_than_or_equal', threshold: 2 })).toEqual({ observed_value: 2, threshold: 2, operator: 'greater_than_or_equal', fired: true });
  });
});
