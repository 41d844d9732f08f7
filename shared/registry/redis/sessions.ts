/**
 * Voice sessions in Redis. Keys of one session share a hash tag (`{s:<id>}`) so they live on one
 * Redis Cluster shard: `cfg` (the stored session, TTL = connect deadline, then the claim) and
 * `owner` (the claiming node). Each node has an index of the sessions placed on it (`{n:<node>}:pending`,
 * scored by connect deadline; another slot, so written beside the session, not with it): a hint,
 * checked against the session's own keys when counted, so an entry whose session was claimed,
 * ended or moved on is dropped then rather than kept exact on every write.
 */
import type { JournalSession } from '../journal.js';
import { type ClaimResult, MAX_PENDING_LISTED, type SessionStore, type StoredSession } from '../types.js';
import type { RedisConnection } from './connection.js';

// Claims atomically: refuses when another node owns it, not_found when the config expired.
const CLAIM_SCRIPT = `
local owner = redis.call('GET', KEYS[2])
if owner and owner ~= ARGV[1] then return {'taken', owner} end
local cfg = redis.call('GET', KEYS[1])
if not cfg then return {'not_found', ''} end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {'claimed', cfg}
`;

// Compare-and-set of an unclaimed config: the caller read ARGV[1] and wrote its new deadline into
// ARGV[2] (JSON edited in Node: Lua's cjson would turn empty arrays of the config into objects).
const EXTEND_SCRIPT = `
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
`;

export class RedisSessionStore implements SessionStore {
  constructor(private readonly conn: RedisConnection) {}

  private sessionKey(id: string): string {
    return `${this.conn.prefix}:{s:${id}}:cfg`;
  }
  private ownerKey(id: string): string {
    return `${this.conn.prefix}:{s:${id}}:owner`;
  }
  private pendingKey(nodeId: string): string {
    return `${this.conn.prefix}:{n:${nodeId}}:pending`;
  }

  async putSession(session: StoredSession): Promise<void> {
    const ttl = Math.max(1, session.connectDeadlineMs - this.conn.clock.now());
    await this.conn.op(() =>
      Promise.all([this.conn.client.set(this.sessionKey(session.sessionId), JSON.stringify(session), { expiration: { type: 'PX', value: ttl } }), this.indexPending(session, ttl)]),
    );
    this.conn.journal.putSession(session);
  }

  /**
   * The session in its node's pending index. Entries past their deadline go on every write (the
   * index of a busy node never drains by TTL: each placement extends it), and the key lives as
   * long as its latest deadline.
   */
  private indexPending(session: StoredSession, ttlMs: number) {
    const key = this.pendingKey(session.nodeId);
    return this.conn.client
      .multi()
      .zRemRangeByScore(key, '-inf', this.conn.clock.now())
      .zAdd(key, { score: session.connectDeadlineMs, value: session.sessionId })
      .pExpire(key, ttlMs, 'NX')
      .pExpire(key, ttlMs, 'GT')
      .exec();
  }

  async pendingOn(nodeId: string): Promise<string[]> {
    return this.conn.op(async () => {
      const { client, clock } = this.conn;
      const key = this.pendingKey(nodeId);
      await client.zRemRangeByScore(key, '-inf', clock.now());
      // Latest deadlines first: the sessions placed last are the likeliest still on their way.
      const ids = await client.zRange(key, 0, MAX_PENDING_LISTED - 1, { REV: true });
      if (ids.length === 0) return [];
      // Each session's own keys (pipelined; other slots): claimed, ended or placed elsewhere is not pending.
      const checks = await Promise.all(ids.map((id) => Promise.all([client.get(this.sessionKey(id)), client.exists(this.ownerKey(id))])));
      const gone: string[] = [];
      ids.forEach((id, i) => {
        const [cfg, owned] = checks[i]!;
        if (!cfg || owned || (JSON.parse(cfg) as StoredSession).nodeId !== nodeId) gone.push(id);
      });
      if (gone.length) await client.zRem(key, gone);
      const dropped = new Set(gone);
      return ids.filter((id) => !dropped.has(id));
    });
  }

