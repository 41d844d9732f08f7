/**
 * The postgres.js pool, hardened so a sick database gives fast 503s instead of hangs (issue 11,
 * "Dependencies down means 503 fast", defect 4):
 *
 * - `statement_timeout` on every connection: Postgres itself ends a query (or a lock wait) that
 *   runs longer (57014 -> 503). Work that needs longer makes its own pool with a larger value.
 * - a gate in front of the pool (gate.ts): at most `pipelineDepth` statements per connection
 *   (one transaction or reservation per connection), a bounded queue, and a 503 when nothing
 *   frees up within `acquireTimeoutMs`.
 * - a response watchdog on each socket: bytes written and nothing read back for
 *   statement timeout + grace means the peer is gone (a network partition gives no error at
 *   all); the socket is destroyed, its queries fail (-> 503) and the pool reconnects.
 * - reconnect backoff capped at 500 ms, full jitter (postgres.js grows it to 20 s during an outage, so the
 *   first requests after the database came back took 5-7 s).
 * - no query is ever cancelled on the server: cancelling raced postgres.js's parser and wedged
 *   connections (see agents/db.ts `run`).
 */
import net from 'node:net';
import postgres from 'postgres';
import { AnswerDeadlines } from './answer-deadline.js';
import { ConnectionGate, type GateStats } from './gate.js';
import { backoffDelayMs } from '../../shared/backoff.js';
import { AppError, systemError } from '../../shared/errors.js';

export type Sql = postgres.Sql<Record<string, unknown>>;
/** A pool or a transaction: what a helper that may run inside `sql.begin` takes. */
export type SqlOrTx = Sql | postgres.TransactionSql<Record<string, unknown>>;

export interface SqlOptions {
  /** Pool size. Default 10. */
  max?: number;
  /** Schema to put first on the search path (tests isolate themselves with one). */
  schema?: string;
  /** Called for server notices (kept out of stdout). */
  onnotice?: (n: postgres.Notice) => void;
  /** `statement_timeout` of every connection. Default 10 000 ms (DB_STATEMENT_TIMEOUT_MS). */
  statementTimeoutMs?: number;
  /** Longest wait for a free connection before 503. Default 2000 ms (DB_ACQUIRE_TIMEOUT_MS). */
  acquireTimeoutMs?: number;
  /** Longest a new connection may take to open. Default 3000 ms (DB_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
  /** Queries allowed to wait for a connection; beyond it 503 at once. Default 1000. */
  maxQueued?: number;
  /**
   * Single statements admitted per connection (postgres.js pipelines them behind busy
   * connections); a transaction or reserved connection takes a whole connection. Default 2
   * (DB_PIPELINE_DEPTH); 1 is one statement per connection.
   */
  pipelineDepth?: number;
}

/** Silence allowed after the statement timeout before a connection counts as dead. */
const RESPONSE_GRACE_MS = 1000;
/** Reconnect delay cap during an outage. */
const MAX_BACKOFF_MS = 500;

const gates = new WeakMap<object, ConnectionGate>();

/** One postgres.js pool. int8 comes back as a JS number (counts fit comfortably). */
export function createSql(url: string, opts: SqlOptions = {}): Sql {
  const max = opts.max ?? 10;
  const statementTimeoutMs = opts.statementTimeoutMs ?? 10_000;
  const responseTimeoutMs = statementTimeoutMs + RESPONSE_GRACE_MS;
  const raw = postgres(url, {
    max,
    idle_timeout: 30,
    connect_timeout: (opts.connectTimeoutMs ?? 3000) / 1000,
    // Ceiling 50 ms doubling per retry, full jitter; postgres.js wants seconds.
    backoff: (retries: number) => backoffDelayMs(retries + 1, { baseMs: 50, maxMs: MAX_BACKOFF_MS }) / 1000,
    onnotice: opts.onnotice ?? (() => {}),
    connection: {
      statement_timeout: String(statementTimeoutMs),
      // A transaction left idle this long is abandoned (its holder hung): end it, free its locks.
      idle_in_transaction_session_timeout: String(statementTimeoutMs * 3),
      // Short OLTP queries only: JIT compiling a plan whose cost estimate crosses jit_above_cost
      // took 0.4 s for a 0.08 s list query over 100,000 conversations (benchmarks.md).
      jit: 'off',
      ...(opts.schema ? { search_path: `${opts.schema},public` } : {}),
    },
    types: {
      bigint: {
        to: 20,
        from: [20],
        serialize: (x: number) => x.toString(),
        parse: (x: string) => Number(x),
      },
    },
    socket: (o: SocketTarget) => watchedSocket(o, responseTimeoutMs),
    // `socket` is supported by postgres.js but missing from its types.
  } as never) as unknown as Sql;
  const pipelineDepth = opts.pipelineDepth ?? 2;
  const gate = new ConnectionGate(max, opts.acquireTimeoutMs ?? 2000, opts.maxQueued ?? 1000, pipelineDepth);
  const answerMs = pipelineDepth * statementTimeoutMs + RESPONSE_GRACE_MS;
  const deadlines = new AnswerDeadlines(answerMs, (reject) => reject(systemError('ETIMEDOUT', `no answer from Postgres within ${answerMs} ms`)));
  const sql = gated(raw, gate, deadlines);
  gates.set(sql, gate);
  return sql;
}

