/**
 * Child of test/unit/shared/log-stream.test.ts: logs through the process's stdout logger and exits
 * in the same turn, so the lines are still pending at exit. `fatal` ends with a fatal line (pino
 * flushes synchronously for it); `plain` exits after info lines alone (only the exit hook writes
 * them). `later` hands the lines to the asynchronous writer first and exits two turns on (a crash
 * while writes are in flight). `nonblocking` touches `process.stdout` first, which makes a piped
 * stdout non-blocking (as any console.log does): a slow reader then means partial writes and EAGAIN.
 */
import { createLogger } from '../../shared/logger.js';

const [mode, count, nonblocking] = [process.argv[2] ?? 'plain', Number(process.argv[3] ?? 3), process.argv[4] === 'nonblocking'];
if (nonblocking) void process.stdout;
const logger = createLogger({ level: 'info' });
const pad = 'x'.repeat(200);
for (let i = 0; i < count; i++) logger.info({ i, pad }, 'line before exit');
const end = (): never => {
  if (mode !== 'plain') logger.fatal('fatal, exiting');
  process.exit(3);
};
if (mode === 'later') setImmediate(() => setImmediate(end));
else end();
