/**
 * The `Auth` contract (control-plane/http/auth.ts) for every domain: bearer resolution and
 * workspace roles.
 *
 * Reads that do not need Postgres do not touch it (issue 13; docs/caching.md). In-process caches,
 * all bounded (`maxCacheEntries`, least recently used dropped first) and timed on the injected
 * clock (`perf`), so tests drive expiry with a SimulatedClock:
 * - verified access tokens (signature, issuer, expiry checked once; a hit re-checks the expiry);
 * - positive lookups of API keys and of login sessions (the `sid` of an access token);
 * - workspace roles per (user, workspace), workspace lists and default workspaces per user.
 * Every write or revocation that changes one publishes a change notice on
 * `registry.invalidations` (control-plane/cache/topics.ts); every replica evicts on it at once.
 * Notices are best effort, so each entry also lives at most `cacheTtlMs` (CACHE_TTL_MS): the
 * bound on a revocation when Redis could not carry its notice. Negative results are never cached.
 * `api_keys.last_used_at` is written at most once a minute per key, and the SQL guard keeps that
 * true across replicas too.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { LRUCache } from 'lru-cache';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { forbidden, notFound, unauthorized } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/client.js';
import { FLUSH_ALL, type InvalidationBus } from '../../shared/registry/types.js';
import { ROLE_RANK, type Auth, type Principal, type WorkspaceRole } from '../http/auth.js';
import { requireScope } from '../http/scopes.js';
import { ReadCache } from '../cache/read-cache.js';
import { Topic } from '../cache/topics.js';
import { looksLikeJwt, sha256Hex, type TokenService } from './tokens.js';

export interface AuthOptions {
  /** Longest life of a cached lookup (CACHE_TTL_MS): the revocation bound when a change notice is lost. Default 4000. */
  cacheTtlMs?: number;
  /** Minimum interval between `last_used_at` writes per key. Default 60000. */
  lastUsedIntervalMs?: number;
  /** Entries per cache before the oldest are dropped. Default 10000. */
  maxCacheEntries?: number;
}

/** Longest bearer we look at; anything longer is malformed (and never hashed). */
const MAX_TOKEN_CHARS = 4096;
/** Longer access tokens are verified every time instead of being kept as cache keys. */
const MAX_CACHED_TOKEN_CHARS = 1024;

interface VerifiedJwt {
  userId: string;
  sessionId: string;
  expiresAtMs: number;
}

/** The call's principal (promise) on its HandlerContext. */
const kPrincipal = Symbol('voiceplane.principal');

export class AccountsAuth implements Auth {
  /** access token -> its verified claims (no notices needed: a signature never changes; expiry re-checked). */
  private readonly jwts: LRUCache<string, VerifiedJwt>;
  /** key hash -> principal; positive lookups only. */
  private readonly keys: ReadCache<Principal>;
  /** login session id -> principal; positive lookups only. */
  private readonly sessions: ReadCache<Principal>;
  /** `<user id> <workspace id>` -> role; members only. */
  private readonly roles: ReadCache<{ role: WorkspaceRole }>;
  /** user id -> ids of the workspaces they belong to (not for the org owner: every workspace). */
  private readonly memberships: ReadCache<{ ids: readonly string[] }>;
  /** user id -> their default workspace (none is a value too: evicted when they create one). */
  private readonly defaults: ReadCache<{ id?: string }>;
  /** key id -> wall-clock ms of this replica's last `last_used_at` write. */
  private readonly lastUsedWriteMs: LRUCache<string, number>;
  /** `last_used_at` writes in flight (fire-and-forget for the request; awaited by `usageWritten`). */
  private readonly usageWrites = new Set<Promise<void>>();
  private readonly lastUsedIntervalMs: number;
  private unsubscribe?: () => Promise<void>;

  constructor(
    private readonly sql: Sql,
    private readonly tokens: TokenService,
    private readonly clock: Clock,
    private readonly logger: Logger,
    opts: AuthOptions = {},
    /** Change notices to and from every replica; without it the caches only see this replica's writes. */
    private readonly bus?: InvalidationBus,
  ) {
    this.lastUsedIntervalMs = opts.lastUsedIntervalMs ?? 60_000;
    const max = opts.maxCacheEntries ?? 10_000;
    const timed = { max, ttlMs: opts.cacheTtlMs ?? 4000, clock, enabled: !bus };
    this.jwts = new LRUCache<string, VerifiedJwt>({ max });
    this.keys = new ReadCache(timed);
    this.sessions = new ReadCache(timed);
    this.roles = new ReadCache(timed);
    this.memberships = new ReadCache(timed);
    this.defaults = new ReadCache(timed);
    this.lastUsedWriteMs = new LRUCache<string, number>({ max });
  }

