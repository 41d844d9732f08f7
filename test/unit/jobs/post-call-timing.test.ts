/**
 * The post-call LLM jobs' expiry against what it bounds: an ask (MAX_REQUESTS requests of the
 * default timeout) must fit inside it, and a job whose replica died mid-ask must run again, and
 * finish, inside the `call.completed` hold, so the event carries its result.
 */
import { describe, expect, it } from 'vitest';
import { QUEUE_SETTINGS } from '../../../control-plane/jobs/index.js';
import { ASK_REQUEST_TIMEOUT_MS, MAX_REQUESTS } from '../../../control-plane/analysis/ask.js';
import { ANALYSIS_HOLD_MS } from '../../../control-plane/webhooks/events.js';

describe.each(['analysis.extract', 'qa.score'] as const)('%s', (name) => {
  const q = QUEUE_SETTINGS[name];
  const askS = (MAX_REQUESTS * ASK_REQUEST_TIMEOUT_MS) / 1000;

  it('expires only after the longest legitimate ask', () => {
    expect(q.expireInSeconds).toBeGreaterThanOrEqual(askS + 15);
  });

  it('a crashed job is picked up and has a typical ask (10 s) done inside the hold', () => {
    // Expiry is noticed by the next maintenance pass (every 15 s by default, jobs/index.ts).
    const rerunDone = q.expireInSeconds + 15 + q.retryDelaySeconds + 10;
    expect(rerunDone).toBeLessThan(ANALYSIS_HOLD_MS / 1000 - 30);
  });
});
