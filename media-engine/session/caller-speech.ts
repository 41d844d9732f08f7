/**
 * The caller's side of a turn: voice activity per frame, the recognised text so far, speech timing
 * (for `speech_duration_ms` and latency origins) and the turn's audio for the record. Per-frame
 * work is allocation-free except when the turn's audio buffer doubles (from 4 s up to the 60 s cap;
 * longer turns keep the first 60 s).
 */
import type { Clock } from '../../shared/clock.js';
import { Vad, vadOptionsForProfile, type VadProfile, type VadResult } from '../audio/vad.js';

const AUDIO_MAX_SAMPLES = 16000 * 60;
const AUDIO_INITIAL_SAMPLES = 16000 * 4;

export class CallerSpeech {
  private readonly vad: Vad;
  private audio = new Int16Array(AUDIO_INITIAL_SAMPLES);
  private audioLen = 0;
  private capturing = false;
  /** Final text of the turn so far. */
  text = '';
  /** Monotonic time of the last voiced frame (the latency origin of a reply). */
  speechEndMs = 0;
  private speechStartMs = 0;
  private speechMs = 0;

  constructor(
    private readonly clock: Clock,
    profile: VadProfile,
    vadThreshold: number,
  ) {
    this.vad = new Vad(vadOptionsForProfile(profile, vadThreshold, 16000));
  }

  /** One 20 ms 16 kHz frame. The result object is reused: read it before the next frame. */
  frame(pcm16k: Int16Array): VadResult {
    if (this.capturing && this.audioLen + pcm16k.length <= AUDIO_MAX_SAMPLES) {
      if (this.audioLen + pcm16k.length > this.audio.length) {
        const next = new Int16Array(Math.min(AUDIO_MAX_SAMPLES, this.audio.length * 2));
        next.set(this.audio.subarray(0, this.audioLen));
        this.audio = next;
      }
      this.audio.set(pcm16k, this.audioLen);
      this.audioLen += pcm16k.length;
    }
    const v = this.vad.process(pcm16k);
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

  addFinal(text: string): void {
    this.text = this.text ? `${this.text} ${text}` : text;
  }

  /** Text injected instead of spoken: it ends "now". */
  inject(text: string): void {
    this.text = text;
    this.speechEndMs = this.clock.monotonicMs();
  }

  /** Takes the turn's text and its speech duration, and stops capturing audio. */
  take(): { text: string; speechMs: number } {
    const text = this.text.trim();
    const speechMs = this.speechMs || (this.speechStartMs ? Math.round(this.speechEndMs - this.speechStartMs) : 0);
    this.text = '';
    this.capturing = false;
    return { text, speechMs: Math.max(0, speechMs) };
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
