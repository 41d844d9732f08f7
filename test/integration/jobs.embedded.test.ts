/**
 * The job queue on the embedded database (no DATABASE_URL: embedded PostgreSQL under DATA_DIR):
 * pg-boss creates its schema there, runs a job, retries a failing one and records the failure,
 * exactly as on a server.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startJobs, type Jobs } from '../../control-plane/jobs/index.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';

let dataDir: string;
let infra: TestInfra | undefined;
let jobs: Jobs | undefined;

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'vp-jobs-embedded-'));
  infra = await startTestInfra({ dataDir }, { DATABASE_URL: '', REDIS_URL: '' });
});

afterAll(async () => {
  await jobs?.close();
  await infra?.close();
  await fs.rm(dataDir, { recursive: true, force: true });
});

describe('job queue on the embedded database', () => {
  it('runs, retries and records a failure', { timeout: 30_000 }, async () => {
    expect(infra!.embeddedDb).toBe(true);
    jobs = await startJobs({ sql: infra!.sql, logger: infra!.logger, pollingIntervalSeconds: 0.5, queues: { 'post-call.summary': { retryLimit: 1, retryDelaySeconds: 1, retryBackoff: false } } });
    const seen: Array<[string, number]> = [];
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    await jobs.work('post-call.summary', async (job) => {
      seen.push([job.data.conversation_id, job.retryCount]);
      if (seen.length === 3) done();
      if (job.data.conversation_id === 'bad') throw new Error('nope');
    });
    await jobs.enqueue('post-call.summary', { conversation_id: 'good' }, { singletonKey: 'good' });
    const bad = await jobs.enqueue('post-call.summary', { conversation_id: 'bad' }, { singletonKey: 'bad' });
    await finished;
    expect(seen.filter(([id]) => id === 'bad').map(([, n]) => n)).toEqual([0, 1]);
    await expect.poll(async () => (await jobs!.state('post-call.summary', bad!))?.state, { timeout: 5000, interval: 100 }).toBe('failed');
  });
});
