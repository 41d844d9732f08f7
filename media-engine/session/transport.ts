/**
 * What a CallActor needs from the socket it talks through. Browser PCM and carrier media streams
 * implement it (`media-engine/transports/`); the actor never knows which one it has.
 */
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';

export interface CallTransport {
  readonly kind: 'browser' | 'twilio';
  /**
   * Sample rate of the inbound frames the transport hands to `CallActor.onAudio`: the call's native
   * rate (16000 browser, 8000 carrier), so nothing is resampled on the way in.
   */
  readonly inRateHz: number;
  /** Sample rate of outbound audio frames (16000 browser, 8000 carrier). */
  readonly outRateHz: number;
  /** Audio sent ahead of real time, so playback never starves; bounds barge-in reaction. */
  readonly leadMs: number;
  /** JSON event to the client (carrier transports suppress them). `server_ts` is added here. */
  sendEvent(ev: ServerEvent): void;
  /** One 20 ms frame at `outRateHz`. The transport must copy what it keeps (the frame is reused). */
  sendAudio(frame: Int16Array): void;
  /**
   * No more audio for now (the queue ran dry): send what a multi-frame message holds (carriers at
   * `CARRIER_OUT_MESSAGE_MS` > 20) rather than wait for the next frame. `endOfAudio` false: the
   * answer is still streaming, and a carrier with a minimum message size (Exotel: 100 ms) keeps a
   * shorter message until it fills or the answer ends. Optional: a no-op elsewhere.
   */
  flushAudio?(endOfAudio: boolean): void;
  /** Drop audio buffered at the far end (carrier `clear`). */
  clearAudio(): void;
  /** Ask the far end to report when everything sent so far has played (carrier `mark`). */
  mark(name: string): void;
  /** Close the socket (idempotent). */
  close(code: number, reason: string): void;
}
