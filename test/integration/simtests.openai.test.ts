/**
 * Issue 20, "Done means", against the OpenAI-compatible fake (test/fakes/openai.ts): the simulated
 * caller, the agent and the judge each send their own prompt (seen in the fake's request log), the
 * caller and judge force their one function, and the judge's JSON verdicts are parsed strictly: a
 * malformed answer is asked again once, then the case is `errored` (retry_count 1). The tested
 * version's LLM is an `openai_compatible` provider whose `base_url` is the fake (loopback allowed by
 * OUTBOUND_ALLOW_CIDRS), built by the real provider factory.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { CALLER_PROMPT } from '../../control-plane/simtests/caller.js';
import { JUDGE_PROMPT } from '../../control-plane/simtests/judge.js';
import { OpenAiFake } from '../fakes/openai.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { waitForRun } from '../helpers/simtests.js';

const A = '/api/v1/agents';
const AGENT_PROMPT = 'You are the front desk of the Acme bakery.';
const verdict = { verdicts: [{ index: 1, passed: true, reason: 'the agent gives the hours in "Agent: We open at nine."', quote: 'Agent: We open at nine.' }] };

const fake = new OpenAiFake({
  rules: [
    // The caller, once the agent answered: goal reached.
    { match: /Agent: We open at nine\.[\s\S]*Your next turn as the caller/, toolCalls: [{ name: 'simulated_caller_turn', arguments: { say: '', goal_reached: true, end_call: true } }] },
    { match: /Your next turn as the caller/, toolCalls: [{ name: 'simulated_caller_turn', arguments: { say: 'When do you open?', goal_reached: false, end_call: false } }] },
    // The judge: a wrong shape for the MALFORMED case (both times), a valid verdict otherwise.
    { match: /Assertions:[\s\S]*MALFORMED/, toolCalls: [{ name: 'record_assertion_verdicts', arguments: { verdicts: 'all good' } }] },
    { match: /Assertions:/, toolCalls: [{ name: 'record_assertion_verdicts', arguments: verdict }] },
    // The agent.
    { match: 'When do you open', reply: 'We open at nine.' },
  ],
});

let infra: TestInfra;
let cp: ControlPlane;
let alice: TestUser;

beforeAll(async () => {
  await fake.start();
  infra = await startTestInfra({ outboundAllowCidrs: ['127.0.0.0/8'] });
  cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1', jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 } });
  alice = await createTestUser(cp);
});

afterAll(async () => {
  await cp?.close();
  await infra?.close();
  await fake.close();
});

type Body = { messages: Array<{ role: string; content: string | null }>; tool_choice?: unknown; tools?: Array<{ function: { name: string } }> };

describe('simulation tests against an OpenAI-compatible LLM', () => {
  it('caller, agent and judge use their own prompts; a malformed verdict is retried once, then errored', { timeout: 60_000 }, async () => {
    const created = await api(cp, 'POST', A, { token: alice.token, body: { workspace_id: alice.workspaceId, name: 'Bakery', system_prompt: AGENT_PROMPT, welcome_message: 'Acme bakery, hello!' } });
    const id = created.body.data.id as string;
    const llm = { provider_type: 'llm', provider_name: 'openai_compatible', api_key: fake.apiKey, base_url: `${fake.url}/v1`, model_name: 'local-model' };
    expect((await api(cp, 'POST', `${A}/${id}/providers`, { token: alice.token, body: llm })).status).toBeLessThan(300);
    expect((await api(cp, 'POST', `${A}/${id}/versions/publish`, { token: alice.token })).status).toBe(200);
    const good = await api(cp, 'POST', `${A}/${id}/test-cases`, { token: alice.token, body: { name: 'Hours', persona: 'A hungry student', goal: 'Learn when the bakery opens', assertions: ['The agent gives the opening time'] } });
    const malformed = await api(cp, 'POST', `${A}/${id}/test-cases`, { token: alice.token, body: { name: 'Broken judge', goal: 'Learn when the bakery opens', assertions: ['MALFORMED verdicts come back'] } });

    const run = await api(cp, 'POST', `${A}/${id}/test-runs`, { token: alice.token, body: {} });
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    const done = await waitForRun(cp, run.body.data.id, alice.token, (r) => r.status === 'completed');
    expect(done).toMatchObject({ total: 2, passed: 1, failed: 0, errored: 1 });

    const results = (await api(cp, 'GET', `${A}/test-runs/${done.id}/results`, { token: alice.token })).body.data as any[];
    const ok = results.find((r) => r.test_case_id === good.body.data.id);
    expect(ok).toMatchObject({ status: 'passed', turns_taken: 1, retry_count: 0 });
    expect(ok.transcript).toEqual([
      { role: 'agent', content: 'Acme bakery, hello!', turn: 0 },
      { role: 'caller', content: 'When do you open?', turn: 1 },
      { role: 'agent', content: 'We open at nine.', turn: 1 },
    ]);
    expect(ok.assertion_results).toEqual([{ assertion: 'The agent gives the opening time', passed: true, reason: verdict.verdicts[0]!.reason, quote: 'Agent: We open at nine.' }]);
    expect(ok.tokens_used).toBeGreaterThan(0);
    const bad = results.find((r) => r.test_case_id === malformed.body.data.id);
    expect(bad).toMatchObject({ status: 'errored', retry_count: 1, assertion_results: [] });
    expect(bad.error_message).toMatch(/judge answer malformed twice: `verdicts` must be an array/);
    expect(bad.transcript).toHaveLength(3);

    // The fake's log: three kinds of requests, each with its own system prompt.
    const bodies = fake.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as Body);
    const system = (b: Body) => b.messages[0]?.content ?? '';
    const agentReqs = bodies.filter((b) => system(b).startsWith(AGENT_PROMPT));
    const callerReqs = bodies.filter((b) => system(b) === CALLER_PROMPT);
    const judgeReqs = bodies.filter((b) => system(b) === JUDGE_PROMPT);
    expect(agentReqs.length + callerReqs.length + judgeReqs.length).toBe(bodies.length);
    // Two cases, one agent turn each; the caller speaks and then reports its goal reached; the judge is asked 1 + 2 times.
    expect(agentReqs).toHaveLength(2);
    expect(callerReqs).toHaveLength(4);
    expect(judgeReqs).toHaveLength(3);
    // The agent gets its own prompt and the welcome as its first answer, and chooses tools freely.
    expect(agentReqs[0]!.messages.slice(0, 3)).toEqual([
      { role: 'system', content: AGENT_PROMPT },
      { role: 'assistant', content: 'Acme bakery, hello!' },
      { role: 'user', content: 'When do you open?' },
    ]);
    expect(agentReqs[0]!.tool_choice).toBeUndefined();
    // Caller and judge force their one function; the caller sees the persona and the goal, never the agent's prompt.
    for (const b of callerReqs) expect(b.tool_choice).toEqual({ type: 'function', function: { name: 'simulated_caller_turn' } });
    for (const b of judgeReqs) expect(b.tool_choice).toEqual({ type: 'function', function: { name: 'record_assertion_verdicts' } });
    expect(callerReqs.filter((b) => b.messages[1]!.content!.includes('Persona: A hungry student\nGoal: Learn when the bakery opens'))).toHaveLength(2);
    expect(callerReqs.filter((b) => b.messages[1]!.content!.includes('Persona: an ordinary caller'))).toHaveLength(2);
    expect(JSON.stringify(callerReqs)).not.toContain(AGENT_PROMPT);
    expect(judgeReqs.filter((b) => b.messages[1]!.content!.includes('MALFORMED'))).toHaveLength(2);
    expect(judgeReqs.find((b) => b.messages[1]!.content!.includes('MALFORMED') && b.messages[1]!.content!.includes('previous answer was invalid'))).toBeDefined();
  });

  it('a failing provider is retried (by the adapter); still failing after the retries, the case is errored', { timeout: 60_000 }, async () => {
    const created = await api(cp, 'POST', A, { token: alice.token, body: { workspace_id: alice.workspaceId, name: 'Flaky', system_prompt: AGENT_PROMPT } });
    const id = created.body.data.id as string;
    const llm = { provider_type: 'llm', provider_name: 'openai_compatible', api_key: fake.apiKey, base_url: `${fake.url}/v1`, model_name: 'local-model' };
    expect((await api(cp, 'POST', `${A}/${id}/providers`, { token: alice.token, body: llm })).status).toBeLessThan(300);
    await api(cp, 'POST', `${A}/${id}/test-cases`, { token: alice.token, body: { name: 'Hours', goal: 'Learn when the bakery opens', assertions: ['The agent gives the opening time'] } });

    // The caller's first request fails twice (500): the adapter retries it, the case passes.
    const failedBefore = fake.requests.filter((r) => r.status === 500).length;
    fake.faults.once({ status500: true }).once({ status500: true });
    const first = await api(cp, 'POST', `${A}/${id}/test-runs`, { token: alice.token, body: { agent_version: 0 } });
    const ok = await waitForRun(cp, first.body.data.id, alice.token, (r) => r.status === 'completed');
    expect(ok).toMatchObject({ passed: 1, errored: 0 });
    expect(fake.requests.filter((r) => r.status === 500).length - failedBefore).toBe(2);

    // Three failures in a row: errored, naming the caller's provider failure.
    const before = fake.requests.length;
    fake.faults.always({ status500: true });
    try {
      const second = await api(cp, 'POST', `${A}/${id}/test-runs`, { token: alice.token, body: { agent_version: 0 } });
      const bad = await waitForRun(cp, second.body.data.id, alice.token, (r) => r.status === 'completed');
      expect(bad).toMatchObject({ passed: 0, errored: 1 });
      const [errored] = (await api(cp, 'GET', `${A}/test-runs/${bad.id}/results`, { token: alice.token })).body.data;
      expect(errored.status).toBe('errored');
      expect(errored.error_message).toMatch(/^caller LLM failed: /);
      // The first request and the adapter's two retries, then nothing more for this case.
      expect(fake.requests.length - before).toBe(3);
    } finally {
      fake.faults.clear();
    }
  });
});
