/**
 * Redis registry. Keys of one session share a hash tag (`{s:<id>}`) so they live on one Redis
 * Cluster shard; node commands travel over pub/sub with a reply channel per registry instance.
 */
import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { type Clock, realClock } from '../clock.js';
import {
  type ClaimResult,
  type CommandHandler,
  type EngineNode,
  type NodeCommand,
  RegistryTimeoutError,
  RemoteCommandError,
  type SessionRegistry,
  type StoredCall,
  type StoredSession,
} from './types.js';

type Client = ReturnType<typeof createClient>;

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

// Takes a seat in a pool (a sorted set scored by expiry): prunes expired entries, refuses when full.
const SEAT_SCRIPT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local limit = tonumber(ARGV[3])
if limit > 0 and not redis.call('ZSCORE', KEYS[1], ARGV[4]) and redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
local ttl = tonumber(ARGV[2]) - tonumber(ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 1
`;

// Merges fields into a live call only: an ended (deleted) call is never recreated by a late patch.
const PATCH_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
redis.call('HSET', KEYS[1], unpack(ARGV))
return redis.call('HGETALL', KEYS[1])
`;

interface Envelope {
  id: string;
  replyTo: string;
  cmd?: NodeCommand;
  ok?: boolean;
  result?: unknown;
  error?: { message: string; code: string };
}

export interface RedisRegistryOptions {
  url: string;
  /** Prefix for every key (tests isolate themselves with one). Default `vp`. */
  prefix?: string;
  clock?: Clock;
}

export class RedisRegistry implements SessionRegistry {
  readonly kind = 'redis' as const;
  private readonly prefix: string;
  private readonly clock: Clock;
  private readonly replyChannel: string;
  private readonly pending = new Map<string, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private closed = false;

  private constructor(
    private readonly client: Client,
    private readonly sub: Client,
    opts: RedisRegistryOptions,
  ) {
    this.prefix = opts.prefix ?? 'vp';
    this.clock = opts.clock ?? realClock;
    this.replyChannel = `${this.prefix}:reply:${randomUUID()}`;
  }

  static async connect(opts: RedisRegistryOptions): Promise<RedisRegistry> {
    const client = createClient({ url: opts.url, socket: { connectTimeout: 5000, reconnectStrategy: (n) => Math.min(n * 100, 2000) } });
    // A Redis outage must not crash the process: errors surface on the commands instead.
    client.on('error', () => {});
    await client.connect();
    const sub = client.duplicate();
    sub.on('error', () => {});
    await sub.connect();
    const reg = new RedisRegistry(client, sub, opts);
    await sub.subscribe(reg.replyChannel, (raw) => reg.onReply(raw));
    return reg;
  }

  private k(...parts: string[]): string {
    return [this.prefix, ...parts].join(':');
  }
  private sessionKey(id: string): string {
    return `${this.prefix}:{s:${id}}:cfg`;
  }
  private ownerKey(id: string): string {
    return `${this.prefix}:{s:${id}}:owner`;
  }

  async heartbeat(node: EngineNode, ttlMs: number): Promise<void> {
    await this.client
      .multi()
      .set(this.k('node', node.nodeId), JSON.stringify(node), { expiration: { type: 'PX', value: ttlMs } })
      .sAdd(this.k('nodes'), node.nodeId)
      .exec();
  }
  async removeNode(nodeId: string): Promise<void> {
    await this.client.multi().del(this.k('node', nodeId)).sRem(this.k('nodes'), nodeId).exec();
  }
  async listNodes(): Promise<EngineNode[]> {
    const ids = await this.client.sMembers(this.k('nodes'));
    if (ids.length === 0) return [];
    const values = await this.client.mGet(ids.map((id) => this.k('node', id)));
    const out: EngineNode[] = [];
    const dead: string[] = [];
    values.forEach((v, i) => (v ? out.push(JSON.parse(v) as EngineNode) : dead.push(ids[i])));
    if (dead.length) await this.client.sRem(this.k('nodes'), dead);
    return out;
  }

  async putSession(session: StoredSession): Promise<void> {
    const ttl = Math.max(1, session.connectDeadlineMs - this.clock.now());
    await this.client.set(this.sessionKey(session.sessionId), JSON.stringify(session), { expiration: { type: 'PX', value: ttl } });
  }
  async getSession(sessionId: string): Promise<StoredSession | undefined> {
    const v = await this.client.get(this.sessionKey(sessionId));
    return v ? (JSON.parse(v) as StoredSession) : undefined;
  }
  async claimSession(sessionId: string, nodeId: string, ttlMs: number): Promise<ClaimResult> {
    const [status, value] = (await this.client.eval(CLAIM_SCRIPT, {
      keys: [this.sessionKey(sessionId), this.ownerKey(sessionId)],
      arguments: [nodeId, String(ttlMs)],
    })) as [string, string];
    if (status === 'taken') return { status: 'taken', ownerNodeId: value };
    if (status === 'not_found') return { status: 'not_found' };
    return { status: 'claimed', session: JSON.parse(value) as StoredSession };
  }
  async sessionOwner(sessionId: string): Promise<string | undefined> {
    return (await this.client.get(this.ownerKey(sessionId))) ?? undefined;
  }
  async deleteSession(sessionId: string): Promise<void> {
    await this.client.del([this.sessionKey(sessionId), this.ownerKey(sessionId)]);
  }

  async serveCommands(nodeId: string, handler: CommandHandler): Promise<() => Promise<void>> {
    const channel = this.k('cmd', nodeId);
    const listener = (raw: string) => {
      let env: Envelope;
      try {
        env = JSON.parse(raw) as Envelope;
      } catch {
        return;
      }
      if (!env.cmd) return;
      handler(env.cmd).then(
        (result) => this.reply(env, { ok: true, result }),
        (err: unknown) => {
          const e = err as { message?: string; code?: string };
          return this.reply(env, { ok: false, error: { message: e.message ?? 'error', code: e.code ?? 'INTERNAL' } });
        },
      );
    };
    await this.sub.subscribe(channel, listener);
    return async () => {
      if (!this.closed) await this.sub.unsubscribe(channel, listener);
    };
  }

  private async reply(env: Envelope, body: Partial<Envelope>): Promise<void> {
    if (this.closed) return;
    await this.client.publish(env.replyTo, JSON.stringify({ id: env.id, replyTo: env.replyTo, ...body })).catch(() => {});
  }

  private onReply(raw: string): void {
    let env: Envelope;
    try {
      env = JSON.parse(raw) as Envelope;
    } catch {
      return;
    }
    const p = this.pending.get(env.id);
    if (!p) return;
    this.pending.delete(env.id);
    if (env.ok) p.resolve(env.result);
    else p.reject(new RemoteCommandError(env.error?.message ?? 'remote error', env.error?.code ?? 'INTERNAL'));
  }

  async sendCommand(nodeId: string, cmd: NodeCommand, timeoutMs: number): Promise<unknown> {
    const id = randomUUID();
    return new Promise((resolve, reject) => {
      const timer = this.clock.setTimeout(() => {
        this.pending.delete(id);
        reject(new RegistryTimeoutError(nodeId));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          this.clock.clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          this.clock.clearTimeout(timer);
          reject(e);
        },
      });
      this.client.publish(this.k('cmd', nodeId), JSON.stringify({ id, replyTo: this.replyChannel, cmd })).then(
        (receivers) => {
          // Nobody listening: fail fast instead of waiting for the timeout.
          if (receivers === 0) this.pending.get(id)?.reject(new RegistryTimeoutError(nodeId));
          if (receivers === 0) this.pending.delete(id);
        },
        (err: Error) => {
          this.pending.delete(id);
          this.clock.clearTimeout(timer);
          reject(err);
        },
      );
    });
  }

  // A call is a hash: `meta` (ids, times: JSON), `sid`, and one `d:<field>` (JSON) per record field,
  // so concurrent patches of different fields (status callback, AMD verdict) never lose each other.
  private callKey(id: string): string {
    return `${this.prefix}:{c:${id}}:call`;
  }
  private callSidKey(sid: string): string {
    return this.k('csid', sid);
  }
  private callIndexKey(by: { userId: string } | { poolId: string }): string {
    return 'userId' in by ? this.k('cu', by.userId) : this.k('cp', by.poolId);
  }

  async putCall(call: StoredCall, opts: { seatLimit?: number } = {}): Promise<boolean> {
    const now = this.clock.now();
    const ttl = Math.max(1, call.expiresAtMs - now);
    const seated = await this.client.eval(SEAT_SCRIPT, {
      keys: [this.callIndexKey({ poolId: call.poolId })],
      arguments: [String(now), String(call.expiresAtMs), String(opts.seatLimit ?? 0), call.callId],
    });
    if (Number(seated) !== 1) return false;
    const fields: Record<string, string> = {
      meta: JSON.stringify({ callId: call.callId, userId: call.userId, poolId: call.poolId, createdAtMs: call.createdAtMs, expiresAtMs: call.expiresAtMs }),
    };
    if (call.providerCallSid) fields.sid = call.providerCallSid;
    for (const [k, v] of Object.entries(call.data)) fields[`d:${k}`] = JSON.stringify(v ?? null);
    const m = this.client
      .multi()
      .del(this.callKey(call.callId))
      .hSet(this.callKey(call.callId), fields)
      .pExpireAt(this.callKey(call.callId), call.expiresAtMs)
      .zAdd(this.callIndexKey({ userId: call.userId }), { score: call.expiresAtMs, value: call.callId })
      .pExpire(this.callIndexKey({ userId: call.userId }), ttl);
    if (call.providerCallSid) m.set(this.callSidKey(call.providerCallSid), call.callId, { expiration: { type: 'PX', value: ttl } });
    await m.exec();
    return true;
  }

  async getCall(callId: string): Promise<StoredCall | undefined> {
    return parseCall(await this.client.hGetAll(this.callKey(callId)));
  }

  async findCallBySid(providerCallSid: string): Promise<StoredCall | undefined> {
    const id = await this.client.get(this.callSidKey(providerCallSid));
    return id ? this.getCall(id) : undefined;
  }

  async patchCall(callId: string, data: Record<string, unknown>, providerCallSid?: string): Promise<StoredCall | undefined> {
    const args: string[] = [];
    for (const [k, v] of Object.entries(data)) args.push(`d:${k}`, JSON.stringify(v ?? null));
    if (providerCallSid) args.push('sid', providerCallSid);
    if (args.length === 0) return this.getCall(callId);
    const flat = (await this.client.eval(PATCH_SCRIPT, { keys: [this.callKey(callId)], arguments: args })) as string[] | null;
    if (!flat) return undefined;
    const hash: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
    const call = parseCall(hash);
    if (call && providerCallSid) {
      await this.client.set(this.callSidKey(providerCallSid), callId, { expiration: { type: 'PX', value: Math.max(1, call.expiresAtMs - this.clock.now()) } });
    }
    return call;
  }

  async deleteCall(callId: string): Promise<StoredCall | undefined> {
    const call = parseCall(await this.client.hGetAll(this.callKey(callId)));
    if (!call) return undefined;
    const m = this.client
      .multi()
      .del(this.callKey(callId))
      .zRem(this.callIndexKey({ userId: call.userId }), callId)
      .zRem(this.callIndexKey({ poolId: call.poolId }), callId);
    if (call.providerCallSid) m.del(this.callSidKey(call.providerCallSid));
    const [deleted] = (await m.exec()) as unknown as [number];
    // Two replicas ending the same call: only the one whose DEL removed it gets it back.
    return Number(deleted) === 1 ? call : undefined;
  }

  async listCalls(by: { userId: string } | { poolId: string }): Promise<StoredCall[]> {
    const key = this.callIndexKey(by);
    await this.client.zRemRangeByScore(key, '-inf', this.clock.now());
    const ids = await this.client.zRange(key, 0, -1);
    if (ids.length === 0) return [];
    const m = this.client.multi();
    for (const id of ids) m.hGetAll(this.callKey(id));
    const hashes = (await m.exec()) as unknown as Array<Record<string, string>>;
    const out: StoredCall[] = [];
    const gone: string[] = [];
    hashes.forEach((h, i) => {
      const c = parseCall(h);
      if (c) out.push(c);
      else gone.push(ids[i]!);
    });
    if (gone.length) await this.client.zRem(key, gone);
    return out.sort((a, b) => a.createdAtMs - b.createdAtMs);
  }

  async incrWindow(key: string, windowMs: number): Promise<number> {
    const k = this.k('rl', key);
    const [count] = (await this.client.multi().incr(k).pExpire(k, windowMs, 'NX').exec()) as unknown as [number];
    return Number(count);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pending.values()) p.reject(new Error('registry closed'));
    this.pending.clear();
    await Promise.allSettled([this.sub.quit(), this.client.quit()]);
  }
}

function parseCall(hash: Record<string, string> | undefined): StoredCall | undefined {
  if (!hash || !hash.meta) return undefined;
  const meta = JSON.parse(hash.meta) as Omit<StoredCall, 'data' | 'providerCallSid'>;
  const data: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(hash)) if (k.startsWith('d:')) data[k.slice(2)] = JSON.parse(v);
  const call: StoredCall = { ...meta, data };
  if (hash.sid) call.providerCallSid = hash.sid;
  return call;
}
