/**
 * A counting gate in front of the postgres.js pool: at most `max` queries (or transactions, or
 * reserved connections) at once, at most `maxQueued` waiting, and none waiting longer than
 * `acquireTimeoutMs`. postgres.js itself queues without bound and without a deadline (it even
 * pipelines extra queries behind busy connections), so a wedged or slow database would otherwise
 * turn every request into a hang. Here a full pool answers 503 within the acquire timeout.
 *
 * Timers are real timers, not the injected Clock: they bound real network waits (infrastructure,
 * like socket timeouts), and a simulated clock in a test must not freeze database access.
 */
import { AppError } from '../errors.js';

export interface GateStats {
  /** Permits (pool connections) the gate hands out. */
  max: number;
  /** Queries, transactions and reservations holding a permit now. */
  inFlight: number;
  /** Waiting for a permit now. */
  queued: number;
  /** Since start: waits that ended in 503 (timeout or full queue). */
  rejected: number;
}

interface Waiter {
  grant: (release: () => void) => void;
  timer: NodeJS.Timeout;
}

export class ConnectionGate {
  private inFlight = 0;
  private rejected = 0;
  private readonly waiters = new Set<Waiter>();

  constructor(
    private readonly max: number,
    private readonly acquireTimeoutMs: number,
    /** Overflow policy: beyond this many waiters a query is refused at once (503). */
    private readonly maxQueued: number,
  ) {}

  /** Resolves with a release function (idempotent), or rejects with 503 SERVICE_UNAVAILABLE. */
  acquire(): Promise<() => void> {
    if (this.inFlight < this.max && this.waiters.size === 0) return Promise.resolve(this.take());
    if (this.waiters.size >= this.maxQueued) {
      this.rejected++;
      return Promise.reject(busy(`${this.maxQueued} queries already waiting for a database connection`));
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        grant: resolve,
        timer: setTimeout(() => {
          this.waiters.delete(waiter);
          this.rejected++;
          reject(busy(`no database connection free within ${this.acquireTimeoutMs} ms`));
        }, this.acquireTimeoutMs),
      };
      this.waiters.add(waiter);
    });
  }

  /** Runs `fn` holding a permit. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.acquire();
    try {
      return await fn();
    } finally {
      release();
    }
  }

  stats(): GateStats {
    return { max: this.max, inFlight: this.inFlight, queued: this.waiters.size, rejected: this.rejected };
  }

  private take(): () => void {
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight--;
      this.next();
    };
  }

  /** Hands a freed permit to the oldest waiter (Set iteration is insertion order). */
  private next(): void {
    if (this.inFlight >= this.max) return;
    const first = this.waiters.values().next();
    if (first.done) return;
    const w = first.value;
    this.waiters.delete(w);
    clearTimeout(w.timer);
    w.grant(this.take());
  }
}

function busy(message: string): AppError {
  return new AppError('SERVICE_UNAVAILABLE', `database busy: ${message}`, { retryAfterS: 1 });
}
