/**
 * The agent's voice on one call: TTS audio resampled to the transport rate, queued, and paced out
 * in 20 ms frames in real time with a small lead (frame n leaves at start + n * 20 ms - lead), so
 * a barge-in silences the caller within a frame or two. Knows what the caller has heard so far.
 */
import type { Clock } from '../../shared/clock.js';
import { Resampler } from '../audio/resampler.js';
import { PlayoutQueue } from './playout.js';
import type { CallTransport } from './transport.js';

const FRAME_MS = 20;
/** The sent audio of a reply kept for the record: from 1 s at its first frame, doubling up to 60 s (the rest of a longer answer is not kept). */
const SENT_INITIAL_SECONDS = 1;
const SENT_MAX_SECONDS = 60;
const NO_AUDIO = new Int16Array(0);

export class SpeechOutput {
  private readonly playout: PlayoutQueue;
  private readonly frame: Int16Array;
  private readonly resamplers = new Map<number, Resampler>();
  private playing = false;
  /** TTS audio of the current piece may still come: only whole frames leave until it ends. */
  private inputOpen = false;
  /** From the first piece of an answer until its run ends: more audio may come (unlike `inputOpen`, not reset between pieces). */
  private answerOpen = false;
  private paceStartMs = 0;
  private paceFramesSent = 0;
  /** Monotonic time the first frame of the current turn left, 0 before. */
  firstFrameSentAtMs = 0;
  /** Keep what this run sends, for the record (only when the record stores agent audio: see CallRecorder.keepsAgentAudio). */
  private capture = false;
  /** What this turn sent, at the transport rate (handed over whole by takeSentAudio, never reused). */
  private sent = NO_AUDIO;
  private sentLen = 0;

  constructor(
    private readonly transport: CallTransport,
    private readonly clock: Clock,
  ) {
    this.playout = new PlayoutQueue(transport.outRateHz);
    this.frame = new Int16Array((transport.outRateHz / 1000) * FRAME_MS);
  }

  get queuedSamples(): number {
    return this.playout.queuedSamples;
  }

  /** Starts a new turn's audio: empty queue, positions and text segments from zero. `capture`: keep what it sends (takeSentAudio). */
  resetTurn(capture = false): void {
    this.capture = capture;
    this.sent = NO_AUDIO;
    this.sentLen = 0;
    this.playout.resetTurn();
    this.playing = false;
    this.inputOpen = false;
    this.answerOpen = false;
    this.firstFrameSentAtMs = 0;
  }

  beginSegment(text: string): void {
    this.playout.beginSegment(text);
    this.inputOpen = true;
    this.answerOpen = true;
  }

  endSegment(): void {
    this.playout.endSegment();
    this.inputOpen = false;
  }

  /** No more audio is coming for this turn (the run ended, possibly without closing its piece). */
  endInput(): void {
    this.inputOpen = false;
    this.answerOpen = false;
    // Everything queued has gone: a message held for its minimum size (Exotel) goes now.
    if (this.playout.queuedSamples === 0) this.transport.flushAudio?.(true);
  }

  /** Queues TTS audio of any rate (resampled here, inline: ~35 us per 40 ms chunk). */
  enqueue(samples: Int16Array, rateHz: number): void {
    this.playout.enqueue(this.resample(samples, rateHz));
  }

