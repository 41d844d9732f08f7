/**
 * Two control planes starting together: `migrate` on two pools against one fresh schema, at the
 * same time. Both succeed and each version is applied exactly once (advisory lock).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createSql, type Sql } from '../../shared/db/client.js';
import { migrate } from '../../control-plane/db/migrate.js';
import { MIGRATIONS } from '../../control-plane/db/migrations/index.js';
import { dropSchema, TEST_DATABASE_URL, uniqueName } from '../helpers/infra.js';

const schema = uniqueName('t_mig');
const pools: Sql[] = [];

afterAll(async () => {
  await Promise.all(pools.map((p) => p.end({ timeout: 5 })));
  await dropSchema(schema);
});

describe('migrations twice in parallel', () => {
  it('both calls succeed and apply every version once', async () => {
    const a = createSql(TEST_DATABASE_URL, { schema, max: 2 });
    const b = createSql(TEST_DATABASE_URL, { schema, max: 2 });
    pools.push(a, b);
    await a.unsafe(`create schema if not exists "${schema}"`);
    const [ra, rb] = await Promise.all([migrate(a), migrate(b)]);
    const all = [...ra, ...rb].sort((x, y) => x - y);
    expect(all).toEqual(MIGRATIONS.map((m) => m.version));
    expect(ra.length === 0 || rb.length === 0).toBe(true);
    const rows = await a<{ version: number }[]>`select version from schema_migrations order by version`;
    expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
    // the accounts tables exist in this schema, once
    const tables = await a<{ table_name: string }[]>`
      select table_name from information_schema.tables where table_schema = ${schema} order by table_name`;
    expect(tables.map((t) => t.table_name)).toEqual(expect.arrayContaining(['users', 'sessions', 'refresh_tokens', 'api_keys', 'workspaces', 'workspace_members', 'memory_items', 'otp_codes']));
    // and a third run is a no-op
    expect(await migrate(b)).toEqual([]);
  });
});
