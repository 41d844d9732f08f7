/**
 * Issue 20, "Done means", with the `sim` providers (offline, deterministic): test cases with
 * validation naming the field; a run of a passing and a failing case (an assertion the scripted
 * agent cannot satisfy) whose SSE stream shows progress and closes; a real tool endpoint versus a
 * mocked tool; testing the draft; cancel; a publish blocked by a failing `gate` case and allowed
 * once the draft is fixed. Real Postgres, the real job queue, real sockets.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { readRunStream, simAgent, startToolServer, waitForRun } from '../helpers/simtests.js';

let infra: TestInfra;
let cp: ControlPlane;
let alice: TestUser;
let bob: TestUser;
let tools: Awaited<ReturnType<typeof startToolServer>>;
let agentId: string;

const A = '/api/v1/agents';
const weatherTool = (url: string) => ({
  name: 'get_weather',
  description: 'Current weather of a city',
  function_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  endpoint_url: `${url}/weather`,
  http_method: 'GET',
});

beforeAll(async () => {
  infra = await startTestInfra({ outboundAllowCidrs: ['127.0.0.0/8'] });
  cp = await startControlPlane(infra, {
    port: 0,
    host: '127.0.0.1',
    jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 },
    simTests: { streamPollMs: 300, streamMaxPerUser: 2, runner: { heartbeatMs: 300, staleSeconds: 5 }, gate: { pollMs: 100 } },
  });
  alice = await createTestUser(cp);
  bob = await createTestUser(cp);
  // Berlin is held until the test releases it; every other city answers at once.
  tools = await startToolServer(
    (url) => ({ forecast: `rain in ${url.searchParams.get('city')}` }),
    (url) => /berlin|oslo/i.test(url.searchParams.get('city') ?? ''),
  );
  agentId = await simAgent(cp, alice);
  const t = await api(cp, 'POST', `${A}/${agentId}/tools`, { token: alice.token, body: weatherTool(tools.url) });
  expect(t.status, JSON.stringify(t.body)).toBe(201);
  expect((await api(cp, 'POST', `${A}/${agentId}/versions/publish`, { token: alice.token })).status).toBe(200);
});

afterAll(async () => {
  for (const h of tools?.held ?? []) h.release({ forecast: 'late' });
  await cp?.close();
  await tools?.close();
  await infra?.close();
});

async function addCase(body: Record<string, unknown>, id = agentId): Promise<string> {
  const r = await api(cp, 'POST', `${A}/${id}/test-cases`, { token: alice.token, body });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  return r.body.data.id as string;
}

describe('test cases', () => {
  it('create, list, update, delete; every bad field is a 400 naming it', async () => {
    const bad = async (body: Record<string, unknown>, field: string) => {
      const r = await api(cp, 'POST', `${A}/${agentId}/test-cases`, { token: alice.token, body: { name: 'x', goal: 'y', assertions: ['z'], ...body } });
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error.code).toBe('INVALID_REQUEST');
      expect(r.body.error.message).toContain(field);
    };
    await bad({ name: '' }, 'name');
    await bad({ goal: '  ' }, 'goal');
    await bad({ assertions: 'not a list' }, 'assertions');
    await bad({ assertions: [] }, 'assertions');
    await bad({ assertions: ['fine', 7] }, 'assertions[1]');
    await bad({ max_turns: 0 }, 'max_turns');
    await bad({ max_turns: 51 }, 'max_turns');
    await bad({ tags: ['ok', ''] }, 'tags[1]');
    await bad({ mocks: { get_weather: null } }, 'mocks.get_weather');
    await bad({ mocks: ['x'] }, 'mocks');

    const id = await addCase({ name: 'Temp', persona: 'A busy parent', goal: 'Say "hi"', assertions: ['The agent says "hi"'], max_turns: 3, tags: ['smoke', 'smoke'] });
    const list = await api(cp, 'GET', `${A}/${agentId}/test-cases`, { token: alice.token });
    expect(list.body.data.find((c: any) => c.id === id)).toMatchObject({ agent_id: agentId, name: 'Temp', persona: 'A busy parent', max_turns: 3, tags: ['smoke'], assertions: ['The agent says "hi"'] });
    const up = await api(cp, 'PUT', `${A}/${agentId}/test-cases/${id}`, { token: alice.token, body: { max_turns: 50, tags: ['gateless'] } });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.data).toMatchObject({ name: 'Temp', max_turns: 50, tags: ['gateless'] });
    expect((await api(cp, 'PUT', `${A}/${agentId}/test-cases/${id}`, { token: alice.token, body: { assertions: [] } })).status).toBe(400);
    // Another workspace's member sees nothing of it.
    expect((await api(cp, 'GET', `${A}/${agentId}/test-cases`, { token: bob.token })).status).toBe(404);
    expect((await api(cp, 'DELETE', `${A}/${agentId}/test-cases/${id}`, { token: bob.token })).status).toBe(404);
    // The same implementation over Connect (JSON) on the same port.
    const connect = await fetch(`http://127.0.0.1:${cp.port}/voiceplane.v1.SimTestService/ListTestCases`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${alice.token}` },
      body: JSON.stringify({ agentId }),
    });
    expect(connect.status).toBe(200);
    expect(((await connect.json()) as any).testCases.find((c: any) => c.id === id)).toMatchObject({ maxTurns: 50, tags: ['gateless'] });
    const del = await api(cp, 'DELETE', `${A}/${agentId}/test-cases/${id}`, { token: alice.token });
    expect(del.body.data).toEqual({ status: 'deleted' });
    expect((await api(cp, 'DELETE', `${A}/${agentId}/test-cases/${id}`, { token: alice.token })).status).toBe(404);
  });
});

describe('a run of a passing and a failing case', () => {
  it('stores transcripts and verdicts; the stream shows progress and closes on completed', { timeout: 60_000 }, async () => {
    const passing = await addCase({
      name: 'Weather in Paris (mocked tool)',
      persona: 'A traveller',
      goal: 'Ask "what is the weather in Paris"',
      assertions: ['The agent says "weather report"', 'The agent says "sunny"'],
      mocks: { get_weather: { forecast: 'sunny' } },
    });
    const failing = await addCase({ name: 'Refund', persona: 'An angry customer', goal: 'Say "I want a refund"', assertions: ['The agent says "refund approved"'] });
    const realTool = await addCase({ name: 'Weather in Berlin (real tool)', goal: 'Ask "the weather in Berlin"', assertions: ['The agent says "rain in Berlin"'] });

    const created = await api(cp, 'POST', `${A}/${agentId}/test-runs`, { token: alice.token, body: { case_ids: [passing, failing, realTool] } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const run = created.body.data;
    expect(run).toMatchObject({ agent_id: agentId, agent_version: 1, status: 'queued', total: 3, passed: 0, failed: 0, errored: 0, triggered_by: 'api' });
    // Fields the spec lists are present before they have a value (null, not left out).
    expect(run).toMatchObject({ started_at: null, last_heartbeat: null, finished_at: null, error_message: null });

    // Berlin's tool call is held: once the stream shows the run running with two cases done, release it.
    const seen: string[] = [];
    const stream = await readRunStream(cp, run.id, alice.token, (e) => {
      seen.push(`${e.run.status}:${e.run.passed}/${e.run.failed}`);
      if (e.run.status === 'running' && e.run.passed + e.run.failed === 2) for (const h of tools.held.splice(0)) h.release({ forecast: 'rain in Berlin' });
    });
    expect(stream.status).toBe(200);
    const last = stream.events.at(-1)!;
    expect(last.run).toMatchObject({ status: 'completed', total: 3, passed: 2, failed: 1, errored: 0 });
    // Progress: the run was seen running with partial counts before it completed, and the stream closed after `completed`.
    expect(seen).toContain('running:1/1');
    expect(stream.events.filter((e) => e.run.status === 'completed')).toHaveLength(1);
    expect(last.results).toHaveLength(3);
    // The routes' JSON: unset fields are null on the stream too (a running run has no finished_at).
    const running = stream.events.find((e) => e.run.status === 'running')!;
    expect(running.run).toMatchObject({ finished_at: null, error_message: null });
    expect(last.run.error_message).toBeNull();
    expect(last.results.every((r: any) => 'error_message' in r)).toBe(true);

    const results = (await api(cp, 'GET', `${A}/test-runs/${run.id}/results`, { token: alice.token })).body.data as any[];
    expect(results.every((r) => 'error_message' in r)).toBe(true);
    const byCase = new Map(results.map((r) => [r.test_case_id, r]));
    const p = byCase.get(passing);
    expect(p).toMatchObject({ test_run_id: run.id, test_case_name: 'Weather in Paris (mocked tool)', status: 'passed', turns_taken: 1, retry_count: 0 });
    expect(p.transcript.map((t: any) => t.role)).toEqual(['agent', 'caller', 'tool', 'agent']);
    expect(p.transcript[0]).toEqual({ role: 'agent', content: 'Hello, Acme here.', turn: 0 });
    expect(p.transcript[2].content).toContain('get_weather');
    expect(p.transcript[3].content).toBe('The weather report says: {"forecast":"sunny"}.');
    expect(p.assertion_results).toHaveLength(2);
    expect(p.assertion_results[1]).toMatchObject({ assertion: 'The agent says "sunny"', passed: true, quote: 'Agent: The weather report says: {"forecast":"sunny"}.' });
    expect(p.assertion_results[1].reason).toContain('"Agent: The weather report says');
    expect(p.tokens_used).toBeGreaterThan(0);
    expect(p.duration_ms).toBeGreaterThanOrEqual(0);

    const f = byCase.get(failing);
    expect(f.status).toBe('failed');
    expect(f.transcript.find((t: any) => t.role === 'agent' && t.turn === 1).content).toBe('You said: I want a refund.');
    expect(f.assertion_results[0]).toMatchObject({ passed: false });
    expect(f.assertion_results[0].reason).toContain('"refund approved"');

    // The un-mocked tool hit the real endpoint with the model's argument.
    const r = byCase.get(realTool);
    expect(r.status).toBe('passed');
    expect(tools.seen.some((u) => u.searchParams.get('city') === 'Berlin')).toBe(true);
    expect(tools.seen.some((u) => u.searchParams.get('city') === 'Paris')).toBe(false);

    const got = await api(cp, 'GET', `${A}/test-runs/${run.id}`, { token: alice.token });
    expect(got.body.data).toMatchObject({ status: 'completed', passed: 2, failed: 1 });
    expect(got.body.data.started_at).toMatch(/Z$/);
    expect(got.body.data.last_heartbeat).toMatch(/Z$/);
    const list = await api(cp, 'GET', `${A}/${agentId}/test-runs?limit=1`, { token: alice.token });
    expect(list.body.meta).toMatchObject({ page: 1, per_page: 1, total: 1, total_pages: 1 });
    expect(list.body.data[0].id).toBe(run.id);
    // Fenced: another workspace's member gets 404 on the run, its results and its stream.
    expect((await api(cp, 'GET', `${A}/test-runs/${run.id}`, { token: bob.token })).status).toBe(404);
    expect((await api(cp, 'GET', `${A}/test-runs/${run.id}/results`, { token: bob.token })).status).toBe(404);
    expect((await readRunStream(cp, run.id, bob.token)).status).toBe(404);
    // A finished run cannot be cancelled.
    expect((await api(cp, 'POST', `${A}/test-runs/${run.id}/cancel`, { token: alice.token })).status).toBe(409);
  });

  it('runs the draft with agent_version 0, and refuses unknown versions and cases', async () => {
    const id = await addCase({ name: 'Greeting', goal: 'Say "hello"', assertions: ['The agent says "Welcome to the draft"'] });
    expect((await api(cp, 'PUT', `${A}/${agentId}`, { token: alice.token, body: { welcome_message: 'Welcome to the draft.' } })).status).toBe(200);
    const live = await api(cp, 'POST', `${A}/${agentId}/test-runs`, { token: alice.token, body: { case_ids: [id] } });
    const draft = await api(cp, 'POST', `${A}/${agentId}/test-runs`, { token: alice.token, body: { case_ids: [id], agent_version: 0 } });
    expect(draft.body.data.agent_version).toBe(0);
    const liveRun = await waitForRun(cp, live.body.data.id, alice.token, (r) => r.status === 'completed');
    const draftRun = await waitForRun(cp, draft.body.data.id, alice.token, (r) => r.status === 'completed');
    expect(liveRun).toMatchObject({ agent_version: 1, failed: 1 });
    expect(draftRun).toMatchObject({ agent_version: 0, passed: 1 });
    expect((await api(cp, 'PUT', `${A}/${agentId}`, { token: alice.token, body: { welcome_message: 'Hello, Acme here.' } })).status).toBe(200);

    const v9 = await api(cp, 'POST', `${A}/${agentId}/test-runs`, { token: alice.token, body: { agent_version: 9 } });
    expect(v9.status).toBe(404);
    const neg = await api(cp, 'POST', `${A}/${agentId}/test-runs`, { token: alice.token, body: { agent_version: -1 } });
    expect(neg.status).toBe(400);
    expect(neg.body.error.message).toContain('agent_version');
    const other = await api(cp, 'POST', `${A}/${agentId}/test-runs`, { token: alice.token, body: { case_ids: [crypto.randomUUID()] } });
    expect(other.status).toBe(400);
    expect(other.body.error.message).toContain('case_ids[0]');
    // An agent never published has no live version to default to.
    const fresh = await simAgent(cp, alice);
    await addCase({ name: 'c', goal: 'Say "x"', assertions: ['a'] }, fresh);
    expect((await api(cp, 'POST', `${A}/${fresh}/test-runs`, { token: alice.token, body: {} })).status).toBe(409);
    await api(cp, 'DELETE', `${A}/${agentId}/test-cases/${id}`, { token: alice.token });
  });
});

describe('audio mode', () => {
  it('every line also passes through the version\'s TTS and ASR; `heard` is what the other side recognised', { timeout: 60_000 }, async () => {
    const id = await simAgent(cp, alice);
    for (const provider_type of ['asr', 'tts']) {
      const p = await api(cp, 'POST', `${A}/${id}/providers`, { token: alice.token, body: { provider_type, provider_name: 'sim' } });
      expect(p.status, JSON.stringify(p.body)).toBeLessThan(300);
    }
    const tc = await addCase({ name: 'Spoken', goal: 'Say "I would like a table for two"', assertions: ['The agent says "table for two"'] }, id);
    const bad = await api(cp, 'POST', `${A}/${id}/test-runs`, { token: alice.token, body: { agent_version: 0, mode: 'video' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('mode');
    const created = await api(cp, 'POST', `${A}/${id}/test-runs`, { token: alice.token, body: { agent_version: 0, mode: 'audio' } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.data.mode).toBe('audio');
    const run = await waitForRun(cp, created.body.data.id, alice.token, (r) => r.status === 'completed');
    expect(run).toMatchObject({ passed: 1, mode: 'audio' });
    const [result] = (await api(cp, 'GET', `${A}/test-runs/${run.id}/results`, { token: alice.token })).body.data;
    const caller = result.transcript.find((t: any) => t.role === 'caller');
    const agent = result.transcript.find((t: any) => t.role === 'agent' && t.turn === 1);
    expect(caller.content).toBe('I would like a table for two');
    expect(caller.heard.toLowerCase()).toContain('table for two');
    expect(agent.content.toLowerCase()).toContain('table for two');
    expect(agent.heard.toLowerCase()).toContain('table for two');
    // An empty case list is refused; a version without ASR/TTS cannot run in audio mode.
    expect((await api(cp, 'POST', `${A}/${agentId}/test-runs`, { token: alice.token, body: { mode: 'text', case_ids: [] } })).status).toBe(400);
    const noSpeech = await api(cp, 'POST', `${A}/${agentId}/test-runs`, { token: alice.token, body: { mode: 'audio' } });
    expect(noSpeech.status).toBe(400);
    expect(noSpeech.body.error.code).toBe('MISSING_PROVIDER');
    expect(noSpeech.body.error.details.map((d: any) => d.field)).toEqual(['providers.asr', 'providers.tts']);
    await api(cp, 'DELETE', `${A}/${id}/test-cases/${tc}`, { token: alice.token });
  });

  it("a draft without an LLM is refused naming the draft, not a published version", async () => {
    const bare = await simAgent(cp, alice, { name: 'no llm' });
    expect((await api(cp, 'DELETE', `${A}/${bare}/providers/llm`, { token: alice.token })).status).toBe(200);
    const tc = await api(cp, 'POST', `${A}/${bare}/test-cases`, { token: alice.token, body: { name: 'Hi', goal: 'Say hello', assertions: ['The agent greets'] } });
    expect(tc.status, JSON.stringify(tc.body)).toBe(201);
    const res = await api(cp, 'POST', `${A}/${bare}/test-runs`, { token: alice.token, body: { agent_version: 0 } });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'MISSING_PROVIDER', message: "agent's draft has no llm provider", details: [{ field: 'providers.llm', problem: 'missing' }] });
  });
});

describe('cancel', () => {
  it('stops a running run: its case is cancelled, its held tool call aborted, the stream closes', { timeout: 60_000 }, async () => {
    const id = await addCase({ name: 'Oslo', goal: 'Ask "the weather in Oslo"', assertions: ['The agent says "Oslo"'] });
    const created = await api(cp, 'POST', `${A}/${agentId}/test-runs`, { token: alice.token, body: { case_ids: [id] } });
    const runId = created.body.data.id as string;
    const before = tools.seen.length;
    await tools.until(before + 1);
    const held = tools.held.find((h) => h.url.searchParams.get('city') === 'Oslo')!;
    const stream = readRunStream(cp, runId, alice.token);
    const cancel = await api(cp, 'POST', `${A}/test-runs/${runId}/cancel`, { token: alice.token });
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(200);
    expect(cancel.body.data.status).toBe('cancelled');
    const { events } = await stream;
    expect(events.at(-1)!.run.status).toBe('cancelled');
    // The worker notices at its next heartbeat and aborts the tool request.
    await held.closed;
    const results = (await api(cp, 'GET', `${A}/test-runs/${runId}/results`, { token: alice.token })).body.data;
    expect(results[0]).toMatchObject({ status: 'cancelled', error_message: 'cancelled' });
    expect((await api(cp, 'POST', `${A}/test-runs/${runId}/cancel`, { token: alice.token })).status).toBe(409);
    const after = await api(cp, 'GET', `${A}/test-runs/${runId}`, { token: alice.token });
    expect(after.body.data.status).toBe('cancelled');
    await api(cp, 'DELETE', `${A}/${agentId}/test-cases/${id}`, { token: alice.token });
  });
});

describe('stream bounds', () => {
  it('a user holds at most streamMaxPerUser test-run streams: 429 with Retry-After beyond, the slot back on close', { timeout: 60_000 }, async () => {
    const id = await addCase({ name: 'Oslo streams', goal: 'Ask "the weather in Oslo"', assertions: ['The agent says "Oslo"'] });
    const created = await api(cp, 'POST', `${A}/${agentId}/test-runs`, { token: alice.token, body: { case_ids: [id] } });
    const runId = created.body.data.id as string;
    const before = tools.seen.length;
    await tools.until(before + 1);
    const open = () =>
      new Promise<{ status: number; retryAfter?: string; req: http.ClientRequest }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port: cp.port, path: `${A}/test-runs/${runId}/stream`, headers: { authorization: `Bearer ${alice.token}` } }, (res) =>
          resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined, req }),
        );
        req.on('error', reject);
      });
    // Clients that leave while being admitted (mid authentication) do not keep their slots.
    const left: Array<Promise<void>> = [];
    for (const delayMs of [0, 1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20]) {
      const req = http.get({ host: '127.0.0.1', port: cp.port, path: `${A}/test-runs/${runId}/stream`, headers: { authorization: `Bearer ${alice.token}` } });
      req.on('error', () => {});
      req.on('socket', (sock) => sock.once('connect', () => setTimeout(() => req.destroy(), delayMs)));
      left.push(new Promise((resolve) => req.once('close', () => resolve())));
    }
    await Promise.all(left);
    // Every one of them has been seen and let go by the server (none still counted) for a while.
    const settled = Date.now() + 10_000;
    let quietSince = Date.now();
    while (Date.now() < settled && (cp.simTests.openStreams > 0 || Date.now() - quietSince < 500)) {
      if (cp.simTests.openStreams > 0) quietSince = Date.now();
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(cp.simTests.openStreams).toBe(0);
    const three = await Promise.all([open(), open(), open()]);
    expect(three.map((r) => r.status).sort()).toEqual([200, 200, 429]);
    expect(three.find((r) => r.status === 429)!.retryAfter).toBe('5');
    for (const r of three) r.req.destroy();
    // Closed streams give their slots back.
    const deadline = Date.now() + 10_000;
    let again = await open();
    while (again.status !== 200 && Date.now() < deadline) {
      again.req.destroy();
      await new Promise((r) => setTimeout(r, 100));
      again = await open();
    }
    expect(again.status).toBe(200);
    again.req.destroy();
    // Done with the run (on a slow host its held tool call may have timed out and the run ended).
    expect([200, 409]).toContain((await api(cp, 'POST', `${A}/test-runs/${runId}/cancel`, { token: alice.token })).status);
    await api(cp, 'DELETE', `${A}/${agentId}/test-cases/${id}`, { token: alice.token });
  });
});

describe('publish gate', () => {
  it('block: a failing gate case refuses the publish (409 naming it); the fixed draft publishes', { timeout: 60_000 }, async () => {
    const id = await simAgent(cp, alice, { welcome_message: 'Hi.' });
    const gateCase = await addCase({ name: 'Says the company name', goal: 'Say "hello"', assertions: ['The agent says "Welcome to Acme"'], tags: ['gate'] }, id);
    // Not tagged `gate`: never run by the gate even though it would fail.
    await addCase({ name: 'Not gated', goal: 'Say "x"', assertions: ['The agent says "never"'] }, id);
    const bad = await api(cp, 'PUT', `${A}/${id}/publish-gate`, { token: alice.token, body: { publish_gate: 'sometimes' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('publish_gate');
    const put = await api(cp, 'PUT', `${A}/${id}/publish-gate`, { token: alice.token, body: { publish_gate: 'block' } });
    expect(put.body.data).toEqual({ agent_id: id, publish_gate: 'block' });
    expect((await api(cp, 'GET', `${A}/${id}/publish-gate`, { token: alice.token })).body.data.publish_gate).toBe('block');

    const refused = await api(cp, 'POST', `${A}/${id}/versions/publish`, { token: alice.token });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.code).toBe('CONFLICT');
    expect(refused.body.error.details).toEqual([{ field: `test_cases.${gateCase}`, problem: expect.stringContaining('Says the company name: failed') }]);
    expect((await api(cp, 'GET', `${A}/${id}/versions`, { token: alice.token })).body.data).toEqual([]);
    const runs = (await api(cp, 'GET', `${A}/${id}/test-runs`, { token: alice.token })).body.data;
    expect(runs[0]).toMatchObject({ triggered_by: 'publish_gate', agent_version: 0, total: 1, failed: 1 });

    expect((await api(cp, 'PUT', `${A}/${id}`, { token: alice.token, body: { welcome_message: 'Welcome to Acme, how can I help?' } })).status).toBe(200);
    const ok = await api(cp, 'POST', `${A}/${id}/versions/publish`, { token: alice.token });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.data.version_number).toBe(1);

    // warn: a failing gate case is logged, the publish goes ahead.
    await api(cp, 'PUT', `${A}/${id}/publish-gate`, { token: alice.token, body: { publish_gate: 'warn' } });
    expect((await api(cp, 'PUT', `${A}/${id}`, { token: alice.token, body: { welcome_message: 'Hi again.' } })).status).toBe(200);
    const warned = await api(cp, 'POST', `${A}/${id}/versions/publish`, { token: alice.token });
    expect(warned.status).toBe(200);
    expect(warned.body.data.version_number).toBe(2);
  });
});
