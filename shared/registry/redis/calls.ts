/**
 * Live carrier calls in Redis. A call is a hash `<prefix>:{c:<id>}:call`: `meta` (ids, times:
 * JSON), `sid`, and one `d:<field>` (JSON) per record field, so concurrent patches of different
 * fields (status callback, AMD verdict) never lose each other. Indexes: sorted sets per owner
 * (`cu:<userId>`) and per seat pool (`cp:<poolId>`, scored by expiry: the seats), and
 * `csid:<sid>` -> call id.
 */
import type { LiveCallStore, StoredCall } from '../types.js';
import type { RedisConnection } from './connection.js';

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

type CallIndex = { userId: string } | { poolId: string };

export class RedisLiveCallStore implements LiveCallStore {
  constructor(private readonly conn: RedisConnection) {}

  private callKey(id: string): string {
    return `${this.conn.prefix}:{c:${id}}:call`;
  }
  private callSidKey(sid: string): string {
    return this.conn.k('csid', sid);
  }
  private callIndexKey(by: CallIndex): string {
    return 'userId' in by ? this.conn.k('cu', by.userId) : this.conn.k('cp', by.poolId);
  }

  async putCall(call: StoredCall, opts: { seatLimit?: number } = {}): Promise<boolean> {
    const stored = await this.conn.op(() => this.writeCall(call, opts.seatLimit ?? 0));
    if (stored) this.conn.journal.putCall(call);
    return stored;
  }

  /** Seat, hash and indexes of one call (also the replay of a journaled call, with no seat limit). */
  async writeCall(call: StoredCall, seatLimit: number): Promise<boolean> {
    const { client, clock } = this.conn;
    const now = clock.now();
    const ttl = Math.max(1, call.expiresAtMs - now);
    const seated = await client.eval(SEAT_SCRIPT, {
      keys: [this.callIndexKey({ poolId: call.poolId })],
      arguments: [String(now), String(call.expiresAtMs), String(seatLimit), call.callId],
    });
    if (Number(seated) !== 1) return false;
    const fields: Record<string, string> = {
      meta: JSON.stringify({ callId: call.callId, userId: call.userId, poolId: call.poolId, createdAtMs: call.createdAtMs, expiresAtMs: call.expiresAtMs }),
    };
    if (call.providerCallSid) fields.sid = call.providerCallSid;
    for (const [k, v] of Object.entries(call.data)) fields[`d:${k}`] = JSON.stringify(v ?? null);
    const m = client
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
    return parseCall(await this.conn.op(() => this.conn.client.hGetAll(this.callKey(callId))));
  }

  async findCallBySid(providerCallSid: string): Promise<StoredCall | undefined> {
    const id = await this.conn.op(() => this.conn.client.get(this.callSidKey(providerCallSid)));
    return id ? this.getCall(id) : undefined;
  }

  async patchCall(callId: string, data: Record<string, unknown>, providerCallSid?: string): Promise<StoredCall | undefined> {
    const call = await this.conn.op(() => this.patchCallNow(callId, data, providerCallSid));
    // Only the replica that placed the call journals it: a replica that merely patched it (a
    // carrier callback landing there) never hears of its deletion elsewhere, and would bring an
    // ended call back, holding a seat, after a Redis restart.
    if (call) this.conn.journal.updateCall(call);
    return call;
  }

  private async patchCallNow(callId: string, data: Record<string, unknown>, providerCallSid?: string): Promise<StoredCall | undefined> {
    const args: string[] = [];
    for (const [k, v] of Object.entries(data)) args.push(`d:${k}`, JSON.stringify(v ?? null));
    if (providerCallSid) args.push('sid', providerCallSid);
    if (args.length === 0) return this.getCall(callId);
    const flat = (await this.conn.client.eval(PATCH_SCRIPT, { keys: [this.callKey(callId)], arguments: args })) as string[] | null;
    if (!flat) return undefined;
    const hash: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
    const call = parseCall(hash);
    if (call && providerCallSid) {
      await this.conn.client.set(this.callSidKey(providerCallSid), callId, { expiration: { type: 'PX', value: Math.max(1, call.expiresAtMs - this.conn.clock.now()) } });
    }
    return call;
  }

  async deleteCall(callId: string): Promise<StoredCall | undefined> {
    this.conn.journal.deleteCall(callId);
    return this.conn.op(() => this.deleteCallNow(callId));
  }

  private async deleteCallNow(callId: string): Promise<StoredCall | undefined> {
    const call = parseCall(await this.conn.client.hGetAll(this.callKey(callId)));
    if (!call) return undefined;
    const m = this.conn.client
      .multi()
      .del(this.callKey(callId))
      .zRem(this.callIndexKey({ userId: call.userId }), callId)
      .zRem(this.callIndexKey({ poolId: call.poolId }), callId);
    if (call.providerCallSid) m.del(this.callSidKey(call.providerCallSid));
    const [deleted] = (await m.exec()) as unknown as [number];
    // Two replicas ending the same call: only the one whose DEL removed it gets it back.
    return Number(deleted) === 1 ? call : undefined;
  }

  async listCalls(by: CallIndex): Promise<StoredCall[]> {
    return this.conn.op(() => this.listCallsNow(by));
  }

  private async listCallsNow(by: CallIndex): Promise<StoredCall[]> {
    const { client } = this.conn;
    const key = this.callIndexKey(by);
    await client.zRemRangeByScore(key, '-inf', this.conn.clock.now());
    const ids = await client.zRange(key, 0, -1);
    if (ids.length === 0) return [];
    const m = client.multi();
    for (const id of ids) m.hGetAll(this.callKey(id));
    const hashes = (await m.exec()) as unknown as Array<Record<string, string>>;
    const out: StoredCall[] = [];
    const gone: string[] = [];
    hashes.forEach((h, i) => {
      const c = parseCall(h);
      if (c) out.push(c);
      else gone.push(ids[i]!);
    });
    if (gone.length) await client.zRem(key, gone);
    return out.sort((a, b) => a.createdAtMs - b.createdAtMs);
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
