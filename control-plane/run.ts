/**
 * The control plane's part of a process: infrastructure (database, migrations, registry, keys),
 * the API on HTTP_PORT, and the demo seed. Used by `control-plane/main.ts` (the API alone) and by
 * the top-level `main.ts` (`ROLE=all`), which passes `attach` to start a media engine node in the
 * same process. This file imports nothing from `media-engine/`: `ROLE=control-plane` never loads
 * uWebSockets.js.
 */
import { realClock } from '../shared/clock.js';
import type { Config } from '../shared/config.js';
import type { MainContext } from '../shared/run-main.js';
import type { TranscriptBus } from '../shared/records/bus.js';
import { startControlPlane, type ControlPlaneOptions } from './app.js';
import { startInfra, type Infra } from './infra.js';
import { ensureDemoOrgKey, seedDemo } from './seed.js';

/** How long in-flight API requests may run on after SIGTERM before they are cut. */
const REQUEST_DRAIN_MS = 10_000;

/** What an in-process engine hands back to the control plane. */
export interface Attached {
  /** The engine's record writer and the control plane's SSE streams share one bus. */
  bus?: TranscriptBus;
  /** Engine WebSocket port (logged). */
  enginePort?: number;
  /**
   * Shutdown step that must run while the API still serves (an engine's drain on SIGTERM: its
   * calls keep using `/text`, `/end` and carrier callbacks until they end).
   */
  beforeApiClose?: (signal: string) => Promise<void>;
}

/**
 * Runs between the infrastructure and the API (the engine needs the pool and the registry; the
 * API needs the engine's bus). Registers its own closers on `ctx`.
 */
export type Attach = (ctx: MainContext, config: Config, infra: Infra) => Promise<Attached>;

/**
 * `options`: tuning of the control plane's parts (job polling, dialer timings), which production
 * leaves at their defaults; test entries pass it to run this same start and shutdown faster.
 */
export async function runControlPlane(ctx: MainContext, attach?: Attach, options: Omit<ControlPlaneOptions, 'bus'> = {}): Promise<void> {
  const { logger } = ctx;
  const config = await ensureDemoOrgKey(ctx.config, logger);
  const infra = await startInfra(config, logger, realClock);
  ctx.onClose(() => infra.close());
  await ctx.checkpoint();
  const attached = attach ? await attach(ctx, config, infra) : {};
  await ctx.checkpoint();
  const cp = await startControlPlane({ config, logger, clock: realClock, ...infra }, { ...options, bus: attached.bus });
  // SIGTERM: requests in flight get up to 10 s to finish (jobs get their own 10 s in jobs.close()).
  ctx.onClose((signal) => cp.close(signal === 'SIGTERM' ? { graceMs: REQUEST_DRAIN_MS } : undefined));
  // Registered after the API's closer, so it runs before it (closers run in reverse).
  if (attached.beforeApiClose) ctx.onClose(attached.beforeApiClose);
  // Registered last, so it runs first: `/ready` fails for the whole drain (engine calls, then requests).
  ctx.onClose(async (signal) => {
    if (signal === 'SIGTERM') cp.markDraining();
  });
  ctx.started();
  await ctx.checkpoint();
  // dialerOwner: the id this process writes into `campaigns.dialer_owner` while it dials a campaign.
  logger.info(
    { port: cp.port, grpcPort: cp.grpcPort, engine: attached.enginePort, embeddedDb: infra.embeddedDb, registry: infra.registry.kind, dialerOwner: cp.campaigns.dialer.owner },
    'control plane listening',
  );
  if (config.seedDemo) await seedDemo(config, cp.port, logger, cp.consoleServed);
}
