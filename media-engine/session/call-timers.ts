/**
 * A call's named one-shot timers on the injected clock. A timer that fires posts a message to the
 * actor's mailbox instead of running actor code, so timer work is ordered with everything else.
 * Arming a name again replaces the pending one.
 */
import { MAX_TIMER_MS, type Clock, type TimerHandle } from '../../shared/clock.js';
import type { AmdMsg } from './amd.js';
import type { CallMsg } from './messages.js';

export type CallTimerName = Extract<CallMsg, { kind: 'timer' }>['name'];
type AmdTimerName = Extract<AmdMsg, { kind: 'amd_timer' }>['name'];

export class CallTimers {
  private readonly handles = new Map<string, TimerHandle>();

  constructor(
    private readonly clock: Clock,
    private readonly post: (msg: CallMsg | AmdMsg) => void,
  ) {}

  /** Arms `name`; firing posts `{kind: 'timer', name}`. */
  set(name: CallTimerName, ms: number): void {
    this.arm(name, ms, { kind: 'timer', name });
  }

  /** Arms an AMD timer (key `amd_<name>`); firing posts `{kind: 'amd_timer', name}`. */
  setAmd(name: AmdTimerName, ms: number): void {
    this.arm(`amd_${name}`, ms, { kind: 'amd_timer', name });
  }

  has(key: string): boolean {
    return this.handles.has(key);
  }

  /** The timer's message reached the mailbox: it is no longer pending. */
  fired(key: string): void {
    this.handles.delete(key);
  }

  cancel(key: string): void {
    const h = this.handles.get(key);
    if (h) this.clock.clearTimeout(h);
    this.handles.delete(key);
  }

  cancelAll(): void {
    for (const h of this.handles.values()) this.clock.clearTimeout(h);
    this.handles.clear();
  }

  private arm(key: string, ms: number, msg: CallMsg | AmdMsg): void {
    this.cancel(key);
    // Longer than setTimeout can wait, Node fires at once: a far deadline must never become "now".
    if (ms > MAX_TIMER_MS) return;
    this.handles.set(key, this.clock.setTimeout(() => this.post(msg), ms));
  }
}
