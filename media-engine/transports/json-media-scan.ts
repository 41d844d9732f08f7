/**
 * The inbound fast path of JSON carrier streams (Twilio, SignalWire, Telnyx): a `media` message is
 * read straight from the WebSocket message bytes, its payload base64-decoded into the caller's
 * scratch buffer, without a UTF-8 string, `JSON.parse`, an object per frame or a regular
 * expression. 50 of these arrive per second per call; at a few hundred calls the generic parse
 * (string + JSON.parse with its key internalisation + the base64 pattern) was ~9 % of the engine
 * in the `perf` profile, and the only allocation left on the inbound audio path.
 *
 * It accepts a strict subset: one JSON object whose `event` is `"media"`, strings without escapes
 * or control characters, plain non-negative integers, the nested `media` object, and nothing else
 * (an unknown key may carry a plain string or integer, ignored as JSON.parse's reader would). Any
 * other frame, and any frame whose fields are not valid, answers `false`: the caller then runs the
 * full parser (shared/protocol/twilio-media.ts, telnyx.ts), which accepts or names the reason. So
 * what this accepts is a subset of what the full parser accepts, with the same values (a
 * differential test checks this on random and mutated frames).
 */
import { MAX_CARRIER_FRAME_CHARS, MAX_MEDIA_PAYLOAD_CHARS } from '../../shared/protocol/twilio-media.js';

/** The keys and id rules of one carrier's media message. */
export interface JsonMediaDialect {
  /** Top-level key of the message counter (`sequenceNumber`, Telnyx `sequence_number`); optional in a frame. */
  readonly sequenceKey: string;
  /** Top-level key of the stream id (`streamSid`, Telnyx `stream_id`); optional in a frame. */
  readonly streamKey: string;
  /** Longest stream id. */
  readonly maxStreamIdChars: number;
  /** Whether a byte may appear in a stream id. */
  readonly streamIdByte: (c: number) => boolean;
}

/** What a scanned media message said; one per transport, overwritten per message. */
export interface ScannedMedia {
  /** -1 when the frame has none. */
  sequenceNumber: number;
  /** Byte range of the stream id in the message; `streamStart` -1 when the frame has none. */
  streamStart: number;
  streamEnd: number;
  track: 'inbound' | 'outbound';
  chunk: number;
  timestampMs: number;
  /** Payload bytes decoded into the scratch buffer. */
  payloadBytes: number;
}

export function newScannedMedia(): ScannedMedia {
  return { sequenceNumber: -1, streamStart: -1, streamEnd: -1, track: 'inbound', chunk: 0, timestampMs: 0, payloadBytes: 0 };
}

const isAlnum = (c: number): boolean => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);

/** Twilio sids (shared/protocol/twilio-media.ts `SID`): `[A-Za-z0-9_-]`, at most 64. */
export const twilioMediaDialect: JsonMediaDialect = {
  sequenceKey: 'sequenceNumber',
  streamKey: 'streamSid',
  maxStreamIdChars: 64,
  streamIdByte: (c) => isAlnum(c) || c === 0x5f || c === 0x2d,
};

