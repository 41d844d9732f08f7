/**
 * Versioned migrations, applied at start inside one transaction under a transaction-scoped advisory
 * lock, so two control planes starting together apply each version exactly once.
 */
import type { Sql } from '../../shared/db/client.js';
import { MIGRATIONS, type Migration } from './migrations/index.js';

/** Arbitrary constant: the advisory lock all control planes agree on for migrations. */
const MIGRATION_LOCK_ID = 727_001;

export async function migrate(sql: Sql, migrations: Migration[] = MIGRATIONS): Promise<number[]> {
  assertOrdered(migrations);
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_ID})`;
    await tx`create table if not exists schema_migrations (
      version integer primary key,
      name text not null,
      applied_at timestamptz not null default now()
    )`;
    const done = new Set((await tx<{ version: number }[]>`select version from schema_migrations`).map((r) => r.version));
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await tx.unsafe(m.sql);
      await tx`insert into schema_migrations (version, name) values (${m.version}, ${m.name})`;
      applied.push(m.version);
    }
    return applied;
  }) as Promise<number[]>;
}

function assertOrdered(migrations: Migration[]): void {
  for (let i = 1; i < migrations.length; i++) {
    if (migrations[i].version <= migrations[i - 1].version) {
      throw new Error(`migrations out of order at version ${migrations[i].version}`);
    }
  }
}
