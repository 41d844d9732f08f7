/** In-process node commands: a direct call of the node's handler, bounded by the timeout. */
import type { Clock } from '../../clock.js';
import { type CommandBus, type CommandHandler, type NodeCommand, RegistryTimeoutError } from '../types.js';

export class MemoryCommandBus implements CommandBus {
  private readonly handlers = new Map<string, CommandHandler>();

  constructor(private readonly clock: Clock) {}

  async serveCommands(nodeId: string, handler: CommandHandler): Promise<() => Promise<void>> {
    this.handlers.set(nodeId, handler);
    return async () => {
      if (this.handlers.get(nodeId) === handler) this.handlers.delete(nodeId);
    };
  }

  async listening(nodeId: string): Promise<boolean> {
    return this.handlers.has(nodeId);
  }

  async sendCommand(nodeId: string, cmd: NodeCommand, timeoutMs: number): Promise<unknown> {
    const handler = this.handlers.get(nodeId);
    if (!handler) throw new RegistryTimeoutError(nodeId);
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    try {
      return await Promise.race([
        // A copy, as a command crossing Redis would be.
        handler(structuredClone(cmd)),
        new Promise((_, reject) => {
          timer = this.clock.setTimeout(() => reject(new RegistryTimeoutError(nodeId)), timeoutMs);
        }),
      ]);
    } finally {
      this.clock.clearTimeout(timer);
    }
  }

  close(): void {
    this.handlers.clear();
  }
}
