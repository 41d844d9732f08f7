/**
 * System health reporting (issue 17). Two parts, both correct with many replicas:
 *
 * - **Own report**: every control-plane process writes its own row on its heartbeat (a per-process
 *   timer: the report is about this process, so no other replica can make it).
 * - **Collector job** (`system-health.collect` on the durable queue, singleton key `collector`:
 *   at most one queued and one running in the whole deployment): copies each live engine node's
 *   health from its registry heartbeat into `system_health` (engines never touch Postgres) and
 *   prunes rows older than the retention. Every replica's heartbeat enqueues it, so it keeps
 *   running while any control plane lives and whichever died, due at the next interval boundary
 *   so it runs about once per interval whatever the number of replicas; rows are keyed by the node's own
 *   heartbeat time, so a re-run (crash, two runs close together) stores nothing twice.
 */
import { randomUUID } from 'node:crypto';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Sql } from '../../shared/db/client.js';
import type { Logger } from '../../shared/logger.js';
import { type HealthCounters, ProcessSampler } from '../../shared/process-health.js';
import type { Registry } from '../../shared/registry/index.js';
import type { Jobs } from '../jobs/index.js';
import { insertReports, pruneBefore } from './health-store.js';

/** Rows deleted per collector run: far above what one interval adds, so the backlog only shrinks. */
export const PRUNE_BATCH = 10_000;

export interface HealthReporterDeps {
  sql: Sql;
  registry: Pick<Registry, 'nodes'>;
  clock: Clock;
  logger: Logger;
  jobs: Jobs;
  /** This process's live counters (connections, requests, errors, mean response time). */
  counters: () => HealthCounters;
  /** Report and collector period (HEALTH_REPORT_INTERVAL_MS). */
  intervalMs: number;
  /** History kept (HEALTH_RETENTION_HOURS). */
  retentionMs: number;
  /** Default `cp-<random>`. */
  nodeId?: string;
}

export interface HealthReporter {
  readonly nodeId: string;
  /** Writes this process's report and enqueues the collector (what each heartbeat does). */
  beat(): Promise<void>;
  /** One collector run (the job's body). */
  collect(): Promise<{ collected: number; pruned: number }>;
  close(): Promise<void>;
}

export async function startHealthReporter(deps: HealthReporterDeps): Promise<HealthReporter> {
  const { sql, registry, clock, logger, jobs } = deps;
  const nodeId = deps.nodeId ?? `cp-${randomUUID().slice(0, 8)}`;
  const sampler = new ProcessSampler(() => clock.now());
  let timer: TimerHandle | undefined;
  let closed = false;
  // The beat in progress: close() lets it finish before the pool ends.
  let inFlight: Promise<void> = Promise.resolve();

  async function collect() {
    const nodes = await registry.nodes.listNodes();
    const reports = nodes.flatMap((n) => (n.health ? [{ service: 'media-engine' as const, nodeId: n.nodeId, report: n.health, recordedAt: new Date(n.updatedAtMs) }] : []));
    await insertReports(sql, reports);
    const pruned = await pruneBefore(sql, new Date(clock.now() - deps.retentionMs), PRUNE_BATCH);
    return { collected: reports.length, pruned };
  }

  function writeOwn(status: 'healthy' | 'stopped') {
    return insertReports(sql, [{ service: 'control-plane', nodeId, report: sampler.sample(deps.counters(), status), recordedAt: new Date(clock.now()) }]);
  }

  async function beat() {
    await writeOwn('healthy');
    // Due at the next interval boundary: the beats of every replica within one interval find that
    // job still queued and add none (stately), so the collector runs about once per interval
    // however many control planes there are.
    const nextSlotMs = (Math.floor(clock.now() / deps.intervalMs) + 1) * deps.intervalMs;
    await jobs.enqueue('system-health.collect', {}, { singletonKey: 'collector', startAfter: new Date(nextSlotMs) });
  }

  await jobs.work('system-health.collect', async () => void (await collect()), { concurrency: 1 });
  const tick = () => {
    if (closed) return;
    inFlight = beat().catch((err: Error) => logger.warn({ err }, 'health report not written'));
  };
  tick();
  timer = clock.setInterval(tick, deps.intervalMs);

  return {
    nodeId,
    beat,
    collect,
    async close() {
      if (closed) return;
      closed = true;
      clock.clearInterval(timer);
      timer = undefined;
      await inFlight;
      // A clean stop says so, instead of turning `stale` like a crash would.
      await writeOwn('stopped').catch((err: Error) => logger.warn({ err }, 'final health report not written'));
    },
  };
}
