/**
 * The simulated network between the carrier and the engine, for caller-to-engine media frames:
 * extra delay with uniform jitter, occasional reordering (a frame held back), i.i.d. loss, late
 * frames (held far beyond any jitter buffer) and periodic bursts (everything held during a stall,
 * then delivered at once, as a TCP stream does after a hiccup). Seeded: same seed, same path.
 *
 * `offer(msg, nowMs)` schedules a message; `due(nowMs)` returns the messages to send now, in
 * delivery order (ties keep the order they were offered).
 */
import { mulberry32 } from './prng.js';

export interface LinkOptions {
  /** PRNG seed. Default 1. */
  seed?: number;
  /** Extra delay of every frame, uniform in [0, jitterMs]. Default 0. */
  jitterMs?: number;
  /** Probability that a frame is held back `reorderDelayMs` (arrives after later frames). Default 0. */
  reorderProb?: number;
  reorderDelayMs?: number;
  /** Probability that a frame is lost. Default 0. */
  lossProb?: number;
  /** Probability that a frame arrives `lateDelayMs` late (beyond the jitter buffer). Default 0. */
  lateProb?: number;
  lateDelayMs?: number;
  /** Every `everyMs` the link stalls for `stallMs`, then delivers the held frames at once. */
  burst?: { everyMs: number; stallMs: number; startMs?: number };
}

export interface LinkStats {
  offered: number;
  lost: number;
  reordered: number;
  late: number;
  held: number;
}

interface Pending {
  at: number;
  order: number;
  msg: string;
}

export class ImpairedLink {
  readonly stats: LinkStats = { offered: 0, lost: 0, reordered: 0, late: 0, held: 0 };
  private readonly rnd: () => number;
  private queue: Pending[] = [];
  private order = 0;
  private startMs = -1;

  constructor(private readonly o: LinkOptions = {}) {
    this.rnd = mulberry32(o.seed ?? 1);
  }

  get clean(): boolean {
    const o = this.o;
    return !o.jitterMs && !o.reorderProb && !o.lossProb && !o.lateProb && !o.burst;
  }

  offer(msg: string, nowMs: number): void {
    if (this.startMs < 0) this.startMs = nowMs;
    this.stats.offered++;
    const o = this.o;
    // Draw every random number for every frame, so one option does not shift another's sequence.
    const rLoss = this.rnd();
    const rJitter = this.rnd();
    const rReorder = this.rnd();
    const rLate = this.rnd();
    if (rLoss < (o.lossProb ?? 0)) {
      this.stats.lost++;
      return;
    }
    let at = nowMs + rJitter * (o.jitterMs ?? 0);
    if (rReorder < (o.reorderProb ?? 0)) {
      at += o.reorderDelayMs ?? 40;
      this.stats.reordered++;
    } else if (rLate < (o.lateProb ?? 0)) {
      at += o.lateDelayMs ?? 400;
      this.stats.late++;
    }
    if (o.burst) {
      const t = nowMs - this.startMs - (o.burst.startMs ?? 0);
      if (t >= 0) {
        const phase = t % o.burst.everyMs;
        if (phase < o.burst.stallMs) {
          at = Math.max(at, nowMs + (o.burst.stallMs - phase));
          this.stats.held++;
        }
      }
    }
    this.queue.push({ at, order: this.order++, msg });
  }

  /** Messages due at `nowMs`, in delivery order. */
  due(nowMs: number): string[] {
    if (this.queue.length === 0) return [];
    const ready = this.queue.filter((p) => p.at <= nowMs);
    if (ready.length === 0) return [];
    this.queue = this.queue.filter((p) => p.at > nowMs);
    ready.sort((a, b) => a.at - b.at || a.order - b.order);
    return ready.map((p) => p.msg);
  }
}
