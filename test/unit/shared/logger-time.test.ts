import { afterEach, describe, expect, it, vi } from 'vitest';
import { pino } from 'pino';
import { isoTimeOncePerMs } from '../../../shared/logger.js';

describe('isoTimeOncePerMs', () => {
  afterEach(() => vi.restoreAllMocks());

  it('gives pino isoTime\'s text for the current millisecond', () => {
    const now = vi.spyOn(Date, 'now');
    for (const ms of [0, 1_764_400_000_123, 1_764_400_000_124, 1_764_400_000_124, 1_764_400_061_999]) {
      now.mockReturnValue(ms);
      expect(isoTimeOncePerMs()).toBe(pino.stdTimeFunctions.isoTime());
      expect(isoTimeOncePerMs()).toBe(`,"time":"${new Date(ms).toISOString()}"`);
    }
  });
});
