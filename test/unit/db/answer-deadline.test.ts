/**
 * A pipelined statement whose answer never comes (the network goes silent right after the
 * statement ahead of it was answered) is rejected with a 503-class error within
 * pipelineDepth x statement timeout + grace, and its permit is freed. The socket watchdog alone
 * cannot see it: the last read is newer than the last write. Real Postgres behind a TCP proxy
 * that goes silent (test/helpers/tcp-proxy.ts) after the first answer.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createSql, poolStats } from '../../../shared/db/client.js';
import { AnswerDeadlines } from '../../../shared/db/answer-deadline.js';
import { toAppError } from '../../../shared/errors.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';
import { TEST_DATABASE_URL } from '../../helpers/infra.js';

const proxies: TcpProxy[] = [];
afterAll(async () => {
  for (const p of proxies) await p.close();
});

describe('answer deadline of pipelined statements', () => {
  it('rejects a pipelined statement whose answer never comes, and frees its permit', async () => {
    const target = new URL(TEST_DATABASE_URL);
    const proxy = await TcpProxy.start(target.hostname, Number(target.port || 5432));
    proxies.push(proxy);
    const sql = createSql(proxy.urlFor(TEST_DATABASE_URL), { max: 1, pipelineDepth: 2, statementTimeoutMs: 1000, acquireTimeoutMs: 5000 });
    try {
      expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
      const t0 = performance.now();
      // One connection, two statements: the second is pipelined behind the first.
      const first = Promise.resolve(sql`select 1 as n`);
      const second = Promise.resolve(sql`select pg_sleep(0.5), 2 as n`).then(
        () => 'answered',
        (e: unknown) => e,
      );
      expect((await first)[0].n).toBe(1);
      // The network goes silent after the first answer, while the second is still running.
      proxy.partition();
      const err = await second;
      const waited = performance.now() - t0;
      expect(err).toBeInstanceOf(Error);
      expect(toAppError(err).code).toBe('SERVICE_UNAVAILABLE');
      // 2 x 1000 ms + 1000 ms grace; not before it.
      expect(waited).toBeGreaterThanOrEqual(2900);
      expect(waited).toBeLessThan(6000);
      expect(poolStats(sql)).toMatchObject({ inFlight: 0 });
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
});

describe('AnswerDeadlines', () => {
  it('expires only unanswered entries, in order, with one timer', async () => {
    const expired: string[] = [];
    let bExpired!: () => void;
    const bDone = new Promise<void>((resolve) => (bExpired = resolve));
    const d = new AnswerDeadlines(60, (reject) => reject(new Error('late')));
    const a = d.watch(() => expired.push('a'));
    d.watch(() => (expired.push('b'), bExpired()));
    const c = d.watch(() => expired.push('c'));
    a();
    c();
    expect(d.pending()).toBe(1);
    await bDone;
    expect(expired).toEqual(['b']);
    expect(d.pending()).toBe(0);
  });
});
