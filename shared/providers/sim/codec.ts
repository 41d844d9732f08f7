/**
 * The `sim` in-band audio code: text -> a real two-tone (DTMF-style) signal -> text.
 *
 * Every character is one 60 ms slot: 50 ms of two simultaneous tones (one from a low group of 7,
 * one from a high group of 7, so 49 symbols) shaped by 5 ms raised-cosine ramps, then 10 ms of
 * silence. A phrase is `PRE1 PRE2 (d d d d c)* END`: two sync symbols, the characters in blocks of
 * up to 4 each followed by a check symbol (sum mod 44), and an end marker. Layout, the reasoning
 * behind every number, and measured robustness: NOTES.md next to this file.
 *
 * Decoding is pure DSP over pushed samples (no clock): Goertzel filters per tone over 2.5 ms
 * sub-blocks, combined coherently into 40 ms windows; timing comes from the preamble.
 */

import { BLOCK_DATA, DATA_SYMBOLS, END, GROUP, HIGH_TONES_HZ, LOW_TONES_HZ, PRE1, PRE2, SIM_ALPHABET, symbolDurationMs, toneDurationMs } from './symbols.js';

// The public surface of the code stays here: layout constants from symbols.ts, the decoder from decoder.ts.
export { SIM_ALPHABET, symbolDurationMs, toneDurationMs } from './symbols.js';
export { SimDecoder, type SimDecoderEvent } from './decoder.js';

const RAMP_MS = 5;

/** Per-tone peak amplitude: two tones give about -12 dBFS RMS, -6 dBFS peak. */
const TONE_AMPLITUDE = 8000;

/** Lowercases, strips accents, folds whitespace runs to one space, drops unsupported characters. */
export function normalizeSimText(text: string): string {
  const folded = text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/\s+/g, ' ');
  let out = '';
  for (const ch of folded) if (SIM_ALPHABET.includes(ch)) out += ch;
  return out.replace(/ {2,}/g, ' ').trim();
}

/** The symbol sequence for a phrase, or [] when nothing in it is encodable. */
export function simSymbolsOf(text: string): number[] {
  const norm = normalizeSimText(text);
  if (norm.length === 0) return [];
  const out = [PRE1, PRE2];
  for (let i = 0; i < norm.length; i += BLOCK_DATA) {
    let sum = 0;
    for (const ch of norm.slice(i, i + BLOCK_DATA)) {
      const value = SIM_ALPHABET.indexOf(ch);
      out.push(value);
      sum += value;
    }
    out.push(sum % DATA_SYMBOLS);
  }
  out.push(END);
  return out;
}

/** Encodes a phrase as PCM at `sampleRateHz`. Empty output when nothing in `text` is encodable. */
export function encodeText(text: string, sampleRateHz: 8000 | 16000 | 24000): Int16Array {
  const symbols = simSymbolsOf(text);
  const slotLen = (sampleRateHz * symbolDurationMs) / 1000;
  const toneLen = (sampleRateHz * toneDurationMs) / 1000;
  const rampLen = (sampleRateHz * RAMP_MS) / 1000;
  const out = new Int16Array(symbols.length * slotLen);
  for (let s = 0; s < symbols.length; s++) {
    const value = symbols[s]!;
    const wLow = (2 * Math.PI * LOW_TONES_HZ[Math.floor(value / GROUP)]!) / sampleRateHz;
    const wHigh = (2 * Math.PI * HIGH_TONES_HZ[value % GROUP]!) / sampleRateHz;
    const start = s * slotLen;
    for (let i = 0; i < toneLen; i++) {
      // Raised-cosine ramps so slot edges do not click (and do not splatter into other tones).
      const edge = Math.min(i, toneLen - 1 - i);
      const env = edge >= rampLen ? 1 : 0.5 - 0.5 * Math.cos((Math.PI * edge) / rampLen);
      const n = start + i; // absolute index: phase is continuous across the whole phrase
      out[n] = Math.round(TONE_AMPLITUDE * env * (Math.sin(wLow * n) + Math.sin(wHigh * n)));
    }
  }
  return out;
}
