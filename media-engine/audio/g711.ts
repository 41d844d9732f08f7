/**
 * G.711 mu-law and A-law codecs as table lookups into caller-provided arrays.
 *
 * Tables are built once at module load from alawmulaw's per-sample functions (the Sun reference
 * algorithm, see docs/protocols.md section 10), so per-frame work is one indexed load per sample and
 * allocates nothing. Memory: 2 x 65536 bytes (encode) + 2 x 256 x 2 bytes (decode).
 */
import alawmulaw from 'alawmulaw';

/** mu-law code for digital silence (decodes to 0). */
export const MULAW_SILENCE = 0xff;
/** A-law code closest to silence (decodes to +8). */
export const ALAW_SILENCE = 0xd5;

function buildDecodeTable(decodeSample: (code: number) => number): Int16Array {
  const table = new Int16Array(256);
  for (let code = 0; code < 256; code++) table[code] = decodeSample(code);
  return table;
}

/** Indexed by the int16 sample reinterpreted as uint16 (`sample & 0xffff`). */
function buildEncodeTable(encodeSample: (sample: number) => number): Uint8Array {
  const table = new Uint8Array(65536);
  for (let sample = -32768; sample <= 32767; sample++) {
    // alawmulaw returns the byte as a negative number for some codes (`~x`), so mask it.
    table[sample & 0xffff] = encodeSample(sample) & 0xff;
  }
  return table;
}

const MULAW_DECODE = buildDecodeTable(alawmulaw.mulaw.decodeSample);
const ALAW_DECODE = buildDecodeTable(alawmulaw.alaw.decodeSample);
const MULAW_ENCODE = buildEncodeTable(alawmulaw.mulaw.encodeSample);
const ALAW_ENCODE = buildEncodeTable(alawmulaw.alaw.encodeSample);

function checkLengths(srcLength: number, dstLength: number): void {
  // A short destination would silently truncate audio; that is always a caller bug.
  if (dstLength < srcLength) {
    throw new RangeError(`G.711: destination holds ${dstLength} samples, source has ${srcLength}`);
  }
}

/** Decodes `src.length` mu-law bytes into `dst[0..src.length)`. */
export function mulawDecode(src: Uint8Array, dst: Int16Array): void {
  checkLengths(src.length, dst.length);
  for (let i = 0; i < src.length; i++) dst[i] = MULAW_DECODE[src[i]!]!;
}

/** Encodes `src.length` int16 samples into `dst[0..src.length)` as mu-law bytes. */
export function mulawEncode(src: Int16Array, dst: Uint8Array): void {
  checkLengths(src.length, dst.length);
  for (let i = 0; i < src.length; i++) dst[i] = MULAW_ENCODE[src[i]! & 0xffff]!;
}

/** Decodes `src.length` A-law bytes into `dst[0..src.length)`. */
export function alawDecode(src: Uint8Array, dst: Int16Array): void {
  checkLengths(src.length, dst.length);
  for (let i = 0; i < src.length; i++) dst[i] = ALAW_DECODE[src[i]!]!;
}

/** Encodes `src.length` int16 samples into `dst[0..src.length)` as A-law bytes. */
export function alawEncode(src: Int16Array, dst: Uint8Array): void {
  checkLengths(src.length, dst.length);
  for (let i = 0; i < src.length; i++) dst[i] = ALAW_ENCODE[src[i]! & 0xffff]!;
}

/** Single-sample helpers (table lookups) for tests and non-hot paths. */
export function mulawDecodeSample(code: number): number {
  return MULAW_DECODE[code & 0xff]!;
}
export function mulawEncodeSample(sample: number): number {
  return MULAW_ENCODE[sample & 0xffff]!;
}
export function alawDecodeSample(code: number): number {
  return ALAW_DECODE[code & 0xff]!;
}
export function alawEncodeSample(sample: number): number {
  return ALAW_ENCODE[sample & 0xffff]!;
}
