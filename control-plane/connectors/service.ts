/**
 * ConnectorService: the spec's Connectors API (doc 1), one implementation for REST, Connect and
 * gRPC. The workspace in the path must be one of the caller's (403 otherwise, as the spec says);
 * connect and disconnect need owner/admin/manager. A connection id outside the caller's
 * workspaces is 404, like a missing one. Secrets: sealed with SecretBox before they touch the
 * database, opened only for the vendor call, never returned and never logged.
 */
import { handWrittenToolNamed } from '../agents/tools/handlers.js';
import type { ServiceImpl, HandlerContext } from '@connectrpc/connect';
import { fromJson, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { ConnectorService } from '../../shared/gen/voiceplane/v1/connectors_pb.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { SecretBox } from '../../shared/secrets.js';
import type { Sql } from '../../shared/db/client.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import { AppError, forbidden, invalid, notFound } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import { ROLE_RANK, type Auth, type Principal, type WorkspaceRole } from '../http/auth.js';
import type { InvalidationBus } from '../../shared/registry/types.js';
import { Topic } from '../cache/topics.js';
import type { ConnectorBinder } from '../agents/deps.js';
import type { Catalog, ProviderEntry } from '../../shared/connectors/catalog.js';
import { checkCredentials } from '../../shared/connectors/input.js';
import { VendorError } from '../../shared/connectors/providers/http.js';
import type { ProviderAdapter } from '../../shared/connectors/providers/types.js';
import type { ConnectorExecutor, ConnectorResources } from '../../shared/connectors/executor.js';
import type { OAuthClient } from '../../shared/connectors/oauth/tokens.js';
import type { OAuthDoor } from './oauth.js';
import * as store from './store.js';
import { catalogView, connectionView } from './views.js';

export interface ConnectorServiceDeps {
  sql: Sql;
  auth: Auth;
  clock: Clock;
  logger: Logger;
  secrets: SecretBox;
  outbound: OutboundClient;
  catalog: Catalog;
  adapters: ReadonlyMap<string, ProviderAdapter>;
  /** The same code connector tools run on calls. */
  executor: ConnectorExecutor & ConnectorResources;
  /** What `POST /agents/{id}/tools` with `connector` uses: the legacy enable route binds the same way. */
  binder: ConnectorBinder;
  /** Agent change notices (the agent view cache shows `updated_at`); absent: none sent. */
  invalidations?: InvalidationBus;
  /** This deployment's OAuth clients by provider id (`oauth_available`, refresh, revoke). */
  oauthClients: ReadonlyMap<string, OAuthClient>;
  oauth: OAuthDoor;
}

type Ctx = HandlerContext;

export function createConnectorService(deps: ConnectorServiceDeps): ServiceImpl<typeof ConnectorService> {
  const { sql, auth, clock, catalog, adapters, secrets } = deps;
  const now = () => new Date(clock.now());

  async function inWorkspace(ctx: Ctx, workspaceId: string, min: WorkspaceRole): Promise<Principal> {
    const p = await auth.principal(ctx);
    // Not a UUID cannot be one of the caller's workspaces: the same 403 as a foreign one.
    if (!isUuid(workspaceId)) throw new AppError('FORBIDDEN', 'workspace is not one of yours');
    await auth.requireWorkspace(p, workspaceId, { min, onDenied: 'forbidden' });
    return p;
  }

  /** A provider this build can connect: in the catalog AND with an adapter (others are 404). */
  function connectable(idOrName: string): { entry: ProviderEntry; adapter: ProviderAdapter } {
    const entry = catalog.find(idOrName);
    const adapter = entry && adapters.get(entry.id);
    if (!entry || !adapter) throw notFound(`provider ${idOrName.slice(0, 100)}`);
    return { entry, adapter };
  }

  async function ownConnection(workspaceId: string, connectionId: string): Promise<store.ConnectionRow> {
    const row = isUuid(connectionId) ? await store.getConnection(sql, connectionId) : undefined;
    if (!row || row.workspace_id !== workspaceId) throw notFound('connection');
    return row;
  }

  /** Legacy agent routes: the agent must be in one of the caller's workspaces (404 like a missing one). */
  async function agentFor(ctx: Ctx, agentId: string, min: WorkspaceRole): Promise<{ id: string; workspace_id: string }> {
    const p = await auth.principal(ctx);
    const agent = isUuid(agentId) ? await store.agentRef(sql, agentId) : undefined;
    const role = agent && (await auth.roleIn(p, agent.workspace_id));
    if (!agent || !role) throw notFound('agent');
    if (ROLE_RANK[role] < ROLE_RANK[min]) throw forbidden(`requires the ${min} role or above in the agent's workspace`);
    return agent;
  }

  const agentChanged = async (agentId: string) => void (await deps.invalidations?.publish(Topic.agent, agentId));

  return {
    async listCatalog(_req, ctx) {
      await auth.principal(ctx);
      return { providers: catalog.providers.filter((p) => adapters.has(p.id)).map((p) => catalogView(p, deps.oauthClients.has(p.id))) };
    },

    async listConnections(req, ctx) {
      await inWorkspace(ctx, req.workspaceId, 'member');
      const rows = await store.listConnections(sql, req.workspaceId);
      return { connections: rows.map((r) => connectionView(r, catalog.find(r.provider_id))) };
    },

    async startOAuth(req, ctx) {
      const p = await inWorkspace(ctx, req.workspaceId, 'manager');
      const entry = catalog.find(req.provider);
      if (!entry || !adapters.has(entry.id) || !entry.auth_kinds.includes('oauth')) throw notFound(`OAuth provider ${req.provider.slice(0, 100)}`);
      return { authUrl: await deps.oauth.start(entry, req.workspaceId, p.userId, req.products) };
    },

    async oAuthCallback(req, ctx) {
      const location = await deps.oauth.callback({ state: req.state, code: req.code, error: req.error, errorDescription: req.errorDescription }, ctx.signal);
      ctx.responseHeader.set('location', location);
      return { location };
    },

    async listResources(req, ctx) {
      await inWorkspace(ctx, req.workspaceId, 'member');
      const row = await ownConnection(req.workspaceId, req.connectionId);
      const rows = await deps.executor.resources(row, req.kind, { q: req.q || undefined, spreadsheet_id: req.spreadsheetId || undefined }, ctx.signal);
      return { data: rows as JsonObject[] };
    },

    async connectKey(req, ctx) {
      await inWorkspace(ctx, req.workspaceId, 'manager');
      const { entry, adapter } = connectable(req.provider);
      if (!entry.auth_kinds.includes('api_key')) throw notFound(`key door of provider ${entry.id}`);
      const cred = checkCredentials(entry, req.credentials);
      let accountLabel: string;
      try {
        ({ accountLabel } = await adapter.verify({ http: deps.executor.http(adapter, cred, ctx.signal), cred, now: () => clock.now() }));
      } catch (err) {
        throw verifyRefusal(entry, err);
      }
      const { row, reactivated } = await store.upsertConnection(sql, {
        id: newId(),
        workspace_id: req.workspaceId,
        provider_id: entry.id,
        account_label: accountLabel.slice(0, 200),
        auth_mode: 'api_key',
        secret_enc: secrets.encrypt(JSON.stringify(cred)),
        enabled_products: entry.products,
        now: now(),
      });
      deps.logger.info({ workspaceId: req.workspaceId, provider: entry.id, connectionId: row.id, reactivatedTools: reactivated }, 'connector connected');
      return connectionView(row, entry);
    },

    async listConnectionAgents(req, ctx) {
      await inWorkspace(ctx, req.workspaceId, 'member');
      const row = await ownConnection(req.workspaceId, req.connectionId);
      const rows = await store.connectionAgents(sql, row);
      return { agents: rows.map((r) => ({ agentId: r.agent_id, agentName: r.agent_name, toolId: r.tool_id, toolName: r.tool_name, actionCount: r.action_count })) };
    },

    async disconnect(req, ctx) {
      await inWorkspace(ctx, req.workspaceId, 'manager');
      const row = await ownConnection(req.workspaceId, req.connectionId);
      const sealed = row.auth_mode === 'oauth' ? await store.secretOf(sql, row.id) : undefined;
      const disabled = await store.disconnect(sql, row, now());
      // Revoke at the vendor after the local purge: a vendor outage never keeps a secret stored.
      const client = deps.oauthClients.get(row.provider_id);
      if (sealed && client) await deps.oauth.revokeQuietly(client, JSON.parse(secrets.decrypt(sealed)) as Record<string, string>, row.provider_id);
      deps.logger.info({ workspaceId: row.workspace_id, provider: row.provider_id, connectionId: row.id, disabledTools: disabled }, 'connector disconnected');
      return { message: 'disconnected' };
    },

    async executeAction(req, ctx) {
      const p = await auth.principal(ctx);
      const row = isUuid(req.connectionId) ? await store.getConnection(sql, req.connectionId) : undefined;
      // Another workspace's connection answers exactly like a missing one (spec doc 1).
      await auth.requireRowWorkspace(p, row?.workspace_id, 'connection', 'manager');
      const data = await deps.executor.execute(row!, req.action, req.body, ctx.signal);
      return { data: fromJson(ValueSchema, data as JsonValue) };
    },

    async listAgentConnectors(req, ctx) {
      const agent = await agentFor(ctx, req.agentId, 'member');
      const [tools, rows] = await Promise.all([store.activeConnectorTools(sql, agent.id), store.listConnections(sql, agent.workspace_id)]);
      const byId = new Map(rows.map((r) => [r.id, r]));
      // Enabled = a switched-on tool bound to a live connection of the agent's workspace.
      const connectors = tools.flatMap((t) => {
        const row = byId.get(t.connection_id);
        if (!row?.is_active) return [];
        return [{ connection: connectionView(row, catalog.find(row.provider_id)), toolId: t.tool_id, toolName: t.tool_name, boundActions: t.bound_actions }];
      });
      return { connectors };
    },

    async enableAgentConnector(req, ctx) {
      const agent = await agentFor(ctx, req.agentId, 'manager');
      if (!req.connectionId) throw invalid('connection_id', 'is required');
      const row = isUuid(req.connectionId) ? await store.getConnection(sql, req.connectionId) : undefined;
      if (!row || row.workspace_id !== agent.workspace_id) throw notFound('connection');
      // The binder answers CONNECTOR_NOT_CONNECTED (409) for a disconnected or unhealthy connection, like POST /agents/{id}/tools.
      const found = await deps.binder.bindingFor(agent.workspace_id, row.provider_id);
      // A same-named hand-written tool never becomes a connector tool (as on PUT /agents/{id}).
      // (Tools already bound to the connection are switched back on instead, and it is left alone.)
      const [sameName] = await sql<{ connector_binding: unknown; bound: boolean }[]>`
        select connector_binding, exists (select 1 from agent_tools b where b.agent_id = ${agent.id} and b.connector_binding->>'connection_id' = ${row.id}) as bound
        from agent_tools where agent_id = ${agent.id} and name = ${found.providerId}`;
      if (sameName && !sameName.connector_binding && !sameName.bound) throw handWrittenToolNamed(found.providerId, 'connection_id');
      const enabled = await store.enableOnAgent(sql, {
        agent_id: agent.id,
        connection_id: row.id,
        tool: { id: newId(), name: found.providerId, description: found.description, connector_binding: found.binding },
        now: now(),
      });
      if (!enabled) throw new AppError('CONNECTOR_NOT_CONNECTED', `${row.provider_id} was disconnected meanwhile; connect it again first`);
      await agentChanged(agent.id);
      deps.logger.info({ agentId: agent.id, provider: row.provider_id, connectionId: row.id }, 'connector enabled on agent');
      return { message: 'enabled' };
    },

    async disableAgentConnector(req, ctx) {
      const agent = await agentFor(ctx, req.agentId, 'manager');
      if (!isUuid(req.connectionId)) throw notFound('connector of this agent');
      const bound = await store.disableOnAgent(sql, agent.id, req.connectionId, now());
      if (bound === 0) throw notFound('connector of this agent');
      await agentChanged(agent.id);
      deps.logger.info({ agentId: agent.id, connectionId: req.connectionId, tools: bound }, 'connector disabled on agent');
      return { message: 'disabled' };
    },
  };
}

/** Spec: refused credential, missing permission or unknown per-tenant host: 400, nothing stored. */
function verifyRefusal(entry: ProviderEntry, err: unknown): AppError {
  // A 2xx answer the adapter cannot read (no account id, another shape): the vendor's side, as for actions.
  if (err instanceof TypeError) return new AppError('BAD_GATEWAY', `${entry.name} answered the credential check in a shape this connector does not understand (${err.message.slice(0, 200)}); nothing was stored`);
  if (!(err instanceof VendorError)) return err instanceof AppError ? err : new AppError('INTERNAL', 'internal error', { cause: err });
  switch (err.kind) {
    case 'auth':
      return new AppError('INVALID_REQUEST', `${entry.name} refused the credential: ${err.reason}`);
    case 'not_found':
      return new AppError('INVALID_REQUEST', `${entry.name} answered not found for this account (check the host fields): ${err.reason}`);
    case 'rejected':
      return new AppError('INVALID_REQUEST', `${entry.name} refused the request: ${err.reason}`);
    default:
      return new AppError('BAD_GATEWAY', `${entry.name} could not verify the credential (${err.reason}); nothing was stored, try again`);
  }
}
