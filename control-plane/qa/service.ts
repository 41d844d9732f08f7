/**
 * QaService: the spec's "QA" routes (doc 3), one implementation for REST, Connect and gRPC.
 *
 * Fencing: by the workspace of the rubric, agent, conversation or score; not a member: 404, like
 * a missing row. A `workspace_id` the request names (rubric create and list, cohort scores) of
 * another organization is 403 (spec doc 3's error table). A rubric binds only to agents of its own workspace (another workspace's agent is
 * a 404 too), and a cohort's `agent_id` must belong to the cohort's `workspace_id`, so no filter
 * reaches another owner's agents. Roles: any member reads; rubric writes, binding and reviews
 * need `manager` or above (403): a rubric acts on the live agent at once and spends an LLM call
 * on every completed call, like publishing does.
 */
import type { ServiceImpl, HandlerContext } from '@connectrpc/connect';
import { toJson, type MessageInitShape } from '@bufbuild/protobuf';
import { ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import type { QaService, QaRubricSchema, QaScoreSchema } from '../../shared/gen/voiceplane/v1/qa_pb.js';
import type { Clock } from '../../shared/clock.js';
import { conflict, invalid, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/client.js';
import type { Auth, WorkspaceRole } from '../http/auth.js';
import { pageMeta, pageOf } from '../http/pagination.js';
import { MAX_NAME_CHARS, optionalNonEmpty, optionalText, pathId, required, uuidField } from '../http/validate.js';
import { parseCriteria, parseThreshold } from './criteria.js';
import * as store from './store.js';
import { createOnce, sameFields } from '../http/create-once.js';

const MAX_DESCRIPTION_CHARS = 2000;
const MAX_REVIEWER_ID_CHARS = 200;
const MAX_NOTES_CHARS = 4000;
/** Rubrics per workspace. Checked before the insert for the message, held exactly by the database (migration 0023). */
export const MAX_RUBRICS_PER_WORKSPACE = 100;

export interface QaServiceDeps {
  sql: Sql;
  auth: Auth;
  clock: Clock;
}

export function createQaService(deps: QaServiceDeps): ServiceImpl<typeof QaService> {
  const { sql, auth, clock } = deps;
  const now = () => new Date(clock.now());

  /** The caller may act in `workspaceId` with at least `min` (404 `<what> not found` when not a member, 403 below `min`). */
  async function allow(ctx: HandlerContext, workspaceId: string | undefined, what: string, min: WorkspaceRole): Promise<void> {
    await auth.requireRowWorkspace(await auth.principal(ctx), workspaceId, what, min);
  }

  /**
   * A workspace named by the request (`workspace_id`): one of another organization is 403
   * FORBIDDEN (spec doc 3's error table), unlike a row found by id, which is not found.
   */
  async function allowWorkspace(ctx: HandlerContext, workspaceId: string, min: WorkspaceRole): Promise<void> {
    await auth.requireWorkspace(await auth.principal(ctx), workspaceId, { min, onDenied: 'forbidden' });
  }

  async function rubricOr404(ctx: HandlerContext, id: string | undefined, min: WorkspaceRole): Promise<store.RubricRow> {
    const r = await store.getRubric(sql, pathId('QA rubric', id));
    await allow(ctx, r?.workspace_id, 'QA rubric', min);
    return r!;
  }

  /** The agent, in the caller's reach; a rubric's agent must also be in the rubric's workspace. */
  async function agentIn(ctx: HandlerContext, agentId: string | undefined, min: WorkspaceRole, workspaceId?: string): Promise<string> {
    const id = pathId('agent', agentId);
    const ws = await store.agentWorkspace(sql, id);
    if (workspaceId !== undefined && ws !== workspaceId) throw notFound('agent');
    await allow(ctx, ws, 'agent', min);
    return id;
  }

  return {
    async createQaRubric(req, ctx) {
      await auth.principal(ctx);
      const workspaceId = uuidField('workspace_id', req.workspaceId, true)!;
      const name = required('name', req.name, MAX_NAME_CHARS);
      const description = optionalText('description', req.description, MAX_DESCRIPTION_CHARS) ?? '';
      if (req.criteria === undefined) throw invalid('criteria', 'is required');
      const criteria = parseCriteria(json(req.criteria));
      const passThreshold = parseThreshold(req.passThreshold, true)!;
      const id = uuidField('id', req.id) ?? newId();
      await allowWorkspace(ctx, workspaceId, 'manager');
      const want = { id, workspace_id: workspaceId.toLowerCase(), name, description, criteria, pass_threshold: passThreshold };
      const { row } = await createOnce({
        what: 'a QA rubric',
        find: () => store.getRubric(sql, id),
        insert: async () => {
          // Counted only for a new rubric: a retried create is answered even at the limit.
          if ((await store.countRubrics(sql, workspaceId)) >= MAX_RUBRICS_PER_WORKSPACE) {
            throw conflict(`the workspace already has ${MAX_RUBRICS_PER_WORKSPACE} QA rubrics`, 'LIMIT_REACHED');
          }
          return store.insertRubric(sql, want, now());
        },
        same: (existing) => sameFields(existing, want, ['workspace_id', 'name', 'description', 'criteria', 'pass_threshold']),
      });
      return rubricView(row);
    },

    async listQaRubrics(req, ctx) {
      await auth.principal(ctx);
      const workspaceId = uuidField('workspace_id', req.workspaceId, true)!;
      await allowWorkspace(ctx, workspaceId, 'member');
      return { rubrics: (await store.listRubrics(sql, workspaceId)).map(rubricView) };
    },

    async updateQaRubric(req, ctx) {
      const r = await rubricOr404(ctx, req.rubricId, 'manager');
      const patch: store.RubricPatch = {
        name: optionalNonEmpty('name', req.name, MAX_NAME_CHARS),
        description: optionalText('description', req.description, MAX_DESCRIPTION_CHARS),
        criteria: req.criteria === undefined ? undefined : parseCriteria(json(req.criteria)),
        pass_threshold: parseThreshold(req.passThreshold, false),
      };
      const row = await store.updateRubric(sql, r.id, patch, now());
      if (!row) throw notFound('QA rubric');
      return rubricView(row);
    },

    async deleteQaRubric(req, ctx) {
      const r = await rubricOr404(ctx, req.rubricId, 'manager');
      if (!(await store.deleteRubric(sql, r.id))) throw notFound('QA rubric');
      return { status: 'deleted' };
    },

    async bindQaRubric(req, ctx) {
      const r = await rubricOr404(ctx, req.rubricId, 'manager');
      const agentId = await agentIn(ctx, req.agentId, 'manager', r.workspace_id);
      await store.bind(sql, r.id, agentId, r.workspace_id, now());
      return { status: 'bound' };
    },

    async unbindQaRubric(req, ctx) {
      const r = await rubricOr404(ctx, req.rubricId, 'manager');
      const agentId = await agentIn(ctx, req.agentId, 'manager', r.workspace_id);
      if (!(await store.unbind(sql, r.id, agentId))) throw notFound('binding of this rubric to this agent');
      return { status: 'unbound' };
    },

    async getAgentQaRubric(req, ctx) {
      const agentId = await agentIn(ctx, req.agentId, 'member');
      const r = await store.activeRubric(sql, agentId);
      return { rubric: r ? rubricView(r) : undefined };
    },

    async listQaScores(req, ctx) {
      await auth.principal(ctx);
      const conversationId = uuidField('conversation_id', req.conversationId);
      const page = pageOf(req);
      if (conversationId) {
        await allow(ctx, await store.conversationWorkspace(sql, conversationId), 'conversation', 'member');
        const { rows, total } = await store.listScores(sql, { conversationId }, page);
        return { scores: rows.map(scoreView), meta: pageMeta(page, total) };
      }
      const workspaceId = uuidField('workspace_id', req.workspaceId);
      // With agent_id the cohort form was meant: its missing piece is workspace_id.
      if (!workspaceId) throw req.agentId ? invalid('workspace_id', 'is required with agent_id') : invalid('conversation_id', 'or workspace_id (with agent_id) is required');
      const agentId = uuidField('agent_id', req.agentId);
      await allowWorkspace(ctx, workspaceId, 'member');
      // The cohort's agent must be one of this workspace's: another owner's agent is not found.
      if (agentId && (await store.agentWorkspace(sql, agentId)) !== workspaceId) throw notFound('agent');
      const { rows, total } = await store.listScores(sql, { workspaceId, agentId }, page);
      return { scores: rows.map(scoreView), meta: pageMeta(page, total) };
    },

    async reviewQaScore(req, ctx) {
      const s = await store.getScore(sql, pathId('QA score', req.scoreId));
      // A pending row is not a score yet: not found, like in the lists.
      await allow(ctx, s && s.status !== 'pending' ? s.workspace_id : undefined, 'QA score', 'manager');
      const reviewerId = required('reviewer_id', req.reviewerId, MAX_REVIEWER_ID_CHARS);
      const notes = optionalText('notes', req.notes, MAX_NOTES_CHARS) ?? null;
      if (s!.status === 'failed') throw conflict('a failed score has no model scores to review');
      if (!(await store.review(sql, s!.id, reviewerId, notes, now()))) throw conflict('the score cannot be reviewed in its current state');
      return { status: 'reviewed' };
    },
  };
}

/** `criteria` travels as a google.protobuf.Value so that its shape is checked here, item by item. */
function json(v: Value): unknown {
  return toJson(ValueSchema, v);
}

export function rubricView(r: store.RubricRow): MessageInitShape<typeof QaRubricSchema> {
  return {
    id: r.id,
    workspaceId: r.workspace_id,
    name: r.name,
    description: r.description,
    criteria: r.criteria.map((c) => ({ name: c.name, weight: c.weight, description: c.description })),
    passThreshold: r.pass_threshold,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
    agentIds: r.agent_ids ?? [],
  };
}

function scoreView(s: store.ScoreRow): MessageInitShape<typeof QaScoreSchema> {
  return {
    id: s.id,
    conversationId: s.conversation_id,
    workspaceId: s.workspace_id,
    agentId: s.agent_id,
    rubricId: s.rubric_id ?? undefined,
    rubricName: s.rubric_name,
    passThreshold: s.pass_threshold,
    overallScore: s.overall_score ?? undefined,
    flagged: s.flagged,
    complianceIssue: s.compliance_issue,
    complianceNote: s.compliance_note ?? undefined,
    status: s.status,
    criteria: s.criteria,
    model: s.model,
    latencyMs: s.latency_ms,
    attempts: s.attempts,
    error: s.error ?? undefined,
    reviewerId: s.reviewer_id ?? undefined,
    reviewNotes: s.review_notes ?? undefined,
    reviewedAt: s.reviewed_at?.toISOString(),
    createdAt: s.created_at.toISOString(),
    updatedAt: s.updated_at.toISOString(),
  };
}
