/**
 * Issue 20, "Done means": a run whose worker dies ends `failed`, never left running.
 *
 * Control plane A runs in a child process and claims the run; its one case calls a tool endpoint
 * that never answers, so A is mid-case when it is SIGKILLed. Control plane B (same database, this
 * process) works the run's watchdog job, which A had queued: once A's heartbeat is older than
 * `staleSeconds`, the run is finished `failed` and its unfinished case `errored`. A replica that
 * stops cleanly (SIGTERM: its job queue closes) fails its own run at once instead.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { api, createTestUser } from '../helpers/accounts.js';
import { buildChild } from '../helpers/child-build.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { startReplica } from '../helpers/control-plane-replica.js';
import { simAgent, startToolServer, waitForRun } from '../helpers/simtests.js';
import { SHUTDOWN_REASON } from '../../control-plane/simtests/runner.js';

const JOBS = { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 };
const SIMTESTS = { runner: { heartbeatMs: 300, staleSeconds: 2 } };

let infra: TestInfra;
let childDir: string;
let child: ChildProcess | undefined;
let b: ControlPlane | undefined;
let tools: Awaited<ReturnType<typeof startToolServer>>;

beforeAll(async () => {
  // The organization key: the child replica's dev mailbox (the test user's code) is read with it.
  infra = await startTestInfra({ outboundAllowCidrs: ['127.0.0.0/8'], orgApiKey: `org_${randomBytes(18).toString('hex')}` });
  // Every request is held and never answered (A dies waiting).
  tools = await startToolServer(() => ({}), () => true);
  childDir = buildChild(['test/helpers/control-plane-child.ts']);
});

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await b?.close();
  await tools?.close();
  await infra?.close();
  if (childDir) fs.rmSync(childDir, { recursive: true, force: true });
});

describe('a test run whose worker is killed', () => {
  it('is finished failed by the watchdog on another replica', { timeout: 60_000 }, async () => {
    const a = await startReplica(childDir, infra, { CHILD_JOBS: JSON.stringify(JOBS), CHILD_SIMTESTS: JSON.stringify(SIMTESTS) });
    child = a.proc;
    const user = await createTestUser(a);
    const agentId = await simAgent(a, user);
    const tool = { name: 'get_weather', description: 'Weather', function_schema: { type: 'object', properties: { city: { type: 'string' } } }, endpoint_url: `${tools.url}/weather`, http_method: 'GET', timeout_ms: 60_000 };
    expect((await api(a, 'POST', `/api/v1/agents/${agentId}/tools`, { token: user.token, body: tool })).status).toBe(201);
    const tc = await api(a, 'POST', `/api/v1/agents/${agentId}/test-cases`, { token: user.token, body: { name: 'Hangs', goal: 'Ask "the weather in Rome"', assertions: ['The agent says "Rome"'] } });
    expect(tc.status).toBe(201);
    const run = await api(a, 'POST', `/api/v1/agents/${agentId}/test-runs`, { token: user.token, body: { agent_version: 0 } });
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    const runId = run.body.data.id as string;

    // A claimed the run and is inside the case (its tool call is held).
    await tools.until(1);
    expect((await infra.sql`select status from test_runs where id = ${runId}`)[0]!.status).toBe('running');
    const exited = new Promise((resolve) => a.proc.once('exit', resolve));
    a.proc.kill('SIGKILL');
    await exited;

    b = await startControlPlane({ ...infra }, { port: 0, host: '127.0.0.1', jobs: JOBS, simTests: SIMTESTS });
    const ended = await waitForRun(b, runId, user.token, (r) => r.status !== 'running', 30_000);
    expect(ended).toMatchObject({ status: 'failed', total: 1, passed: 0, failed: 0, errored: 1 });
    expect(ended.error_message).toContain('heartbeats');
    const results = (await api(b, 'GET', `/api/v1/agents/test-runs/${runId}/results`, { token: user.token })).body.data;
    expect(results[0]).toMatchObject({ status: 'errored' });
    expect(results[0].error_message).toContain('heartbeats');
  });
});

describe('a test run whose replica shuts down cleanly', () => {
  it('is failed by that replica as it stops, not left running for a watchdog', { timeout: 60_000 }, async () => {
    // The other test's replica must not take this run: only C works the queue.
    await b?.close();
    b = undefined;
    // Heartbeats stay fresh and the watchdog is far away: only the stop itself can end the run.
    const c = await startControlPlane({ ...infra }, { port: 0, host: '127.0.0.1', jobs: JOBS, simTests: { runner: { heartbeatMs: 300, staleSeconds: 600 } } });
    const user = await createTestUser(c);
    const agentId = await simAgent(c, user);
    const tool = { name: 'get_weather', description: 'Weather', function_schema: { type: 'object', properties: { city: { type: 'string' } } }, endpoint_url: `${tools.url}/weather`, http_method: 'GET', timeout_ms: 60_000 };
    expect((await api(c, 'POST', `/api/v1/agents/${agentId}/tools`, { token: user.token, body: tool })).status).toBe(201);
    expect((await api(c, 'POST', `/api/v1/agents/${agentId}/test-cases`, { token: user.token, body: { name: 'Hangs', goal: 'Ask "the weather in Rome"', assertions: ['The agent says "Rome"'] } })).status).toBe(201);
    const held = tools.seen.length;
    const run = await api(c, 'POST', `/api/v1/agents/${agentId}/test-runs`, { token: user.token, body: { agent_version: 0 } });
    expect(run.status, JSON.stringify(run.body)).toBe(201);
    const runId = run.body.data.id as string;
    await tools.until(held + 1);
    await c.close();
    const [ended] = await infra.sql<{ status: string; error_message: string }[]>`select status, error_message from test_runs where id = ${runId}`;
    expect(ended).toEqual({ status: 'failed', error_message: SHUTDOWN_REASON });
    const [result] = await infra.sql<{ status: string }[]>`select status from test_results where test_run_id = ${runId}`;
    expect(result!.status).toBe('errored');
  });
});
