/**
 * MemoryService: workspace memory items (knowledge base entries). Any member reads; writes need
 * manager or above. An item of another workspace, or of a workspace the caller is not in: 404.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import type { ServiceImpl } from '@connectrpc/connect';
import type { MemoryService } from '../../shared/gen/voiceplane/v1/accounts_pb.js';
import { invalid, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { ControlPlaneDeps } from '../domain.js';
import type { AccountsAuth } from './auth.js';
import { memoryJson, type MemoryRow } from './sql.js';
import { pageMeta, pageOf } from '../http/pagination.js';
import { optionalNonEmpty, pathId, required } from '../http/validate.js';
import { Topic } from '../cache/topics.js';

export const MAX_TITLE_CHARS = 500;
/** Content per item (the request body limit, 1 MiB by default, applies first). */
export const MAX_CONTENT_CHARS = 512 * 1024;
export const MAX_METADATA_BYTES = 16 * 1024;
/** Items per workspace: enforced by the database (migration 0004). */
export const MAX_ITEMS_PER_WORKSPACE = 10_000;
const CONTENT_TYPE_RE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+(;.*)?$/i;

function contentType(v: string | undefined): string | undefined {
  if (v === undefined) return undefined;
  const t = required('content_type', v, 100);
  if (!CONTENT_TYPE_RE.test(t)) throw invalid('content_type', 'must be a media type such as text/plain');
  return t;
}

function metadata(v: JsonObject | undefined): JsonObject | undefined {
  if (v === undefined) return undefined;
  if (Buffer.byteLength(JSON.stringify(v)) > MAX_METADATA_BYTES) throw invalid('metadata', `must be at most ${MAX_METADATA_BYTES} bytes as JSON`);
  return v;
}

const COLS = 'id, workspace_id, title, content, content_type, metadata, is_active, created_at, updated_at';

export function createMemoryService(deps: ControlPlaneDeps, auth: AccountsAuth): ServiceImpl<typeof MemoryService> {
  const { sql } = deps;
  return {
    async createMemoryItem(req, ctx) {
      const p = await auth.principal(ctx);
      const ws = pathId('workspace', req.workspaceId);
      const title = required('title', req.title, MAX_TITLE_CHARS);
      const content = required('content', req.content, MAX_CONTENT_CHARS);
      const type = contentType(req.contentType) ?? 'text/plain';
      const meta = metadata(req.metadata) ?? {};
      await auth.requireWorkspace(p, ws, { min: 'manager' });
      // MAX_ITEMS_PER_WORKSPACE is enforced by the database on insert (409 LIMIT_REACHED, migration 0004).
      const [m] = await sql<MemoryRow[]>`
        insert into memory_items (id, workspace_id, title, content, content_type, metadata)
        values (${newId()}, ${ws}, ${title}, ${content}, ${type}, ${sql.json(meta)})
        returning ${sql.unsafe(COLS)}`;
      return memoryJson(m);
    },

    async listMemoryItems(req, ctx) {
      const p = await auth.principal(ctx);
      const ws = pathId('workspace', req.workspaceId);
      const pg = pageOf(req);
      await auth.requireWorkspace(p, ws);
      const rows = await sql<MemoryRow[]>`
        select ${sql.unsafe(COLS)} from memory_items where workspace_id = ${ws}
        order by created_at, id limit ${pg.limit} offset ${pg.offset}`;
      const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from memory_items where workspace_id = ${ws}`;
      return { items: rows.map(memoryJson), meta: pageMeta(pg, n) };
    },

    async updateMemoryItem(req, ctx) {
      const p = await auth.principal(ctx);
      const ws = pathId('workspace', req.workspaceId);
      const id = pathId('memory item', req.memoryId);
      const title = optionalNonEmpty('title', req.title, MAX_TITLE_CHARS);
      const content = optionalNonEmpty('content', req.content, MAX_CONTENT_CHARS);
      const type = contentType(req.contentType);
      const meta = metadata(req.metadata);
      await auth.requireWorkspace(p, ws, { min: 'manager' });
      const [m] = await sql<MemoryRow[]>`
        update memory_items set
          title = coalesce(${title ?? null}, title),
          content = coalesce(${content ?? null}, content),
          content_type = coalesce(${type ?? null}, content_type),
          metadata = coalesce(${meta === undefined ? null : sql.json(meta)}::jsonb, metadata),
          is_active = coalesce(${req.isActive ?? null}::boolean, is_active),
          updated_at = now()
        where id = ${id} and workspace_id = ${ws}
        returning ${sql.unsafe(COLS)}`;
      if (!m) throw notFound('memory item');
      // Agent views show the titles of bound knowledge items (agents/knowledge).
      await auth.changed(Topic.workspace, ws);
      return memoryJson(m);
    },

    async deleteMemoryItem(req, ctx) {
      const p = await auth.principal(ctx);
      const ws = pathId('workspace', req.workspaceId);
      const id = pathId('memory item', req.memoryId);
      await auth.requireWorkspace(p, ws, { min: 'manager' });
      const rows = await sql`delete from memory_items where id = ${id} and workspace_id = ${ws} returning id`;
      if (!rows.length) throw notFound('memory item');
      await auth.changed(Topic.workspace, ws);
      return { message: 'deleted' };
    },
  };
}
