/**
 * An answered campaign call whose media stream never reached an engine (the carrier could not
 * open our socket, or the engine refused it): the callee picked up and heard nothing from the
 * agent, and no conversation exists. The carrier's end says `completed`, so the attempt settles as
 * `completed`; this durable check (`campaign.media-check`, queued in that settle's transaction and
 * run a minute later, when the engine's writer has long recorded a conversation that began) corrects it to `failed` with
 * the reason, like the `call.completed` webhook's `failure_reason: "media_not_connected"`. Not
 * retried: the number answered (spec: "answered numbers ... are never dialed again"). A
 * `voicemail` attempt keeps its outcome: a machine answered, which is what the row says, whether
 * or not our socket opened before the hang-up on it.
 */
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';

export const MEDIA_NOT_CONNECTED = 'answered, but the call audio never reached the agent (media stream not connected)';

/** Fails the attempt of `callId` if it settled `completed` and its voice session has no conversation; true if it did. */
export async function failIfMediaNeverConnected(sql: Sql, callId: string, log: Logger): Promise<boolean> {
  const [row] = await sql<{ id: string; campaign_id: string }[]>`
    update campaign_contacts c set status = 'failed', error_message = ${MEDIA_NOT_CONNECTED}
    where c.call_id = ${callId} and c.status = 'completed' and c.conversation_id is null
      and c.session_id is not null
      and not exists (select 1 from conversations v where v.session_id = c.session_id
        and v.workspace_id = (select p.workspace_id from campaigns p where p.id = c.campaign_id))
    returning c.id, c.campaign_id`;
  if (!row) return false;
  log.warn({ campaignId: row.campaign_id, contactId: row.id, callId }, 'campaign call answered but its media never reached an engine: contact failed');
  return true;
}
