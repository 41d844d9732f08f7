/**
 * The engine side of the carrier interface (issue 24): what one carrier's media stream protocol
 * supplies so the generic carrier transport (`carrier-transport.ts`: jitter buffer, counter
 * windows, garbage policy, frame budget, marks and clear) can run it. A carrier only parses its
 * frames into the normalized `CarrierFrame` (shared/protocol/twilio-media.ts, Twilio's vocabulary:
 * start / media / mark / dtmf / stop) and encodes its outgoing media, clear and mark frames. The
 * CallActor and the node route never see a carrier-specific shape.
 *
 * Adding a carrier: a `CarrierProtocol` in `transports/<carrier>.ts`, listed in `PROTOCOLS`
 * (carrier-protocols.ts); the node then serves `/api/v1/voice/ws/<carrier>/{id}` for it.
 */
import type { CarrierParse } from '../../shared/protocol/twilio-media.js';
import type { JsonMediaDialect } from './json-media-scan.js';

/** Wire codecs of carrier media (payload bytes of one frame). */
export type MediaCodec = 'pcmu' | 'pcma' | 'l16';

export interface CarrierMediaFormat {
  codec: MediaCodec;
  /** 8000 for G.711; 8000 or 16000 for L16. Fixed per stream at `start`: the actor's rates follow it. */
  sampleRateHz: number;
}

/** Bytes of one 20 ms frame of `fmt`. */
export function frameBytes(fmt: CarrierMediaFormat): number {
  const samples = (fmt.sampleRateHz / 1000) * 20;
  return fmt.codec === 'l16' ? samples * 2 : samples;
}

/**
 * The outgoing `media` frame of one stream, laid out once per stream: the 20 ms payload is
 * base64-encoded into `payloadOffset` of `frame` every 20 ms (no allocation on the hot path).
 * `binary`: the payload is sent as the raw bytes of a binary WebSocket frame instead (Vonage).
 */
export type OutboundMediaTemplate = { kind: 'json'; frame: Uint8Array<ArrayBuffer>; payloadOffset: number } | { kind: 'binary' };

export interface CarrierProtocol {
  /** The carrier identifier (`twilio`, `signalwire`, `telnyx`, ...): also the route segment. */
  readonly carrier: string;
  /** The media on the wire unless `start` says otherwise (see `sampleRatesHz`). */
  readonly format: CarrierMediaFormat;
  /**
   * Rates a stream's `start` may choose (the carrier was asked for one per call: Vonage's NCCO
   * `audio/l16;rate=8000|16000`); the stream then runs at it, the actor too. Default: only
   * `format`'s rate, and `start` may only switch to another codec of the same frame size.
   */
  readonly sampleRatesHz?: readonly number[];
  /**
   * Whether the carrier echoes `mark`s. Without marks the transport emulates them (a mark is
   * "heard" when the audio queued before it has been played out in real time).
   */
  readonly marks: boolean;
  /**
   * Where the session parameters (`session_id`, `agent_id`, `call_id`) travel: `start` (the start
   * frame's custom parameters, Twilio) or `query` (the socket URL's query string, carriers whose
   * start frame carries none); `start` values win over `query` ones when both exist.
   */
  readonly sessionParams: 'start' | 'query';
  /**
   * Most audio the jitter buffer holds (default 120 ms). A carrier sending several frames per
   * message (Exotel: 100 ms) needs room for two messages in flight plus their jitter.
   */
  readonly maxDepthMs?: number;
  /**
   * A `media` message may carry several 20 ms frames (Exotel: ~100 ms): k whole frames are k
   * consecutive chunks from the message's. Default false: a stream whose messages are not 20 ms
   * each is reframed as one byte stream (inbound-reframer.ts).
   */
  readonly multiFrameMedia?: boolean;
  /**
   * `media` messages carry the media time (ms since the stream's start: Twilio, Telnyx), so a
   * stream reframed for its payload size (inbound-reframer.ts) finds gaps by it and the timestamp
   * window applies. Absent: the timestamp is made from the message count and says nothing then.
   */
  readonly mediaTimestamps?: boolean;
  /**
   * 20 ms frames per outgoing media message (default 1). Exotel wants at least 100 ms per message:
   * 5, and `mediaTemplate` then lays out a payload slot of 5 frames. A partial batch is sent before
   * a mark and dropped by a clear; the transport's lead grows by the batch.
   */
  readonly framesPerMessage?: number;
  /**
   * Parses and validates one text frame into the normalized frame; never throws. `start` may name
   * a media format (`start.format`): one the protocol takes (`sampleRatesHz`), else the stream is closed.
   */
  parse(text: string): CarrierParse;
  /**
   * The keys of this carrier's JSON `media` message when it has Twilio's shape (`media.track`,
   * `chunk`, `timestamp`, `payload`): such messages are then read from the bytes without `parse`
   * (json-media-scan.ts); anything else still goes to `parse`.
   */
  readonly jsonMedia?: JsonMediaDialect;
  /** A binary frame (only carriers whose audio is binary, Vonage); absent: binary frames are invalid. */
  parseBinary?(bytes: Uint8Array): CarrierParse;
  /**
   * The carrier plays an outgoing `media` message of any whole number of 20 ms frames (Twilio: any
   * payload length; Telnyx: 20 ms to 30 s), so the engine may send `CARRIER_OUT_MESSAGE_MS` per
   * message. Absent: `framesPerMessage` frames, always (Vonage: exactly 20 ms binary frames).
   */
  readonly multiFrameOut?: boolean;
  /** The outgoing media frame template of stream `streamId` for `frames` x 20 ms of `fmt`. */
  mediaTemplate(streamId: string, fmt: CarrierMediaFormat, frames: number): OutboundMediaTemplate;
  /** The text frame that drops the audio queued at the carrier (barge-in). */
  clearFrame(streamId: string): string;
  /** The text frame asking the carrier to echo `name` once the audio before it played (only when `marks`). */
  markFrame(streamId: string, name: string): string;
}

/** base64 characters of `n` bytes. */
export function base64Chars(n: number): number {
  return Math.ceil(n / 3) * 4;
}

/** A JSON media frame template `prefix + <payload slot> + suffix` (see OutboundMediaTemplate). */
export function jsonMediaTemplate(prefix: string, suffix: string, payloadBytes: number): Extract<OutboundMediaTemplate, { kind: 'json' }> {
  const p = new TextEncoder().encode(prefix);
  const s = new TextEncoder().encode(suffix);
  const slot = base64Chars(payloadBytes);
  const frame = new Uint8Array(p.length + slot + s.length);
  frame.set(p, 0);
  frame.set(s, p.length + slot);
  return { kind: 'json', frame, payloadOffset: p.length };
}
