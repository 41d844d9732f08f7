/**
 * The outbound Twilio `media` text frame, built without per-frame allocation: once per stream a
 * template `{"event":"media","streamSid":"…","media":{"payload":"<216 chars>"}}` is laid out,
 * then every 20 ms the mu-law frame is base64-encoded straight into the payload slot. Apart from
 * twilio.ts because it is byte-level encoding with its own unit tests, not transport state.
 */
import { jsonMediaTemplate } from './carrier-protocol.js';

const B64 = new TextEncoder().encode('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/');
const PAD = 0x3d; // '='

/** base64 of `src` written into `dst` at `off` (no allocation); returns the bytes written. */
export function base64Into(src: Uint8Array, dst: Uint8Array, off: number): number {
  let o = off;
  const n = src.length;
  let i = 0;
  for (; i + 2 < n; i += 3) {
    const v = (src[i]! << 16) | (src[i + 1]! << 8) | src[i + 2]!;
    dst[o++] = B64[v >> 18]!;
    dst[o++] = B64[(v >> 12) & 63]!;
    dst[o++] = B64[(v >> 6) & 63]!;
    dst[o++] = B64[v & 63]!;
  }
  if (i < n) {
    const v = (src[i]! << 16) | ((i + 1 < n ? src[i + 1]! : 0) << 8);
    dst[o++] = B64[v >> 18]!;
    dst[o++] = B64[(v >> 12) & 63]!;
    dst[o++] = i + 1 < n ? B64[(v >> 6) & 63]! : PAD;
    dst[o++] = PAD;
  }
  return o - off;
}

/** The `media` frame of stream `sid` with an empty payload slot of `frames` x 160 bytes at `payloadOffset`. */
export function mediaFrameTemplate(sid: string, frames = 1) {
  return jsonMediaTemplate(`{"event":"media","streamSid":${JSON.stringify(sid)},"media":{"payload":"`, '"}}', 160 * frames);
}
