/**
 * Bounded admission for work that holds a scarce resource (libuv's thread pool: DNS lookups,
 * scrypt): at most `maxConcurrent` run at once, FIFO, at most `maxWaiting` wait, and (optionally) a
 * waiter not started within `maxWaitMs` is refused, so a backlog never outlives its requests.
 * A slot is freed only when the work settles.
 */
export interface BoundedWorkOptions {
  maxConcurrent: number;
  maxWaiting: number;
  /** Unset: a waiter waits until its turn. */
  maxWaitMs?: number;
  /** The error for work refused because the queue is full or its wait ran out. */
  refused(why: 'queue_full' | 'wait_timeout'): Error;
}

export type BoundedRunner = <T>(work: () => Promise<T>) => Promise<T>;

export function boundedWork(o: BoundedWorkOptions): BoundedRunner {
  let running = 0;
  const waiting: Array<{ start(): void; timer?: NodeJS.Timeout }> = [];
  const next = (): void => {
    running--;
    const w = waiting.shift();
    if (w) {
      if (w.timer) clearTimeout(w.timer);
      w.start();
    }
  };
  return <T>(work: () => Promise<T>): Promise<T> => {
    if (running < o.maxConcurrent) {
      running++;
      return settle(work).finally(next);
    }
    if (waiting.length >= o.maxWaiting) return Promise.reject(o.refused('queue_full'));
    return new Promise<T>((resolve, reject) => {
      const entry: { start(): void; timer?: NodeJS.Timeout } = {
        start: () => {
          running++;
          settle(work).then(resolve, reject).finally(next);
        },
      };
      if (o.maxWaitMs !== undefined) {
        entry.timer = setTimeout(() => {
          const i = waiting.indexOf(entry);
          if (i >= 0) waiting.splice(i, 1);
          reject(o.refused('wait_timeout'));
        }, o.maxWaitMs);
        entry.timer.unref?.();
      }
      waiting.push(entry);
    });
  };
}

/** A synchronous throw of `work` becomes a rejection, so its slot is still freed. */
function settle<T>(work: () => Promise<T>): Promise<T> {
  try {
    return work();
  } catch (err) {
    return Promise.reject(err);
  }
}
