/**
 * Child of test/unit/shared/log-stream.test.ts: logs through the process's stdout logger and exits
 * in the same turn, so the lines are still pending at exit. `fatal` ends with a fatal line (pino
 * flushes synchronously for it); `plain` exits after info lines alone (only the exit hook writes them).
 */
import { createLogger } from '../../shared/logger.js';

const [mode, count] = [process.argv[2] ?? 'plain', Number(process.argv[3] ?? 3)];
const logger = createLogger({ level: 'info' });
for (let i = 0; i < count; i++) logger.info({ i }, 'line before exit');
if (mode === 'fatal') logger.fatal('fatal, exiting');
process.exit(3);
