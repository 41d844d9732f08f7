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
 * Two groups. Most suites run two files at a time. Suites that stream audio in real time (a
 * simulated caller or carrier speaking `sim`-coded audio through the engine) run afterwards, one
 * file at a time: on a 2-core machine two of them at once starve each other's 20 ms schedules and
 * the in-band code garbles (a test-harness limit, not an engine behaviour).
 */
const REALTIME = [
  'test/integration/engine-e2e.test.ts',
  'test/integration/engine-vendors*.test.ts',
  'test/integration/engine-billing.test.ts',
  'test/integration/telephony-*.test.ts',
  'test/integration/portal.handoff.test.ts',
  'test/integration/conversations.records.test.ts',
  'test/integration/observability.engine.test.ts',
  'test/integration/local-tts.realtime.test.ts',
  'test/integration/engine-transcription-asr.test.ts',
  // Timing or load measured against bounds: a second suite on the other core would skew them.
  'test/integration/hardening.carrier-fuzz.test.ts',
  'test/integration/hardening.carrier-sockets.test.ts',
  'test/integration/embedded.load.test.ts',
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
    // A self-signed certificate trusted by every worker (NODE_EXTRA_CA_CERTS) for local https receivers.
    globalSetup: ['test/helpers/dev-tls.global.ts'],
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
          // One retry, here only: these suites decode `sim`-coded speech that a CPU-starved test
          // process (another job on a shared 2-core CI host) can garble by delaying its own 20 ms
          // sender, which is not an engine fault. An engine fault fails both attempts; a retried
          // pass is printed in the report, so a suite that needs it often stays visible.
          retry: 1,
        },
      },
    ],
  },
});