  /**
   * Sends the frames due at `nowMs`. Returns true when the queue is empty (all sent).
   *
   * While a TTS piece is still streaming only whole frames leave: a vendor's chunks rarely end on a
   * 20 ms boundary, and padding each chunk's tail with zeros put a gap of silence after every chunk
   * (and, the queue then being empty, restarted the schedule: audio left as fast as it came). When
   * the queue runs dry mid-turn (TTS slower than real time) the schedule resumes with the usual
   * lead, not with every frame that came due meanwhile at once.
   */
  pace(nowMs: number): boolean {
    if (this.playout.queuedSamples === 0) {
      if (this.playing) this.transport.flushAudio?.(!this.answerOpen);
      // Mid-answer the schedule stays: a TTS faster than real time in small chunks empties the
      // queue after every chunk, and restarting the schedule then sent each chunk at once (2x
      // real time measured, and "heard" text the caller had not heard). A real starvation is
      // caught below when the audio resumes (`due` far ahead of what was sent).
      if (!this.answerOpen) this.playing = false;
      return true;
    }
    if (!this.playing) {
      this.playing = true;
      this.paceStartMs = nowMs;
      this.paceFramesSent = 0;
    }
    const leadFrames = Math.ceil(this.transport.leadMs / FRAME_MS);
    let due = Math.floor((nowMs - this.paceStartMs) / FRAME_MS) + 1 + leadFrames;
    if (due - this.paceFramesSent > leadFrames + 1) {
      this.paceStartMs = nowMs - this.paceFramesSent * FRAME_MS;
      due = this.paceFramesSent + 1 + leadFrames;
    }
    while (this.paceFramesSent < due) {
      if (!this.playout.takeFrame(this.frame, !this.inputOpen)) {
        // Starved mid-answer (the TTS is slower than real time): a held partial message goes now,
        // unless the carrier has a minimum message size and more of the answer is coming.
        this.transport.flushAudio?.(!this.answerOpen);
        break;
      }
      if (!this.firstFrameSentAtMs) this.firstFrameSentAtMs = this.clock.monotonicMs();
      this.transport.sendAudio(this.frame);
      if (this.capture) this.keepSent();
      this.paceFramesSent++;
    }
    return false;
  }

  /**
   * The audio this turn sent so far (what the caller was played, up to the lead of an interrupted
   * answer), at `rateHz`; taken once: the next call returns undefined until more is sent.
   */
  takeSentAudio(): { samples: Int16Array; sampleRateHz: number } | undefined {
    if (!this.sentLen) return undefined;
    const samples = this.sent.subarray(0, this.sentLen);
    this.sent = NO_AUDIO;
    this.sentLen = 0;
    return { samples, sampleRateHz: this.transport.outRateHz };
  }

  private keepSent(): void {
    const n = this.frame.length;
    const max = this.transport.outRateHz * SENT_MAX_SECONDS;
    if (this.sentLen + n > max) return;
    if (this.sentLen + n > this.sent.length) {
      const next = new Int16Array(Math.min(max, Math.max(this.transport.outRateHz * SENT_INITIAL_SECONDS, this.sent.length * 2)));
      next.set(this.sent.subarray(0, this.sentLen));
      this.sent = next;
    }
    this.sent.set(this.frame, this.sentLen);
    this.sentLen += n;
  }

  /** Barge-in: drop everything queued here and at the far end; filters start clean. */
  flush(): void {
    this.playout.resetTurn();
    this.playing = false;
    this.inputOpen = false;
    this.answerOpen = false;
    for (const r of this.resamplers.values()) r.reset();
    this.transport.clearAudio();
  }

  /** Call teardown: drops the queued audio here only (the socket is closing; nothing is sent). */
  release(): void {
    this.playout.resetTurn();
    this.playing = false;
    this.inputOpen = false;
    this.answerOpen = false;
  }

  /**
   * What the caller has heard of this turn: samples sent minus what is still ahead of real time
   * (the lead), mapped onto the spoken text.
   */
  heardText(): string {
    const now = this.clock.monotonicMs();
    const aheadMs = this.playing ? Math.max(0, this.paceFramesSent * FRAME_MS - (now - this.paceStartMs)) : 0;
    const heardSamples = Math.max(0, this.playout.sentSamples - Math.round((aheadMs * this.transport.outRateHz) / 1000));
    return this.playout.heardText(heardSamples);
  }

  private resample(samples: Int16Array, rateHz: number): Int16Array {
    const out = this.transport.outRateHz;
    if (rateHz === out) return samples;
    let r = this.resamplers.get(rateHz);
    if (!r) {
      r = new Resampler(rateHz, out);
      this.resamplers.set(rateHz, r);
    }
    return r.process(samples);
  }
}
