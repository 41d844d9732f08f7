/**
 * Start-up and shutdown of a process entry (`main.ts`, `control-plane/main.ts`,
 * `media-engine/main.ts`), written once:
 * - a bad configuration is one line on stderr and exit code 2;
 * - signals are honoured from the first moment: a Ctrl-C while the embedded Postgres is still
 *   starting must stop it too, not leave it running until the next start cleans it up. During
 *   start-up the step that is running finishes and registers its closer; the next `checkpoint()`
 *   then shuts down;
 * - closers run once, in reverse order of registration, each failure logged; each is told the
 *   signal, so an engine node drains its calls on SIGTERM (an orchestrator's stop) but not on
 *   SIGINT (Ctrl-C in development); a second signal during shutdown calls the `onForce` callbacks
 *   (a drain then ends its calls at once) instead of being ignored, and exits 10 s later if the
 *   shutdown has still not finished; a third exits at once;
 * - a start-up refusal we raise ourselves (`AppError`: a data directory we cannot open, ...) is
 *   one line that says what to do; anything else is a bug and keeps its stack.
 */
import { ConfigError, loadConfig, type Config } from './config.js';
import { installCrashGuards } from './crash-guard.js';
import { AppError } from './errors.js';
import { createLogger, type Logger } from './logger.js';

export interface MainContext {
  config: Config;
  logger: Logger;
  /** Registers a shutdown step (run in reverse order of registration), told the signal that stops the process. */
  onClose(close: (signal: string) => Promise<void>): void;
  /** Registers what a second signal during shutdown does (hurry a drain). */
  onForce(force: () => void): void;
  /** Between start-up steps: shuts down now if a signal arrived during the last one. */
  checkpoint(): Promise<void>;
  /** Start-up is over: from now on a signal shuts down at once. */
  started(): void;
}

export interface MainOptions {
  /** Logger name. */
  name: string;
  /** Extra configuration checks of this entry (throw `ConfigError`). */
  check?: (config: Config) => void;
}

/** How long a signal during start-up waits for a checkpoint before the process exits anyway. */
const STARTUP_STOP_GRACE_MS = 10_000;
/** How long the shutdown may still take after a second signal. */
const FORCED_STOP_GRACE_MS = 10_000;

export function runMain(opts: MainOptions, body: (ctx: MainContext) => Promise<void>): void {
  let config: Config;
  try {
    config = loadConfig();
    opts.check?.(config);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const logger = createLogger({ level: config.logLevel, name: opts.name });
  const closers: Array<(signal: string) => Promise<void>> = [];
  const forcers: Array<() => void> = [];
  let stopping = false;
  let isStarted = false;
  let stopRequested: string | undefined;
  let forced = false;
  const stop = async (signal: string) => {
    if (stopping) {
      // A shutdown step that never ends (a dependency that stopped answering) must not leave the
      // process running: the second signal hurries the drain and bounds what is left; a third exits.
      if (forced) {
        logger.warn({ signal }, 'third signal: exiting now');
        process.exit(1);
      }
      forced = true;
      logger.warn({ signal }, 'second signal: shutting down without waiting for live calls');
      for (const force of forcers) force();
      setTimeout(() => {
        logger.error({ signal }, `shutdown did not finish within ${FORCED_STOP_GRACE_MS / 1000} s of the second signal: exiting`);
        process.exit(1);
      }, FORCED_STOP_GRACE_MS).unref();
      return;
    }
    stopping = true;
    logger.info({ signal }, 'shutting down');
    for (const close of closers.reverse()) await close(signal).catch((err) => logger.error({ err }, 'shutdown step failed'));
    process.exit(0);
  };
  const onSignal = (signal: string) => {
    if (isStarted) return void stop(signal);
    // During start-up the stop waits for the next checkpoint; a step that hangs (a dependency that
    // never answers) must not make the process deaf: a second signal, or 10 s, ends it.
    if (stopRequested) {
      logger.warn({ signal }, 'second signal during start-up: exiting');
      process.exit(1);
    }
    stopRequested = signal;
    setTimeout(() => {
      logger.warn({ signal }, 'start-up did not reach a point where it can stop within 10 s of the signal: exiting');
      process.exit(1);
    }, STARTUP_STOP_GRACE_MS).unref();
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  installCrashGuards(logger);
  const ctx: MainContext = {
    config,
    logger,
    onClose: (close) => void closers.push(close),
    onForce: (force) => void forcers.push(force),
    checkpoint: async () => {
      if (stopRequested) await stop(stopRequested);
    },
    started: () => {
      isStarted = true;
    },
  };
  body(ctx).catch((err) => {
    // A variable only a later start-up step can judge (a connector id against the catalog): one line, as above.
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    if (err instanceof AppError) process.stderr.write(`fatal: ${err.message}\n`);
    else process.stderr.write(`fatal: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  });
}