/** Telnyx ids (transports/telnyx.ts `ID`): `[A-Za-z0-9_:.=+/-]`, 1 to 128. */
export const telnyxMediaDialect: JsonMediaDialect = {
  sequenceKey: 'sequence_number',
  streamKey: 'stream_id',
  maxStreamIdChars: 128,
  streamIdByte: (c) => isAlnum(c) || c === 0x5f || c === 0x3a || c === 0x2e || c === 0x3d || c === 0x2b || c === 0x2f || c === 0x2d,
};

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** base64 alphabet value per byte, -1 outside it. */
const B64_VALUE = new Int8Array(256).fill(-1);
for (let i = 0; i < 64; i++) B64_VALUE['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i;

/** Key bytes compared without a string per key. */
interface Key {
  readonly bytes: Uint8Array;
}
const key = (s: string): Key => ({ bytes: new TextEncoder().encode(s) });
const K_EVENT = key('event');
const K_MEDIA = key('media');
const K_TRACK = key('track');
const K_CHUNK = key('chunk');
const K_TIMESTAMP = key('timestamp');
const K_PAYLOAD = key('payload');
const V_MEDIA = key('media');
const V_INBOUND = key('inbound');
const V_OUTBOUND = key('outbound');

function same(b: Uint8Array, start: number, end: number, k: Key): boolean {
  const kb = k.bytes;
  if (end - start !== kb.length) return false;
  for (let i = 0; i < kb.length; i++) if (b[start + i] !== kb[i]) return false;
  return true;
}

/**
 * One scanner per dialect; `scan` is not re-entrant (its cursor state lives in the instance), which
 * the event loop guarantees: a message is scanned to the end before the next one is read.
 */
export class JsonMediaScanner {
  private readonly seqKey: Key;
  private readonly streamKey: Key;
  private b: Uint8Array = new Uint8Array(0);
  private i = 0;
  private n = 0;
  /** Range of the last string token (between the quotes). */
  private sStart = 0;
  private sEnd = 0;
  /** Value of the last integer token, or of a digit string read by `counter`. */
  private int = 0;
  /** Members already read (bit flags): a repeated one goes to the full parser. */
  private topSeen = 0;
  private mediaSeen = 0;

  constructor(private readonly dialect: JsonMediaDialect) {
    this.seqKey = key(dialect.sequenceKey);
    this.streamKey = key(dialect.streamKey);
  }

  /**
   * Reads `bytes` as a media message into `out`, its payload decoded into `scratch` (from 0).
   * `false`: not a media message of the subset, or not valid: use the full parser.
   */
  scan(bytes: Uint8Array, out: ScannedMedia, scratch: Uint8Array): boolean {
    if (bytes.length > MAX_CARRIER_FRAME_CHARS) return false;
    this.b = bytes;
    this.i = 0;
    this.n = bytes.length;
    out.sequenceNumber = -1;
    out.streamStart = -1;
    this.topSeen = 0;
    this.ws();
    if (!this.object(0, out, scratch)) return false;
    this.ws();
    return this.i === this.n && (this.topSeen & 3) === 3;
  }

  /** An object of members (`level` 0: the message, 1: its `media`), each read by that level's member reader. */
  private object(level: 0 | 1, out: ScannedMedia, scratch: Uint8Array): boolean {
    if (!this.take(0x7b)) return false;
    this.ws();
    if (this.peek() === 0x7d) return false;
    for (;;) {
      if (!this.string()) return false;
      const ks = this.sStart;
      const ke = this.sEnd;
      this.ws();
      if (!this.take(0x3a)) return false;
      this.ws();
      if (!(level === 0 ? this.topMember(ks, ke, out, scratch) : this.mediaMember(ks, ke, out, scratch))) return false;
      this.ws();
      const c = this.next();
      if (c !== 0x2c) return c === 0x7d;
      this.ws();
    }
  }

  /** A member of the message: event, media, the counter, the stream id, or an ignored scalar. */
  private topMember(ks: number, ke: number, out: ScannedMedia, scratch: Uint8Array): boolean {
    const b = this.b;
    if (same(b, ks, ke, K_EVENT)) {
      if (this.topSeen & 1 || !this.string() || !same(b, this.sStart, this.sEnd, V_MEDIA)) return false;
      this.topSeen |= 1;
    } else if (same(b, ks, ke, K_MEDIA)) {
      if (this.topSeen & 2) return false;
      this.mediaSeen = 0;
      out.track = 'inbound';
      // chunk, timestamp and payload are required; track is optional.
      if (!this.object(1, out, scratch) || (this.mediaSeen & 14) !== 14) return false;
      this.topSeen |= 2;
    } else if (same(b, ks, ke, this.seqKey)) {
      if (this.topSeen & 4 || !this.counter()) return false;
      out.sequenceNumber = this.int;
      this.topSeen |= 4;
    } else if (same(b, ks, ke, this.streamKey)) {
      if (this.topSeen & 8 || !this.string() || !this.streamId()) return false;
      out.streamStart = this.sStart;
      out.streamEnd = this.sEnd;
      this.topSeen |= 8;
    } else {
      return this.skipScalar();
    }
    return true;
  }

  /** A member of `media`: track, chunk, timestamp, payload, or an ignored scalar. */
  private mediaMember(ks: number, ke: number, out: ScannedMedia, scratch: Uint8Array): boolean {
    const b = this.b;
    if (same(b, ks, ke, K_TRACK)) {
      if (this.mediaSeen & 1 || !this.string()) return false;
      if (same(b, this.sStart, this.sEnd, V_INBOUND)) out.track = 'inbound';
      else if (same(b, this.sStart, this.sEnd, V_OUTBOUND)) out.track = 'outbound';
      else return false;
      this.mediaSeen |= 1;
    } else if (same(b, ks, ke, K_CHUNK)) {
      if (this.mediaSeen & 2 || !this.counter()) return false;
      out.chunk = this.int;
      this.mediaSeen |= 2;
    } else if (same(b, ks, ke, K_TIMESTAMP)) {
      if (this.mediaSeen & 4 || !this.counter()) return false;
      out.timestampMs = this.int;
      this.mediaSeen |= 4;
    } else if (same(b, ks, ke, K_PAYLOAD)) {
      if (this.mediaSeen & 8 || !this.string()) return false;
      const n = decodeBase64(b, this.sStart, this.sEnd, scratch);
      if (n < 0) return false;
      out.payloadBytes = n;
      this.mediaSeen |= 8;
    } else {
      return this.skipScalar();
    }
    return true;
  }

  /** A counter (shared/protocol/twilio-media.ts `parseCounter`): 1-16 quoted digits, or a plain JSON integer; a safe integer. */
  private counter(): boolean {
    if (this.peek() === QUOTE) {
      if (!this.string()) return false;
      const len = this.sEnd - this.sStart;
      if (len < 1 || len > 16) return false;
      return this.digits(this.sStart, this.sEnd);
    }
    const start = this.i;
    while (this.i < this.n && this.b[this.i]! >= 0x30 && this.b[this.i]! <= 0x39) this.i++;
    const len = this.i - start;
    // JSON has no leading zeros; a fraction, exponent or sign goes to the full parser.
    if (len < 1 || len > 16 || (len > 1 && this.b[start] === 0x30)) return false;
    const c = this.peek();
    if (c === 0x2e || c === 0x65 || c === 0x45) return false;
    return this.digits(start, this.i);
  }

  private digits(start: number, end: number): boolean {
    let v = 0;
    for (let k = start; k < end; k++) {
      const d = this.b[k]! - 0x30;
      if (d < 0 || d > 9) return false;
      v = v * 10 + d;
    }
    if (!Number.isSafeInteger(v)) return false;
    this.int = v;
    return true;
  }

  private streamId(): boolean {
    const len = this.sEnd - this.sStart;
    if (len < 1 || len > this.dialect.maxStreamIdChars) return false;
    for (let k = this.sStart; k < this.sEnd; k++) if (!this.dialect.streamIdByte(this.b[k]!)) return false;
    return true;
  }

  /** An unknown key's value: a plain string or a plain non-negative integer; anything else is for the full parser. */
  private skipScalar(): boolean {
    if (this.peek() === QUOTE) return this.string();
    return this.counter();
  }

  /** A string without escapes or control characters; its content range in sStart..sEnd. */
  private string(): boolean {
    if (!this.take(QUOTE)) return false;
    const start = this.i;
    const b = this.b;
    const n = this.n;
    let k = start;
    for (; k < n; k++) {
      const c = b[k]!;
      if (c === QUOTE) break;
      if (c === BACKSLASH || c < 0x20) return false;
    }
    if (k >= n) return false;
    this.sStart = start;
    this.sEnd = k;
    this.i = k + 1;
    return true;
  }

  private ws(): void {
    const b = this.b;
    while (this.i < this.n) {
      const c = b[this.i]!;
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
      this.i++;
    }
  }

  private peek(): number {
    return this.i < this.n ? this.b[this.i]! : -1;
  }

  private next(): number {
    return this.i < this.n ? this.b[this.i++]! : -1;
  }

  private take(c: number): boolean {
    if (this.peek() !== c) return false;
    this.i++;
    return true;
  }
}

/**
 * base64 `b[start..end)` decoded into `out` from 0; the number of bytes, or -1 when it is not a
 * payload the full parser accepts (alphabet, `=` only as the last one or two of a length that is
 * a non-zero multiple of 4, at most MAX_MEDIA_PAYLOAD_CHARS). Same bytes as Buffer's decoder.
 */
export function decodeBase64(b: Uint8Array, start: number, end: number, out: Uint8Array): number {
  const len = end - start;
  if (len === 0 || len % 4 !== 0 || len > MAX_MEDIA_PAYLOAD_CHARS) return -1;
  let pad = 0;
  if (b[end - 1] === 0x3d) pad = b[end - 2] === 0x3d ? 2 : 1;
  // At least one alphabet character before the padding (`={0,2}` after `[A-Za-z0-9+/]+`).
  if (len - pad < 1) return -1;
  const full = end - (pad ? 4 : 0);
  let o = 0;
  let k = start;
  for (; k < full; k += 4) {
    const a = B64_VALUE[b[k]!]!;
    const c1 = B64_VALUE[b[k + 1]!]!;
    const c2 = B64_VALUE[b[k + 2]!]!;
    const c3 = B64_VALUE[b[k + 3]!]!;
    if ((a | c1 | c2 | c3) < 0) return -1;
    const v = (a << 18) | (c1 << 12) | (c2 << 6) | c3;
    out[o++] = v >> 16;
    out[o++] = (v >> 8) & 0xff;
    out[o++] = v & 0xff;
  }
  if (pad) {
    const a = B64_VALUE[b[k]!]!;
    const c1 = B64_VALUE[b[k + 1]!]!;
    if ((a | c1) < 0) return -1;
    out[o++] = ((a << 2) | (c1 >> 4)) & 0xff;
    if (pad === 1) {
      const c2 = B64_VALUE[b[k + 2]!]!;
      if (c2 < 0) return -1;
      out[o++] = ((c1 << 4) | (c2 >> 2)) & 0xff;
    }
  }
  return o;
}
