/**
 * Publishes credit states into the registry, where engine nodes read them at connect (they never
 * query Postgres). Each publication re-reads the current balance and prices, so publishing late,
 * twice or out of order converges: the last job to run after the last change writes the truth.
 * Durability: every change enqueues a `billing.publish` job in its own transaction; the API also
 * publishes at once after its commit so a top-up is usable immediately.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';
import type { Registry } from '../../shared/registry/index.js';
import type { Jobs } from '../jobs/index.js';
import * as store from './store.js';

/** Workspaces read per page when every state is republished. */
const PAGE = 500;
const ZERO_UUID = '00000000-0000-0000-0000-000000000000';

export interface Publisher {
  one(workspaceId: string): Promise<void>;
  /** Every workspace with a ledger (after a price change; at start, in case Redis lost the keys). */
  all(): Promise<number>;
}

export function createPublisher(deps: { sql: Sql; registry: Registry; clock: Clock }): Publisher {
  const { sql, registry, clock } = deps;
  return {
    async one(workspaceId) {
      const [balanceMicros, p] = await Promise.all([store.balance(sql, workspaceId), store.prices(sql)]);
      await registry.billing.putBillingState(workspaceId, { balanceMicros, perSecondMicros: p.audio_second, updatedAtMs: clock.now() });
    },
    async all() {
      const p = await store.prices(sql);
      let after = ZERO_UUID;
      let n = 0;
      for (;;) {
        const rows = await store.balancesAfter(sql, after, PAGE);
        for (const r of rows) await registry.billing.putBillingState(r.workspace_id, { balanceMicros: r.balance_micros, perSecondMicros: p.audio_second, updatedAtMs: clock.now() });
        n += rows.length;
        if (rows.length < PAGE) return n;
        after = rows[rows.length - 1].workspace_id;
      }
    },
  };
}

/** Runs the `billing.publish` queue on this replica. */
export async function workPublishJobs(jobs: Jobs, publisher: Publisher, logger: Logger): Promise<void> {
  await jobs.work(
    'billing.publish',
    async (job) => {
      if (job.data.workspace_id) await publisher.one(job.data.workspace_id);
      else logger.info({ workspaces: await publisher.all() }, 'billing: every credit state republished');
    },
    { concurrency: 2 },
  );
}

/** Queues a publication with `tx` (it exists iff the change commits). */
export function enqueuePublish(jobs: Jobs, workspaceId: string | undefined, tx?: Parameters<Jobs['enqueue']>[2]['tx']): Promise<string | null> {
  return jobs.enqueue('billing.publish', workspaceId ? { workspace_id: workspaceId } : {}, { singletonKey: workspaceId ?? 'all', tx });
}
