/** What both invalidation buses share. */
import type { InvalidationHandler } from './types.js';

/** Calls every handler; one that throws (a bug) must not keep the notice from the others. */
export function deliver(handlers: Iterable<InvalidationHandler>, topic: string, key: string, onError?: (err: unknown) => void): void {
  for (const h of handlers) {
    try {
      h(topic, key);
    } catch (err) {
      onError?.(err);
    }
  }
}
