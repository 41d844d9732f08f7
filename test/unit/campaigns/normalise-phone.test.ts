/**
 * CSV phone numbers (csv-import.ts `normalisePhone`, spec rule: spaces, dashes, parentheses and dots
 * stripped; what does not then normalise to E.164 is invalid). libphonenumber alone read trailing
 * text as an extension and dropped it: "+14155552671 ext 12" was stored as +14155552671.
 */
import { describe, expect, it } from 'vitest';
import { normalisePhone } from '../../../control-plane/campaigns/csv-import.js';

describe('normalisePhone', () => {
  it.each([
    ['+14155552671', '+14155552671'],
    ['+1 (415) 555-2671', '+14155552671'],
    ['1.415.555.2671', '+14155552671'],
    ['(+1) 415-555-2671', '+14155552671'],
    [' +44 20 7183 8750 ', '+442071838750'],
    ['+1\t415 555 2671', '+14155552671'],
  ])('%j -> %s', (raw, e164) => {
    expect(normalisePhone(raw)).toBe(e164);
  });

  it.each(['+14155552671 ext 12', '+14155552671x12', '+14155552674;x', '+14155552671 ext. 12', '+1415555267l', 'tel:+14155552671', '+1/415/555/2671', '++14155552671', '', '12', '+14155552671#'])(
    '%j is invalid',
    (raw) => {
      expect(normalisePhone(raw)).toBeUndefined();
    },
  );
});
