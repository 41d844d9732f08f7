import { describe, expect, it } from 'vitest';
import { normalizeVariables, substitute } from '../../../shared/voice/templates.js';

describe('{{key|default}} substitution', () => {
  it.each([
    ['Hello {{name}}!', { name: 'Ada' }, 'Hello Ada!'],
    ['Hello {{name|there}}!', {}, 'Hello there!'],
    ['Hello {{ name | friend }}!', { name: '' }, 'Hello friend!'],
    ['Hi {{missing}}.', {}, 'Hi .'],
    ['{{n}} items', { n: 3 }, '3 items'],
    ['no vars', { a: 1 }, 'no vars'],
  ])('%s', (tpl, vars, out) => {
    expect(substitute(tpl, vars)).toBe(out);
  });
  it('normalizes values to strings and drops nulls', () => {
    expect(normalizeVariables({ a: 1, b: true, c: null, d: 'x' })).toEqual({ a: '1', b: 'true', d: 'x' });
  });
});
