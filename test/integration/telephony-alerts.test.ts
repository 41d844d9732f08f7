/**
 * Issue 17, alerts fed by real calls: carrier calls through the carrier simulator and the engine
 * (sim providers) write their per-turn latencies; a rule on the LLM's p95 latency > 500 ms stays
 * quiet while the LLM answers fast, fires once a slow LLM (900 ms to the first token) makes a call
 * slow, and notifies a signed webhook. `/alerts/test` and the evaluator agree on the value. The
 * rest of the cycle (cooldown, resolve, mail) on seeded rows and an injected clock:
 * alerts.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { completedConversation, inboundCallOnce } from '../helpers/carrier-calls.js';
import { devTlsTrusted } from '../helpers/tls.js';
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/** One number per attempt: the realtime project retries once, and a retry starts clean. */
const NUMBERS = ['+14155550141', '+14155550142'];
const CALLER = '+14155550149';
const SLOW_TTFT_MS = 900;

let h: TelephonyHarness;
let receiver: WebhookReceiver;
let secret = '';
let ttftMs = 20;
let attempt = 0;

beforeAll(async () => {
  expect(devTlsTrusted(), 'vitest globalSetup must trust the development certificate').toBe(true);
  h = await startTelephonyHarness({
    // Ticks an hour apart: the test drives the evaluator itself.
    env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8', ALERTS_EVAL_INTERVAL_S: '3600' },
    app: { jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 } },
    llm: () => ({ ttftMs }),
  });
  receiver = await startWebhookReceiver();
  const put = await h.call('PUT', '/call-center/settings', { workspace_id: h.user.workspaceId, webhook_url: receiver.url });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  secret = put.body.data.webhook_secret;
}, 60_000);

afterAll(async () => {
  await h?.close();
  await receiver?.close();
});

async function call(number: string, words: string): Promise<void> {
  const { sessionId } = await inboundCallOnce(h, { to: number, from: CALLER, welcome: 'hello caller', words });
  await completedConversation(h, sessionId);
}

describe('p95 LLM latency rule on real calls', () => {
  it('quiet while the LLM is fast, fires and notifies once a slow LLM makes calls slow', { timeout: 120_000 }, async () => {
    // A retry gets its own agent, number and rule, and drops the first attempt's rule, so neither
    // that attempt's slow turns nor its alert count here.
    const number = NUMBERS[attempt++ % NUMBERS.length]!;
    ttftMs = 20;
    const agentId = await h.createAgent({ number, direction: 'inbound', welcome: 'hello caller' });
    const rule = { name: 'Slow LLM', metric: 'p95_latency_ms', component: 'llm', scope: { type: 'agent', agent_id: agentId }, operator: 'greater_than', threshold: 500, window_minutes: 10, cooldown_minutes: 10, channels: { webhook: [receiver.url] } };
    const created = await h.call('POST', '/alerts/rules', rule);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const ruleId = created.body.data.id as string;
    onTestFinished(async () => void (await h.call('DELETE', `/alerts/rules/${ruleId}`)));
    const firedHere = () => receiver.requests.filter((r) => r.headers['webhook-event-type'] === 'alert.fired' && r.json?.data?.rule_id === ruleId);
    const outcome = async () => (await h.app.alerts.evaluator.tick()).find((o) => o.ruleId === ruleId);

    await call(number, 'hello there');
    const fast = (await h.call('POST', '/alerts/test', rule)).body.data;
    expect(fast.fired).toBe(false);
    expect(fast.observed_value).toBeGreaterThan(0);
    expect(fast.observed_value).toBeLessThan(500);
    expect((await outcome())?.action).not.toBe('opened');

    ttftMs = SLOW_TTFT_MS;
    await call(number, 'are you slow now');
    const slow = (await h.call('POST', '/alerts/test', rule)).body.data;
    expect(slow.fired).toBe(true);
    expect(slow.observed_value).toBeGreaterThanOrEqual(SLOW_TTFT_MS * 0.9);
    const opened = await outcome();
    expect(opened).toMatchObject({ action: 'opened', value: slow.observed_value });

    await expect.poll(() => firedHere().length, { timeout: 15_000, interval: 100 }).toBe(1);
    const fired = firedHere()[0]!;
    expect(verifySignature(secret, fired)).toBe(true);
    expect(fired.json).toMatchObject({ type: 'alert.fired', data: { rule_id: ruleId, metric: 'p95_latency_ms', component: 'llm', observed_value: slow.observed_value, threshold: 500, status: 'active' } });
    const active = (await h.call('GET', '/alerts/events?status=active')).body.data as Array<{ rule_id: string }>;
    expect(active.filter((e) => e.rule_id === ruleId)).toHaveLength(1);
    expect((await h.call('GET', '/alerts/active-count')).body.data.count).toBe(active.length);
  });
});
