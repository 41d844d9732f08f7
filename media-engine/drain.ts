/**
 * Graceful drain of an engine node (issue 23; docs/operations.md "Drain sequence"). On SIGTERM:
 *
 * 1. the node heartbeats `draining: true` at once, so control planes place no new session here
 *    (`pickNode` skips it) and `/ready` answers 503 so a load balancer stops sending;
 * 2. live calls go on until they end by themselves, up to `timeoutMs` (DRAIN_TIMEOUT_S); the node
 *    keeps heartbeating (it is not lost) and serving commands (`/text`, `/end` still work);
 *    it is idle only once no call, no pre-warmed session and no session placed here but not yet
 *    connected (the registry's count, asked every `pendingPollMs`; the last count stands while the
 *    registry cannot tell, up to `pendingUnknownMaxMs`) has been left for `settleMs`: a
 *    session placed just before the mark may still be connecting, and an outbound call's stream
 *    comes only once the callee answers, a ring later, whether or not its prewarm arrived;
 * 3. at the deadline every remaining call hears a goodbye and ends with `server_shutdown`
 *    (records closed by the actor, a carrier call hung up when its stream closes), bounded by
 *    `endGraceMs`; whatever is still open then is closed by `EngineNode.close()`.
 *
 * `force()` (a second signal) skips what is left of the wait: calls then end at once.
 * Waiting polls the call map on the injected clock (every `pollMs`): the map is the truth, and a
 * poll cannot miss an end the way a forgotten event hook could.
 */
import type { Clock, TimerHandle } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { CallActor } from './session/actor.js';

/** What a caller still on the line hears when the drain deadline passes. */
export const DRAIN_GOODBYE_TEXT = 'We have to end this call now. Please call again. Goodbye.';
/** `end_reason` of calls ended by the drain deadline (or by a shutdown without drain). */
export const SHUTDOWN_REASON = 'server_shutdown';

export interface DrainDeps {
  clock: Clock;
  logger: Logger;
  calls: Map<string, CallActor>;
  /** Pre-warmed sessions waiting for their socket (they are calls about to start). */
  prewarmed: () => number;
  /** Tells the registry this node is draining (one heartbeat); failures are logged, not fatal. */
  markDraining: () => Promise<void>;
  /**
   * Sessions placed on this node whose socket has not come yet (registry); undefined (or a
   * failure) when the registry cannot tell now (down, or just back and not yet written again by
   * its owners). The last count then stands, for up to `pendingUnknownMaxMs`; past that the count
   * is taken as none, logged: a registry out that long would have lost those calls anyway.
   */
  pendingSessions?: () => Promise<number | undefined>;
}

export interface DrainOptions {
  /** Longest wait for calls to end by themselves (DRAIN_TIMEOUT_S). */
  timeoutMs: number;
  /** Idle this long before the node counts as drained. Default 2000 ms (one heartbeat). */
  settleMs?: number;
  /** Longest wait for the goodbyes after the deadline. Default 10 000 ms (the actor's hangup grace + margin). */
  endGraceMs?: number;
  /** Poll period of the call map. Default 200 ms. */
  pollMs?: number;
  /** Poll period of the registry's pending sessions. Default 500 ms (below `settleMs`: idle needs a fresh count). */
  pendingPollMs?: number;
  /** How long the registry may be unable to count before the count is taken as none. Default 10 000 ms. */
  pendingUnknownMaxMs?: number;
}

export type DrainOutcome = { how: 'idle' | 'deadline' | 'forced'; ended: number; remaining: number; tookMs: number };

export interface Drain {
  readonly done: Promise<DrainOutcome>;
  /** Stops waiting now (the caller then closes the node, ending what is left). */
  force(): void;
}

