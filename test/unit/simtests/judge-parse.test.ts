/** The judge's verdicts are parsed strictly: one per assertion, right types, or an error naming the problem. */
import { describe, expect, it } from 'vitest';
import { parseVerdicts } from '../../../control-plane/simtests/judge.js';

const A = ['The agent greets', 'The agent gives the hours'];
const T = 'Agent: hi\nCaller: when do you open?';
const v = (index: unknown, passed: unknown = true, reason: unknown = 'ok "Agent: hi"', quote: unknown = 'Agent: hi') => ({ index, passed, reason, quote });

describe('parseVerdicts', () => {
  it('maps verdicts to assertions by index, in assertion order', () => {
    const r = parseVerdicts({ verdicts: [v(2, false, 'no hours  given\nat all', 'Agent: hi'), v(1)] }, A, T);
    expect(r).toEqual({
      results: [
        { assertion: A[0], passed: true, reason: 'ok "Agent: hi"', quote: 'Agent: hi' },
        { assertion: A[1], passed: false, reason: 'no hours given at all', quote: 'Agent: hi' },
      ],
    });
  });

  it.each([
    [{}, '`verdicts` must be an array'],
    [{ verdicts: 'all good' }, '`verdicts` must be an array'],
    [{ verdicts: [v(1)] }, 'expected 2 verdicts, got 1'],
    [{ verdicts: [v(1), v(1)] }, 'assertion 1 has two verdicts'],
    [{ verdicts: [v(1), v(3)] }, 'verdicts[1].index must be 1-2'],
    [{ verdicts: [v(1), v('2')] }, 'verdicts[1].index must be 1-2'],
    [{ verdicts: [v(1), v(2, 'yes')] }, 'verdicts[1].passed must be a boolean'],
    [{ verdicts: [v(1), v(2, true, '  ')] }, 'verdicts[1].reason must be a non-empty string'],
    [{ verdicts: [v(1), v(2, true, 'r', 5)] }, 'verdicts[1].quote must be a string'],
    [{ verdicts: [v(1), null] }, 'verdicts[1] must be an object'],
    [{ verdicts: [v(1), v(2, true, 'r', 'Agent: we open at nine')] }, 'verdicts[1].quote is not a line of the transcript'],
    [{ verdicts: [v(1), v(2, true, 'r', '')] }, 'verdicts[1].quote is not a line of the transcript'],
  ])('refuses %j', (value, error) => {
    expect(parseVerdicts(value as Record<string, unknown>, A, T)).toEqual({ error });
  });

  it('accepts a quote without its prefix or with other spacing and case', () => {
    expect('results' in parseVerdicts({ verdicts: [v(1, true, 'r', 'WHEN do  you open?'), v(2, true, 'r', 'hi')] }, A, T)).toBe(true);
  });
});
