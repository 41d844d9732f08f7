/** Pipeline analytics query checks: dates, defaults, order and the range bound, each naming its field. */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../shared/errors.js';
import { DEFAULT_RANGE_DAYS, MAX_RANGE_DAYS, dateMs, parsePipelineQuery } from '../../../control-plane/analytics/params.js';

const AGENT = '0193a4c2-7b7e-7cc1-8f00-000000000001';
const NOW = Date.UTC(2026, 10, 24, 15, 30); // 2026-11-24 15:30 UTC

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    expect((e as AppError).code).toBe('INVALID_REQUEST');
    return (e as AppError).details?.[0]?.field;
  }
  throw new Error('expected a 400');
}

describe('parsePipelineQuery', () => {
  it('an explicit range becomes [from 00:00, the midnight after to) in UTC', () => {
    const q = parsePipelineQuery({ agentId: AGENT.toUpperCase(), from: '2026-11-01', to: '2026-11-03' }, NOW);
    expect(q).toEqual({ agentId: AGENT, from: '2026-11-01', to: '2026-11-03', start: new Date('2026-11-01T00:00:00Z'), end: new Date('2026-11-04T00:00:00Z') });
  });

  it('defaults: to = today (UTC), from = the 29 days before it', () => {
    const q = parsePipelineQuery({ agentId: AGENT }, NOW);
    expect(DEFAULT_RANGE_DAYS).toBe(30);
    expect([q.from, q.to]).toEqual(['2026-10-26', '2026-11-24']);
    expect(q.end).toEqual(new Date('2026-11-25T00:00:00Z'));
    expect(parsePipelineQuery({ agentId: AGENT, to: '2026-03-01' }, NOW).from).toBe('2026-01-31');
    expect(parsePipelineQuery({ agentId: AGENT, from: '2026-11-20' }, NOW).to).toBe('2026-11-24');
  });

  it('a single day and exactly the maximum range are accepted; one day more is refused naming to', () => {
    expect(parsePipelineQuery({ agentId: AGENT, from: '2026-05-05', to: '2026-05-05' }, NOW).end).toEqual(new Date('2026-05-06T00:00:00Z'));
    expect(MAX_RANGE_DAYS).toBe(92);
    // 2026-01-01 + 91 days = 2026-04-02 (92 days inclusive)
    expect(parsePipelineQuery({ agentId: AGENT, from: '2026-01-01', to: '2026-04-02' }, NOW).to).toBe('2026-04-02');
    expect(fieldOf(() => parsePipelineQuery({ agentId: AGENT, from: '2026-01-01', to: '2026-04-03' }, NOW))).toBe('to');
  });

  it('from after to is refused naming from (also a from in the future with to defaulted)', () => {
    expect(fieldOf(() => parsePipelineQuery({ agentId: AGENT, from: '2026-11-05', to: '2026-11-04' }, NOW))).toBe('from');
    expect(fieldOf(() => parsePipelineQuery({ agentId: AGENT, from: '2026-12-01' }, NOW))).toBe('from');
  });

  it('agent_id is required and must be a UUID', () => {
    expect(fieldOf(() => parsePipelineQuery({ from: '2026-11-01' }, NOW))).toBe('agent_id');
    expect(fieldOf(() => parsePipelineQuery({ agentId: 'agent-1' }, NOW))).toBe('agent_id');
  });
});

describe('dateMs', () => {
  it('accepts real calendar dates', () => {
    expect(dateMs('from', '2024-02-29')).toBe(Date.UTC(2024, 1, 29));
    expect(dateMs('from', ' 2026-12-31 ')).toBe(Date.UTC(2026, 11, 31));
  });

  it.each(['2026-02-30', '2025-02-29', '2026-13-01', '2026-00-10', '2026-1-5', '26-01-05', '2026-01-05T00:00:00Z', 'yesterday', '1969-12-31', '9999-12-31', ''])('refuses %j naming the field', (v) => {
    expect(fieldOf(() => dateMs('to', v))).toBe('to');
  });

  it('says why a real date outside the years it takes is refused (9999-12-31 was a 500: its day after is no Postgres timestamp)', () => {
    expect(() => dateMs('from', '1969-12-31')).toThrow('from: must be a date between 1970-01-01 and 9998-12-31');
    expect(() => dateMs('to', '9999-12-31')).toThrow('to: must be a date between 1970-01-01 and 9998-12-31');
    expect(dateMs('to', '9998-12-31')).toBe(Date.UTC(9998, 11, 31));
    // Years 0-99 (which Date.UTC reads as 19xx) get the same reason, not "not a calendar date".
    expect(() => dateMs('from', '0001-01-01')).toThrow('from: must be a date between 1970-01-01 and 9998-12-31');
  });

  it('both dates wrong: the error names from, the first of the pair', () => {
    expect(fieldOf(() => parsePipelineQuery({ agentId: AGENT, from: '0001-01-01', to: '0001-01-05' }, NOW))).toBe('from');
  });
});
