/**
 * postgres.js (3.4.9) buffers a small write for a `setImmediate`. On a reserved connection
 * (our connection gate and the job queue reserve them) whose backend died, the next query's
 * buffered write finds the socket gone and the unpatched driver throws `TypeError: Cannot read
 * properties of null (reading 'write')` from the immediate: an uncaught exception that takes the
 * process and every call on it down, and the query never settles (porsager/postgres#1154, #1208;
 * met here in a Postgres-restart test). `patches/postgres+3.4.9.patch` (applied by patch-package
 * on install) settles the queries with CONNECTION_CLOSED instead.
 */
import postgres from 'postgres';
import { afterAll, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../helpers/infra.js';

const sql = postgres(TEST_DATABASE_URL, { max: 2, onnotice: () => {} });
const admin = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });

afterAll(async () => {
  await sql.end({ timeout: 1 });
  await admin.end({ timeout: 1 });
});

const within = <T>(p: Promise<T>, ms: number) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`not settled within ${ms} ms`)), ms))]);

it('a query on a reserved connection whose backend died is rejected, not thrown from a timer, and the pool recovers', async () => {
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    const conn = await sql.reserve();
    const [{ pid }] = await conn<{ pid: number }[]>`select pg_backend_pid() as pid`;
    await admin`select pg_terminate_backend(${pid})`;
    // The driver learns of the close from the socket; then the reserved connection is used again.
    await expect.poll(async () => (await admin`select count(*)::int as n from pg_stat_activity where pid = ${pid}`)[0].n, { timeout: 5_000 }).toBe(0);
    await new Promise((r) => setTimeout(r, 50));
    await expect(within(conn`select 2 as two`, 5_000)).rejects.toMatchObject({ code: 'CONNECTION_CLOSED' });
    conn.release();
    expect(uncaught).toEqual([]);
    // The dead connection is retired after at most one more failure; then queries work.
    let answered = 0;
    for (let i = 0; i < 4; i++) answered += await within(sql`select 1 as one`, 5_000).then(() => 1, () => 0);
    expect(answered).toBeGreaterThanOrEqual(3);
    expect(uncaught).toEqual([]);
  } finally {
    process.off('uncaughtException', onUncaught);
  }
});
