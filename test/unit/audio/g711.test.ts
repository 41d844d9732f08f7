import { describe, it, expect } from 'vitest';
import {
  ALAW_SILENCE,
  MULAW_SILENCE,
  alawDecode,
  alawDecodeSample,
  alawEncode,
  alawEncodeSample,
  mulawDecode,
  mulawDecodeSample,
  mulawEncode,
  mulawEncodeSample,
} from '../../../media-engine/audio/g711.js';

/** Sun g711.c mu-law decode, written out independently of alawmulaw (docs/protocols.md section 10). */
function sunMulawDecode(code: number): number {
  const u = ~code & 0xff;
  const exponent = (u >> 4) & 0x07;
  const t = (((u & 0x0f) << 3) + 0x84) << exponent;
  return u & 0x80 ? 0x84 - t : t - 0x84;
}

/** Sun g711.c alaw2linear. */
function sunAlawDecode(code: number): number {
  const a = code ^ 0x55;
  let t = (a & 0x0f) << 4;
  const seg = (a & 0x70) >> 4;
  if (seg === 0) t += 8;
  else if (seg === 1) t += 0x108;
  else t = (t + 0x108) << (seg - 1);
  return a & 0x80 ? t : -t;
}

/** Half the quantisation step of the segment a code decodes from: G.711's rounding error bound. */
function mulawHalfStep(code: number): number {
  const exponent = ((~code & 0xff) >> 4) & 0x07;
  return 1 << (exponent + 2);
}
function alawHalfStep(code: number): number {
  const seg = ((code ^ 0x55) & 0x70) >> 4;
  return seg <= 1 ? 8 : 1 << (seg + 2);
}

describe('G.711 known vectors', () => {
  it('mu-law decodes the documented codes', () => {
    expect(mulawDecodeSample(0xff)).toBe(0);
    expect(mulawDecodeSample(0x7f)).toBe(0);
    expect(mulawDecodeSample(0x80)).toBe(32124);
    expect(mulawDecodeSample(0x00)).toBe(-32124);
    expect(mulawDecodeSample(MULAW_SILENCE)).toBe(0);
  });

  it('mu-law encodes full scale and zero', () => {
    expect(mulawEncodeSample(32767)).toBe(0x80);
    expect(mulawEncodeSample(-32768)).toBe(0x00);
    expect(mulawEncodeSample(0)).toBe(0xff);
  });

  it('A-law decodes the documented codes and full scale', () => {
    expect(alawDecodeSample(0xd5)).toBe(8);
    expect(alawDecodeSample(0x55)).toBe(-8);
    expect(alawDecodeSample(ALAW_SILENCE)).toBe(8);
    expect(alawDecodeSample(0xaa)).toBe(32256);
    expect(alawDecodeSample(0x2a)).toBe(-32256);
    expect(alawEncodeSample(0)).toBe(0xd5);
  });

  it('decode tables match the Sun reference for all 256 codes', () => {
    for (let code = 0; code < 256; code++) {
      expect(mulawDecodeSample(code)).toBe(sunMulawDecode(code));
      expect(alawDecodeSample(code)).toBe(sunAlawDecode(code));
    }
  });
});

describe('G.711 round trip over all 65536 sample values', () => {
  const all = new Int16Array(65536);
  for (let i = 0; i < 65536; i++) all[i] = i - 32768;

  it('mu-law error stays within half a step (plus clipping above 32124)', () => {
    const codes = new Uint8Array(all.length);
    const back = new Int16Array(all.length);
    mulawEncode(all, codes);
    mulawDecode(codes, back);
    let worst = 0;
    let outOfBound = 0;
    for (let i = 0; i < all.length; i++) {
      const x = all[i]!;
      const err = Math.abs(back[i]! - x);
      const clipping = Math.max(0, Math.abs(x) - 32124);
      if (err > Math.max(mulawHalfStep(codes[i]!), clipping)) outOfBound++;
      worst = Math.max(worst, err);
    }
    expect(outOfBound).toBe(0);
    expect(worst).toBe(644); // -32768 against the -32124 ceiling
  });

  it('A-law error stays within half a step (plus clipping above 32256)', () => {
    const codes = new Uint8Array(all.length);
    const back = new Int16Array(all.length);
    alawEncode(all, codes);
    alawDecode(codes, back);
    let outOfBound = 0;
    for (let i = 0; i < all.length; i++) {
      const x = all[i]!;
      const err = Math.abs(back[i]! - x);
      const clipping = Math.max(0, Math.abs(x) - 32256);
      if (err > Math.max(alawHalfStep(codes[i]!), clipping)) outOfBound++;
    }
    expect(outOfBound).toBe(0);
  });

  it('re-encoding a decoded code gives the same code (tables agree with each other)', () => {
    for (let code = 0; code < 256; code++) {
      if (code !== 0x7f) expect(mulawEncodeSample(mulawDecodeSample(code))).toBe(code); // 0x7f is -0, encodes as +0 (0xff)
      expect(alawEncodeSample(alawDecodeSample(code))).toBe(code);
    }
  });
});

describe('G.711 array API', () => {
  it('writes into a longer destination without touching the rest', () => {
    const dst = new Int16Array(4).fill(7);
    mulawDecode(new Uint8Array([0x80, 0x00]), dst);
    expect(Array.from(dst)).toEqual([32124, -32124, 7, 7]);
  });

  it('throws when the destination is too short', () => {
    expect(() => mulawEncode(new Int16Array(3), new Uint8Array(2))).toThrow(RangeError);
    expect(() => alawDecode(new Uint8Array(3), new Int16Array(2))).toThrow(RangeError);
  });
});
