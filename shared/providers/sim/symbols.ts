/**
 * The sim audio code's symbol layout, shared by the encoder (codec.ts) and the decoder
 * (decoder.ts): slot timing, the alphabet and the special symbol values, the block/check size and
 * the two tone groups. One file so both sides cannot drift apart; the reasoning behind every number
 * is in NOTES.md next to this file.
 */
/** One character's slot (tone + guard). A phrase lasts about (chars * 1.25 + 3) slots. */
export const symbolDurationMs = 60;
/** The part of a slot carrying tones; the rest is a silent guard. */
export const toneDurationMs = 50;

/** Supported characters, in symbol order: a symbol's value is its index here. */
export const SIM_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 .,?!'-:";
export const DATA_SYMBOLS = SIM_ALPHABET.length; // 44
export const PRE1 = 44;
export const PRE2 = 45;
export const END = 46;
// Values 47 and 48 are never sent; decoding one means the slot is corrupt.

/** Data symbols per check symbol: one check corrects one bad symbol per block (25 % overhead). */
export const BLOCK_DATA = 4;

/**
 * Tone groups. All are odd multiples of 50 Hz: (a) a lost 20 ms frame replaced by a repeat of the
 * previous one stays phase-continuous (whole cycles per 20 ms); (b) tones are orthogonal over the
 * 40 ms window; (c) second harmonics and f1 +- f2 products (even multiples) never land on a tone.
 * Inside 400-3200 Hz so mu-law telephony and an 8 kHz low-pass keep them.
 */
export const LOW_TONES_HZ = [550, 650, 750, 850, 950, 1050, 1150] as const;
export const HIGH_TONES_HZ = [1350, 1550, 1750, 1950, 2250, 2550, 2850] as const;
export const TONES_HZ: readonly number[] = [...LOW_TONES_HZ, ...HIGH_TONES_HZ];
export const GROUP: number = LOW_TONES_HZ.length; // 7
export const TONE_COUNT: number = TONES_HZ.length; // 14

/** Tone index (into TONES_HZ) of a symbol's low tone, and of its high tone. */
export function lowOf(value: number): number {
  return Math.floor(value / GROUP);
}
export function highOf(value: number): number {
  return GROUP + (value % GROUP);
}
