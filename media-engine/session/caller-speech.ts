/**
 * The caller's side of a turn: voice activity per frame, the recognised text so far, speech timing
 * (for `speech_duration_ms` and latency origins) and the turn's audio for the record. Per-frame
 * work is allocation-free except when the turn's audio buffer grows (allocated at the first
 * captured frame, 4 s, doubling up to the 60 s cap; longer turns keep the first 60 s). A call whose
 * caller has not spoken holds no audio buffer (issue 13: memory per idle call).
 */
import type { Clock } from '../../shared/clock.js';
import { INJECT_TEXT_MAX_CHARS } from './limits.js';
import { Vad, vadOptionsForProfile, type VadProfile, type VadResult } from '../audio/vad.js';

/** The turn's audio for the record: from 4 s (at the first captured frame), doubling up to 60 s. */
const AUDIO_MAX_SECONDS = 60;
const AUDIO_INITIAL_SECONDS = 4;

/** Longest caller turn text kept (speech and injected text together): two injections' worth. */
export const TURN_TEXT_MAX_CHARS = 2 * INJECT_TEXT_MAX_CHARS;

export class CallerSpeech {
  private readonly vad: Vad;
  private audio: Int16Array;
  private readonly audioMaxSamples: number;
  private audioLen = 0;
  private capturing = false;
  /** Final text of the turn so far. */
  text = '';
  /** The ASR's latest interim text since its last final (what a final would have said so far). */
  private interim = '';
  /** The ASR returned words since the last `take()` (injected text does not count). */
  private heardWords = false;
  /** The VAD is in a speech segment (onset seen, hangover not expired) as of the last frame. */
  inSpeech = false;
  /** Monotonic time of the last voiced frame (the latency origin of a reply). */
  speechEndMs = 0;
  private speechStartMs = 0;
  private speechMs = 0;
  /** The ASR's confidence over the turn's finals, weighted by their length (for the record). */
  private confidenceSum = 0;
  private confidenceChars = 0;

  constructor(
    private readonly clock: Clock,
    profile: VadProfile,
    vadThreshold: number,
    /** The call's inbound rate (8000 carrier, 16000 browser): the VAD runs at it, no resampling. */
    readonly rateHz = 16000,
  ) {
    this.vad = new Vad(vadOptionsForProfile(profile, vadThreshold, rateHz));
    this.audio = new Int16Array(0);
    this.audioMaxSamples = rateHz * AUDIO_MAX_SECONDS;
  }

  /** One 20 ms frame at `rateHz`. The result object is reused: read it before the next frame. */
  frame(pcm: Int16Array): VadResult {
    if (this.capturing && this.audioLen + pcm.length <= this.audioMaxSamples) {
      if (this.audioLen + pcm.length > this.audio.length) {
        const next = new Int16Array(Math.min(this.audioMaxSamples, Math.max(this.rateHz * AUDIO_INITIAL_SECONDS, this.audio.length * 2)));
        next.set(this.audio.subarray(0, this.audioLen));
        this.audio = next;
      }
      this.audio.set(pcm, this.audioLen);
      this.audioLen += pcm.length;
    }
    const v = this.vad.process(pcm);
    this.inSpeech = v.speech;
    if (v.speech) this.speechEndMs = this.clock.monotonicMs();
    if (v.offset) this.speechMs += v.speechMs;
    return v;
  }

  /** A new caller turn starts (VAD onset or a confirmed barge-in). */
  startTurn(): void {
    this.capturing = true;
    this.audioLen = 0;
    this.speechMs = 0;
    this.speechStartMs = this.clock.monotonicMs();
  }

  /** An interim transcript of the caller's current speech (replaced by the next, cleared by a final). */
  setInterim(text: string): void {
    this.interim = text.length > TURN_TEXT_MAX_CHARS ? text.slice(0, TURN_TEXT_MAX_CHARS) : text;
    this.heardWords = true;
  }

  /** A final transcript (or folded text) joins the turn's text; `confidence` is the ASR's, when it gives one. */
  addFinal(text: string, spoken = false, confidence?: number): void {
    this.interim = '';
    if (spoken) this.heardWords = true;
    if (spoken && confidence !== undefined && Number.isFinite(confidence)) {
      this.confidenceSum += confidence * text.length;
      this.confidenceChars += text.length;
    }
    const joined = this.text ? `${this.text} ${text}` : text;
    // Bounded whatever the ASR or the injections send; the newest words matter most to the reply.
    this.text = joined.length > TURN_TEXT_MAX_CHARS ? joined.slice(joined.length - TURN_TEXT_MAX_CHARS) : joined;
  }

  /**
   * Text injected instead of spoken: it ends "now". It joins what the caller said and was not
   * answered yet (e.g. the text of an answer interrupted before the caller heard any of it).
   */
  inject(text: string): void {
    this.addFinal(text);
    this.speechEndMs = this.clock.monotonicMs();
  }

  /** Takes the turn's text, its speech duration and the ASR's confidence in it, and stops capturing audio. */
  take(): { text: string; speechMs: number; confidence?: number } {
    const text = this.text.trim();
    const confidence = this.confidenceChars > 0 ? Math.round((this.confidenceSum / this.confidenceChars) * 1000) / 1000 : undefined;
    this.confidenceSum = 0;
    this.confidenceChars = 0;
    // Only a turn the caller started speaking has a duration: injected text has none, whatever the
    // VAD reported after the previous spoken turn was taken (its offset often lands after the final).
    const speechMs = !this.speechStartMs ? 0 : this.speechMs || Math.round(this.speechEndMs - this.speechStartMs);
    this.text = '';
    this.interim = '';
    this.heardWords = false;
    this.capturing = false;
    this.speechMs = 0;
    this.speechStartMs = 0;
    return { text, speechMs: Math.max(0, speechMs), ...(confidence !== undefined ? { confidence } : {}) };
  }

  /**
   * The call ends: the words the caller said that no turn took (they hung up mid-sentence, or
   * before the ASR's final or our endpoint), finals and the last interim. Empty when the ASR heard
   * nothing since the last turn. Taken: a second call returns ''.
   */
  takeUnfinished(): { text: string; speechMs: number } {
    if (!this.heardWords) return { text: '', speechMs: 0 };
    const interim = this.interim.trim();
    if (interim) this.addFinal(interim);
    return this.take();
  }

  /** A copy of the audio of the last turn, for the record. */
  takeAudio(): Int16Array | undefined {
    if (!this.audioLen) return undefined;
    const copy = this.audio.slice(0, this.audioLen);
    this.audioLen = 0;
    return copy;
  }

  /** While the agent talks, thresholds rise (echo robustness per profile). */
  setAgentSpeaking(speaking: boolean): void {
    this.vad.setAgentSpeaking(speaking);
  }
}
