/** Tools of an agent: CRUD. Draft only. `auth_token` is encrypted at rest and masked in responses. */
import { isReservedToolName, RESERVED_TOOL_NAMES_TEXT } from '../../../shared/agent/reserved-tools.js';
import { toJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import type { AgentConfigService } from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import { AppError, invalid, notFound } from '../../../shared/errors.js';
import { newId } from '../../../shared/ids.js';
import type { SecretBox } from '../../../shared/secrets.js';
import { requireConnectorBinding, type Access } from '../access.js';
import type { AgentsDeps } from '../deps.js';
import { touchAgent } from '../core/store.js';
import { isUniqueViolation, withAgentLock } from '../db.js';
import type { ToolRow } from '../types.js';
import { pathId, sameOrigin } from '../../http/validate.js';
import { createOutboundPolicy } from '../../../shared/outbound/index.js';
import { isMaskedReadBack, toolView } from '../views.js';
import { deleteToolRow, getToolRow, insertToolRow, listToolRows, updateToolRow, type ToolWrite } from './store.js';
import { checkConnectorRequest, checkToolInput, TOOL_DEFAULTS, type ToolInput, type ToolPatch } from './validate.js';

type Impl = ServiceImpl<typeof AgentConfigService>;

function bodyJson(v: Value | undefined): JsonValue | undefined {
  return v === undefined ? undefined : toJson(ValueSchema, v);
}

function nameTaken(name: string): AppError {
  return new AppError('TOOL_NAME_TAKEN', `this agent already has a tool named ${name}`);
}

/** A connector's tool name is held by a hand-written tool of the agent: it never becomes a connector tool. */
export function handWrittenToolNamed(name: string, field: string): AppError {
  return new AppError('TOOL_NAME_TAKEN', `this agent already has a tool named ${name} that is not a ${name} connector tool: rename or delete it first`, {
    details: [{ field, problem: `${name} is the name of a hand-written tool of this agent` }],
  });
}

/** New encrypted token: omitted or the masked read-back keeps the stored one, "" clears it. */
function tokenEnc(secrets: SecretBox, plain: string | undefined, stored: string | null, keeps: boolean): string | null {
  if (keeps) return stored;
  return plain === '' || plain === undefined ? null : secrets.encrypt(plain);
}

/** The platform's own function names (shared/agent/reserved-tools.ts): a tool of that name would shadow them. */
function refuseReservedName(name: string): void {
  if (isReservedToolName(name)) throw invalid('name', `is a function the platform offers itself (${RESERVED_TOOL_NAMES_TEXT}): choose another`);
}

function merge(base: ToolWrite, patch: ToolPatch, secrets: SecretBox): ToolWrite {
  const { auth_token, ...rest } = patch;
  // The stored token is never sent to another host than the one it was saved for: whoever may edit
  // the draft could otherwise point the tool at their own server and receive a token they cannot read.
  const keepsToken = auth_token === undefined || isMaskedReadBack(secrets, 'auth_token', auth_token, base.auth_token_enc);
  if (keepsToken && base.auth_token_enc && patch.endpoint_url !== undefined && !sameOrigin(base.endpoint_url, patch.endpoint_url)) {
    throw invalid('auth_token', 'must be sent again when endpoint_url moves to another host (the stored token is never sent to a new address)');
  }
  // `auth_type: none` sent explicitly means "send no credential": it clears the stored token (a
  // switch from basic to none kept sending it), and a token sent with it is a contradiction.
  if (patch.auth_type === 'none' && auth_token && !keepsToken) {
    throw invalid('auth_type', 'is none, so auth_token would not be sent: choose api_key, bearer or basic, or leave auth_type out (a token alone is sent as Bearer)');
  }
  const tokenOut = patch.auth_type === 'none' ? null : tokenEnc(secrets, auth_token, base.auth_token_enc, keepsToken);
  const out: ToolWrite = { ...base, ...rest, auth_token_enc: tokenOut };
  // A tool must be callable: an HTTP endpoint, or a connector binding.
  if (!out.connector_binding && !out.endpoint_url) throw invalid('endpoint_url', 'is required for a tool without connector_binding');
  return out;
}

function withoutTimestamps(r: ToolRow): ToolWrite {
  const { created_at: _c, updated_at: _u, ...w } = r;
  return w;
}

export function toolHandlers(deps: AgentsDeps, access: Access): Pick<Impl, 'createTool' | 'listTools' | 'getTool' | 'updateTool' | 'deleteTool'> {
  const { sql, secrets } = deps;
  const outboundPolicy = createOutboundPolicy(deps.config.outboundAllowCidrs);

  /** `{connector}`: name defaults to the provider id, description to provider + account; no function_schema. */
  async function connectorTool(req: { connector?: string; name?: string; description?: string }, workspaceId: string): Promise<ToolPatch> {
    const connector = req.connector!.trim();
    if (!connector) throw invalid('connector', 'must be a provider id or name');
    if (!deps.connectors) throw new AppError('UNKNOWN_CONNECTOR', `connector ${connector.slice(0, 100)} is not in the catalog`);
    const named = checkToolInput({ name: req.name, description: req.description } as ToolInput, outboundPolicy);
    const found = await deps.connectors.bindingFor(workspaceId, connector);
    return { name: named.name ?? found.providerId, description: named.description ?? found.description, connector_binding: found.binding };
  }

  /** A hand-written binding must name a live connection of the agent's workspace (404 otherwise). */
  async function checkConnection(workspaceId: string, patch: ToolPatch): Promise<void> {
    const binding = patch.connector_binding;
    if (binding && deps.connectors) await deps.connectors.assertLive(workspaceId, binding.connection_id, binding.actions.map((a) => a.name));
  }

  return {
    async createTool(req, ctx) {
      const acc = await access.agent(ctx, req.agentId, 'edit');
      const { agent } = acc;
      checkConnectorRequest(req.connector, req.connectorBinding);
      if (req.connector !== undefined || req.connectorBinding !== undefined) requireConnectorBinding(acc);
      const patch = req.connector === undefined ? checkToolInput({ ...req, requestBody: bodyJson(req.requestBody) } as ToolInput, outboundPolicy) : await connectorTool(req, agent.workspace_id);
      if (patch.name === undefined) throw invalid('name', 'is required');
      refuseReservedName(patch.name);
      if (req.connector === undefined) await checkConnection(agent.workspace_id, patch);
      // TOOL_LIMITS.toolsPerAgent is enforced by the database on insert (409 LIMIT_REACHED, migration 0004).
      const base: ToolWrite = { ...TOOL_DEFAULTS, id: newId(), agent_id: agent.id, name: patch.name, auth_token_enc: null, connector_binding: null };
      const row = merge(base, patch, secrets);
      try {
        const saved = await insertToolRow(sql, row, ctx.signal);
        await touchAgent(sql, agent.id, ctx.signal);
        return toolView(secrets, saved);
      } catch (e) {
        if (isUniqueViolation(e, 'agent_tools_name_key')) throw nameTaken(row.name);
        throw e;
      }
    },

    async listTools(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'read');
      const rows = await listToolRows(sql, agent.id, ctx.signal);
      return { tools: rows.map((r) => toolView(secrets, r)) };
    },

    async getTool(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'read');
      const row = await getToolRow(sql, agent.id, pathId('tool', req.toolId), ctx.signal);
      if (!row) throw notFound('tool');
      return toolView(secrets, row);
    },

    async updateTool(req, ctx) {
      const acc = await access.agent(ctx, req.agentId, 'edit');
      const { agent } = acc;
      const toolId = pathId('tool', req.toolId);
      const patch = checkToolInput({ ...req, requestBody: bodyJson(req.requestBody) } as ToolInput, outboundPolicy);
      // Switching a connector tool on or off is the connectors' enable/disable: a manager's.
      if (patch.connector_binding) requireConnectorBinding(acc);
      await checkConnection(agent.workspace_id, patch);
      // A connector tool is switched on only over a live, healthy connection (spec doc 1, connector
      // tool states); a session would leave it out anyway, while the API showed it active.
      if (patch.is_active === true && deps.connectors) {
        const before = await getToolRow(sql, agent.id, toolId, ctx.signal);
        const binding = patch.connector_binding ?? before?.connector_binding;
        if (before && !before.is_active && binding) await deps.connectors.requireConnected(agent.workspace_id, binding.connection_id);
      }
      let name = patch.name ?? '';
      try {
        const saved = await withAgentLock(sql, agent.id, ctx.signal, async (tx) => {
          const existing = await getToolRow(tx, agent.id, toolId);
          if (!existing) throw notFound('tool');
          // A tool saved with such a name before it was reserved may still be edited; a rename may not take one.
          if (patch.name !== undefined && patch.name !== existing.name) refuseReservedName(patch.name);
          if (existing.connector_binding && patch.is_active !== undefined && patch.is_active !== existing.is_active) requireConnectorBinding(acc, 'switching a connector tool on or off');
          const row = merge(withoutTimestamps(existing), patch, secrets);
          name = row.name;
          const updated = await updateToolRow(tx, row);
          if (!updated) throw notFound('tool');
          await touchAgent(tx, agent.id);
          return updated;
        });
        return toolView(secrets, saved);
      } catch (e) {
        if (isUniqueViolation(e, 'agent_tools_name_key')) throw nameTaken(name);
        throw e;
      }
    },

    async deleteTool(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      if (!(await deleteToolRow(sql, agent.id, pathId('tool', req.toolId), ctx.signal))) throw notFound('tool');
      await touchAgent(sql, agent.id, ctx.signal);
      return { message: 'deleted' };
    },
  };
}
