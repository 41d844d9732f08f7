/**
 * One simulated caller's side of a conversation, independent of the wire: a small state machine
 * driven by time and by the agent's audio arriving and stopping. The driver asks `poll(now)` what
 * to say, speaks it, and reports `spoken(now)` once the phrase's last frame has left.
 *
 *   think (0.3-1.2 s) -> say a phrase -> wait for agent audio -> agent speaks -> 300 ms without
 *   agent audio = the answer is over -> think ...
 *
 * One turn in `bargeEvery` (which one is random per call, so every window holds some) asks for the
 * long answer and interrupts it 0.6-1.4 s into the agent's audio with "stop please": a barge-in
 * the engine must confirm and act on.
 */

/** Phrases of ordinary turns (no backchannels; the sim LLM's demo script answers them with its echo). */
export const PHRASES = ['what time do you open', 'do you have a table for two', 'can i book for friday night', 'is there parking nearby'];
export const LONG_PHRASE = 'tell me the long version';
export const BARGE_PHRASE = 'stop please';

/** Silence without agent audio that ends the agent's answer. */
const ANSWER_GAP_MS = 300;
/** Give up waiting for an answer after this (counted as `noAnswer`). */
const ANSWER_TIMEOUT_MS = 10_000;

export interface CallCounters {
  turns: number;
  bargeIns: number;
  noAnswer: number;
}

type State = 'waiting' | 'think' | 'speaking' | 'await_agent' | 'agent' | 'barging';

export class CallScript {
  state: State = 'waiting';
  private stateAt = 0;
  private thinkUntil = 0;
  private lastAgentAt = 0;
  private bargeAt = 0;
  private turn = 0;
  private isBargeTurn = false;
  private readonly bargePhase: number;

  constructor(
    private readonly counters: CallCounters,
    private readonly bargeEvery: number,
    private readonly rand: () => number,
  ) {
    this.bargePhase = bargeEvery > 0 ? Math.floor(rand() * bargeEvery) : 0;
  }

  /** Starts the conversation (until then the caller only streams silence). */
  begin(now: number): void {
    this.state = 'think';
    this.thinkUntil = now + 200 + this.rand() * 1500;
  }

  /** Agent audio arrived. */
  onAgentFrame(now: number): void {
    this.lastAgentAt = now;
    if (this.state === 'await_agent') {
      this.state = 'agent';
      this.stateAt = now;
      if (this.isBargeTurn) this.bargeAt = now + 600 + this.rand() * 800;
    }
  }

  /** The phrase to start saying now, if any. */
  poll(now: number): string | undefined {
    switch (this.state) {
      case 'think':
        if (now < this.thinkUntil) return undefined;
        this.turn++;
        this.isBargeTurn = this.bargeEvery > 0 && this.turn % this.bargeEvery === this.bargePhase;
        this.state = 'speaking';
        this.stateAt = now;
        return this.isBargeTurn ? LONG_PHRASE : PHRASES[this.turn % PHRASES.length]!;
      case 'await_agent':
        if (now - this.stateAt > ANSWER_TIMEOUT_MS) {
          this.counters.noAnswer++;
          this.toThink(now);
        }
        return undefined;
      case 'agent':
        if (this.isBargeTurn && this.bargeAt && now >= this.bargeAt) {
          this.bargeAt = 0;
          this.isBargeTurn = false;
          this.counters.bargeIns++;
          this.state = 'barging';
          this.stateAt = now;
          return BARGE_PHRASE;
        }
        if (now - this.lastAgentAt > ANSWER_GAP_MS) {
          this.counters.turns++;
          this.toThink(now);
        }
        return undefined;
      default:
        return undefined;
    }
  }

  /** The phrase started by `poll` has been sent completely. */
  spoken(now: number): void {
    if (this.state === 'speaking' || this.state === 'barging') {
      this.state = 'await_agent';
      this.stateAt = now;
    }
  }

  private toThink(now: number): void {
    this.state = 'think';
    this.isBargeTurn = false;
    this.thinkUntil = now + 300 + this.rand() * 900;
  }
}

/** A small deterministic PRNG (mulberry32), so runs with the same seed send the same script. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
