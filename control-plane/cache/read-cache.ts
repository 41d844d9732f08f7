/**
 * An in-process read cache for the control plane (docs/caching.md): bounded (`lru-cache`, least
 * recently used dropped first), every entry lives at most `ttlMs` on the injected clock (the bound
 * when a change notice is lost), and evicted at once by change notices from any replica
 * (`registry.invalidations`).
 *
 * A load that was in flight while a notice arrived may carry the old value: `load` stores nothing
 * when any eviction happened since it started (the `epoch` check), so a notice is never undone by
 * a slow read. Nothing is stored before `enable()` (until the subscription to notices is live).
 */
import { LRUCache } from 'lru-cache';
import type { Clock } from '../../shared/clock.js';

export interface ReadCacheOptions {
  /** Entries before the least recently used are dropped. */
  max: number;
  /** Longest life of an entry (ms). */
  ttlMs: number;
  clock: Clock;
  /** Store from the start (tests of the cache alone). Default false: `enable()` once subscribed. */
  enabled?: boolean;
}

export class ReadCache<V extends {}> {
  private readonly lru: LRUCache<string, V>;
  private epoch = 0;
  private enabled: boolean;
  /** Loads in flight by key, with the eviction epoch they started in. */
  private readonly inFlight = new Map<string, { epoch: number; promise: Promise<V | undefined> }>();

  constructor(opts: ReadCacheOptions) {
    // ttlResolution 0: lru-cache would otherwise memoise "now" for 1 ms of real time, which a
    // simulated clock advanced in between would not see.
    this.lru = new LRUCache<string, V>({ max: opts.max, ttl: opts.ttlMs, ttlResolution: 0, perf: { now: () => opts.clock.monotonicMs() } });
    this.enabled = opts.enabled ?? false;
  }

  enable(): void {
    this.enabled = true;
  }

  get size(): number {
    return this.lru.size;
  }

  get(key: string): V | undefined {
    return this.lru.get(key);
  }

  /**
   * The cached value, else `loader()`'s (stored when defined and nothing was evicted meanwhile).
   * Concurrent misses of one key share one load (when an entry expires under load, hundreds of
   * requests would otherwise reach the database at once), unless an eviction happened after that
   * load started: its answer may be the old value, so a new load starts.
   */
  load(key: string, loader: () => Promise<V | undefined>): Promise<V | undefined> {
    const hit = this.lru.get(key);
    if (hit !== undefined) return Promise.resolve(hit);
    const flying = this.inFlight.get(key);
    if (flying && flying.epoch === this.epoch) return flying.promise;
    const epoch = this.epoch;
    let started: Promise<V | undefined>;
    try {
      started = loader();
    } catch (err) {
      return Promise.reject(err);
    }
    const promise = started.then((v) => {
      if (v !== undefined && this.enabled && epoch === this.epoch) this.lru.set(key, v);
      return v;
    });
    const entry = { epoch, promise };
    this.inFlight.set(key, entry);
    // Bounded by the requests in flight: every entry leaves when its load settles.
    const leave = () => {
      if (this.inFlight.get(key) === entry) this.inFlight.delete(key);
    };
    promise.then(leave, leave);
    return promise;
  }

  /** Stores a value just read (same rule as `load`: only if nothing was evicted since `epoch`). */
  setIfCurrent(key: string, v: V, epoch: number): void {
    if (this.enabled && epoch === this.epoch) this.lru.set(key, v);
  }

  /** Eviction counter now, for `setIfCurrent`. */
  get currentEpoch(): number {
    return this.epoch;
  }

  delete(key: string): void {
    this.epoch++;
    this.lru.delete(key);
  }

  /** Evicts every entry the predicate selects (rare writes: a scan of at most `max` entries). */
  deleteWhere(pred: (key: string, value: V) => boolean): void {
    this.epoch++;
    for (const [k, v] of this.lru.entries()) if (pred(k, v)) this.lru.delete(k);
  }

  clear(): void {
    this.epoch++;
    this.lru.clear();
  }
}
