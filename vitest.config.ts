import { defineConfig } from 'vitest/config';

/**
 * Two groups. Most suites run two files at a time. Suites that stream audio in real time (a
 * simulated caller or carrier speaking `sim`-coded audio through the engine) run afterwards, one
 * file at a time: on a 2-core machine two of them at once starve each other's 20 ms schedules and
 * the in-band code garbles (a test-harness limit, not an engine behaviour).
 */
const REALTIME = [
  'test/integration/engine-e2e.test.ts',
  'test/integration/engine-vendors*.test.ts',
  'test/integration/telephony-*.test.ts',
  'test/integration/conversations.records.test.ts',
];

const shared = {
  pool: 'forks' as const,
  testTimeout: 20_000,
  hookTimeout: 30_000,
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...shared,
          name: 'default',
          include: ['test/**/*.test.ts'],
          exclude: REALTIME,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...shared,
          name: 'realtime',
          include: REALTIME,
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
