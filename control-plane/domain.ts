/**
 * What every control-plane domain (accounts, agents, voice, ...) hands to the server: its proto
 * services with their implementations, its REST routes, optional raw handlers (SSE, signed links)
 * and background work to stop at shutdown.
 */
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import type { Clock } from '../shared/clock.js';
import type { Registry } from '../shared/registry/index.js';
import type { SecretBox } from '../shared/secrets.js';
import type { Sql } from '../shared/db/client.js';
import type { ServiceBinding } from './http/server.js';
import type { RestRoute, NodeReq, NodeRes } from './http/rest.js';

export interface ControlPlaneDeps {
  config: Config;
  logger: Logger;
  clock: Clock;
  sql: Sql;
  registry: Registry;
  secrets: SecretBox;
  jwtKey: Uint8Array;
}

export interface Domain {
  services: ServiceBinding[];
  routes: RestRoute[];
  rawHandlers?: Array<(req: NodeReq, res: NodeRes) => boolean | Promise<boolean>>;
  /** Stops timers, sweepers and queues. Idempotent. */
  close?(): Promise<void>;
}
