/**
 * What a call costs (pure): the metered units, the checks of prices and amounts, the debit of one
 * conversation's usage and the time allowance an engine gives a call. Amounts are whole
 * micro-credits; quantities whole units, so a debit is exactly Σ quantity × price.
 */
import { invalid } from '../../shared/errors.js';

export const UNITS = ['audio_second', 'llm_input_token', 'llm_output_token', 'tts_character', 'tool_call'] as const;
export type Unit = (typeof UNITS)[number];
export type Prices = Record<Unit, number>;
export type Quantities = Record<Unit, number>;

/** Largest amount or price accepted: 10^15 micro-credits (a billion credits), far inside 2^53. */
export const MAX_MICROS = 1e15;
/** Largest balance (either sign): still an exact integer as a JavaScript number (< 2^53). */
export const MAX_BALANCE_MICROS = 9e15;

export const FREE: Readonly<Prices> = Object.freeze({ audio_second: 0, llm_input_token: 0, llm_output_token: 0, tts_character: 0, tool_call: 0 });

/** What the records of one ended conversation say was used (store.ts reads them). */
export interface RecordedUsage {
  total_duration_ms: number;
  tokens_input: number;
  tokens_output: number;
  /** Characters of the agent's replies (what was synthesised). */
  tts_characters: number;
  tool_calls: number;
}

/** Audio is billed per started second of the call (caller audio streams for its whole length). */
export function quantitiesOf(u: RecordedUsage): Quantities {
  return {
    audio_second: Math.ceil(Math.max(0, u.total_duration_ms) / 1000),
    llm_input_token: Math.max(0, u.tokens_input),
    llm_output_token: Math.max(0, u.tokens_output),
    tts_character: Math.max(0, u.tts_characters),
    tool_call: Math.max(0, u.tool_calls),
  };
}

/** The debit (a positive number of micro-credits to subtract). */
export function costOf(q: Quantities, p: Prices): number {
  let total = 0;
  for (const unit of UNITS) total += q[unit] * p[unit];
  return total;
}

/** A price list as sent: every unit known, each price a whole number of micro-credits >= 0. */
export function checkPrices(prices: Array<{ unit: string; priceMicros?: number }>): Array<{ unit: Unit; priceMicros: number }> {
  if (prices.length === 0) throw invalid('prices', 'must list at least one unit');
  if (prices.length > UNITS.length) throw invalid('prices', `must list at most ${UNITS.length} units`);
  const seen = new Set<string>();
  return prices.map((p, i) => {
    if (!(UNITS as readonly string[]).includes(p.unit)) throw invalid(`prices[${i}].unit`, `must be one of ${UNITS.join(', ')}`);
    if (seen.has(p.unit)) throw invalid(`prices[${i}].unit`, 'is listed twice');
    seen.add(p.unit);
    if (p.priceMicros === undefined) throw invalid(`prices[${i}].price_micros`, 'is required (0 makes the unit free)');
    if (!Number.isSafeInteger(p.priceMicros) || p.priceMicros < 0 || p.priceMicros > MAX_MICROS) throw invalid(`prices[${i}].price_micros`, `must be a whole number from 0 to ${MAX_MICROS}`);
    return { unit: p.unit as Unit, priceMicros: p.priceMicros };
  });
}

/** A credit's amount: top-ups above zero, adjustments any non-zero whole number. */
export function checkAmount(kind: 'top_up' | 'adjustment', amount: number): number {
  const ok = Number.isSafeInteger(amount) && Math.abs(amount) <= MAX_MICROS && (kind === 'top_up' ? amount > 0 : amount !== 0);
  if (!ok) throw invalid('amount_micros', kind === 'top_up' ? `must be a whole number from 1 to ${MAX_MICROS}` : `must be a non-zero whole number within ±${MAX_MICROS}`);
  return amount;
}
