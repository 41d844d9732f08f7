/**
 * The per-frame codec work of the carrier transport (carrier-transport.ts), by wire codec: G.711
 * mu-law and A-law through the lookup tables of audio/g711.ts, L16 little-endian; A-law to mu-law
 * transcoding for an ASR that takes mu-law. Allocation-free: every function writes into the
 * caller's buffers.
 */
import { alawDecode, alawDecodeSample, alawEncode, mulawDecode, mulawEncode, mulawEncodeSample, MULAW_SILENCE } from '../audio/g711.js';
import type { MediaCodec } from './carrier-protocol.js';

/** G.711 A-law -> mu-law, byte for byte (through the linear value). */
export const ALAW_TO_MULAW = Uint8Array.from({ length: 256 }, (_, a) => mulawEncodeSample(alawDecodeSample(a)) & 0xff);

export function silenceByte(codec: MediaCodec): number {
  return codec === 'pcmu' ? MULAW_SILENCE : codec === 'pcma' ? 0xd5 : 0;
}

export function decodeFrame(codec: MediaCodec, src: Uint8Array, dst: Int16Array): void {
  if (codec === 'pcmu') mulawDecode(src, dst);
  else if (codec === 'pcma') alawDecode(src, dst);
  else for (let i = 0; i < dst.length; i++) dst[i] = (src[2 * i]! | (src[2 * i + 1]! << 8)) << 16 >> 16;
}

export function encodeFrame(codec: MediaCodec, src: Int16Array, dst: Uint8Array): void {
  if (codec === 'pcmu') mulawEncode(src, dst);
  else if (codec === 'pcma') alawEncode(src, dst);
  else
    for (let i = 0; i < src.length; i++) {
      dst[2 * i] = src[i]! & 0xff;
      dst[2 * i + 1] = (src[i]! >> 8) & 0xff;
    }
}

export function copyInto(src: Uint8Array, dst: Buffer): number {
  const n = Math.min(src.length, dst.length);
  dst.set(src.subarray(0, n), 0);
  return n;
}

/**
 * `conceal` (audio/jitter-buffer.ts) for 16-bit little-endian PCM (that one is mu-law): the previous
 * frame repeated, fading by 6 dB per consecutive concealed frame, ramped within the frame, silence
 * from the 5th on.
 */
export function concealL16(prev: Uint8Array, out: Uint8Array, count: number): void {
  const k = Math.max(1, count);
  const startGain = Math.pow(0.5, k - 1);
  const endGain = k >= 4 ? 0 : Math.pow(0.5, k);
  const n = out.length >> 1;
  for (let i = 0; i < n; i++) {
    const s = k > 4 || 2 * i + 1 >= prev.length ? 0 : ((prev[2 * i]! | (prev[2 * i + 1]! << 8)) << 16) >> 16;
    const v = Math.round(s * (startGain + ((endGain - startGain) * i) / n));
    out[2 * i] = v & 0xff;
    out[2 * i + 1] = (v >> 8) & 0xff;
  }
}
