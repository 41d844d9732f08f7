/**
 * postgres.js (3.4.9) buffers a small write for a `setImmediate`. On a reserved connection
 * (our connection gate and the job queue reserve them) whose backend died, the next query's
 * buffered write finds the socket gone and the unpatched driver throws `TypeError: Cannot read
 * properties of null (reading 'write')` from the immediate: an uncaught exception that takes the
 * process and every call on it down, and the query never settles (porsager/postgres#1154, #1208;
 * met here in a Postgres-restart test). `patches/postgres+3.4.9.patch` (applied by patch-package
 * on install) settles the queries with CONNECTION_CLOSED instead.
 */
import net from 'node:net';
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
    // Which error the query settles with depends on whether the socket's reset is read before the
    // write: the driver's CONNECTION_CLOSED or the socket's own ECONNRESET. Either is a settled
    // rejection; what must not happen is a throw from the immediate or a query that never settles.
    const failure = await within(conn`select 2 as two`, 5_000).then(
      () => 'answered',
      (err: { code?: string }) => err.code,
    );
    expect(['CONNECTION_CLOSED', 'ECONNRESET']).toContain(failure);
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

it("a connection cut while it fetches the array types is no unhandled rejection, and the query then runs on a new one", async () => {
  // A proxy that resets the first connection as soon as the driver asks for the array types
  // (porsager/postgres#1192: the fetch's promise was dropped, its rejection unhandled).
  const target = new URL(TEST_DATABASE_URL);
  let cut = 0;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    client.on('error', () => {});
    upstream.on('error', () => {});
    client.on('data', (chunk) => {
      if (cut === 0 && chunk.includes('typarray')) {
        cut++;
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) => client.write(chunk));
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = new URL(TEST_DATABASE_URL);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as net.AddressInfo).port);
  const fresh = postgres(url.toString(), { max: 1, onnotice: () => {} });
  const unhandled: unknown[] = [];
  const onUnhandled = (err: unknown) => unhandled.push(err);
  process.on('unhandledRejection', onUnhandled);
  try {
    // The first attempt may fail with the cut connection; the pool then connects again.
    const first = await within(fresh<{ one: number }[]>`select 1 as one`, 5_000).then(
      (rows) => rows[0]?.one,
      (err: { code?: string }) => err.code,
    );
    const again = await within(fresh`select 2 as two`, 5_000);
    expect(cut).toBe(1);
    expect(again[0].two).toBe(2);
    expect([1, 'ECONNRESET', 'CONNECTION_CLOSED']).toContain(first);
    await new Promise((r) => setImmediate(r));
    expect(unhandled).toEqual([]);
  } finally {
    process.off('unhandledRejection', onUnhandled);
    await fresh.end({ timeout: 1 });
    await new Promise<void>((r) => server.close(() => r()));
  }
});
