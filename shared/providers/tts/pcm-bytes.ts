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
