/** The pure rule checks (control-plane/alerts/rules.ts): comparisons and the field named by each refusal. */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../shared/errors.js';
import { checkScopeFits, compare, parseChannels, parseCooldown, parseMetric, parseOperator, parseScope, parseThreshold, parseWindow, resolveComponent, type Operator } from '../../../control-plane/alerts/rules.js';

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('INVALID_REQUEST');
    return (err as AppError).details?.[0].field;
  }
  return undefined;
}

describe('compare', () => {
  const table: Array<[number, Operator, number, boolean]> = [
    [501, 'greater_than', 500, true],
    [500, 'greater_than', 500, false],
    [500, 'greater_than_or_equal', 500, true],
    [499.99, 'greater_than_or_equal', 500, false],
    [499, 'less_than', 500, true],
    [500, 'less_than', 500, false],
    [500, 'less_than_or_equal', 500, true],
    [500.01, 'less_than_or_equal', 500, false],
    [0, 'equals', 0, true],
    [1, 'equals', 0, false],
    [1, 'not_equals', 0, true],
    [0, 'not_equals', 0, false],
  ];
  it.each(table)('%d %s %d is %s', (v, op, t, want) => expect(compare(v, op, t)).toBe(want));
});

describe('refusals name their field', () => {
  it.each([
    ['metric', () => parseMetric('cpu_load', true)],
    ['metric', () => parseMetric('', true)],
    ['operator', () => parseOperator('>', true)],
    ['component', () => resolveComponent('call_volume', 'llm')],
    ['component', () => resolveComponent('p95_latency_ms', 'gpu')],
    ['scope.type', () => parseScope({ type: 'team', agentId: '' })],
    ['scope.agent_id', () => parseScope({ type: 'agent', agentId: 'nope' })],
    ['scope.agent_id', () => parseScope({ type: 'workspace', agentId: '0190f5d2-0000-7000-8000-000000000000' })],
    ['scope', () => checkScopeFits('node_down', { type: 'agent', agentId: 'x' })],
    ['threshold', () => parseThreshold(Number.POSITIVE_INFINITY)],
    ['window_minutes', () => parseWindow(0)],
    ['window_minutes', () => parseWindow(2.5)],
    ['cooldown_minutes', () => parseCooldown(-1)],
    ['channels.email[1]', () => parseChannels({ email: ['a@example.com', 'b'], webhook: [], slack: [] }, (_f, u) => u)],
    ['channels.slack', () => parseChannels({ email: [], webhook: [], slack: Array.from({ length: 11 }, (_, i) => `https://hooks.example.com/x${i}`) }, (_f, u) => u)],
    ['channels.webhook[0]', () => parseChannels({ email: [], webhook: ['  '], slack: [] }, (_f, u) => u)],
  ])('%s', (field, fn) => expect(fieldOf(fn)).toBe(field));
});

describe('defaults', () => {
  it('p95 defaults to the total component; other metrics take none; optional fields stay unset', () => {
    expect(resolveComponent('p95_latency_ms', undefined)).toBe('total');
    expect(resolveComponent('p95_latency_ms', 'tts')).toBe('tts');
    expect(resolveComponent('error_rate', '')).toBe('');
    expect(parseMetric(undefined, false)).toBeUndefined();
    expect(parseOperator('', false)).toBeUndefined();
    expect(parseScope({ type: '', agentId: '' })).toEqual({ type: 'workspace', agentId: null });
    expect(parseChannels({ email: ['Ops@Example.com', 'ops@example.com'], webhook: [], slack: [] }, (_f, u) => u)).toEqual({ email: ['ops@example.com'], webhook: [], slack: [] });
    // The bound counts distinct targets: ten addresses and one repeated in other case are ten.
    const ten = Array.from({ length: 10 }, (_, i) => `a${i}@x.com`);
    expect(parseChannels({ email: [...ten, 'A0@X.com'], webhook: [], slack: [] }, (_f, u) => u)!.email).toEqual(ten);
    // The same target many times over is one; far past the bound the raw list is refused unread.
    expect(parseChannels({ email: [], webhook: [], slack: Array(50).fill('https://hooks.example.com/x') }, (_f, u) => u)!.slack).toHaveLength(1);
    expect(() => parseChannels({ email: [], webhook: [], slack: Array(101).fill('https://hooks.example.com/x') }, (_f, u) => u)).toThrow(/at most 10 targets/);
  });
});
