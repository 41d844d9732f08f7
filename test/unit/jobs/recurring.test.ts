/**
 * A recurring pass queues its successor before it works; `next-pass` passes never fail their job
 * (the next pass is the retry), `retry` passes do (the queue retries them).
 */
import { describe, expect, it } from 'vitest';
import { recurringPass } from '../../../control-plane/jobs/recurring.js';
import type { JobContext } from '../../../control-plane/jobs/index.js';
import { captureLogger } from '../../helpers/infra.js';

function harness(onError: 'retry' | 'next-pass', o: { passFails?: boolean; enqueueFails?: boolean } = {}) {
  const steps: string[] = [];
  const { logger, lines } = captureLogger();
  const jobs = {
    enqueue: async (name: string, _data: unknown, opts: { singletonKey: string; delaySeconds?: number }) => {
      if (o.enqueueFails) throw new Error('database away');
      steps.push(`enqueue ${name} ${opts.singletonKey} ${opts.delaySeconds ?? 0}`);
      return 'id';
    },
  };
  const pass = recurringPass({
    jobs: jobs as never,
    logger,
    name: 'ops.node-sweep',
    data: { tick: 'nodes' },
    intervalS: 2,
    pass: async () => {
      steps.push('pass');
      if (o.passFails) throw new Error('pass failed');
    },
    onError,
  });
  const job = { signal: new AbortController().signal } as JobContext<'ops.node-sweep'>;
  return { pass, job, steps, lines };
}

describe('recurringPass', () => {
  it('queues the successor first, then passes; a kick queues one now', async () => {
    const h = harness('next-pass');
    await h.pass.run(h.job);
    await h.pass.kick();
    expect(h.steps).toEqual(['enqueue ops.node-sweep nodes 2', 'pass', 'enqueue ops.node-sweep nodes 0']);
  });

  it('next-pass: a failed pass or successor is logged, the job does not fail', async () => {
    const failing = harness('next-pass', { passFails: true });
    await expect(failing.pass.run(failing.job)).resolves.toBeUndefined();
    expect(failing.lines.some((l) => l.includes('recurring pass failed'))).toBe(true);
    const away = harness('next-pass', { enqueueFails: true });
    await expect(away.pass.run(away.job)).resolves.toBeUndefined();
    expect(away.steps).toEqual([]);
  });

  it('retry: a failed pass fails its job', async () => {
    const h = harness('retry', { passFails: true });
    await expect(h.pass.run(h.job)).rejects.toThrow('pass failed');
  });
});