/** The pool's gate counters (for `/ready`); undefined for a pool not made by `createSql`. */
export function poolStats(sql: Sql): GateStats | undefined {
  return gates.get(sql)?.stats();
}

interface SocketTarget {
  host: string[];
  port: number[];
  path?: string | false;
}

/**
 * The pool's sockets. postgres.js writes its startup message at once; Node buffers it until the
 * connection is up, and connect errors and `connect_timeout` work as with its own sockets.
 * Node's idle timer counts writes and reads; when it fires with a write newer than the last
 * read, a request went unanswered for `responseTimeoutMs`: the peer is gone.
 */
function watchedSocket(o: SocketTarget, responseTimeoutMs: number): net.Socket {
  const s = o.path ? net.connect(o.path) : net.connect(o.port[0] ?? 5432, o.host[0] ?? 'localhost');
  s.setNoDelay(true);
  let lastWriteMs = 0;
  let lastReadMs = 0;
  const write = s.write;
  s.write = function (this: net.Socket, ...args: unknown[]) {
    lastWriteMs = performance.now();
    return (write as (...a: unknown[]) => boolean).apply(this, args);
  } as typeof s.write;
  s.on('data', () => (lastReadMs = performance.now()));
  s.setTimeout(responseTimeoutMs);
  s.on('timeout', () => {
    if (lastWriteMs > lastReadMs) {
      s.destroy(systemError('ETIMEDOUT', `no answer from Postgres within ${responseTimeoutMs} ms`));
    }
  });
  return s;
}

type AnyQuery = PromiseLike<unknown> & { handler: ((q: unknown) => void) & { debug?: unknown }; reject(e: unknown): void };

function isQuery(x: unknown): x is AnyQuery {
  return typeof x === 'object' && x !== null && typeof (x as AnyQuery).handler === 'function' && typeof (x as AnyQuery).then === 'function';
}

/**
 * The pool behind the gate. A postgres.js query is lazy: it reaches the pool through its
 * `handler` when first awaited; the gate wraps that handler, so a query used as a fragment inside
 * another one (never awaited itself) takes no permit. Transactions and reserved connections hold
 * a whole connection for their whole life; the queries inside them take none. A single
 * statement's answer is bounded (answer-deadline.ts): pipelined statements escape the socket
 * watchdog.
 */
function gated(raw: Sql, gate: ConnectionGate, deadlines: AnswerDeadlines): Sql {
  const gateQuery = <T>(q: T): T => {
    if (!isQuery(q)) return q;
    const toPool = q.handler;
    const viaGate = ((query: AnyQuery) => {
      gate.acquire().then(
        (release) => {
          const answered = deadlines.watch((err) => query.reject(err));
          const done = () => {
            answered();
            release();
          };
          // Promise's own `then`, not the Query's (which would try to execute it again).
          Promise.prototype.then.call(query, done, done);
          toPool(query);
        },
        (err: unknown) => query.reject(err),
      );
    }) as AnyQuery['handler'];
    viaGate.debug = toPool.debug;
    q.handler = viaGate;
    return q;
  };
  return new Proxy(raw, {
    apply(target, thisArg, args) {
      return gateQuery(Reflect.apply(target as never, thisArg, args));
    },
    get(target, prop, receiver) {
      if (prop === 'unsafe') return (...a: Parameters<Sql['unsafe']>) => gateQuery(target.unsafe(...a));
      if (prop === 'begin') return (...a: unknown[]) => gate.run(() => (target.begin as (...x: unknown[]) => Promise<unknown>)(...a));
      if (prop === 'reserve') {
        return async () => {
          const release = await gate.acquireConnection();
          try {
            const conn = await target.reserve();
            const done = conn.release;
            conn.release = () => {
              release();
              done();
            };
            return conn;
          } catch (err) {
            release();
            throw err;
          }
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  });
}

/**
 * One round trip at start-up: a database that cannot be reached stops the process with one line
 * naming the variable (`DATABASE_URL`), not a driver stack trace, and never lets an engine take
 * calls whose records it cannot write.
 */
export async function assertReachable(sql: Sql, variable = 'DATABASE_URL'): Promise<void> {
  try {
    await sql`select 1`;
  } catch (err) {
    const e = err as Error & { cause?: Error };
    const why = e.cause?.message && e.cause.message !== e.message ? `${e.message}: ${e.cause.message}` : e.message;
    throw new AppError('SERVICE_UNAVAILABLE', `${variable}: cannot reach PostgreSQL (${why})`, { cause: err });
  }
}
