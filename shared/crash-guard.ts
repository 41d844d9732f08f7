/**
 * Process-level guards. A lost database or Redis connection must not take the process (and every
 * live call on it) down: postgres.js can surface a dropped connection as an unhandled rejection
 * or a throw from a timer. Those are logged and the process goes on; any other uncaught exception
 * is a bug: logged as fatal, then the process exits so a supervisor restarts it clean.
 */
import type { Logger } from './logger.js';

const CONNECTION_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT', 'ERR_SOCKET_CLOSED']);

export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && CONNECTION_CODES.has(code);
}

export function installCrashGuards(logger: Logger): void {
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'unhandled rejection');
  });
  process.on('uncaughtException', (err) => {
    if (isConnectionError(err)) {
      logger.error({ err, code: (err as { code?: string }).code }, 'connection error escaped a client; continuing');
      return;
    }
    logger.fatal({ err }, 'uncaught exception; exiting');
    process.exit(1);
  });
}
