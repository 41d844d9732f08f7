/**
 * Idle nudges: the actor arms its idle timer (`silence_timeout_ms`) when a run finishes, on
 * `playback_done` and on a carrier mark echo, and resets the count on caller speech. Each time the
 * timer fires while listening, this says what comes next: a nudge (`idle_check`) while attempts
 * remain (`idle_max_attempts`), then the goodbye (`idle_disconnect`) after which the call ends.
 */
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';

export const NUDGE_TEXT = 'Are you still there?';
export const GOODBYE_TEXT = "I haven't heard from you, so I'll end the call now. Goodbye!";

export type IdleStep = { kind: 'nudge' | 'goodbye'; text: string; event: ServerEvent };

export class IdleNudges {
  private attempts = 0;

  constructor(private readonly maxAttempts: number) {}

  /** The caller spoke: the next silence starts from the first nudge again. */
  reset(): void {
    this.attempts = 0;
  }

  /** The idle timer fired while the caller was silent and nothing was playing. */
  next(): IdleStep {
    this.attempts++;
    const max = this.maxAttempts;
    if (this.attempts <= max) {
      return { kind: 'nudge', text: NUDGE_TEXT, event: { type: 'idle_check', text: NUDGE_TEXT, attempt: this.attempts, max_attempts: max } };
    }
    return { kind: 'goodbye', text: GOODBYE_TEXT, event: { type: 'idle_disconnect', text: GOODBYE_TEXT, reason: 'no_response', total_attempts: max } };
  }
}
