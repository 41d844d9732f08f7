/**
 * Pre-warmed providers by session id: the `prewarm` command opens a session's vendor connections
 * before its socket arrives; the socket adopts them, or they are closed after a TTL.
 *
 * A prewarm command can arrive after its session's call started, or even ended (the command
 * travels through Redis while a fast client's socket is already claimed, and a call that ended
 * meanwhile is no longer in `calls`): warming then would hold providers nobody adopts for the whole
 * TTL and count them as node load. So the sessions whose call started here are remembered
 * (bounded) and never warmed.
 */
import { LRUCache } from 'lru-cache';
import type { Clock, TimerHandle } from '../shared/clock.js';
import type { AsrProvider, LlmProvider, TtsProvider } from '../shared/providers/types.js';

export type CallProviders = { asr: AsrProvider; llm: LlmProvider; tts: TtsProvider };

/** Calls remembered as started (a prewarm later than this many starts may still warm in vain). */
const MAX_REMEMBERED_STARTS = 16_384;
/**
 * How long a start (or an end before the socket came) is remembered: longer than any connect
 * deadline (ring timeout plus margins), since a draining node must not wait for a session it
 * already ended that Redis lists again after a restart (node.ts `pendingSessions`).
 */
const STARTS_REMEMBERED_MS = 15 * 60_000;

export class PrewarmCache {
  private readonly entries = new Map<string, { providers: CallProviders; timer: TimerHandle }>();
  private readonly started: LRUCache<string, true>;

  constructor(
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {
    this.started = new LRUCache<string, true>({ max: MAX_REMEMBERED_STARTS, ttl: Math.max(ttlMs, STARTS_REMEMBERED_MS), ttlAutopurge: false, perf: { now: () => clock.monotonicMs() } });
  }

  /** Whether the session's call already started on this node, or ended before its socket came (a prewarm for it would be an orphan). */
  hasStarted(sessionId: string): boolean {
    return this.started.has(sessionId);
  }

  get size(): number {
    return this.entries.size;
  }

  has(sessionId: string): boolean {
    return this.entries.has(sessionId);
  }

  /** The session's socket arrived: its pre-warmed providers (if any) are the call's now. */
  take(sessionId: string): CallProviders | undefined {
    this.started.set(sessionId, true);
    const warm = this.entries.get(sessionId);
    if (!warm) return undefined;
    this.clock.clearTimeout(warm.timer);
    this.entries.delete(sessionId);
    return warm.providers;
  }

  /**
   * The session ended before its socket came (its call was never answered): its providers are
   * closed now instead of at the TTL, and a prewarm still in flight for it warms nothing.
   */
  discard(sessionId: string): void {
    this.started.set(sessionId, true);
    const warm = this.entries.get(sessionId);
    if (!warm) return;
    this.clock.clearTimeout(warm.timer);
    this.entries.delete(sessionId);
    closeProviders(warm.providers);
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