  /** Subscribes to change notices; the caches store nothing before (a notice could be missed). */
  async start(): Promise<void> {
    if (!this.bus || this.unsubscribe) return;
    this.unsubscribe = await this.bus.subscribe(this.onNotice);
    for (const c of this.caches()) c.enable();
  }

  async stop(): Promise<void> {
    await this.unsubscribe?.();
  }

  /**
   * Announces a change to every replica (this one at once) so their caches drop it. Call after
   * the write committed. Never throws: a notice that could not be sent is bounded by the TTL.
   */
  async changed(topic: Topic, key: string): Promise<void> {
    if (this.bus) await this.bus.publish(topic, key);
    else this.onNotice(topic, key);
  }

  private caches() {
    return [this.keys, this.sessions, this.roles, this.memberships, this.defaults];
  }

  private readonly onNotice = (topic: string, key: string): void => {
    switch (topic) {
      case FLUSH_ALL:
        for (const c of this.caches()) c.clear();
        break;
      case Topic.key:
        this.keys.delete(key);
        break;
      case Topic.session:
        this.sessions.delete(key);
        break;
      case Topic.user: {
        const prefix = `${key} `;
        this.roles.deleteWhere((k) => k.startsWith(prefix));
        this.memberships.delete(key);
        this.defaults.delete(key);
        break;
      }
      case Topic.workspace: {
        const suffix = ` ${key}`;
        this.roles.deleteWhere((k) => k.endsWith(suffix));
        break;
      }
    }
  };

  principal(ctx: HandlerContext): Promise<Principal> {
    // Once per call, kept on the call's context object (a WeakMap keyed by every context made the
    // garbage collector trace one ephemeron per request).
    const c = ctx as HandlerContext & { [kPrincipal]?: Promise<Principal> };
    let p = c[kPrincipal];
    if (!p) {
      const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(ctx.requestHeader.get('authorization') ?? '');
      const resolved = m ? this.resolve(m[1]) : Promise.reject(unauthorized('missing or malformed Authorization header'));
      // Scopes are checked here, once per call, for the method the context names (http/scopes.ts):
      // every domain resolves its caller through this function, so no route can skip the check.
      p = resolved.then((principal) => {
        requireScope(principal, ctx.service.typeName, ctx.method.name);
        return principal;
      });
      c[kPrincipal] = p;
    }
    return p;
  }

