/**
 * Simulation tests throughput (issue 20): one run of `--cases` text-mode cases with zero-latency
 * `sim` providers (the agent, the scripted caller and the judge all on the sim LLM), through the
 * real control plane: REST to create the run, the durable job queue (pg-boss, default polling),
 * the claim, the shared turn runner, the judge, one result row per case. Goal: 50 cases < 10 s.
 *
 *   npm run build:bench && node dist-bench/bench/simtests.js [--cases 50] [--concurrency 4,8] [--no-append]
 *
 * Each case: 2 caller turns (a weather question answered through the `get_weather` tool, mocked
 * with canned JSON, then "bye"), 2 assertions (one the scripted agent cannot satisfy in every
 * third case, so passed and failed both occur). One run per `--concurrency` value (cases played
 * at once by the run's worker; the default is 4), each in a fresh control plane and schema.
 * Not part of `npm run bench` (run-all.ts): it adds nothing the goal does not already say.
 */
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import { startControlPlane } from '../control-plane/app.js';
import { api, createTestUser } from '../test/helpers/accounts.js';
import { startTestInfra } from '../test/helpers/infra.js';
import { appendResults, commandLine, num, renderSection, table, type Section } from './lib/report.js';
import { quantile } from './lib/stats.js';

export const GOAL_MS = 10_000;

interface Row {
  concurrency: number;
  cases: number;
  passed: number;
  failed: number;
  errored: number;
  queueMs: number;
  runMs: number;
  totalMs: number;
  caseP50: number;
  caseP95: number;
  turns: number;
  cpuS: number;
}

async function once(cases: number, concurrency: number): Promise<Row> {
  const infra = await startTestInfra({}, { LOG_LEVEL: 'warn' });
  const cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1', simTests: { runner: { caseConcurrency: concurrency } } });
  try {
    const user = await createTestUser(cp);
    const agent = await api(cp, 'POST', '/api/v1/agents', { token: user.token, body: { workspace_id: user.workspaceId, name: 'bench', system_prompt: 'You are the Acme assistant.', welcome_message: 'Hello, Acme here.' } });
    const id = agent.body.data.id as string;
    await api(cp, 'POST', `/api/v1/agents/${id}/providers`, { token: user.token, body: { provider_type: 'llm', provider_name: 'sim' } });
    const tool = { name: 'get_weather', description: 'Weather', function_schema: { type: 'object', properties: { city: { type: 'string' } } }, endpoint_url: 'https://weather.example.com/now', http_method: 'GET' };
    await api(cp, 'POST', `/api/v1/agents/${id}/tools`, { token: user.token, body: tool });
    for (let i = 0; i < cases; i++) {
      const r = await api(cp, 'POST', `/api/v1/agents/${id}/test-cases`, {
        token: user.token,
        body: {
          name: `case ${i}`,
          goal: `Ask "what is the weather in City${i}" then say "bye"`,
          assertions: ['The agent says "weather report"', i % 3 === 0 ? 'The agent says "refund approved"' : 'The agent says "Goodbye"'],
          mocks: { get_weather: { forecast: `sunny in City${i}` } },
        },
      });
      if (r.status !== 201) throw new Error(`case ${i}: ${JSON.stringify(r.body)}`);
    }
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const created = await api(cp, 'POST', `/api/v1/agents/${id}/test-runs`, { token: user.token, body: { agent_version: 0 } });
    if (created.status !== 201) throw new Error(JSON.stringify(created.body));
    const runId = created.body.data.id as string;
    let run: Record<string, any> = created.body.data;
    let startedAt = 0;
    // Bench-side watch of the row (20 ms): measurement, not product behaviour.
    while (!['completed', 'failed', 'cancelled'].includes(run.status)) {
      await new Promise((r) => setTimeout(r, 20));
      [run] = await infra.sql`select status, passed, failed, errored from test_runs where id = ${runId}`;
      if (!startedAt && run.status !== 'queued') startedAt = performance.now();
      if (performance.now() - t0 > 120_000) throw new Error('run did not finish in 120 s');
    }
    const totalMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const [times] = await infra.sql<{ queue_ms: number; run_ms: number }[]>`
      select extract(epoch from (started_at - created_at)) * 1000 as queue_ms, extract(epoch from (finished_at - started_at)) * 1000 as run_ms from test_runs where id = ${runId}`;
    const results = await infra.sql<{ duration_ms: number; turns_taken: number }[]>`select duration_ms, turns_taken from test_results where test_run_id = ${runId}`;
    const durations = results.map((r) => r.duration_ms).sort((a, b) => a - b);
    return {
      concurrency,
      cases,
      passed: run.passed,
      failed: run.failed,
      errored: run.errored,
      queueMs: Number(times!.queue_ms),
      runMs: Number(times!.run_ms),
      totalMs,
      caseP50: quantile(durations, 0.5),
      caseP95: quantile(durations, 0.95),
      turns: results.reduce((n, r) => n + r.turns_taken, 0),
      cpuS: (cpu.user + cpu.system) / 1e6,
    };
  } finally {
    await cp.close();
    await infra.close();
  }
}

export async function runSimTestsBench(cases: number, concurrencies: number[]): Promise<{ section: Section; rows: Row[] }> {
  const rows: Row[] = [];
  for (const c of concurrencies) rows.push(await once(cases, c));
  const section: Section = {
    title: 'Simulation tests: one run of text-mode cases, zero-latency sim providers (REST -> job queue -> results)',
    settings: { cases, 'case concurrency': concurrencies.join(', '), 'job polling': '2 s (default)', 'caller turns per case': 2, 'assertions per case': 2 },
    blocks: [
      table(
        ['case concurrency', 'cases', 'passed', 'failed', 'errored', 'caller turns', 'queue wait ms', 'run ms', 'create -> completed ms', 'case p50 ms', 'case p95 ms', 'bench process CPU s', `goal < ${GOAL_MS / 1000} s`],
        rows.map((r) => [r.concurrency, r.cases, r.passed, r.failed, r.errored, r.turns, num(r.queueMs), num(r.runMs), num(r.totalMs), num(r.caseP50), num(r.caseP95), num(r.cpuS, 2), r.totalMs < GOAL_MS ? 'met' : 'NOT met']),
      ),
    ],
    notes: [
      'queue wait: run created -> claimed by a worker (pg-boss polling, up to 2 s); run: claimed -> completed (database times).',
      'create -> completed: client-side, from the POST to the first read of the finished row (20 ms watch).',
      'CPU: this process (control plane, worker and bench client together); Postgres runs apart.',
    ],
  };
  return { section, rows };
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values: args } = benchArgs({
    options: {
      cases: { type: 'string', default: '50' },
      concurrency: { type: 'string', default: '4,8' },
      'no-append': { type: 'boolean', default: false },
    },
  });
  const cases = Number(args.cases);
  const concurrencies = args.concurrency!.split(',').map(Number);
  if (!(cases >= 1 && cases <= 200) || concurrencies.some((c) => !(c >= 1 && c <= 64))) throw new Error('bad options: 1 <= --cases <= 200, 1 <= --concurrency <= 64');
  const r = await runSimTestsBench(cases, concurrencies);
  console.log(renderSection(r.section));
  if (!args['no-append']) appendResults('simulation tests', [r.section], { command: commandLine() });
}
