/**
 * Pre-warmed providers by session id: the `prewarm` command opens a session's vendor connections
 * before its socket arrives; the socket adopts them, or they are closed after a TTL.
 */
import type { Clock, TimerHandle } from '../shared/clock.js';
import type { AsrProvider, LlmProvider, TtsProvider } from '../shared/providers/types.js';

export type CallProviders = { asr: AsrProvider; llm: LlmProvider; tts: TtsProvider };

export class PrewarmCache {
  private readonly entries = new Map<string, { providers: CallProviders; timer: TimerHandle }>();

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  has(sessionId: string): boolean {
    return this.entries.has(sessionId);
  }

  /** The session's socket arrived: its pre-warmed providers (if any) are the call's now. */
  take(sessionId: string): CallProviders | undefined {
    const warm = this.entries.get(sessionId);
    if (!warm) return undefined;
    this.clock.clearTimeout(warm.timer);
    this.entries.delete(sessionId);
    return warm.providers;
  }

  /** Keeps `providers` for the session's socket and warms them (handshakes; failures ignored). */
  async warm(sessionId: string, providers: CallProviders): Promise<void> {
    const timer = this.clock.setTimeout(() => {
      this.entries.delete(sessionId);
      closeProviders(providers);
    }, this.ttlMs);
    // Registered before the handshakes finish: a socket opening meanwhile adopts the ones in flight.
    this.entries.set(sessionId, { providers, timer });
    await Promise.allSettled([providers.asr.warm?.(), providers.llm.warm?.(), providers.tts.warm?.()]);
  }

  /** Node shutdown: closes everything still waiting. */
  closeAll(): void {
    for (const w of this.entries.values()) {
      this.clock.clearTimeout(w.timer);
      closeProviders(w.providers);
    }
  }
}

export function closeProviders(p: CallProviders): void {
  for (const x of [p.asr, p.llm, p.tts]) {
    try {
      x.close?.();
    } catch {
      // best effort: a provider failing to close must not affect the node
    }
  }
}