  /** Any bearer (JWT, `vpk_` key, the raw ORG_API_KEY) to its principal; throws UNAUTHORIZED. */
  async resolve(token: string): Promise<Principal> {
    if (!token || token.length > MAX_TOKEN_CHARS) throw unauthorized('malformed token');
    if (looksLikeJwt(token)) {
      const claims = await this.verifiedJwt(token);
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

  /** A revoked key: every replica drops it from its cache (this one at once). */
  forgetKey(keyHash: string): Promise<void> {
    return this.changed(Topic.key, keyHash);
  }

  /** A revoked login session: every replica drops it from its cache (this one at once). */
  forgetSession(sessionId: string): Promise<void> {
    return this.changed(Topic.session, sessionId);
  }

  async roleIn(p: Principal, workspaceId: string): Promise<WorkspaceRole | undefined> {
    if (!isUuid(workspaceId)) return undefined;
    const ws = workspaceId.toLowerCase();
    const hit = await this.roles.load(`${p.userId} ${ws}`, async () => {
      if (p.isOrgOwner) {
        const [row] = await this.sql`select 1 from workspaces where id = ${ws}`;
        return row ? { role: 'owner' as const } : undefined;
      }
      const [m] = await this.sql<{ role: WorkspaceRole }[]>`
        select role from workspace_members where workspace_id = ${ws} and user_id = ${p.userId}`;
      return m ? { role: m.role } : undefined;
    });
    return hit?.role;
  }

  /**
   * `requireWorkspace` for a row found by its id (an agent, a rubric, an alert): the row's
   * workspace, which the caller must be a member of. Not a member answers exactly as a missing row
   * (`<what> not found`): "workspace not found" would tell that the id exists in another tenant.
   */
  async requireRowWorkspace(p: Principal, workspaceId: string | undefined, what: string, min: WorkspaceRole = 'member'): Promise<WorkspaceRole> {
    if (!workspaceId || !(await this.roleIn(p, workspaceId))) throw notFound(what);
    return this.requireWorkspace(p, workspaceId, { min });
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
    if (p.isOrgOwner) {
      const rows = await this.sql<{ id: string }[]>`select id from workspaces order by created_at, id`;
      return rows.map((r) => r.id);
    }
    const hit = await this.memberships.load(p.userId, async () => {
      const rows = await this.sql<{ id: string }[]>`
        select workspace_id as id from workspace_members where user_id = ${p.userId} order by created_at, workspace_id`;
      return { ids: Object.freeze(rows.map((r) => r.id)) };
    });
    return [...hit!.ids];
  }

  async defaultWorkspaceId(p: Principal): Promise<string | undefined> {
    const hit = await this.defaults.load(p.userId, async () => {
      const [ws] = await this.sql<{ id: string }[]>`
        select id from workspaces where user_id = ${p.userId} order by created_at, id limit 1`;
      return { id: ws?.id };
    });
    return hit!.id;
  }

  /** Signature, issuer, type and expiry, verified once per token; a cached token is re-checked for expiry only. */
  private async verifiedJwt(token: string): Promise<VerifiedJwt | undefined> {
    const now = this.clock.now();
    const hit = this.jwts.get(token);
    if (hit) return hit.expiresAtMs > now ? hit : undefined;
    const claims = await this.tokens.verifyAccess(token);
    if (claims && token.length <= MAX_CACHED_TOKEN_CHARS) this.jwts.set(token, claims);
    return claims;
  }

  private sessionPrincipal(sessionId: string): Promise<Principal | undefined> {
    return this.sessions.load(sessionId, () => this.loadSession(sessionId));
  }

  private async loadSession(sessionId: string): Promise<Principal | undefined> {
    const [row] = await this.sql<{ user_id: string; email: string; is_org_owner: boolean }[]>`
      select u.id as user_id, u.email, u.is_org_owner
      from sessions s join users u on u.id = s.user_id
      where s.id = ${sessionId} and s.revoked_at is null`;
    if (!row) return undefined;
    return { userId: row.user_id, email: row.email, isOrgOwner: row.is_org_owner, via: 'jwt', scopes: ['*'] };
  }

  private keyPrincipal(keyHash: string): Promise<Principal | undefined> {
    return this.keys.load(keyHash, () => this.loadKey(keyHash));
  }

  private async loadKey(keyHash: string): Promise<Principal | undefined> {
    const [row] = await this.sql<{ id: string; scopes: string[]; is_org_key: boolean; user_id: string; email: string; is_org_owner: boolean }[]>`
      select k.id, k.scopes, k.is_org_key, u.id as user_id, u.email, u.is_org_owner
      from api_keys k join users u on u.id = k.user_id
      where k.key_hash = ${keyHash} and k.revoked_at is null`;
    if (!row) return undefined;
    return {
      userId: row.user_id,
      email: row.email,
      isOrgOwner: row.is_org_owner,
      via: 'api_key',
      scopes: row.is_org_key ? ['*'] : row.scopes,
      apiKeyId: row.id,
      ...(row.is_org_key ? { orgKey: true as const } : {}),
    };
  }

  /** Resolves once every `last_used_at` write started so far has settled (tests, shutdown). */
  async usageWritten(): Promise<void> {
    await Promise.all([...this.usageWrites]);
  }

  /** Best effort, never on every request: once per interval per key and replica, guarded in SQL. */
  private touchKey(keyId: string): void {
    const now = this.clock.now();
    const last = this.lastUsedWriteMs.get(keyId);
    if (last !== undefined && now - last < this.lastUsedIntervalMs) return;
    this.lastUsedWriteMs.set(keyId, now);
    const at = new Date(now);
    const before = new Date(now - this.lastUsedIntervalMs);
    const write = this.sql`update api_keys set last_used_at = ${at}
             where id = ${keyId} and (last_used_at is null or last_used_at <= ${before})`.then(
      () => undefined,
      (err: unknown) => this.logger.warn({ err, keyId }, 'could not record api key use'),
    );
    this.usageWrites.add(write);
    void write.finally(() => this.usageWrites.delete(write));
  }
}
