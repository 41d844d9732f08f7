import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Integration suites share one Postgres and one Redis; each owns its schema / key prefix.
    fileParallelism: true,
    maxWorkers: 2,
  },
});
