/**
 * The `Auth` contract (control-plane/http/auth.ts) for every domain: bearer resolution and
 * workspace roles.
 *
 * Revocation within 5 s on every replica without a database read per request: positive lookups of
 * API keys and of login sessions (the `sid` of an access token) are cached in-process for at most
 * `cacheTtlMs` (4 s). Negative results are never cached. A revoke on this replica also evicts
 * immediately. `api_keys.last_used_at` is written at most once a minute per key, and the SQL guard
 * keeps that true across replicas too.
 */
import type { HandlerContext } from '@connectrpc/connect';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { forbidden, notFound, unauthorized } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import type { Sql } from '../db/client.js';
import { ROLE_RANK, type Auth, type Principal, type WorkspaceRole } from '../http/auth.js';
import { looksLikeJwt, sha256Hex, type TokenService } from './tokens.js';

export interface AuthOptions {
  /** Lifetime of cached positive key / session lookups. Default 4000 (revocation visible within 5 s). */
  cacheTtlMs?: number;
  /** Minimum interval between `last_used_at` writes per key. Default 60000. */
  lastUsedIntervalMs?: number;
  /** Entries per cache before the oldest are dropped. Default 10000. */
  maxCacheEntries?: number;
}

interface Cached {
  principal: Principal;
  expiresAtMs: number;
}

/** Longest bearer we look at; anything longer is malformed (and never hashed). */
const MAX_TOKEN_CHARS = 4096;

export class AccountsAuth implements Auth {
  private readonly perCall = new WeakMap<HandlerContext, Promise<Principal>>();
  private readonly keys = new Map<string, Cached>();
  private readonly sessions = new Map<string, Cached>();
  private readonly lastUsedWriteMs = new Map<string, number>();
  private readonly ttlMs: number;
  private readonly lastUsedIntervalMs: number;
  private readonly maxEntries: number;

  constructor(
    private readonly sql: Sql,
    private readonly tokens: TokenService,
    private readonly clock: Clock,
    private readonly logger: Logger,
    opts: AuthOptions = {},
  ) {
    this.ttlMs = opts.cacheTtlMs ?? 4000;
    this.lastUsedIntervalMs = opts.lastUsedIntervalMs ?? 60_000;
    this.maxEntries = opts.maxCacheEntries ?? 10_000;
  }

  principal(ctx: HandlerContext): Promise<Principal> {
    let p = this.perCall.get(ctx);
    if (!p) {
      const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(ctx.requestHeader.get('authorization') ?? '');
      p = m ? this.resolve(m[1]) : Promise.reject(unauthorized('missing or malformed Authorization header'));
      this.perCall.set(ctx, p);
    }
    return p;
  }

  /** Any bearer (JWT, `vpk_` key, the raw ORG_API_KEY) to its principal; throws UNAUTHORIZED. */
  async resolve(token: string): Promise<Principal> {
    if (!token || token.length > MAX_TOKEN_CHARS) throw unauthorized('malformed token');
    if (looksLikeJwt(token)) {
      const claims = await this.tokens.verifyAccess(token);
      if (!claims) throw unauthorized('invalid or expired token');
      const p = await this.sessionPrincipal(claims.sessionId);
      if (!p || p.userId !== claims.userId) throw unauthorized('session revoked');
      return p;
    }
    const p = await this.keyPrincipal(sha256Hex(token));
    if (!p) throw unauthorized('unknown or revoked key');
    this.touchKey(p.apiKeyId!);
    return p;
  }

  /** Drops a revoked key from this replica's cache at once (other replicas: within the TTL). */
  forgetKey(keyHash: string): void {
    this.keys.delete(keyHash);
  }

