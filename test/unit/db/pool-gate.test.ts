/**
 * The pool gate (issue 11, "client hang-ups wedge the pool" / "Dependencies down means 503 fast"):
 * postgres.js queues without bound or deadline; our pool answers 503 SERVICE_UNAVAILABLE when no
 * connection frees up within the acquire timeout, refuses beyond its queue bound, hands permits
 * out in order, and keeps fragments, transactions and reserved connections working. Real Postgres.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createSql, poolStats } from '../../../shared/db/client.js';
import { ConnectionGate } from '../../../shared/db/gate.js';
import { AppError } from '../../../shared/errors.js';
import { TEST_DATABASE_URL } from '../../helpers/infra.js';

const sql = createSql(TEST_DATABASE_URL, { max: 2, acquireTimeoutMs: 300, statementTimeoutMs: 5000, maxQueued: 3, pipelineDepth: 1 });
afterAll(async () => {
  await sql.end({ timeout: 5 });
});

describe('pool gate', () => {
  it('a saturated pool answers 503 within the acquire timeout, then serves again', async () => {
    const busy = [sql`select pg_sleep(1)`, sql`select pg_sleep(1)`].map((q) => Promise.resolve(q));
    const t = performance.now();
    const err = await Promise.resolve(sql`select 1 as one`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('SERVICE_UNAVAILABLE');
    expect((err as AppError).options.retryAfterS).toBeGreaterThan(0);
    expect(performance.now() - t).toBeLessThan(800);
    expect(poolStats(sql)).toMatchObject({ max: 2, inFlight: 2 });
    await Promise.all(busy);
    expect(poolStats(sql)).toMatchObject({ inFlight: 0, queued: 0 });
    expect((await sql`select 1 as one`)[0]).toEqual({ one: 1 });
  });

  it('refuses at once beyond the queue bound', async () => {
    const busy = [sql`select pg_sleep(0.5)`, sql`select pg_sleep(0.5)`].map((q) => Promise.resolve(q));
    const queued = [1, 2, 3].map(() => Promise.resolve(sql`select 1`).catch((e: unknown) => e));
    const t = performance.now();
    const err = await Promise.resolve(sql`select 1`).catch((e: unknown) => e);
    expect((err as AppError).code).toBe('SERVICE_UNAVAILABLE');
    expect(performance.now() - t).toBeLessThan(50);
    await Promise.all([...busy, ...queued]);
  });

  it('fragments, unsafe, transactions and reserved connections go through the gate correctly', async () => {
    const frag = sql`where x = ${2}`;
    expect(await sql`select x from (values (1), (2)) v(x) ${frag}`).toEqual([{ x: 2 }]);
    expect(await sql.unsafe('select $1::int as n', [7])).toEqual([{ n: 7 }]);
    const n = await sql.begin(async (tx) => (await tx`select 3 as n`)[0].n);
    expect(n).toBe(3);
    const conn = await sql.reserve();
    expect(poolStats(sql)?.inFlight).toBe(1);
    expect(await conn`select 4 as n`).toEqual([{ n: 4 }]);
    conn.release();
    expect(poolStats(sql)?.inFlight).toBe(0);
  });

  it('the statement timeout ends a runaway query with 57014 (mapped to 503 at the edge)', async () => {
    const short = createSql(TEST_DATABASE_URL, { max: 1, statementTimeoutMs: 200 });
    try {
      const err = await Promise.resolve(short`select pg_sleep(2)`).catch((e: unknown) => e);
      expect((err as { code?: string }).code).toBe('57014');
      expect((await short`select 1 as one`)[0]).toEqual({ one: 1 });
    } finally {
      await short.end({ timeout: 5 });
    }
  });
});

describe('ConnectionGate', () => {
  it('grants permits in arrival order', async () => {
    const gate = new ConnectionGate(1, 1000, 10);
    const first = await gate.acquire();
    const order: number[] = [];
    const waiting = [1, 2, 3].map((i) => gate.acquire().then((release) => (order.push(i), release())));
    first();
    await Promise.all(waiting);
    expect(order).toEqual([1, 2, 3]);
    expect(gate.stats()).toEqual({ max: 1, pipelineDepth: 1, inFlight: 0, queued: 0, rejected: 0 });
  });

  it('admits pipelineDepth statements per connection; a transaction takes a whole connection and is not overtaken', async () => {
    const gate = new ConnectionGate(2, 1000, 10, 2);
    const statements = await Promise.all([1, 2, 3].map(() => gate.acquire()));
    expect(gate.stats()).toMatchObject({ inFlight: 3, queued: 0 });
    const order: string[] = [];
    const tx = gate.acquireConnection().then((release) => (order.push('tx'), release));
    const late = gate.acquire().then((release) => (order.push('statement'), release));
    // One unit is free, but the transaction at the head needs two and the statement queues behind it.
    expect(gate.stats()).toMatchObject({ inFlight: 3, queued: 2 });
    statements[0]();
    const releaseTx = await tx;
    expect(order).toEqual(['tx']);
    expect(gate.stats()).toMatchObject({ inFlight: 4, queued: 1 });
    statements[1]();
    (await late)();
    expect(order).toEqual(['tx', 'statement']);
    releaseTx();
    statements[2]();
    expect(gate.stats()).toMatchObject({ inFlight: 0, queued: 0 });
  });

  it('expires waiters in order with one timer, and serves the ones that get a permit in time', async () => {
    const gate = new ConnectionGate(1, 150, 10);
    const held = await gate.acquire();
    const t0 = performance.now();
    const first = gate.acquire().catch((e: unknown) => e);
    const second = gate.acquire().catch((e: unknown) => e);
    const e1 = await first;
    expect((e1 as AppError).code).toBe('SERVICE_UNAVAILABLE');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
    const third = gate.acquire();
    expect((await second as AppError).code).toBe('SERVICE_UNAVAILABLE');
    held();
    (await third)();
    expect(gate.stats()).toEqual({ max: 1, pipelineDepth: 1, inFlight: 0, queued: 0, rejected: 2 });
  });
});
