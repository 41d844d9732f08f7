import { readFileSync } from 'node:fs';
import { describe, it, expect } from 'vitest';
import { parseWav, pcm16FromBytes, stripWavHeader, wavHeader } from '../../helpers/wav.js';

const fixture = (name: string): Uint8Array =>
  new Uint8Array(readFileSync(new URL(`../../fixtures/audio/${name}`, import.meta.url)));

/** Assembles RIFF/WAVE from raw chunks so each parser gotcha gets its own file. */
function riff(chunks: Array<[string, Uint8Array]>, riffSize?: number): Uint8Array {
  const parts: number[] = [];
  for (const [id, body] of chunks) {
    parts.push(...Array.from(id, (c) => c.charCodeAt(0)));
    const size = (body as Uint8Array & { declaredSize?: number }).declaredSize ?? body.length;
    parts.push(size & 0xff, (size >>> 8) & 0xff, (size >>> 16) & 0xff, (size >>> 24) & 0xff);
    parts.push(...body);
    if (body.length & 1) parts.push(0);
  }
  const out = new Uint8Array(12 + parts.length);
  out.set([0x52, 0x49, 0x46, 0x46], 0);
  new DataView(out.buffer).setUint32(4, riffSize ?? 4 + parts.length, true);
  out.set([0x57, 0x41, 0x56, 0x45], 8);
  out.set(parts, 12);
  return out;
}

function fmtBody(code: number, channels: number, rateHz: number, bits: number, size = 16): Uint8Array {
  const body = new Uint8Array(size);
  const v = new DataView(body.buffer);
  v.setUint16(0, size === 40 ? 0xfffe : code, true);
  v.setUint16(2, channels, true);
  v.setUint32(4, rateHz, true);
  v.setUint32(8, (rateHz * channels * bits) / 8, true);
  v.setUint16(12, (channels * bits) / 8, true);
  v.setUint16(14, bits, true);
  if (size >= 18) v.setUint16(16, size - 18, true);
  if (size === 40) v.setUint16(24, code, true); // SubFormat GUID starts with the format code
  return body;
}

const withDeclaredSize = (body: Uint8Array, declaredSize: number): Uint8Array =>
  Object.assign(body, { declaredSize });

describe('parseWav', () => {
  it('reads the 16 kHz PCM fixture', () => {
    const wav = parseWav(fixture('caller-booking.16k.wav'));
    expect(wav).toMatchObject({ format: 'pcm16', sampleRateHz: 16000, channels: 1 });
    expect(wav.data.length).toBe(173284 - 44);
  });

  it('reads the mu-law fixture (18-byte fmt plus fact chunk)', () => {
    const wav = parseWav(fixture('caller-booking.8k-mulaw.wav'));
    expect(wav).toMatchObject({ format: 'mulaw', sampleRateHz: 8000, channels: 1 });
    expect(wav.data.length).toBeGreaterThan(40000);
  });

  it('skips LIST and odd-length chunks with their pad byte', () => {
    const data = new Uint8Array([1, 0, 2, 0]);
    const buf = riff([
      ['fmt ', fmtBody(1, 1, 16000, 16)],
      ['LIST', new Uint8Array(5)], // odd: followed by a pad byte
      ['data', data],
    ]);
    const wav = parseWav(buf);
    expect(Array.from(wav.data)).toEqual([1, 0, 2, 0]);
    expect(wav.data.buffer).toBe(buf.buffer); // a view, not a copy
  });

  it('reads extensible (40-byte) fmt chunks, A-law and a fact chunk', () => {
    const wav = parseWav(riff([['fmt ', fmtBody(6, 1, 8000, 8, 40)], ['fact', new Uint8Array(4)], ['data', new Uint8Array(3)]]));
    expect(wav).toMatchObject({ format: 'alaw', sampleRateHz: 8000 });
    expect(wav.data.length).toBe(3);
  });

  it.each([0, 0xffffffff])('treats a streaming data size of %d as the rest of the file', (size) => {
    const padded = riff([['fmt ', fmtBody(1, 1, 8000, 16)], ['data', withDeclaredSize(new Uint8Array(7), size)]], size);
    const buf = padded.subarray(0, padded.length - 1); // a streaming writer writes no pad byte
    // 7 bytes of 16-bit PCM: the trailing half sample is dropped.
    expect(parseWav(buf).data.length).toBe(6);
  });

  it('finds fmt after data when the data size is known', () => {
    const wav = parseWav(riff([['data', new Uint8Array(4)], ['fmt ', fmtBody(7, 1, 8000, 8)]]));
    expect(wav).toMatchObject({ format: 'mulaw', sampleRateHz: 8000 });
    expect(wav.data.length).toBe(4);
  });

  it.each([
    ['too short', new Uint8Array(4), /too short/],
    ['not RIFF', new TextEncoder().encode('NOPE\0\0\0\0WAVEfmt '), /RIFF/],
    ['not WAVE', new TextEncoder().encode('RIFF\0\0\0\0AVI fmt '), /WAVE/],
    ['no fmt', riff([['data', new Uint8Array(4)]]), /fmt/],
    ['no data', riff([['fmt ', fmtBody(1, 1, 8000, 16)]]), /data/],
    ['short fmt', riff([['fmt ', new Uint8Array(8)], ['data', new Uint8Array(2)]]), /at least 16/],
    ['unsupported format', riff([['fmt ', fmtBody(3, 1, 8000, 32)], ['data', new Uint8Array(4)]]), /unsupported format code 3/],
    ['chunk past the end', riff([['LIST', withDeclaredSize(new Uint8Array(2), 1000)]]), /past the end/],
  ])('throws a clear error on garbage: %s', (_name, buf, message) => {
    expect(() => parseWav(buf)).toThrow(message);
  });
});

