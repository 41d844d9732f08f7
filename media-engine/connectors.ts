/**
 * The engine's connector (issue 18): built once per engine process from the same shared code the
 * control plane's execute route runs (`shared/connectors`: catalog, adapters, executor with its
 * health updates and token refresh), on the node's outbound client. Calls reach it through the
 * small `CallConnectors` interface (session/connector-tools.ts), so unit tests inject a fake.
 */
import type { Clock } from '../shared/clock.js';
import type { Config } from '../shared/config.js';
import type { Sql } from '../shared/db/client.js';
import { AppError, notFound } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { OutboundClient } from '../shared/outbound/index.js';
import type { SecretBox } from '../shared/secrets.js';
import { loadConnectorRuntime } from '../shared/connectors/index.js';
import { createConnectorExecutor } from '../shared/connectors/executor.js';
import { resolveOAuthClients } from '../shared/connectors/oauth/tokens.js';
import { getConnection } from '../shared/connectors/connection-store.js';
import { isUuid } from '../shared/ids.js';
import type { CallConnectors } from './session/connector-tools.js';

export interface EngineConnectorsDeps {
  sql: Sql;
  /** Opens the sealed credentials: the control plane's key (SECRETS_KEY). */
  secrets: SecretBox;
  outbound: OutboundClient;
  config: Pick<Config, 'connectorBaseUrls' | 'connectorTimeoutMs' | 'connectorOAuthClients'>;
  clock: Clock;
  logger: Logger;
}

export function createEngineConnectors(deps: EngineConnectorsDeps): CallConnectors {
  const { sql, logger } = deps;
  const { catalog, adapters } = loadConnectorRuntime({ baseUrls: deps.config.connectorBaseUrls });
  const executor = createConnectorExecutor({
    sql,
    clock: deps.clock,
    logger,
    secrets: deps.secrets,
    outbound: deps.outbound,
    catalog,
    adapters,
    baseUrls: deps.config.connectorBaseUrls,
    timeoutMs: deps.config.connectorTimeoutMs,
    // The same OAuth clients as the control plane: an expired token is refreshed on the call too.
    oauthClients: resolveOAuthClients(deps.config.connectorOAuthClients, catalog),
  });
  return {
    async execute({ workspaceId, connectionId, action, body }, signal) {
      // Read now, not at session start: a disconnect mid-call answers CONNECTOR_NOT_CONNECTED.
      const row = isUuid(connectionId) ? await getConnection(sql, connectionId) : undefined;
      // Another workspace's connection looks exactly like a missing one.
      if (!row || row.workspace_id !== workspaceId) throw notFound('connection');
      try {
        return await executor.execute(row, action, body, signal);
      } catch (err) {
        if (!(err instanceof AppError)) logger.error({ err, provider: row.provider_id, connectionId: row.id, action }, 'connector tool failed unexpectedly');
        throw err;
      }
    },
  };
}