  forgetSession(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  async roleIn(p: Principal, workspaceId: string): Promise<WorkspaceRole | undefined> {
    if (!isUuid(workspaceId)) return undefined;
    if (p.isOrgOwner) {
      const [ws] = await this.sql`select 1 from workspaces where id = ${workspaceId}`;
      return ws ? 'owner' : undefined;
    }
    const [m] = await this.sql<{ role: WorkspaceRole }[]>`
      select role from workspace_members where workspace_id = ${workspaceId} and user_id = ${p.userId}`;
    return m?.role;
  }

  async requireWorkspace(
    p: Principal,
    workspaceId: string,
    opts: { min?: WorkspaceRole; onDenied?: 'not_found' | 'forbidden' } = {},
  ): Promise<WorkspaceRole> {
    const role = await this.roleIn(p, workspaceId);
    if (!role) throw opts.onDenied === 'forbidden' ? forbidden('not a member of this workspace') : notFound('workspace');
    const min = opts.min ?? 'member';
    if (ROLE_RANK[role] < ROLE_RANK[min]) throw forbidden(`requires the ${min} role or above`);
    return role;
  }

  async workspaceIds(p: Principal): Promise<string[]> {
    const rows = p.isOrgOwner
      ? await this.sql<{ id: string }[]>`select id from workspaces order by created_at, id`
      : await this.sql<{ id: string }[]>`
          select workspace_id as id from workspace_members where user_id = ${p.userId} order by created_at, workspace_id`;
    return rows.map((r) => r.id);
  }

  async defaultWorkspaceId(p: Principal): Promise<string | undefined> {
    const [ws] = await this.sql<{ id: string }[]>`
      select id from workspaces where user_id = ${p.userId} order by created_at, id limit 1`;
    return ws?.id;
  }

  private async sessionPrincipal(sessionId: string): Promise<Principal | undefined> {
    const hit = this.cached(this.sessions, sessionId);
    if (hit) return hit;
    const [row] = await this.sql<{ user_id: string; email: string; is_org_owner: boolean }[]>`
      select u.id as user_id, u.email, u.is_org_owner
      from sessions s join users u on u.id = s.user_id
      where s.id = ${sessionId} and s.revoked_at is null`;
    if (!row) return undefined;
    const p: Principal = { userId: row.user_id, email: row.email, isOrgOwner: row.is_org_owner, via: 'jwt', scopes: ['*'] };
    this.remember(this.sessions, sessionId, p);
    return p;
  }

  private async keyPrincipal(keyHash: string): Promise<Principal | undefined> {
    const hit = this.cached(this.keys, keyHash);
    if (hit) return hit;
    const [row] = await this.sql<{ id: string; scopes: string[]; is_org_key: boolean; user_id: string; email: string; is_org_owner: boolean }[]>`
      select k.id, k.scopes, k.is_org_key, u.id as user_id, u.email, u.is_org_owner
      from api_keys k join users u on u.id = k.user_id
      where k.key_hash = ${keyHash} and k.revoked_at is null`;
    if (!row) return undefined;
    const p: Principal = {
      userId: row.user_id,
      email: row.email,
      isOrgOwner: row.is_org_owner,
      via: 'api_key',
      scopes: row.is_org_key ? ['*'] : row.scopes,
      apiKeyId: row.id,
    };
    this.remember(this.keys, keyHash, p);
    return p;
  }

  private cached(map: Map<string, Cached>, k: string): Principal | undefined {
    const c = map.get(k);
    if (!c) return undefined;
    if (c.expiresAtMs <= this.clock.monotonicMs()) {
      map.delete(k);
      return undefined;
    }
    return c.principal;
  }

  private remember(map: Map<string, Cached>, k: string, principal: Principal): void {
    map.delete(k);
    map.set(k, { principal, expiresAtMs: this.clock.monotonicMs() + this.ttlMs });
    // Maps iterate in insertion order: the first entries are the oldest.
    while (map.size > this.maxEntries) map.delete(map.keys().next().value!);
  }

  /** Best effort, never on every request: once per interval per key and replica, guarded in SQL. */
  private touchKey(keyId: string): void {
    const now = this.clock.now();
    const last = this.lastUsedWriteMs.get(keyId);
    if (last !== undefined && now - last < this.lastUsedIntervalMs) return;
    this.lastUsedWriteMs.delete(keyId);
    this.lastUsedWriteMs.set(keyId, now);
    while (this.lastUsedWriteMs.size > this.maxEntries) this.lastUsedWriteMs.delete(this.lastUsedWriteMs.keys().next().value!);
    const at = new Date(now);
    const before = new Date(now - this.lastUsedIntervalMs);
    this.sql`update api_keys set last_used_at = ${at}
             where id = ${keyId} and (last_used_at is null or last_used_at <= ${before})`.then(
      () => undefined,
      (err: unknown) => this.logger.warn({ err: String(err), keyId }, 'could not record api key use'),
    );
  }
}
