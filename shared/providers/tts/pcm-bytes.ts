/**
 * Byte-stream -> sample helpers for TTS bodies. HTTP chunk boundaries fall anywhere, so a 16-bit
 * sample can be split across two chunks: the odd byte is carried to the next chunk.
 */
import alawmulaw from 'alawmulaw';

/** Reassembles S16LE samples from arbitrary byte chunks. Holds at most one byte between calls. */
export class S16leAssembler {
  private carry = -1;

  push(bytes: Uint8Array): Int16Array {
    const have = bytes.byteLength + (this.carry >= 0 ? 1 : 0);
    const out = new Int16Array(have >> 1);
    let i = 0;
    let o = 0;
    if (this.carry >= 0 && out.length > 0) {
      out[o++] = ((bytes[0]! << 8) | this.carry) << 16 >> 16;
      i = 1;
      this.carry = -1;
    }
    for (; i + 1 < bytes.byteLength; i += 2) out[o++] = ((bytes[i + 1]! << 8) | bytes[i]!) << 16 >> 16;
    if (i < bytes.byteLength) this.carry = bytes[i]!;
    return out;
  }

  /** True when a byte is still waiting for its partner (a truncated body ends odd). */
  get pendingByte(): boolean {
    return this.carry >= 0;
  }
}

/**
 * G.711 mu-law byte -> PCM, as a 256-entry table built once from alawmulaw (the default import is
 * the only form that works at run time, see DEPENDENCIES.md). Exact carrier sample values: no
 * resampling, no rounding.
 */
export const MULAW_DECODE_TABLE: Int16Array = Int16Array.from({ length: 256 }, (_, b) =>
  alawmulaw.mulaw.decodeSample(b),
);

export function decodeMulaw(bytes: Uint8Array): Int16Array {
  const out = new Int16Array(bytes.byteLength);
  for (let i = 0; i < bytes.byteLength; i++) out[i] = MULAW_DECODE_TABLE[bytes[i]!]!;
  return out;
}

/** Copies `samples` out as little-endian bytes (for sockets and fakes). */
export function int16ToBytes(samples: Int16Array): Buffer {
  const b = Buffer.allocUnsafe(samples.length * 2);
  for (let i = 0; i < samples.length; i++) b.writeInt16LE(samples[i]!, i * 2);
  return b;
}

/** Bytes of a WAV header we wait for before giving up on finding its `data` chunk. */
const MAX_WAV_HEADER_BYTES = 4096;

export type WavProbe =
  | { kind: 'need_more' }
  | { kind: 'raw' }
  | { kind: 'wav'; dataOffset: number; sampleRateHz: number }
  | { kind: 'unsupported'; reason: string };

/**
 * Raw PCM was asked for, but OpenAI-compatible servers sometimes answer a WAV file: its 44+ byte
 * header played as samples is a click (and a wrong rate if the file is not at the asked one).
 * Looks at the body's first bytes: `raw` when they are not RIFF/WAVE, else where the samples
 * start and at what rate (16-bit mono PCM only).
 */
export function probeWav(head: Uint8Array): WavProbe {
  const tag = (at: number) => String.fromCharCode(head[at]!, head[at + 1]!, head[at + 2]!, head[at + 3]!);
  if (head.byteLength < 12) return head.byteLength >= 4 && tag(0) !== 'RIFF' ? { kind: 'raw' } : { kind: 'need_more' };
  if (tag(0) !== 'RIFF' || tag(8) !== 'WAVE') return { kind: 'raw' };
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  let rate = 0;
  for (let at = 12; at + 8 <= head.byteLength; ) {
    const id = tag(at);
    const size = view.getUint32(at + 4, true);
    if (id === 'data') {
      if (!rate) return { kind: 'unsupported', reason: 'WAV data before its fmt chunk' };
      return { kind: 'wav', dataOffset: at + 8, sampleRateHz: rate };
    }
    if (id === 'fmt ') {
      if (at + 24 > head.byteLength) break;
      const format = view.getUint16(at + 8, true);
      const channels = view.getUint16(at + 10, true);
      const bits = view.getUint16(at + 22, true);
      if (format !== 1 || channels !== 1 || bits !== 16) return { kind: 'unsupported', reason: `WAV of format ${format}, ${channels} channels, ${bits} bits (16-bit mono PCM expected)` };
      rate = view.getUint32(at + 12, true);
    }
    at += 8 + size + (size & 1);
  }
  return head.byteLength >= MAX_WAV_HEADER_BYTES ? { kind: 'unsupported', reason: `no WAV data chunk in the first ${MAX_WAV_HEADER_BYTES} bytes` } : { kind: 'need_more' };
}
