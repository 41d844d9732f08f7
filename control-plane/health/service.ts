import type { ServiceImpl } from '@connectrpc/connect';
import { HealthService } from '../../shared/gen/voiceplane/v1/health_pb.js';
import { poolStats, type Sql } from '../../shared/db/client.js';
import type { Registry } from '../../shared/registry/index.js';
import { AppError } from '../../shared/errors.js';

export const VERSION = '0.1.0';

/**
 * Each dependency check must answer within this: a `select 1` slower than a second means the
 * pool is wedged or saturated, and a load balancer should stop sending traffic (issue 11).
 */
export const READY_CHECK_TIMEOUT_MS = 1000;

export interface HealthDeps {
  sql: Sql;
  registry: Registry;
  /** True from SIGTERM on: `/ready` answers 503 so load balancers stop sending while requests drain. */
  draining?: () => boolean;
}

export function createHealthService(deps: HealthDeps): ServiceImpl<typeof HealthService> {
  return {
    live() {
      return { status: 'ok', service: 'control-plane', version: VERSION, checks: {} };
    },
    /**
     * `checks`: `database` and `registry` are `ok` or `down` (503 names the ones down, with
     * Retry-After); `database_pool` shows the pool gate (`in_flight/max`, queued, refused).
     */
    async ready() {
      if (deps.draining?.()) {
        throw new AppError('SERVICE_UNAVAILABLE', 'not ready: shutting down (draining)', { retryAfterS: 1, details: [{ field: 'server', problem: 'draining' }] });
      }
      const [database, registry] = await Promise.all([
        probe(() => deps.sql`select 1`),
        probe(() => deps.registry.nodes.listNodes()),
      ]);
      const checks: Record<string, string> = { database, registry };
      const pool = poolStats(deps.sql);
      if (pool) checks.database_pool = `in_flight=${pool.inFlight}/${pool.max} queued=${pool.queued} refused=${pool.rejected}`;
      const down = (['database', 'registry'] as const).filter((k) => checks[k] !== 'ok');
      if (down.length) {
        throw new AppError('SERVICE_UNAVAILABLE', `not ready: ${down.join(', ')} down`, {
          retryAfterS: 1,
          details: down.map((field) => ({ field, problem: 'down' })),
        });
      }
      return { status: 'ok', service: 'control-plane', version: VERSION, checks };
    },
  };
}

async function probe(check: () => PromiseLike<unknown>): Promise<'ok' | 'down'> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timed out')), READY_CHECK_TIMEOUT_MS);
      }),
    ]);
    return 'ok';
  } catch {
    return 'down';
  } finally {
    clearTimeout(timer);
  }
}
