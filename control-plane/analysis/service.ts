/**
 * AnalysisService: the spec's "Analysis and conversation analytics" routes for analysis (doc 3),
 * one implementation for REST, Connect and gRPC.
 *
 * Fencing: by the workspace of the agent (schemas, results by agent, insights) or of the
 * conversation (results by conversation); not a member: 404, like a missing row. Roles: any
 * member reads; creating, changing and deleting schemas needs `manager` or above (403), because a
 * schema acts on the live agent at once (there is no draft and publish step) and spends LLM calls
 * on every completed call, like publishing does.
 */
import type { ServiceImpl, HandlerContext } from '@connectrpc/connect';
import { toJson, type MessageInitShape, type JsonObject } from '@bufbuild/protobuf';
import { ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import type { AnalysisService, AnalysisSchemaSchema, AnalysisResultSchema } from '../../shared/gen/voiceplane/v1/analysis_pb.js';
import type { Clock } from '../../shared/clock.js';
import { conflict, invalid, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/client.js';
import type { Auth, WorkspaceRole } from '../http/auth.js';
import { pageMeta, pageOf } from '../http/pagination.js';
import { MAX_NAME_CHARS, optionalNonEmpty, optionalText, pathId, required, uuidField } from '../http/validate.js';
import { parseFields } from './fields.js';
import { agentInsights } from './insights.js';
import * as store from './store.js';

const MAX_DESCRIPTION_CHARS = 2000;
/** Schemas per agent: each one is an LLM request on every completed call. Checked before the insert for the message, held exactly by the database (migration 0023). */
export const MAX_SCHEMAS_PER_AGENT = 20;

export interface AnalysisServiceDeps {
  sql: Sql;
  auth: Auth;
  clock: Clock;
}

export function createAnalysisService(deps: AnalysisServiceDeps): ServiceImpl<typeof AnalysisService> {
  const { sql, auth, clock } = deps;

  /** The caller may act in `workspaceId` with at least `min` (404 `<what> not found` when not a member, 403 below `min`). */
  async function allow(ctx: HandlerContext, workspaceId: string | undefined, what: string, min: WorkspaceRole): Promise<void> {
    await auth.requireRowWorkspace(await auth.principal(ctx), workspaceId, what, min);
  }

  async function agentWorkspace(ctx: HandlerContext, agentId: string, min: WorkspaceRole): Promise<string> {
    const ws = await store.agentWorkspace(sql, agentId);
    await allow(ctx, ws, 'agent', min);
    return ws!;
  }

  async function schemaOr404(ctx: HandlerContext, id: string | undefined, min: WorkspaceRole): Promise<store.SchemaRow> {
    const s = await store.getSchema(sql, pathId('analysis schema', id));
    await allow(ctx, s?.workspace_id, 'analysis schema', min);
    return s!;
  }

  return {
    async createAnalysisSchema(req, ctx) {
      await auth.principal(ctx);
      const agentId = uuidField('agent_id', req.agentId, true)!;
      const name = required('name', req.name, MAX_NAME_CHARS);
      const description = optionalText('description', req.description, MAX_DESCRIPTION_CHARS) ?? '';
      if (req.fields === undefined) throw invalid('fields', 'is required');
      const fields = parseFields(json(req.fields));
      const ws = await agentWorkspace(ctx, agentId, 'manager');
      if ((await store.listSchemas(sql, agentId)).length >= MAX_SCHEMAS_PER_AGENT) {
        throw conflict(`the agent already has ${MAX_SCHEMAS_PER_AGENT} analysis schemas`, 'LIMIT_REACHED');
      }
      const row = await store.insertSchema(sql, { id: newId(), agent_id: agentId, workspace_id: ws, name, description, fields, is_active: req.isActive ?? true }, new Date(clock.now()));
      return schemaView(row);
    },

    async listAnalysisSchemas(req, ctx) {
      await auth.principal(ctx);
      const agentId = uuidField('agent_id', req.agentId, true)!;
      await agentWorkspace(ctx, agentId, 'member');
      return { schemas: (await store.listSchemas(sql, agentId)).map(schemaView) };
    },

    async updateAnalysisSchema(req, ctx) {
      const s = await schemaOr404(ctx, req.schemaId, 'manager');
      const patch: store.SchemaPatch = {
        name: optionalNonEmpty('name', req.name, MAX_NAME_CHARS),
        description: optionalText('description', req.description, MAX_DESCRIPTION_CHARS),
        fields: req.fields === undefined ? undefined : parseFields(json(req.fields)),
        is_active: req.isActive,
      };
      const row = await store.updateSchema(sql, s.id, patch, new Date(clock.now()));
      if (!row) throw notFound('analysis schema');
      return schemaView(row);
    },

    async deleteAnalysisSchema(req, ctx) {
      const s = await schemaOr404(ctx, req.schemaId, 'manager');
      if (!(await store.deleteSchema(sql, s.id))) throw notFound('analysis schema');
      return { status: 'deleted' };
    },

    async listAnalysisResults(req, ctx) {
      await auth.principal(ctx);
      const conversationId = uuidField('conversation_id', req.conversationId);
      const agentId = conversationId ? undefined : uuidField('agent_id', req.agentId);
      if (!conversationId && !agentId) throw invalid('conversation_id', 'or agent_id is required');
      const page = pageOf(req);
      if (conversationId) await allow(ctx, await store.conversationWorkspace(sql, conversationId), 'conversation', 'member');
      else await agentWorkspace(ctx, agentId!, 'member');
      const { rows, total } = await store.listResults(sql, conversationId ? { conversationId } : { agentId: agentId! }, page);
      return { results: rows.map(resultView), meta: pageMeta(page, total) };
    },

    async getAnalysisInsights(req, ctx) {
      await auth.principal(ctx);
      const agentId = uuidField('agent_id', req.agentId, true)!;
      await agentWorkspace(ctx, agentId, 'member');
      return agentInsights(sql, agentId, await store.listSchemas(sql, agentId));
    },
  };
}

/** `fields` travels as a google.protobuf.Value so that its shape is checked here, field by field. */
function json(v: Value): unknown {
  return toJson(ValueSchema, v);
}

function schemaView(s: store.SchemaRow): MessageInitShape<typeof AnalysisSchemaSchema> {
  return {
    id: s.id,
    agentId: s.agent_id,
    workspaceId: s.workspace_id,
    name: s.name,
    description: s.description,
    fields: s.fields.map((f) => ({ name: f.name, type: f.type, description: f.description, enum: f.enum ?? [] })),
    isActive: s.is_active,
    createdAt: s.created_at.toISOString(),
    updatedAt: s.updated_at.toISOString(),
  };
}

function resultView(r: store.ResultRow): MessageInitShape<typeof AnalysisResultSchema> {
  return {
    id: r.id,
    conversationId: r.conversation_id,
    schemaId: r.schema_id,
    schemaName: r.schema_name,
    agentId: r.agent_id,
    status: r.status,
    values: r.values as JsonObject,
    model: r.model,
    latencyMs: r.latency_ms,
    attempts: r.attempts,
    error: r.error ?? undefined,
    createdAt: r.created_at.toISOString(),
  };
}
