import { describe, expect, it } from 'vitest';
import { requireE164, toE164 } from '../../../control-plane/agents/telephony/phone.js';

describe('toE164', () => {
  it.each([
    ['+14155552671', '+14155552671'],
    [' +14155552671 ', '+14155552671'],
    ['+1 (415) 555-2671', '+14155552671'],
    ['+44 20 7183 8750', '+442071838750'],
  ])('%s -> %s', (input, out) => expect(toE164(input)).toBe(out));
  it.each(['4155552671', '+1415555', '+999123', '', 'hello', '+1'.padEnd(40, '5')])('%s is not a number', (input) => expect(toE164(input)).toBeUndefined());
  it('requireE164 names the field', () => {
    expect(() => requireE164('carrier_phone_number', 'x')).toThrowError(expect.objectContaining({ code: 'INVALID_REQUEST', details: [expect.objectContaining({ field: 'carrier_phone_number' })] }));
  });
});
