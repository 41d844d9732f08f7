/**
 * The publish gate (an addition, issue 20): an agent's `publish_gate` decides what
 * `POST /agents/{id}/versions/publish` does first.
 * - `none` (default): nothing.
 * - `warn` / `block`: the draft's cases tagged `gate` run as one test run (`triggered_by:
 *   publish_gate`, version 0, on the job queue like any run) and the publish request waits for it,
 *   at most `timeoutMs`. With `block`, any case not `passed` (or a run that did not complete in
 *   time) refuses the publish: 409 CONFLICT naming the run and listing each failing case in
 *   `details` (`{field: "test_cases.<id>", problem: "<name>: <status>: <why>"}`). With `warn` the
 *   publish goes ahead and the failures are logged (and visible in the run).
 * No `gate` case: nothing to run, the publish goes ahead.
 */
import { AppError } from '../../shared/errors.js';
import { sleepOn, type Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';
import type { PublishGate } from '../agents/deps.js';
import { DRAFT_VERSION } from './tested-config.js';
import type { RunCreator } from './runs.js';
import * as store from './store.js';

export const GATE_TAG = 'gate';

export interface GateOptions {
  /** Longest a publish waits for its gate run. Default 120 000 ms. */
  timeoutMs?: number;
  /** How often the waiting publish re-reads the run. Default 250 ms. */
  pollMs?: number;
}

export function createPublishGate(deps: { sql: Sql; clock: Clock; logger: Logger; runs: RunCreator; options?: GateOptions }): PublishGate {
  const { sql, clock, logger } = deps;
  const timeoutMs = deps.options?.timeoutMs ?? 120_000;
  const pollMs = deps.options?.pollMs ?? 250;
  return {
    async check(agent, _userId, signal) {
      const gate = await store.publishGateOf(sql, agent.id);
      if (!gate || gate === 'none') return;
      const gated = (await store.listCases(sql, agent.id)).filter((c) => c.tags.includes(GATE_TAG));
      if (gated.length === 0) return;
      let run = await deps.runs.create(agent, { version: DRAFT_VERSION, tag: GATE_TAG, triggeredBy: 'publish_gate' });
      const deadline = clock.monotonicMs() + timeoutMs;
      // The run is worked by the job queue (any replica); this request only watches its row.
      while (!store.FINISHED_RUN.includes(run.status) && clock.monotonicMs() < deadline) {
        await sleepOn(clock, pollMs, signal, () => new Error('publish request closed'));
        run = (await store.getRun(sql, run.id)) ?? run;
      }
      const results = await store.listResults(sql, run.id);
      const failing = results.filter((r) => r.status !== 'passed');
      const ok = run.status === 'completed' && failing.length === 0;
      if (ok) return;
      const why = run.status === 'completed' ? `${failing.length} of ${results.length} gate test case(s) did not pass` : `the gate test run is ${run.status === 'running' || run.status === 'queued' ? `still ${run.status} after ${timeoutMs} ms` : run.status}`;
      if (gate === 'warn') {
        logger.warn({ agentId: agent.id, runId: run.id }, `publish gate (warn): ${why}; publishing anyway`);
        return;
      }
      throw new AppError('CONFLICT', `publish blocked by the publish gate: ${why} (test run ${run.id})`, {
        details: failing.map((r) => ({ field: `test_cases.${r.test_case_id}`, problem: `${r.test_case_name}: ${r.status}: ${reasonOf(r)}` })),
      });
    },
  };
}

function reasonOf(r: store.ResultRow): string {
  if (r.error_message) return r.error_message;
  const bad = r.assertion_results.find((a) => !a.passed);
  return bad ? `"${bad.assertion}": ${bad.reason}` : r.status;
}
