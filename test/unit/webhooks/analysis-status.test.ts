/**
 * The `call.completed` analysis rules (control-plane/webhooks/analysis-status.ts): piece states,
 * their merge over a call's stints, the hold decision and `analysis_status`.
 */
import { describe, expect, it } from 'vitest';
import { analysisState, analysisStatus, merge, mustHold, qaState, summaryState, type Pieces } from '../../../control-plane/webhooks/analysis-status.js';

const P = (summary: Pieces['summary'], qa: Pieces['qa'], analysis: Pieces['analysis']): Pieces => ({ summary, qa, analysis });

describe('piece states', () => {
  it('summary, QA and analysis rows map to none / pending / done / failed', () => {
    expect([null, 'pending', 'completed', 'failed', 'skipped'].map(summaryState)).toEqual(['pending', 'pending', 'done', 'failed', 'none']);
    expect([undefined, 'pending', 'scored', 'reviewed', 'failed'].map(qaState)).toEqual(['none', 'pending', 'done', 'done', 'failed']);
    expect(analysisState(undefined)).toBe('none');
    expect(analysisState({ expected: 0, complete: 0, failed: 0 })).toBe('none');
    expect(analysisState({ expected: 2, complete: 1, failed: 0 })).toBe('pending');
    expect(analysisState({ expected: 2, complete: 2, failed: 0 })).toBe('done');
    expect(analysisState({ expected: 2, complete: 1, failed: 1 })).toBe('failed');
  });

  it('merge over stints: pending wins, then failed, unconfigured stints ignored', () => {
    expect(merge([])).toBe('none');
    expect(merge(['none', 'none'])).toBe('none');
    expect(merge(['done', 'none'])).toBe('done');
    expect(merge(['done', 'failed'])).toBe('failed');
    expect(merge(['failed', 'pending'])).toBe('pending');
  });
});

describe('hold and status', () => {
  it('holds while a piece is pending or a stint is active, never after the hold', () => {
    expect(mustHold(P('done', 'pending', 'none'), false, false)).toBe(true);
    expect(mustHold(P('done', 'done', 'none'), true, false)).toBe(true);
    expect(mustHold(P('done', 'failed', 'none'), false, false)).toBe(false);
    expect(mustHold(P('pending', 'pending', 'pending'), true, true)).toBe(false);
  });

  it('complete, partial, timeout, skipped', () => {
    expect(analysisStatus(P('done', 'done', 'none'), false)).toBe('complete');
    // The spec: complete = summary and QA score present; partial = one of them (analysis does not count).
    expect(analysisStatus(P('none', 'done', 'done'), false)).toBe('partial');
    expect(analysisStatus(P('done', 'none', 'done'), false)).toBe('partial');
    expect(analysisStatus(P('failed', 'failed', 'done'), false)).toBe('timeout');
    expect(analysisStatus(P('done', 'failed', 'none'), false)).toBe('partial');
    expect(analysisStatus(P('done', 'pending', 'done'), false)).toBe('partial');
    expect(analysisStatus(P('failed', 'pending', 'none'), false)).toBe('timeout');
    expect(analysisStatus(P('none', 'none', 'none'), false)).toBe('timeout');
    expect(analysisStatus(P('done', 'done', 'done'), true)).toBe('skipped');
  });
});