describe('wavHeader', () => {
  it('writes the canonical 44-byte PCM header', () => {
    const header = wavHeader(1000, 16000);
    expect(header.length).toBe(44);
    const v = new DataView(header.buffer);
    expect(new TextDecoder().decode(header.subarray(0, 4))).toBe('RIFF');
    expect(v.getUint32(4, true)).toBe(1036);
    expect(new TextDecoder().decode(header.subarray(8, 16))).toBe('WAVEfmt ');
    expect([v.getUint32(16, true), v.getUint16(20, true), v.getUint16(22, true)]).toEqual([16, 1, 1]);
    expect([v.getUint32(24, true), v.getUint32(28, true), v.getUint16(32, true), v.getUint16(34, true)]).toEqual([16000, 32000, 2, 16]);
    expect(new TextDecoder().decode(header.subarray(36, 40))).toBe('data');
    expect(v.getUint32(40, true)).toBe(1000);
  });

  it('round-trips through parseWav for pcm16 and mulaw', () => {
    for (const format of ['pcm16', 'mulaw'] as const) {
      const body = new Uint8Array(320).fill(0x11);
      const header = wavHeader(body.length, 8000, format);
      const file = new Uint8Array(header.length + body.length);
      file.set(header);
      file.set(body, header.length);
      const wav = parseWav(file);
      expect(wav).toMatchObject({ format, sampleRateHz: 8000, channels: 1 });
      expect(wav.data.length).toBe(320);
      if (format === 'mulaw') expect(header.length).toBe(58);
    }
  });

  it('rejects a negative size', () => {
    expect(() => wavHeader(-1, 8000)).toThrow(RangeError);
  });
});

describe('stripWavHeader and pcm16FromBytes', () => {
  it('returns the data of a WAV and raw bytes unchanged', () => {
    const raw = new Uint8Array([1, 2, 3, 4]);
    expect(stripWavHeader(raw)).toBe(raw);
    const file = fixture('caller-booking.16k.wav');
    expect(stripWavHeader(file).byteOffset).toBe(file.byteOffset + 44);
  });

  it('is copy-free when aligned and copies little-endian when not', () => {
    const bytes = new Uint8Array([0x01, 0x00, 0xff, 0xff, 0x00, 0x80, 0x7f]);
    const aligned = pcm16FromBytes(bytes.subarray(0, 6));
    expect(Array.from(aligned)).toEqual([1, -1, -32768]);
    expect(aligned.buffer).toBe(bytes.buffer);
    const unaligned = pcm16FromBytes(bytes.subarray(1, 7)); // 00 ff | ff 00 | 80 7f
    expect(Array.from(unaligned)).toEqual([-256, 255, 32640]);
    expect(unaligned.buffer).not.toBe(bytes.buffer);
  });
});
