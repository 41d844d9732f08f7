/** In-process cache invalidations: one process, so a notice is a direct call of every handler. */
import type { InvalidationBus, InvalidationHandler } from '../types.js';
import { deliver } from '../invalidations.js';

export class MemoryInvalidationBus implements InvalidationBus {
  private readonly handlers = new Set<InvalidationHandler>();

  async publish(topic: string, key: string): Promise<boolean> {
    deliver(this.handlers, topic, key);
    return true;
  }

  async subscribe(handler: InvalidationHandler): Promise<() => Promise<void>> {
    this.handlers.add(handler);
    return async () => {
      this.handlers.delete(handler);
    };
  }

  close(): void {
    this.handlers.clear();
  }
}
