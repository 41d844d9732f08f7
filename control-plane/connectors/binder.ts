/**
 * What the agents domain asks of connectors when a tool is bound (spec doc 1, "Connector tool
 * creation rules"; codes UNKNOWN_CONNECTOR 404, CONNECTOR_NOT_CONNECTED 409, NOT_FOUND 404).
 * The agents domain sees only the ConnectorBinder interface of agents/deps.ts.
 */
import type { Sql } from '../../shared/db/client.js';
import { AppError, invalid, notFound } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import type { ConnectorBinder } from '../agents/deps.js';
import type { Catalog } from '../../shared/connectors/catalog.js';
import * as store from './store.js';
import { connectionView } from './views.js';

export function createConnectorBinder(sql: Sql, catalog: Catalog): ConnectorBinder {
  return {
    async bindingFor(workspaceId, idOrName) {
      const entry = catalog.find(idOrName);
      if (!entry) throw new AppError('UNKNOWN_CONNECTOR', `connector ${idOrName.slice(0, 100)} is not in the catalog`);
      const row = (await store.listConnections(sql, workspaceId)).find((c) => c.provider_id === entry.id);
      if (!row || !row.is_active || row.health_status !== 'ok') {
        throw new AppError('CONNECTOR_NOT_CONNECTED', `${entry.name} has no live, healthy connection in this workspace`);
      }
      const actions = connectionView(row, entry).actions.filter((a) => a.enabled);
      if (actions.length === 0) throw new AppError('CONNECTOR_NOT_CONNECTED', `the ${entry.name} connection grants no usable action`);
      return {
        providerId: entry.id,
        description: `${entry.name} (${row.account_label})`,
        binding: {
          connection_id: row.id,
          actions: actions.map((a) => ({ name: `${entry.id}__${a.name}`, description: a.description, parameters: a.parameters as never, fixed: {} })),
        },
      };
    },

    async requireConnected(workspaceId, connectionId) {
      const row = isUuid(connectionId) ? await store.getConnection(sql, connectionId) : undefined;
      if (!row || row.workspace_id !== workspaceId || !row.is_active || row.health_status !== 'ok') {
        const state = !row || row.workspace_id !== workspaceId ? 'gone' : !row.is_active ? 'disconnected' : `health ${row.health_status}`;
        throw new AppError('CONNECTOR_NOT_CONNECTED', `the tool's connection is not live and healthy (${state}): connect the provider again first`);
      }
    },

    async assertLive(workspaceId, connectionId, actionNames = []) {
      // A foreign id looks exactly like a missing one.
      const row = isUuid(connectionId) ? await store.getConnection(sql, connectionId) : undefined;
      if (!row || row.workspace_id !== workspaceId || !row.is_active) throw notFound('connection');
      // An action of another provider, or one the catalog does not have, could never run (the
      // engine drops it at call time): refused here, where the author can see why.
      const entry = catalog.find(row.provider_id);
      const granted = entry ? connectionView(row, entry).actions : [];
      actionNames.forEach((name, i) => {
        const [provider, action] = name.split('__', 2);
        if (provider !== row.provider_id || !entry?.actions.some((a) => a.name === action)) {
          throw invalid(`connector_binding.actions[${i}].name`, `is not an action of this ${entry?.name ?? row.provider_id} connection (${row.provider_id}__<action>; GET /api/v1/connectors/connectors lists them)`);
        }
        // Outside what the connection grants (a product not enabled, a scope not consented): every
        // call would answer needs_scope, so it is refused here with the product to reconnect with.
        const view = granted.find((a) => a.name === action);
        if (view && !view.enabled) {
          throw invalid(`connector_binding.actions[${i}].name`, `is not granted by this connection: reconnect it with the ${view.product} product`);
        }
      });
    },
  };
}
