import { describe, expect, it } from 'vitest';
import { boundedWork } from '../../../shared/bounded-work.js';

/** A piece of work the test settles by hand. */
function deferred() {
  let resolve!: (v: string) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<string>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject, started: false };
}

const refusal = (why: string) => Object.assign(new Error(why), { why });

describe('boundedWork', () => {
  it('runs at most maxConcurrent at once, in arrival order, and refuses past maxWaiting at once', async () => {
    const run = boundedWork({ maxConcurrent: 2, maxWaiting: 2, refused: refusal });
    const jobs = Array.from({ length: 5 }, () => deferred());
    const results = jobs.map((j) =>
      run(() => {
        j.started = true;
        return j.promise;
      }).catch((e: Error) => `refused:${e.message}`),
    );
    expect(jobs.map((j) => j.started)).toEqual([true, true, false, false, false]);
    expect(await results[4]).toBe('refused:queue_full');
    jobs[1]!.resolve('b');
    await results[1];
    expect(jobs.map((j) => j.started)).toEqual([true, true, true, false, false]);
    // A failure frees its slot as a success does.
    jobs[0]!.reject(new Error('boom'));
    expect(await results[0]).toBe('refused:boom');
    expect(jobs[3]!.started).toBe(true);
    jobs[2]!.resolve('c');
    jobs[3]!.resolve('d');
    expect(await Promise.all(results.slice(1, 4))).toEqual(['b', 'c', 'd']);
    // Empty again: the next one starts at once.
    const again = deferred();
    const last = run(() => {
      again.started = true;
      return again.promise;
    });
    expect(again.started).toBe(true);
    again.resolve('e');
    expect(await last).toBe('e');
  });

  it('a waiter not started within maxWaitMs is refused and leaves the queue; a throwing job frees its slot', async () => {
    const run = boundedWork({ maxConcurrent: 1, maxWaiting: 5, maxWaitMs: 20, refused: refusal });
    const holder = deferred();
    const held = run(() => holder.promise);
    let lateStarted = false;
    const late = run(async () => {
      lateStarted = true;
      return 'late';
    });
    await expect(late).rejects.toThrow('wait_timeout');
    holder.resolve('held');
    expect(await held).toBe('held');
    expect(lateStarted).toBe(false);
    await expect(
      run(() => {
        throw new Error('sync throw');
      }),
    ).rejects.toThrow('sync throw');
    expect(await run(async () => 'free')).toBe('free');
  });
});
