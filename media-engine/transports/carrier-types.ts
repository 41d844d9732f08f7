/**
 * The public shapes of the carrier media stream transport (carrier-transport.ts, every carrier):
 * the socket it writes to, the sink it feeds, the non-media events it hands back to the node, its
 * options and its stats. twilio-types.ts keeps the Twilio names as aliases.
 */
import type { JitterBufferOptions, JitterBufferStats } from '../audio/jitter-buffer.js';
import type { CarrierInvalidReason } from '../../shared/protocol/twilio-media.js';

export interface CarrierSocket {
  send(message: ArrayBufferView | string, isBinary?: boolean): number;
  getBufferedAmount(): number;
  end(code?: number, reason?: string): void;
}

/** What the transport feeds: the call actor (or a test sink). */
export interface CarrierAudioSink {
  /** One 20 ms frame of PCM at the stream's rate (160 samples at 8 kHz); `raw` is the frame's mu-law bytes when the wire is mu-law (reused buffers: consume now). */
  onAudio(pcm8k: Int16Array, raw?: Uint8Array): void;
}

/** Non-media events handed back to the node (media is consumed by the transport itself). */
export type CarrierEvent =
  | { event: 'connected' }
  | { event: 'start'; streamSid: string; callSid: string; accountSid: string; customParameters: Record<string, string> }
  /** `cleared`: the echo of a mark that was pending at a `clear` (its audio was dropped, not heard). */
  | { event: 'mark'; name: string; cleared: boolean }
  | { event: 'dtmf'; digit: string }
  | { event: 'stop' }
  /**
   * A dropped frame; `close`: the stream should be closed (it keeps sending garbage, or its start
   * names media we cannot take), with `message` as the close reason when there is one.
   */
  | { event: 'invalid'; reason: CarrierInvalidReason; close: boolean; message?: string };

export interface CarrierTransportOptions {
  /** Audio sent ahead of real time. Default 100 ms (a `clear` drops it anyway). */
  leadMs?: number;
  /** Jitter buffer settings; default 20..120 ms depth, 20 ms frames of 160 bytes. */
  jitter?: JitterBufferOptions;
  /** Hand the raw mu-law frame to the sink too (the ASR takes mu-law). Default false. */
  passRawMulaw?: boolean;
  /**
   * 20 ms frames per outgoing media message on carriers that take several (`multiFrameOut`), at
   * least the protocol's own `framesPerMessage` (Exotel: 5). Default 1. Fewer, larger messages
   * cost the node less per call; the first audio of an answer may wait for its batch to fill.
   */
  framesPerMessage?: number;
}

export interface CarrierTransportStats {
  jitter: JitterBufferStats;
  /** Inbound frames dropped because a field or a counter failed validation (binary frames included). */
  invalidFrames: number;
  /** invalidFrames by reason (a closed set of reasons). */
  invalidReasons: Partial<Record<CarrierInvalidReason, number>>;
  /** Frames with an event name we do not know: ignored. */
  unknownEvents: number;
  /** Valid media that arrived after `start` but before the session was claimed: dropped, not buffered. */
  mediaBeforeClaim: number;
  /** Messages of a reframed stream (payloads not 20 ms) dropped for a media timestamp not after the previous message's (duplicates, reordering). */
  mediaDroppedOutOfOrder: number;
  binaryFramesIgnored: number;
  outFrames: number;
  outFramesDropped: number;
  marksSent: number;
  marksHeard: number;
  marksCleared: number;
  clears: number;
  dtmf: number;
}
