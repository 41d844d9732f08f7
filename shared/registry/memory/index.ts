/**
 * The in-process registry: the embedded single-node default. The parts share one clock and
 * one sweep schedule (`sweep.ts`), and expire what the Redis registry would.
 */
import { type Clock, realClock } from '../../clock.js';
import type { Registry } from '../types.js';
import { MemoryLiveCallStore } from './calls.js';
import { MemoryCommandBus } from './commands.js';
import { MemoryNodeDirectory } from './nodes.js';
import { MemorySessionStore } from './sessions.js';
import { MemorySweep } from './sweep.js';
import { MemoryRateLimitWindows } from './windows.js';
import { MemoryInvalidationBus } from './invalidations.js';
import { MemoryBillingStates } from './billing.js';

export { MAX_ENTRIES, SWEEP_EVERY_MS } from './sweep.js';

export class MemoryRegistry implements Registry {
  readonly kind = 'memory' as const;
  readonly nodes: MemoryNodeDirectory;
  readonly sessions: MemorySessionStore;
  readonly commands: MemoryCommandBus;
  readonly calls: MemoryLiveCallStore;
  readonly windows: MemoryRateLimitWindows;
  readonly invalidations = new MemoryInvalidationBus();
  readonly billing = new MemoryBillingStates();
  private readonly sweeper: MemorySweep;

  constructor(clock: Clock = realClock) {
    this.sweeper = new MemorySweep(clock);
    this.nodes = new MemoryNodeDirectory(this.sweeper);
    this.sessions = new MemorySessionStore(this.sweeper);
    this.commands = new MemoryCommandBus(clock);
    this.calls = new MemoryLiveCallStore(this.sweeper);
    this.windows = new MemoryRateLimitWindows(this.sweeper);
    for (const part of [this.nodes, this.sessions, this.calls, this.windows]) this.sweeper.add(part);
  }

  /** Entries held now (tests check the sweep). */
  get sizes(): { nodes: number; sessions: number; owners: number; calls: number; callSids: number; windows: number } {
    return { nodes: this.nodes.size, ...this.sessions.sizes, ...this.calls.sizes, windows: this.windows.size };
  }

  /** Drops everything expired. Runs by itself on writes; public for tests and shutdown. */
  sweep(): void {
    this.sweeper.sweep();
  }

  async close(): Promise<void> {
    this.commands.close();
    this.invalidations.close();
  }
}