export function startDrain(deps: DrainDeps, opts: DrainOptions): Drain {
  const { clock, logger, calls } = deps;
  const settleMs = opts.settleMs ?? 2000;
  const endGraceMs = opts.endGraceMs ?? 10_000;
  const pollMs = opts.pollMs ?? 200;
  const pendingPollMs = opts.pendingPollMs ?? 500;
  const pendingUnknownMaxMs = opts.pendingUnknownMaxMs ?? 10_000;
  const startedMs = clock.now();
  let forced = false;
  let stopped = false;
  let wake: (() => void) | undefined;
  // The registry's last count of sessions on their way here, and when it was asked.
  let pending = { count: 0, askedAtMs: Number.NEGATIVE_INFINITY };
  let knownAtMs = startedMs;
  let pendingTimer: TimerHandle | undefined;
  let pendingWarned = false;
  const askPending = (): void => {
    const ask = deps.pendingSessions;
    if (!ask || stopped) return;
    const askedAtMs = clock.now();
    const unknown = (err?: Error) => {
      if (askedAtMs - knownAtMs < pendingUnknownMaxMs) return;
      if (!pendingWarned) logger.warn({ err }, 'drain: the registry could not count the sessions placed here but not connected for a while; counting none');
      pendingWarned = true;
      pending = { count: 0, askedAtMs };
    };
    ask()
      .then(
        (count) => {
          if (count === undefined) return unknown();
          pending = { count, askedAtMs };
          knownAtMs = askedAtMs;
        },
        (err: Error) => unknown(err),
      )
      .finally(() => {
        if (!stopped) pendingTimer = clock.setTimeout(askPending, pendingPollMs);
      });
  };

  /** Resolves when `pred()` holds, at `untilMs`, or on force; true when `pred()` held. */
  const waitFor = (pred: () => boolean, untilMs: number): Promise<boolean> =>
    new Promise((resolve) => {
      let timer: TimerHandle | undefined;
      const check = () => {
        if (pred()) return finish(true);
        if (forced || clock.now() >= untilMs) return finish(false);
        timer = clock.setTimeout(check, Math.min(pollMs, Math.max(1, untilMs - clock.now())));
      };
      const finish = (ok: boolean) => {
        clock.clearTimeout(timer);
        wake = undefined;
        resolve(ok);
      };
      wake = () => finish(pred());
      check();
    });

  const run = async (): Promise<DrainOutcome> => {
    const atStart = calls.size;
    await deps.markDraining().catch((err: Error) => logger.warn({ err }, 'drain: could not mark the node draining in the registry'));
    logger.info({ calls: atStart, timeoutS: Math.round(opts.timeoutMs / 1000) }, 'draining: no new sessions; waiting for live calls to end');
    const deadlineMs = startedMs + opts.timeoutMs;
    let idleSinceMs: number | undefined;
    const settled = () => {
      if (calls.size > 0 || deps.prewarmed() > 0 || pending.count > 0) {
        idleSinceMs = undefined;
        return false;
      }
      idleSinceMs ??= clock.now();
      // The count must have been asked within the idle stretch: an older zero may predate a placement.
      const counted = !deps.pendingSessions || pending.askedAtMs >= idleSinceMs;
      return counted && clock.now() - idleSinceMs >= settleMs;
    };
    // Asked after the mark: a placement that saw the node before it was marked is in the registry by then.
    askPending();
    const idle = await waitFor(settled, deadlineMs).finally(() => {
      stopped = true;
      clock.clearTimeout(pendingTimer);
    });
    const tookMs = () => clock.now() - startedMs;
    if (idle) return { how: 'idle', ended: atStart, remaining: 0, tookMs: tookMs() };
    if (forced) return { how: 'forced', ended: atStart - calls.size, remaining: calls.size, tookMs: tookMs() };
    const left = calls.size;
    logger.warn({ calls: left }, 'drain deadline passed: ending the remaining calls with a goodbye');
    for (const actor of [...calls.values()]) actor.shutdown(DRAIN_GOODBYE_TEXT, SHUTDOWN_REASON);
    await waitFor(() => calls.size === 0, clock.now() + endGraceMs);
    return { how: forced ? 'forced' : 'deadline', ended: atStart - calls.size, remaining: calls.size, tookMs: tookMs() };
  };

  return {
    done: run(),
    force() {
      forced = true;
      wake?.();
    },
  };
}
