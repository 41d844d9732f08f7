/**
 * The longest a single statement may wait for its answer once it reached postgres.js.
 *
 * The socket watchdog (client.ts `watchedSocket`) notices a silent peer only when a write is
 * newer than the last read. With pipelining (gate.ts, DB_PIPELINE_DEPTH) a statement written
 * behind another one whose answer arrived is invisible to it: a network partition right after
 * that answer would leave the statement, and the request waiting on it, hanging forever. Every
 * statement is bounded by the server's `statement_timeout`, so one still unanswered after
 * `pipelineDepth` of them plus a grace is lost: it is rejected (503 at the edge) and its permit
 * freed. The next statement postgres.js writes to that socket arms the watchdog, which then
 * replaces the connection.
 *
 * One timer for all statements: they share one timeout, so deadlines come in arrival order;
 * answered entries are dropped lazily when they reach the head (no per-statement timer).
 */
import { Fifo } from './fifo.js';

export class AnswerDeadlines {
  private readonly queue = new Fifo<Entry>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly timeoutMs: number,
    private readonly onExpired: (reject: (err: unknown) => void) => void,
  ) {}

  /** Starts the clock for one statement; returns the function that stops it (call on answer). */
  watch(reject: (err: unknown) => void): () => void {
    const entry: Entry = { deadlineMs: performance.now() + this.timeoutMs, reject, answered: false };
    // Answered entries leave from the head as new ones arrive: the queue holds about what is
    // really in flight, not every statement of the last timeout window.
    this.dropAnswered();
    this.queue.push(entry);
    if (!this.timer) this.arm();
    return () => {
      entry.answered = true;
    };
  }

  /** Statements watched and not answered yet (tests). */
  pending(): number {
    let n = 0;
    for (const e of this.queue) if (!e.answered) n++;
    return n;
  }

  private arm(): void {
    this.dropAnswered();
    const head = this.queue.peek();
    if (!head) {
      this.timer = undefined;
      return;
    }
    const wait = Math.max(0, head.deadlineMs - performance.now());
    this.timer = setTimeout(() => this.fire(), Math.ceil(wait));
    // Never keeps a process alive on its own: the statement's own promise is what waits.
    this.timer.unref();
  }

  private fire(): void {
    const now = performance.now();
    this.dropAnswered();
    for (let e = this.queue.peek(); e && e.deadlineMs <= now; e = this.queue.peek()) {
      this.queue.shift();
      if (!e.answered) {
        e.answered = true;
        this.onExpired(e.reject);
      }
      this.dropAnswered();
    }
    this.arm();
  }

  private dropAnswered(): void {
    while (this.queue.peek()?.answered) this.queue.shift();
  }

}

interface Entry {
  deadlineMs: number;
  reject: (err: unknown) => void;
  answered: boolean;
}
