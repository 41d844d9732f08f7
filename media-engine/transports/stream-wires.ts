/**
 * The wire of each non-Twilio media stream, for `StreamTransport` (stream-transport.ts): how its
 * frames parse (shared/protocol/<carrier>-stream.ts) and how our audio, marks and clears are
 * written. Outbound audio is written without per-frame allocation where the wire allows it:
 * a template text frame whose base64 payload slot is rewritten in place (Plivo, Exotel) or the
 * PCM bytes themselves as a binary frame (Vonage).
 */
import { mulawEncode } from '../audio/g711.js';
import { exotelClear, exotelMark, exotelMediaTemplate, EXOTEL_OUT_FRAMES_PER_MESSAGE, parseExotelFrame } from '../../shared/protocol/exotel-stream.js';
import { parsePlivoFrame, plivoCheckpoint, plivoClearAudio, plivoPlayAudioTemplate } from '../../shared/protocol/plivo-stream.js';
import type { StreamEncoding, StreamParse } from '../../shared/protocol/stream-frames.js';
import { parseVonageBinary, parseVonageText, vonageNotify, VONAGE_CLEAR } from '../../shared/protocol/vonage-stream.js';
import { base64Into } from './twilio-media-frame.js';

export type StreamCarrier = 'plivo' | 'vonage' | 'exotel';
export const STREAM_CARRIERS: readonly StreamCarrier[] = ['plivo', 'vonage', 'exotel'];

export interface StreamWire {
  readonly carrier: StreamCarrier;
  /** Audio on the wire, inbound and outbound. */
  readonly encoding: StreamEncoding;
  /** The rate until the stream's `start` says otherwise (only Vonage's can: 8 or 16 kHz). */
  readonly sampleRateHz: 8000 | 16000;
  /** Most audio the jitter buffer holds (default 120 ms); Exotel's 100 ms messages need more. */
  readonly maxDepthMs?: number;
  parseText(text: string): StreamParse;
  /** Binary frames: Vonage's audio; on the other wires a protocol violation (undefined). */
  parseBinary?(bytes: Uint8Array): StreamParse;
  /** The writer for one stream, once its id and rate are known. */
  writer(streamId: string, sampleRateHz: number): OutWriter;
}

export interface OutWriter {
  readonly binary: boolean;
  /** One 20 ms frame of PCM; the message to send now, or undefined while a batch fills (Exotel). */
  audio(frame: Int16Array): Uint8Array | undefined;
  /** What a partially filled batch holds, as a message (before a mark: the mark must follow it). */
  flush(): Uint8Array | undefined;
  /** Forgets a partially filled batch (a clear). */
  drop(): void;
  mark(name: string): string;
  clear(): string;
}

export const WIRES: Record<StreamCarrier, StreamWire> = {
  plivo: { carrier: 'plivo', encoding: 'mulaw', sampleRateHz: 8000, parseText: parsePlivoFrame, writer: (id) => new TemplateWriter(plivoPlayAudioTemplate(id), 1, 'mulaw', (n) => plivoCheckpoint(id, n), () => plivoClearAudio(id)) },
  exotel: {
    carrier: 'exotel',
    encoding: 'l16',
    sampleRateHz: 8000,
    // A message is 100 ms: two in flight plus jitter must fit, or a late one overflows the ring.
    maxDepthMs: 300,
    parseText: parseExotelFrame,
    writer: (id) => new TemplateWriter(exotelMediaTemplate(id), EXOTEL_OUT_FRAMES_PER_MESSAGE, 'l16', (n) => exotelMark(id, n), () => exotelClear(id)),
  },
  vonage: { carrier: 'vonage', encoding: 'l16', sampleRateHz: 16000, parseText: parseVonageText, parseBinary: parseVonageBinary, writer: () => new BinaryPcmWriter() },
};

/**
 * A JSON frame with a base64 payload slot of `framesPerMessage` 20 ms frames: audio is encoded
 * (mu-law, or little-endian PCM) into a batch and base64-written into the template in place.
 */
