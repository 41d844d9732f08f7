/**
 * A single-consumer async channel: producers `push` from socket callbacks, one `for await` reads.
 * Bounded: `push` refuses (returns false) when `capacity` items wait, and the caller applies its own
 * overflow policy next to the call (ASR drops the oldest interim; TTS fails the stream).
 */
export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = [];
  private waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | null = null;
  private ended = false;
  private error: { value: unknown; delivered: boolean } | null = null;

  constructor(readonly capacity: number) {}

  get size(): number {
    return this.items.length;
  }

  /** True once `end` or `fail` was called (items may still be waiting to be read). */
  get closed(): boolean {
    return this.ended || this.error !== null;
  }

  push(item: T): boolean {
    if (this.closed) return true; // late items after the end are dropped by design
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve({ value: item, done: false });
      return true;
    }
    if (this.items.length >= this.capacity) return false;
    this.items.push(item);
    return true;
  }

  /** Removes the first waiting item matching `pred` (for drop-oldest-of-a-kind policies). */
  dropFirst(pred: (item: T) => boolean): boolean {
    const i = this.items.findIndex(pred);
    if (i < 0) return false;
    this.items.splice(i, 1);
    return true;
  }

  /** Graceful end: waiting items are still delivered, then the iterator completes. */
  end(): void {
    if (this.closed) return;
    this.ended = true;
    this.wake();
  }

  /** Failure: waiting items are still delivered, then `next()` rejects with `error` once. */
  fail(error: unknown): void {
    if (this.closed) return;
    this.error = { value: error, delivered: false };
    this.wake();
  }

  next(): Promise<IteratorResult<T>> {
    if (this.items.length > 0) return Promise.resolve({ value: this.items.shift() as T, done: false });
    if (this.error && !this.error.delivered) {
      this.error.delivered = true;
      return Promise.reject(this.error.value);
    }
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  /** The consumer stopped reading (`break`): discard what is left. */
  return(): Promise<IteratorResult<T>> {
    this.items.length = 0;
    this.ended = true;
    this.wake();
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  /** A waiting reader only exists while `items` is empty, so it gets the end or the error. */
  private wake(): void {
    const w = this.waiter;
    if (!w) return;
    this.waiter = null;
    if (this.error && !this.error.delivered) {
      this.error.delivered = true;
      w.reject(this.error.value);
    } else w.resolve({ value: undefined, done: true });
  }
}