  async getSession(sessionId: string): Promise<StoredSession | undefined> {
    const v = await this.conn.op(() => this.conn.client.get(this.sessionKey(sessionId)));
    return v ? (JSON.parse(v) as StoredSession) : undefined;
  }

  async claimSession(sessionId: string, nodeId: string, ttlMs: number): Promise<ClaimResult> {
    const [status, value] = (await this.conn.op(() =>
      this.conn.client.eval(CLAIM_SCRIPT, {
        keys: [this.sessionKey(sessionId), this.ownerKey(sessionId)],
        arguments: [nodeId, String(ttlMs)],
      }),
    )) as [string, string];
    if (status === 'taken') return { status: 'taken', ownerNodeId: value };
    if (status === 'not_found') return { status: 'not_found' };
    const session = JSON.parse(value) as StoredSession;
    this.conn.journal.claimed(session, nodeId, ttlMs);
    return { status: 'claimed', session };
  }

  async sessionOwner(sessionId: string): Promise<string | undefined> {
    return (await this.conn.op(() => this.conn.client.get(this.ownerKey(sessionId)))) ?? undefined;
  }

  async extendConnectDeadline(sessionId: string, deadlineMs: number): Promise<boolean> {
    // Two tries: a concurrent extension of the same session changes the stored JSON under us.
    for (let attempt = 0; attempt < 2; attempt++) {
      const stored = await this.conn.op(() => this.conn.client.get(this.sessionKey(sessionId)));
      if (!stored) return false;
      const session = JSON.parse(stored) as StoredSession;
      if (session.connectDeadlineMs >= deadlineMs) return false;
      const next: StoredSession = { ...session, connectDeadlineMs: deadlineMs };
      const ttl = Math.max(1, deadlineMs - this.conn.clock.now());
      const done = await this.conn.op(() =>
        this.conn.client.eval(EXTEND_SCRIPT, { keys: [this.sessionKey(sessionId), this.ownerKey(sessionId)], arguments: [stored, JSON.stringify(next), String(ttl)] }),
      );
      if (done === 1) {
        this.conn.journal.putSession(next);
        // The deadline moved; a failed index write only leaves the earlier deadline in the index
        // (a drain could then stop waiting for this session sooner): logged, not the caller's error.
        await this.conn.op(() => this.indexPending(next, ttl)).catch((err: Error) => this.conn.logger?.warn({ err: err.message }, 'registry: pending-session index not updated with a later deadline'));
        return true;
      }
    }
    return false;
  }

  async deleteSession(sessionId: string): Promise<void> {
    this.conn.journal.deleteSession(sessionId);
    await this.conn.op(() => this.conn.client.del([this.sessionKey(sessionId), this.ownerKey(sessionId)]));
  }

  /**
   * Writes journaled sessions again, one MULTI per session (its two keys share a slot; sessions
   * spread over a Redis Cluster), all sent at once: claims with plain SET (the owner's claim wins
   * over a copy another process replays), unclaimed configs with NX.
   */
  async replay(sessions: JournalSession[]): Promise<void> {
    const now = this.conn.clock.now();
    await Promise.all(
      sessions.map(({ session, owner }) => {
        const cfg = JSON.stringify(session);
        const m = this.conn.client.multi();
        if (owner) {
          const ttl = { expiration: { type: 'PX', value: Math.max(1, owner.expiresAtMs - now) } } as const;
          m.set(this.sessionKey(session.sessionId), cfg, ttl).set(this.ownerKey(session.sessionId), owner.nodeId, ttl);
        } else {
          const ttl = Math.max(1, session.connectDeadlineMs - now);
          m.set(this.sessionKey(session.sessionId), cfg, { expiration: { type: 'PX', value: ttl }, condition: 'NX' });
          return Promise.all([m.exec(), this.indexPending(session, ttl)]);
        }
        return m.exec();
      }),
    );
  }
}
