/**
 * RIFF/WAVE for 16-bit PCM mono: what Flite writes and what OpenAI-compatible transcription
 * servers read. Parsing walks the chunk list (a `LIST` chunk may sit before `data`), so a header
 * longer than the canonical 44 bytes is read correctly.
 */

export interface WavPcm {
  samples: Int16Array;
  sampleRateHz: number;
}

/** Encodes S16LE mono PCM as a canonical 44-byte-header WAV file. */
export function encodeWav(samples: Int16Array, sampleRateHz: number): Uint8Array {
  const dataBytes = samples.length * 2;
  const out = new Uint8Array(44 + dataBytes);
  const v = new DataView(out.buffer);
  const ascii = (at: number, s: string) => {
    for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i);
  };
  ascii(0, 'RIFF');
  v.setUint32(4, 36 + dataBytes, true);
  ascii(8, 'WAVE');
  ascii(12, 'fmt ');
  v.setUint32(16, 16, true);
  v.setUint16(20, 1, true); // PCM
  v.setUint16(22, 1, true); // mono
  v.setUint32(24, sampleRateHz, true);
  v.setUint32(28, sampleRateHz * 2, true);
  v.setUint16(32, 2, true);
  v.setUint16(34, 16, true);
  ascii(36, 'data');
  v.setUint32(40, dataBytes, true);
  for (let i = 0; i < samples.length; i++) v.setInt16(44 + 2 * i, samples[i]!, true);
  return out;
}

/** Parses a 16-bit PCM mono WAV; throws a RangeError naming what is wrong otherwise. */
export function parseWav(bytes: Uint8Array): WavPcm {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const tag = (at: number) => String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);
  if (bytes.byteLength < 12 || tag(0) !== 'RIFF' || tag(8) !== 'WAVE') throw new RangeError('not a RIFF/WAVE file');
  let at = 12;
  let rate = 0;
  while (at + 8 <= bytes.byteLength) {
    const id = tag(at);
    const size = v.getUint32(at + 4, true);
    const body = at + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > bytes.byteLength) throw new RangeError('short fmt chunk');
      const format = v.getUint16(body, true);
      const channels = v.getUint16(body + 2, true);
      const bits = v.getUint16(body + 14, true);
      if (format !== 1 || channels !== 1 || bits !== 16) throw new RangeError(`unsupported WAV format ${format}/${channels}ch/${bits}bit (want PCM mono 16-bit)`);
      rate = v.getUint32(body + 4, true);
    } else if (id === 'data') {
      if (!rate) throw new RangeError('data chunk before fmt chunk');
      // Some writers leave the size at 0 or 0xffffffff when streaming: take what is there.
      const end = Math.min(bytes.byteLength, size > 0 && size !== 0xffffffff ? body + size : bytes.byteLength);
      const n = (end - body) >> 1;
      const samples = new Int16Array(n);
      for (let i = 0; i < n; i++) samples[i] = v.getInt16(body + 2 * i, true);
      return { samples, sampleRateHz: rate };
    }
    at = body + size + (size & 1); // chunks are word-aligned
  }
  throw new RangeError('no data chunk');
}
