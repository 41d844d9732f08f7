/**
 * Time is injected: domain code takes a Clock so tests can drive time.
 * `realClock` is the only place that touches Date.now / setTimeout.
 */
export type TimerHandle = { readonly __timer: unique symbol } | object;

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Monotonic milliseconds (for measuring durations). */
  monotonicMs(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
  setInterval(fn: () => void, ms: number): TimerHandle;
  clearInterval(handle: TimerHandle | undefined): void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  monotonicMs: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (h) => {
    if (h) clearTimeout(h as NodeJS.Timeout);
  },
  setInterval: (fn, ms) => setInterval(fn, ms),
  clearInterval: (h) => {
    if (h) clearInterval(h as NodeJS.Timeout);
  },
};

interface SimTimer {
  id: number;
  at: number;
  fn: () => void;
  everyMs?: number;
}

/** A clock driven by tests: `advance(ms)` runs due timers in time order. */
export class SimulatedClock implements Clock {
  private current: number;
  private nextId = 1;
  private timers = new Map<number, SimTimer>();

  constructor(startMs = 1_700_000_000_000) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }
  monotonicMs(): number {
    return this.current;
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { id, at: this.current + Math.max(0, ms), fn });
    return { id } as unknown as TimerHandle;
  }
  clearTimeout(handle: TimerHandle | undefined): void {
    if (handle) this.timers.delete((handle as unknown as { id: number }).id);
  }
  setInterval(fn: () => void, ms: number): TimerHandle {
    const id = this.nextId++;
    this.timers.set(id, { id, at: this.current + ms, fn, everyMs: Math.max(1, ms) });
    return { id } as unknown as TimerHandle;
  }
  clearInterval(handle: TimerHandle | undefined): void {
    this.clearTimeout(handle);
  }
  /** Moves time forward, firing every timer due on the way, in order. */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      let next: SimTimer | undefined;
      for (const t of this.timers.values()) if (t.at <= target && (!next || t.at < next.at)) next = t;
      if (!next) break;
      this.current = next.at;
      if (next.everyMs) next.at += next.everyMs;
      else this.timers.delete(next.id);
      next.fn();
    }
    this.current = target;
  }
  get pendingTimers(): number {
    return this.timers.size;
  }
}

/** Waits `ms` on `clock`; rejects with `abortError()` as soon as `signal` aborts (timer cleared). */
export function sleepOn(clock: Clock, ms: number, signal: AbortSignal, abortError: () => Error): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortError());
    const onAbort = (): void => {
      clock.clearTimeout(timer);
      reject(abortError());
    };
    const timer = clock.setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The longest delay setTimeout honours (2^31 - 1 ms, 24.8 days): Node fires a longer one after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
