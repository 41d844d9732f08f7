/**
 * Ending a voice session that no socket has claimed: its call ended first (an outbound call
 * nobody answered, an end through the API before the socket came).
 *
 * The node the session was placed on is told (`end`), because it pre-warmed the session's
 * providers when it was started: without the notice it kept them, counted them as its load and,
 * draining, waited for them until the 30 s connect window closed (issue 23; a campaign dials
 * mostly numbers that do not answer). The session is deleted here as well, so a node that does not
 * answer (dead, or its command subscription reconnecting) changes nothing but the warm providers'
 * lifetime.
 */
import type { Logger } from '../../shared/logger.js';
import { maskSessionId } from '../../shared/ids.js';
import type { Registry, StoredSession } from '../../shared/registry/index.js';

export async function purgeUnclaimed(registry: Pick<Registry, 'sessions' | 'commands'>, session: StoredSession, reason: string, o: { commandTimeoutMs: number; log: Logger }): Promise<void> {
  await registry.commands.sendCommand(session.nodeId, { kind: 'end', sessionId: session.sessionId, payload: { reason } }, o.commandTimeoutMs).catch((err: unknown) => {
    o.log.info({ session: maskSessionId(session.sessionId), nodeId: session.nodeId, err }, 'the node of an unconnected session was not told of its end');
  });
  await registry.sessions.deleteSession(session.sessionId);
}
