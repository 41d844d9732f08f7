/** Retry rules of campaign contacts (control-plane/campaigns/policy.ts) as a table. */
import { describe, expect, it } from 'vitest';
import { backoffMs, outcomeOf } from '../../../control-plane/campaigns/policy.js';

const NOW = 1_000_000;
const BASE = 60_000;

describe('outcomeOf', () => {
  it.each([
    // [carrier status, answered, verdict, attempts, max_retries] -> status, retry at
    ['completed', true, '', 1, 2, 'completed', undefined],
    ['completed', true, 'human', 3, 2, 'completed', undefined],
    ['completed', true, 'machine_end_beep', 1, 2, 'voicemail', undefined],
    ['failed', false, '', 1, 2, 'failed', undefined],
    ['busy', false, '', 1, 2, 'queued', NOW + BASE],
    ['no-answer', false, '', 2, 2, 'queued', NOW + 2 * BASE],
    ['no-answer', false, '', 3, 2, 'failed', undefined],
    ['busy', false, '', 1, 0, 'failed', undefined],
    ['canceled', false, '', 1, 1, 'queued', NOW + BASE],
  ] as const)('%s answered=%s verdict=%s attempt %i of 1+%i -> %s', (carrier, answered, verdict, attempts, maxRetries, status, retryAt) => {
    const o = outcomeOf({ carrierStatus: carrier, answered, amdVerdict: verdict, durationS: 7 }, attempts, maxRetries, NOW, BASE);
    expect(o.status).toBe(status);
    expect(o.retryAtMs).toBe(retryAt);
    if (status === 'failed') expect(o.error).toBeTruthy();
  });
});

describe('backoffMs', () => {
  it('doubles per attempt and is capped at one hour', () => {
    expect([1, 2, 3, 4].map((a) => backoffMs(a, BASE))).toEqual([60_000, 120_000, 240_000, 480_000]);
    expect(backoffMs(20, BASE)).toBe(3_600_000);
  });
});