class TemplateWriter implements OutWriter {
  readonly binary = false;
  private readonly enc = new TextEncoder();
  private readonly head: Uint8Array;
  private readonly tail: Uint8Array;
  private batch: Uint8Array = new Uint8Array(0);
  private filled = 0;
  private frameBytes = 0;
  /** Full-size message, reused; a short flush builds its own. */
  private full: Uint8Array = new Uint8Array(0);

  constructor(
    tpl: { head: string; tail: string },
    private readonly framesPerMessage: number,
    private readonly encoding: StreamEncoding,
    private readonly markMsg: (name: string) => string,
    private readonly clearMsg: () => string,
  ) {
    this.head = this.enc.encode(tpl.head);
    this.tail = this.enc.encode(tpl.tail);
  }

  audio(frame: Int16Array): Uint8Array | undefined {
    const bytes = this.encoding === 'mulaw' ? frame.length : frame.length * 2;
    if (bytes !== this.frameBytes) {
      this.frameBytes = bytes;
      this.batch = new Uint8Array(bytes * this.framesPerMessage);
      this.full = this.layout(this.batch.length);
      this.filled = 0;
    }
    const slot = this.batch.subarray(this.filled, this.filled + bytes);
    if (this.encoding === 'mulaw') mulawEncode(frame, slot);
    else writePcmLE(frame, slot);
    this.filled += bytes;
    if (this.filled < this.batch.length) return undefined;
    this.filled = 0;
    base64Into(this.batch, this.full, this.head.length);
    return this.full;
  }

  flush(): Uint8Array | undefined {
    if (this.filled === 0) return undefined;
    const msg = this.layout(this.filled);
    base64Into(this.batch.subarray(0, this.filled), msg, this.head.length);
    this.filled = 0;
    return msg;
  }

  drop(): void {
    this.filled = 0;
  }

  mark(name: string): string {
    return this.markMsg(name);
  }

  clear(): string {
    return this.clearMsg();
  }

  private layout(payloadBytes: number): Uint8Array {
    const chars = Math.ceil(payloadBytes / 3) * 4;
    const msg = new Uint8Array(this.head.length + chars + this.tail.length);
    msg.set(this.head, 0);
    msg.set(this.tail, this.head.length + chars);
    return msg;
  }
}

/** Vonage: each frame as its little-endian PCM bytes, one binary message per 20 ms. */
class BinaryPcmWriter implements OutWriter {
  readonly binary = true;
  private out: Uint8Array = new Uint8Array(0);

  audio(frame: Int16Array): Uint8Array {
    if (this.out.length !== frame.length * 2) this.out = new Uint8Array(frame.length * 2);
    writePcmLE(frame, this.out);
    return this.out;
  }

  flush(): undefined {
    return undefined;
  }

  drop(): void {}

  mark(name: string): string {
    return vonageNotify(name);
  }

  clear(): string {
    return VONAGE_CLEAR;
  }
}

/** Int16 samples as little-endian bytes (the wire's byte order, whatever the host's). */
export function writePcmLE(src: Int16Array, dst: Uint8Array): void {
  for (let i = 0, o = 0; i < src.length; i++, o += 2) {
    const s = src[i]!;
    dst[o] = s & 0xff;
    dst[o + 1] = (s >> 8) & 0xff;
  }
}

/** Little-endian PCM bytes as Int16 samples (`dst.length` samples). */
export function readPcmLE(src: Uint8Array, dst: Int16Array): void {
  for (let i = 0, o = 0; i < dst.length; i++, o += 2) dst[i] = ((src[o + 1]! << 8) | src[o]!) << 16 >> 16;
}

/**
 * Concealment for linear PCM (the jitter buffer's `conceal` is for mu-law): the previous frame
 * repeated, fading by 6 dB per consecutive concealed frame, ramped within the frame, silence from
 * the 5th on. Same shape as the mu-law one so both lines sound alike under loss.
 */
export function concealPcm(prev: Int16Array, out: Int16Array, count: number): void {
  const k = Math.max(1, count);
  const startGain = Math.pow(0.5, k - 1);
  const endGain = k >= 4 ? 0 : Math.pow(0.5, k);
  const n = out.length;
  for (let i = 0; i < n; i++) out[i] = k > 4 || i >= prev.length ? 0 : Math.round(prev[i]! * (startGain + ((endGain - startGain) * i) / n));
}
