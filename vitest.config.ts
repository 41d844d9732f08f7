import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

// Test workers trust the development certificate of local https webhook receivers. Node reads
// NODE_EXTRA_CA_CERTS only at process start, so it is pointed here, before any worker is forked,
// at a bundle that test/helpers/dev-tls.global.ts writes (the dev certificate plus whatever
// NODE_EXTRA_CA_CERTS named before, kept in VOICEPLANE_PREVIOUS_EXTRA_CA_CERTS).
const devCaBundle = path.join(os.tmpdir(), 'voiceplane-test-tls', 'bundle.pem');
if (process.env.NODE_EXTRA_CA_CERTS !== devCaBundle) {
  process.env.VOICEPLANE_PREVIOUS_EXTRA_CA_CERTS = process.env.NODE_EXTRA_CA_CERTS ?? '';
  process.env.NODE_EXTRA_CA_CERTS = devCaBundle;
}

/**
 * Three groups, one after the other. Most suites run two files at a time. Suites that stream audio
 * in real time (a simulated caller or carrier speaking `sim`-coded audio through an engine in the
 * test process) run next, two files at a time as well: each is one process with a few calls, so
 * two of them take a core each. Last, one file at a time, the suites that measure timing or load
 * against bounds, or run many processes or a browser: beside another suite they would starve its
 * 20 ms schedules (the in-band code garbles: a test-harness limit, not an engine behaviour) or
 * skew their own measurements.
 */
const REALTIME = [
  'test/integration/engine-e2e.test.ts',
  'test/integration/engine-vendors*.test.ts',
  'test/integration/engine-billing.test.ts',
  'test/integration/telephony-*.test.ts',
  'test/integration/portal.handoff*.test.ts',
  'test/integration/portal.transcribe*.test.ts',
  'test/integration/conversations.records.test.ts',
  'test/integration/observability.engine.test.ts',
  'test/integration/local-tts.realtime.test.ts',
  'test/integration/engine-transcription-asr.test.ts',
];
const ALONE = [
  // Timing or load measured against bounds: a second suite on the other core would skew them.
  'test/integration/hardening.carrier-fuzz.test.ts',
  'test/integration/hardening.carrier-sockets.test.ts',
  'test/integration/embedded.load.test.ts',
  // Spawned engine processes with carrier calls in real time; frame lateness measured.
  'test/integration/telephony-node-loss*.test.ts',
  // Issue 23's cluster rig: 7 processes, carrier calls in real time, frame lateness measured.
  'test/integration/ops.cluster.test.ts',
  // Real Chromium with a fake microphone talking to the engine in real time (issue 22).
  'test/browser/*.test.ts',
];

const shared = {
  pool: 'forks' as const,
  testTimeout: 20_000,
  hookTimeout: 30_000,
};

export default defineConfig({
  test: {
    // `unfinished` names a file whose worker died (vitest's own report says only "Worker exited unexpectedly").
    reporters: ['default', './test/reporters/unfinished.ts'],
    // A self-signed certificate trusted by every worker (NODE_EXTRA_CA_CERTS) for local https receivers.
    globalSetup: ['test/helpers/dev-tls.global.ts'],
    projects: [
      {
        test: {
          ...shared,
          name: 'default',
          include: ['test/**/*.test.ts'],
          exclude: [...REALTIME, ...ALONE],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        test: {
          ...shared,
          name: 'realtime',
          include: REALTIME,
          exclude: ALONE,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
          // One retry, here only: these suites decode `sim`-coded speech that a CPU-starved test
          // process (another job on a shared 2-core CI host) can garble by delaying its own 20 ms
          // sender, which is not an engine fault. An engine fault fails both attempts; a retried
          // pass is printed in the report, so a suite that needs it often stays visible.
          retry: 1,
        },
      },
      {
        test: {
          ...shared,
          name: 'alone',
          include: ALONE,
          fileParallelism: false,
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
          retry: 1,
        },
      },
    ],
  },
});
