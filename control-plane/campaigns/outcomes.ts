/**
 * Call events of campaign calls -> their contacts (registered on the telephony domain's
 * `onCallEvent` hook in app.ts, like the conversation annotator and the failed-call webhook).
 * Answer and AMD verdict are recorded as they come; the end settles the attempt (policy.ts).
 * Events are handled in the background (the carrier's callback gets its answer at once) and
 * awaited at close. An event lost with its replica is made up for by the dialer's recovery.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';
import type { CallEvent } from '../telephony/index.js';
import { markAmd, markAnswered } from './dial-store.js';
import type { Dialer } from './dialer.js';

export interface OutcomeHook {
  onCallEvent(ev: CallEvent): void;
  close(): Promise<void>;
}

export function createOutcomeHook(deps: { sql: Sql; clock: Clock; logger: Logger; dialer: Dialer }): OutcomeHook {
  const { sql, clock, dialer } = deps;
  const pending = new Set<Promise<void>>();

  async function handle(ev: CallEvent): Promise<void> {
    const c = ev.call;
    if (ev.type === 'status' && c.status === 'in_progress') await markAnswered(sql, c.call_id, new Date(clock.now()));
    else if (ev.type === 'amd') await markAmd(sql, c.call_id, c.amd_verdict || ev.detail || '');
    else if (ev.type === 'ended') {
      await dialer.settleEnded(c.call_id, { carrierStatus: ev.detail ?? '', answered: c.answered_at_ms > 0, amdVerdict: c.amd_verdict, durationS: ev.durationS });
    }
  }

  return {
    onCallEvent(ev) {
      if (!ev.call.campaign_id) return;
      const p: Promise<void> = handle(ev)
        .catch((err: Error) => deps.logger.warn({ err: err.message, callId: ev.call.call_id, type: ev.type }, 'campaign call event not applied'))
        .finally(() => pending.delete(p));
      pending.add(p);
    },
    async close() {
      await Promise.allSettled([...pending]);
    },
  };
}
