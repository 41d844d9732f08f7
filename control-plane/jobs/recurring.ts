/**
 * A recurring pass on the job queue (the node sweep, the alert evaluation, the presence sweep):
 * one singleton key for the whole deployment, so one pass at a time across replicas. Each pass
 * first queues its successor `intervalS` later, then does its work; `Jobs.keepChain(kick)` restarts
 * a chain whose successor could not be queued.
 */
import type { Logger } from '../../shared/logger.js';
import type { JobContext, Jobs } from './index.js';
import type { JobName, JobPayloads } from './names.js';

export interface RecurringPass<N extends JobName> {
  /** Queues a pass now (refused by the key while one is queued). */
  kick(): Promise<void>;
  /** The job handler. */
  run(job: JobContext<N>): Promise<void>;
}

export interface RecurringPassOptions<N extends JobName> {
  jobs: Pick<Jobs, 'enqueue'>;
  logger: Logger;
  name: N;
  data: JobPayloads[N] & { tick: string };
  intervalS: number;
  pass: () => Promise<unknown>;
  /**
   * `retry`: a failed pass fails its job (the queue retries it; for passes far apart). `next-pass`:
   * it is logged and the next pass, `intervalS` away, is the retry; the job never fails, so a
   * failure that cannot be written while the database is away does not hold the chain until the
   * job expires.
   */
  onError: 'retry' | 'next-pass';
}

export function recurringPass<N extends JobName>(o: RecurringPassOptions<N>): RecurringPass<N> {
  const key = o.data.tick;
  const queue = (delaySeconds?: number) => o.jobs.enqueue(o.name, o.data, delaySeconds ? { singletonKey: key, delaySeconds } : { singletonKey: key });
  return {
    async kick() {
      await queue();
    },
    async run(job) {
      try {
        await queue(o.intervalS);
        if (job.signal.aborted) return;
        await o.pass();
      } catch (err) {
        if (o.onError === 'retry') throw err;
        o.logger.warn({ err, job: o.name }, 'recurring pass failed; the next pass retries');
      }
    },
  };
}
