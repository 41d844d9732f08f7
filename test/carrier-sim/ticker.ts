/**
 * One timer drives every simulated call (media out, playout, link delivery), so a benchmark with
 * hundreds of calls runs one interval, not hundreds. Each call keeps its own real-time schedule
 * (frame n at t0 + n x 20 ms); the tick period only bounds lateness.
 */
export interface Ticker {
  add(fn: () => void): void;
  remove(fn: () => void): void;
}

export function createTicker(periodMs = 5): Ticker {
  const fns = new Set<() => void>();
  let timer: NodeJS.Timeout | undefined;
  return {
    add(fn) {
      fns.add(fn);
      if (!timer) timer = setInterval(() => {
        for (const f of fns) f();
      }, periodMs);
    },
    remove(fn) {
      fns.delete(fn);
      if (fns.size === 0 && timer) {
        clearInterval(timer);
        timer = undefined;
      }
    },
  };
}

let shared: Ticker | undefined;

/** The process-wide ticker (5 ms). */
export function sharedTicker(): Ticker {
  shared ??= createTicker(5);
  return shared;
}
