/** E.164 numbers (libphonenumber-js). Pure. */
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import { invalid } from '../../../shared/errors.js';

/** The E.164 form of `value`, or undefined when it is not a valid international number. */
export function toE164(value: string): string | undefined {
  const v = value.trim();
  if (!v.startsWith('+') || v.length > 32) return undefined;
  const parsed = parsePhoneNumberFromString(v);
  if (!parsed || !parsed.isValid()) return undefined;
  return parsed.format('E.164');
}

/** 400 naming `field` unless `value` is a valid E.164 number; returns the normalised form. */
export function requireE164(field: string, value: string): string {
  const e164 = toE164(value);
  if (!e164) throw invalid(field, 'must be a valid E.164 phone number such as +14155550123');
  return e164;
}
