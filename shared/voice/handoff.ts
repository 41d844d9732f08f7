/**
 * The portal hand-off request of a carrier call (issue 21, docs/portal.md "Hand-off"): the engine
 * publishes it on the registry's invalidation bus with the call id as key; the control plane's
 * portal domain turns it into one `portal.handoff` job per call. That bus is best effort: when the
 * notice cannot be sent (Redis unreachable) the engine writes the request into Postgres instead
 * (`human_handoff_requests`), and the control plane's presence sweep queues the job from there.
 */
import type { Sql } from '../db/client.js';
import type { Logger } from '../logger.js';
import type { InvalidationBus } from '../registry/index.js';

export const HANDOFF_TOPIC = 'portal.handoff';

/**
 * Asks for a person for a carrier call: the bus notice, or, when it could not be sent, the durable
 * request row (without `sql`, a lost notice is only logged: the AI keeps the caller).
 */
export async function requestHandoff(deps: { bus: InvalidationBus; sql?: Sql; logger: Logger }, callId: string): Promise<void> {
  if (await deps.bus.publish(HANDOFF_TOPIC, callId)) return;
  if (!deps.sql) return void deps.logger.warn({ callId }, 'hand-off request lost: the registry bus is unreachable and no database is wired');
  try {
    await deps.sql`insert into human_handoff_requests (call_id) values (${callId}) on conflict (call_id) do nothing`;
    deps.logger.warn({ callId }, 'hand-off request stored for the presence sweep: the registry bus is unreachable');
  } catch (err) {
    deps.logger.warn({ err, callId }, 'hand-off request lost: neither the registry bus nor the database took it');
  }
}
