/**
 * A counting gate in front of the postgres.js pool: bounded work in flight, at most `maxQueued`
 * waiting, and none waiting longer than `acquireTimeoutMs`. postgres.js itself queues without
 * bound and without a deadline, so a wedged or slow database would otherwise turn every request
 * into a hang. Here a full pool answers 503 within the acquire timeout.
 *
 * Units: the gate holds `connections x pipelineDepth` units. A single statement takes one unit,
 * so up to `pipelineDepth` statements per connection reach postgres.js, which pipelines them
 * behind busy connections (one socket write per batch, no idle round trip: issue 13, the
 * conversations routes lost ~20 % to a gate of one statement per connection). A transaction or
 * a reserved connection holds a whole connection, so it takes `pipelineDepth` units. Depth 1 is
 * the strict one-statement-per-connection gate.
 *
 * Waiters are served first come, first served (a transaction at the head is not overtaken by
 * statements that would fit), and one timer, armed for the oldest waiter's deadline, expires
 * them: the queue is in arrival order, so deadlines are too (a timer per waiter cost ~35 us per
 * query under load).
 *
 * Timers are real timers, not the injected Clock: they bound real network waits (infrastructure,
 * like socket timeouts), and a simulated clock in a test must not freeze database access.
 */
import { AppError } from '../errors.js';
import { Fifo } from './fifo.js';

export interface GateStats {
  /** Connections the gate admits work for. */
  max: number;
  /** Statements allowed per connection (postgres.js pipelines them). */
  pipelineDepth: number;
  /** Units held now: statements count 1, transactions and reservations `pipelineDepth`. */
  inFlight: number;
  /** Waiting for a permit now. */
  queued: number;
  /** Since start: waits that ended in 503 (timeout or full queue). */
  rejected: number;
}

interface Waiter {
  units: number;
  deadlineMs: number;
  grant: (release: () => void) => void;
  refuse: (err: AppError) => void;
}

export class ConnectionGate {
  private inFlight = 0;
  private rejected = 0;
  private readonly capacity: number;
  private readonly queue = new Fifo<Waiter>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly max: number,
    private readonly acquireTimeoutMs: number,
    /** Overflow policy: beyond this many waiters a query is refused at once (503). */
    private readonly maxQueued: number,
    private readonly pipelineDepth = 1,
  ) {
    this.capacity = max * pipelineDepth;
  }

  /** A permit for one statement. Resolves with a release function (idempotent), or rejects with 503. */
  acquire(): Promise<() => void> {
    return this.acquireUnits(1);
  }

  /** A permit for a whole connection (transaction, reservation). */
  acquireConnection(): Promise<() => void> {
    return this.acquireUnits(this.pipelineDepth);
  }

  /** Runs `fn` holding a whole connection. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    const release = await this.acquireConnection();
    try {
      return await fn();
    } finally {
      release();
    }
  }

  stats(): GateStats {
    return { max: this.max, pipelineDepth: this.pipelineDepth, inFlight: this.inFlight, queued: this.queued(), rejected: this.rejected };
  }

  private queued(): number {
    return this.queue.size;
  }

  private acquireUnits(units: number): Promise<() => void> {
    if (this.queued() === 0 && this.inFlight + units <= this.capacity) return Promise.resolve(this.take(units));
    if (this.queued() >= this.maxQueued) {
      this.rejected++;
      return Promise.reject(busy(`${this.maxQueued} queries already waiting for a database connection`));
    }
    return new Promise((grant, refuse) => {
      this.queue.push({ units, deadlineMs: performance.now() + this.acquireTimeoutMs, grant, refuse });
      if (!this.timer) this.arm();
    });
  }

  private take(units: number): () => void {
    this.inFlight += units;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight -= units;
      this.next();
    };
  }

  /** Hands freed units to the oldest waiters, in order, while the head fits. */
  private next(): void {
    for (let w = this.queue.peek(); w && this.inFlight + w.units <= this.capacity; w = this.queue.peek()) {
      this.queue.shift();
      w.grant(this.take(w.units));
    }
    if (this.queued() === 0) this.disarm();
  }

  /** One timer for the oldest waiter's deadline; later waiters have later deadlines. */
  private arm(): void {
    this.disarm();
    const head = this.queue.peek();
    if (!head) return;
    const wait = Math.max(0, head.deadlineMs - performance.now());
    this.timer = setTimeout(() => this.expire(), Math.ceil(wait));
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private expire(): void {
    this.timer = undefined;
    const now = performance.now();
    for (let w = this.queue.peek(); w && w.deadlineMs <= now; w = this.queue.peek()) {
      this.queue.shift();
      this.rejected++;
      w.refuse(busy(`no database connection free within ${this.acquireTimeoutMs} ms`));
    }
    // The head may have been a large waiter blocking smaller ones that now fit.
    this.next();
    if (this.queued() > 0) this.arm();
  }
}

function busy(message: string): AppError {
  return new AppError('SERVICE_UNAVAILABLE', `database busy: ${message}`, { retryAfterS: 1 });
}
