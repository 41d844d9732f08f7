/** Shared by the "limits race" suites: parallel creates against a count limit, and their verdict. */
import { expect } from 'vitest';
import type { Sql } from '../../shared/db/client.js';
import type { ApiResponse } from './accounts.js';

/** Runs `n` requests at once (all in flight together) and returns their responses. */
export function parallel(n: number, one: (i: number) => Promise<ApiResponse>): Promise<ApiResponse[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => one(i)));
}

/** Exactly `stored` succeeded with `okStatus`; every other answer is 409 LIMIT_REACHED. */
export function expectSplit(res: ApiResponse[], okStatus: number, stored: number): void {
  const ok = res.filter((r) => r.status === okStatus);
  const refused = res.filter((r) => r.status !== okStatus);
  expect(ok.length).toBe(stored);
  for (const r of refused) expect({ status: r.status, code: r.body?.error?.code }).toEqual({ status: 409, code: 'LIMIT_REACHED' });
}

/** Rows of `table` whose `column` is `id`, read from Postgres (not from the API). */
export async function countRows(sql: Sql, table: string, column: string, id: string): Promise<number> {
  const [r] = await sql.unsafe<{ n: number }[]>(`select count(*)::int as n from ${table} where ${column} = $1`, [id]);
  return r!.n;
}
