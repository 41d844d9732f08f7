/** Pure pieces of billing: quantities from recorded usage, the debit, price and amount checks, the engine's credit verdict. */
import { describe, expect, it } from 'vitest';
import { checkAmount, checkPrices, costOf, quantitiesOf, FREE } from '../../../control-plane/billing/units.js';
import { creditVerdict } from '../../../media-engine/credit-check.js';
import { AppError } from '../../../shared/errors.js';
import { MemoryRegistry } from '../../../shared/registry/index.js';

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return (err as AppError).options.details?.[0]?.field;
  }
  return undefined;
}

describe('metering', () => {
  it('audio is billed per started second; the debit is Σ quantity × price', () => {
    const q = quantitiesOf({ total_duration_ms: 2001, tokens_input: 10, tokens_output: 4, tts_characters: 30, tool_calls: 2 });
    expect(q).toEqual({ audio_second: 3, llm_input_token: 10, llm_output_token: 4, tts_character: 30, tool_call: 2 });
    expect(quantitiesOf({ total_duration_ms: 0, tokens_input: 0, tokens_output: 0, tts_characters: 0, tool_calls: 0 }).audio_second).toBe(0);
    expect(quantitiesOf({ total_duration_ms: 1000, tokens_input: 0, tokens_output: 0, tts_characters: 0, tool_calls: 0 }).audio_second).toBe(1);
    expect(costOf(q, { audio_second: 100, llm_input_token: 1, llm_output_token: 2, tts_character: 3, tool_call: 50 })).toBe(300 + 10 + 8 + 90 + 100);
    expect(costOf(q, FREE)).toBe(0);
  });
});

describe('checks', () => {
  it('prices: known units once each, whole non-negative micro-credits', () => {
    expect(checkPrices([{ unit: 'tool_call', priceMicros: 0 }])).toEqual([{ unit: 'tool_call', priceMicros: 0 }]);
    expect(fieldOf(() => checkPrices([{ unit: 'minutes', priceMicros: 1 }]))).toBe('prices[0].unit');
    expect(fieldOf(() => checkPrices([{ unit: 'tool_call', priceMicros: 1 }, { unit: 'tool_call', priceMicros: 2 }]))).toBe('prices[1].unit');
    expect(fieldOf(() => checkPrices([{ unit: 'tool_call', priceMicros: -1 }]))).toBe('prices[0].price_micros');
    expect(fieldOf(() => checkPrices([{ unit: 'tool_call', priceMicros: Number.NaN }]))).toBe('prices[0].price_micros');
    expect(fieldOf(() => checkPrices([]))).toBe('prices');
  });

  it('amounts: top-ups positive, adjustments non-zero, both whole and bounded', () => {
    expect(checkAmount('top_up', 5)).toBe(5);
    expect(checkAmount('adjustment', -5)).toBe(-5);
    for (const bad of [0, -1, 0.5, 1e16, Number.POSITIVE_INFINITY]) expect(fieldOf(() => checkAmount('top_up', bad))).toBe('amount_micros');
    for (const bad of [0, 0.5, -1e16]) expect(fieldOf(() => checkAmount('adjustment', bad))).toBe('amount_micros');
  });
});

describe('credit verdict at connect', () => {
  const at = (balanceMicros: number, perSecondMicros: number) => creditVerdict({ balanceMicros, perSecondMicros, updatedAtMs: 0 });
  it('never published, zero or negative: refused', () => {
    expect(creditVerdict(undefined)).toEqual({ ok: false });
    expect(at(0, 100)).toEqual({ ok: false });
    expect(at(-5, 0)).toEqual({ ok: false });
  });
  it('less than one billed second: refused; otherwise balance / price per second', () => {
    expect(at(99, 100)).toEqual({ ok: false });
    expect(at(100, 100)).toEqual({ ok: true, allowanceMs: 1000 });
    expect(at(2550, 1000)).toEqual({ ok: true, allowanceMs: 2550 });
  });
  it('free audio: no time limit while the balance is positive', () => {
    expect(at(1, 0)).toEqual({ ok: true });
  });
  it('an allowance longer than a timer can wait (24.8 days) is no limit, not one that fires at once', () => {
    expect(at(2_147_000_000, 1000)).toEqual({ ok: true, allowanceMs: 2_147_000_000 });
    expect(at(2_148_000_000, 1000)).toEqual({ ok: true });
    expect(at(Number.MAX_SAFE_INTEGER, 1)).toEqual({ ok: true });
  });
});

describe('in-process registry part (single-node default)', () => {
  it('keeps the last published state per workspace; unknown is undefined', async () => {
    const reg = new MemoryRegistry();
    expect(await reg.billing.getBillingState('ws-1')).toBeUndefined();
    await reg.billing.putBillingState('ws-1', { balanceMicros: 5, perSecondMicros: 1, updatedAtMs: 1 });
    await reg.billing.putBillingState('ws-1', { balanceMicros: -2, perSecondMicros: 1, updatedAtMs: 2 });
    const s = await reg.billing.getBillingState('ws-1');
    expect(s).toEqual({ balanceMicros: -2, perSecondMicros: 1, updatedAtMs: 2 });
    // A copy: the caller cannot change what other readers see.
    s!.balanceMicros = 1e9;
    expect((await reg.billing.getBillingState('ws-1'))!.balanceMicros).toBe(-2);
    expect(creditVerdict(await reg.billing.getBillingState('ws-1'))).toEqual({ ok: false });
    await reg.close();
  });
});
