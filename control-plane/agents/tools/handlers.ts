/** Tools of an agent: CRUD. Draft only. `auth_token` is encrypted at rest and masked in responses. */
import { toJson, type JsonValue } from '@bufbuild/protobuf';
import { ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import type { AgentConfigService } from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import { AppError, invalid, notFound } from '../../../shared/errors.js';
import { newId } from '../../../shared/ids.js';
import type { SecretBox } from '../../../shared/secrets.js';
import type { Access } from '../access.js';
import type { AgentsDeps } from '../deps.js';
import { touchAgent } from '../core/store.js';
import { isUniqueViolation } from '../db.js';
import type { ToolRow } from '../types.js';
import { idOf } from '../validate.js';
import { toolView } from '../views.js';
import { countToolRows, deleteToolRow, getToolRow, insertToolRow, listToolRows, updateToolRow, type ToolWrite } from './store.js';
import { checkConnectorRequest, checkToolInput, TOOL_DEFAULTS, TOOL_LIMITS, type ToolInput, type ToolPatch } from './validate.js';

type Impl = ServiceImpl<typeof AgentConfigService>;

function bodyJson(v: Value | undefined): JsonValue | undefined {
  return v === undefined ? undefined : toJson(ValueSchema, v);
}

function nameTaken(name: string): AppError {
  return new AppError('TOOL_NAME_TAKEN', `this agent already has a tool named ${name}`);
}

/** New encrypted token: omitted or a masked read-back keeps the stored one, "" clears it. */
function tokenEnc(secrets: SecretBox, plain: string | undefined, stored: string | null): string | null {
  if (plain === undefined || plain.startsWith('•')) return stored;
  return plain === '' ? null : secrets.encrypt(plain);
}

function merge(base: ToolWrite, patch: ToolPatch, secrets: SecretBox): ToolWrite {
  const { auth_token, ...rest } = patch;
  const out: ToolWrite = { ...base, ...rest, auth_token_enc: tokenEnc(secrets, auth_token, base.auth_token_enc) };
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
  return {
    async createTool(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      checkConnectorRequest(req.connector, req.connectorBinding);
      const patch = checkToolInput({ ...req, requestBody: bodyJson(req.requestBody) } as ToolInput);
      if (patch.name === undefined) throw invalid('name', 'is required');
      if ((await countToolRows(sql, agent.id, ctx.signal)) >= TOOL_LIMITS.toolsPerAgent) {
        throw new AppError('CONFLICT', `an agent has at most ${TOOL_LIMITS.toolsPerAgent} tools`);
      }
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
      const row = await getToolRow(sql, agent.id, idOf('tool', req.toolId), ctx.signal);
      if (!row) throw notFound('tool');
      return toolView(secrets, row);
    },

    async updateTool(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      const existing = await getToolRow(sql, agent.id, idOf('tool', req.toolId), ctx.signal);
      if (!existing) throw notFound('tool');
      const patch = checkToolInput({ ...req, requestBody: bodyJson(req.requestBody) } as ToolInput);
      const row = merge(withoutTimestamps(existing), patch, secrets);
      try {
        const saved = await updateToolRow(sql, row, ctx.signal);
        if (!saved) throw notFound('tool');
        await touchAgent(sql, agent.id, ctx.signal);
        return toolView(secrets, saved);
      } catch (e) {
        if (isUniqueViolation(e, 'agent_tools_name_key')) throw nameTaken(row.name);
        throw e;
      }
    },

    async deleteTool(req, ctx) {
      const { agent } = await access.agent(ctx, req.agentId, 'edit');
      if (!(await deleteToolRow(sql, agent.id, idOf('tool', req.toolId), ctx.signal))) throw notFound('tool');
      await touchAgent(sql, agent.id, ctx.signal);
      return { message: 'deleted' };
    },
  };
}
