/**
 * The alert evaluator: `alerts.evaluate` jobs on the durable queue, one key for the deployment.
 *
 * - One tick at a time across replicas: the queue's `stately` policy keeps at most one active
 *   and one queued job per key. Each tick first queues its successor (`ALERTS_EVAL_INTERVAL_S`
 *   later on the database clock, so a test clock far from real time never makes it spin), then
 *   evaluates; a tick that crashes is retried, and the chain goes on either way. Every replica
 *   queues a tick at start (a duplicate is refused by the key), which restarts a broken chain.
 * - Each rule is decided under its row lock (`for update`): whoever evaluates (the job, a second
 *   replica's late retry, a test calling `tick()`), a rule opens at most one event at a time
 *   (the partial unique index on active events is the backstop) and cooldown is read under the
 *   same lock.
 * - Time is the injected clock: the window ends at `clock.now()`, cooldown and resolution times
 *   come from it. The rule is re-read under the lock; if it changed since its value was
 *   computed the decision waits for the next tick.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';
import { newId } from '../../shared/ids.js';
import type { Jobs, JobContext } from '../jobs/index.js';
import { recurringPass } from '../jobs/recurring.js';
import { computeMetric, recordLiveNodes, type MetricDeps } from './metrics.js';
import type { Notifier } from './notify.js';
import { compare, type Component, type Metric, type Operator } from './rules.js';
import * as store from './store.js';

export interface EvaluatorDeps {
  sql: Sql;
  jobs: Jobs;
  clock: Clock;
  logger: Logger;
  registry: MetricDeps['registry'];
  notifier: Notifier;
  /** Seconds between ticks. */
  intervalS: number;
}

export interface RuleOutcome {
  ruleId: string;
  value: number | null;
  /** What the tick did to the rule's events. */
  action: 'opened' | 'resolved' | 'cooldown' | 'unchanged' | 'skipped';
}

export interface Evaluator {
  /** Queues a tick now (refused by the key if one is queued). */
  kick(): Promise<void>;
  /** Evaluates every enabled rule once at `clock.now()`. */
  tick(): Promise<RuleOutcome[]>;
  run(job: JobContext<'alerts.evaluate'>): Promise<void>;
}

const KEY = 'alerts';
/** Time one tick may spend on rules; QUEUE_SETTINGS gives `alerts.evaluate` an expiry above it. */
export const TICK_BUDGET_MS = 20_000;

export function createEvaluator(deps: EvaluatorDeps): Evaluator {
  const { sql, jobs, clock, logger, notifier } = deps;

  async function tick(): Promise<RuleOutcome[]> {
    const nowMs = clock.now();
    // A registry outage must not stop the rules that only read Postgres (node_down then fails alone).
    await recordLiveNodes(deps, nowMs).catch((err: Error) => logger.warn({ err }, 'alert evaluator could not record live engine nodes'));
    const out: RuleOutcome[] = [];
    const startedMs = clock.monotonicMs();
    for (const id of await store.enabledRuleIds(sql)) {
      // Bounded, so the job's expiry can be short: a tick killed mid-way holds the singleton key
      // (and so the next tick) only until it expires. The rules left wait for the next tick, first.
      if (clock.monotonicMs() - startedMs > TICK_BUDGET_MS) {
        logger.warn({ evaluated: out.length, budgetMs: TICK_BUDGET_MS }, 'alert tick out of time: the remaining rules go first next tick');
        break;
      }
      try {
        out.push(await evaluateRule(id, nowMs));
      } catch (err) {
        // One rule's failure (a dropped agent, a registry outage) does not stop the others.
        logger.warn({ err, rule: id }, 'alert rule evaluation failed');
      }
    }
    return out;
  }

  async function evaluateRule(id: string, nowMs: number): Promise<RuleOutcome> {
    const rule = await store.getRule(sql, id);
    if (!rule || !rule.enabled) return { ruleId: id, value: null, action: 'skipped' };
    const value = await computeMetric(deps, {
      workspaceId: rule.workspace_id,
      metric: rule.metric as Metric,
      component: rule.component as Component | '',
      scope: { type: rule.scope_type, agentId: rule.agent_id },
      windowMinutes: rule.window_minutes,
      nowMs,
    });
    const fired = value !== null && compare(value, rule.operator as Operator, rule.threshold);
    const now = new Date(nowMs);
    const action = await sql.begin(async (tx): Promise<RuleOutcome['action']> => {
      const [locked] = await tx<store.RuleRow[]>`select * from alert_rules where id = ${id} for update`;
      if (!locked || !locked.enabled || locked.updated_at.getTime() !== rule.updated_at.getTime()) return 'skipped';
      await tx`update alert_rules set last_evaluated_at = ${now}, last_value = ${value} where id = ${id}`;
      const [active] = await tx<store.EventRow[]>`select * from alert_events where rule_id = ${id} and status = 'active'`;
      if (fired && !active) {
        const [last] = await tx<{ triggered_at: Date }[]>`select triggered_at from alert_events where rule_id = ${id} order by triggered_at desc limit 1`;
        if (last && nowMs - last.triggered_at.getTime() < rule.cooldown_minutes * 60_000) return 'cooldown';
        const [event] = await tx<store.EventRow[]>`
          insert into alert_events (id, rule_id, workspace_id, rule_name, metric, component, scope_type, agent_id, operator, threshold, observed_value, status, triggered_at)
          values (${newId()}, ${id}, ${rule.workspace_id}, ${rule.name}, ${rule.metric}, ${rule.component}, ${rule.scope_type}, ${rule.agent_id},
            ${rule.operator}, ${rule.threshold}, ${value}, 'active', ${now})
          returning *`;
        await notifier.queue(tx, event, 'fired', rule.channels, now);
        return 'opened';
      }
      if (!fired && active) {
        const [event] = await tx<store.EventRow[]>`
          update alert_events set status = 'resolved', resolved_at = ${now}, resolution = 'auto'
          where id = ${active.id} returning *`;
        await notifier.queue(tx, event, 'resolved', rule.channels, now);
        return 'resolved';
      }
      return 'unchanged';
    });
    if (action === 'opened' || action === 'resolved') logger.info({ rule: id, workspace: rule.workspace_id, metric: rule.metric, value, action }, 'alert');
    return { ruleId: id, value, action };
  }

  // Ticks a minute apart: a failed one is retried by the queue (its successor is already queued).
  const recurring = recurringPass({ jobs, logger, name: 'alerts.evaluate', data: { tick: KEY }, intervalS: deps.intervalS, pass: tick, onError: 'retry' });
  return { kick: recurring.kick, tick, run: recurring.run };
}
