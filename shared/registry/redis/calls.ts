/**
 * Live carrier calls in Redis. A call is a hash `<prefix>:{c:<id>}:call`: `meta` (ids, times:
 * JSON), `sid`, and one `d:<field>` (JSON) per record field, so concurrent patches of different
 * fields (status callback, AMD verdict) never lose each other. Indexes: sorted sets per owner
 * (`cu:<userId>`) and per seat pool (`cp:<poolId>`, scored by expiry: the seats), and
 * `csid:<sid>` -> call id.
 *
 * Redis Cluster: every script and transaction here touches one key (or one call's hash), so each
 * runs on one slot; calls, owners, pools and sids spread over the cluster independently. What ties
 * them is ordering: the hash is written before its indexes and deleted after them.
 *
 * The replica that placed a call journals it (replayed after Redis comes back empty), and so does
 * the engine node carrying its media (`adoptCall`: the record outlives its placer), but any
 * replica behind the load balancer may receive its callbacks and patch or end it. So every patch
 * and end is announced on `<prefix>:calls` (the placer keeps its journal copy current, and drops
 * an ended call), and an end leaves a tombstone `{c:<id>}:gone` for a placer that was cut off
 * when the notice went out: its replay writes a call back only when Redis has neither the call
 * nor its tombstone (Redis lost it), and refreshes its copy from a call Redis still has. Without
 * that, an ended call came back `ringing` for its whole TTL after a Redis restart, holding a seat
 * and a campaign's concurrency slot (issue 23, test/unit/registry/replay.calls-changed-elsewhere.test.ts).
 */
import { randomUUID } from 'node:crypto';
import type { LiveCallStore, StoredCall } from '../types.js';
import type { RedisConnection } from './connection.js';

/** How long an ended call's tombstone stays (at most its remaining TTL): a placer cut off longer may bring it back. */
export const TOMBSTONE_MAX_MS = 60 * 60 * 1000;

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

// patchCall while one field is empty (absent, JSON '' or null): 0 when it holds a value.
const PATCH_IF_EMPTY_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current and current ~= '""' and current ~= 'null' then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return redis.call('HGETALL', KEYS[1])
`;

type CallIndex = { userId: string } | { poolId: string };

export class RedisLiveCallStore implements LiveCallStore {
  private readonly instance = randomUUID();
  private readonly channel: string;
  /** Subscribed to the change notices once this process places or adopts a call (only they journal calls). */
  private listening?: Promise<void>;

  constructor(private readonly conn: RedisConnection) {
    this.channel = conn.k('calls');
  }

  private callKey(id: string): string {
    return `${this.conn.prefix}:{c:${id}}:call`;
  }
  private goneKey(id: string): string {
    return `${this.conn.prefix}:{c:${id}}:gone`;
  }
  private callSidKey(sid: string): string {
    return this.conn.k('csid', sid);
  }
  private callIndexKey(by: CallIndex): string {
    return 'userId' in by ? this.conn.k('cu', by.userId) : this.conn.k('cp', by.poolId);
  }

  async putCall(call: StoredCall, opts: { seatLimit?: number } = {}): Promise<boolean> {
    await this.listen();
    const stored = await this.conn.op(() => this.writeCall(call, opts.seatLimit ?? 0));
    if (stored) this.conn.journal.putCall(call);
    return stored;
  }

  async adoptCall(callId: string): Promise<void> {
    await this.listen();
    const call = await this.getCall(callId);
    if (call) this.conn.journal.adoptCall(call);
  }

  releaseCall(callId: string): void {
    this.conn.journal.releaseCall(callId);
  }

  /** Change notices of other replicas keep this placer's journal current. A failed subscribe is retried at the next put. */
  private listen(): Promise<void> {
    this.listening ??= this.conn
      .subscribe(this.channel, (raw) => this.onNotice(raw))
      .catch((err: unknown) => {
        this.listening = undefined;
        this.conn.logger?.warn({ err }, 'registry: live-call notices not subscribed; retried at the next call');
      });
    return this.listening;
  }

  private onNotice(raw: string): void {
    const a = raw.indexOf('\n');
    const b = raw.indexOf('\n', a + 1);
    if (a < 0 || b < 0 || raw.slice(0, a) === this.instance) return;
    const payload = raw.slice(b + 1);
    if (raw.slice(a + 1, b) === 'd') this.conn.journal.deleteCall(payload);
    else this.conn.journal.updateCall(JSON.parse(payload) as StoredCall);
  }

  /** Best effort: a notice that does not go out leaves the tombstone (ends) or a stale copy (patches). */
  private async announce(kind: 'd' | 'p', payload: string): Promise<void> {
    try {
      await this.conn.op(() => this.conn.publish(this.channel, `${this.instance}\n${kind}\n${payload}`));
    } catch (err) {
      this.conn.logger?.warn({ err }, 'registry: live-call notice not sent');
    }
  }

  /**
   * The replay of one journaled call: written again only when Redis has neither the call nor its
   * tombstone (Redis lost it); a call Redis still has refreshes the journal copy instead (it may
   * have been patched while this process was cut off), a tombstoned one leaves the journal.
   */
  async replayCall(call: StoredCall): Promise<void> {
    const [hash, gone] = (await this.conn.client.multi().hGetAll(this.callKey(call.callId)).exists(this.goneKey(call.callId)).exec()) as unknown as [Record<string, string>, number];
    if (Number(gone) === 1) return this.conn.journal.deleteCall(call.callId);
    const current = parseCall(hash);
    if (!current) {
      await this.writeCall(call, 0);
      return;
    }
    this.conn.journal.updateCall(current);
    // The hash outlived the restart, but on a Redis Cluster the call's seat, user index and sid
    // live in other slots, perhaps on the master that lost them: those are written again (each is
    // idempotent), the hash is left as Redis has it.
    await this.seat(current, 0);
    await this.writeIndexes(current);
  }

  /** The call's seat in its pool (`seatLimit` 0: no limit); false when the pool is full. */
  private async seat(call: StoredCall, seatLimit: number): Promise<boolean> {
    const seated = await this.conn.client.eval(SEAT_SCRIPT, {
      keys: [this.callIndexKey({ poolId: call.poolId })],
      arguments: [String(this.conn.clock.now()), String(call.expiresAtMs), String(seatLimit), call.callId],
    });
    return Number(seated) === 1;
  }

  /** Seat, hash and indexes of one call (also the replay of a journaled call, with no seat limit). */
  async writeCall(call: StoredCall, seatLimit: number): Promise<boolean> {
    const { client } = this.conn;
    if (!(await this.seat(call, seatLimit))) return false;
    const fields: Record<string, string> = {
      meta: JSON.stringify({ callId: call.callId, userId: call.userId, poolId: call.poolId, createdAtMs: call.createdAtMs, expiresAtMs: call.expiresAtMs }),
    };
    if (call.providerCallSid) fields.sid = call.providerCallSid;
    for (const [k, v] of Object.entries(call.data)) fields[`d:${k}`] = JSON.stringify(v ?? null);
    // The hash, then the user index and sid: those entries always point at a written hash (user
    // lists prune the ones whose hash is gone). The seat comes first (it holds the limit), so for a
    // moment it has no hash: seat lists never prune by hash, seats leave by delete or expiry.
    // Separate commands, each on one slot (Redis Cluster).
    await client.multi().del(this.callKey(call.callId)).hSet(this.callKey(call.callId), fields).pExpireAt(this.callKey(call.callId), call.expiresAtMs).exec();
    await this.writeIndexes(call);
    return true;
  }

  /** The call's entry in its user's index and its carrier sid key (each in its own slot). */
  private async writeIndexes(call: StoredCall): Promise<void> {
    const { client, clock } = this.conn;
    const ttl = Math.max(1, call.expiresAtMs - clock.now());
    const userIndex = this.callIndexKey({ userId: call.userId });
    const writes: Array<Promise<unknown>> = [client.multi().zAdd(userIndex, { score: call.expiresAtMs, value: call.callId }).pExpire(userIndex, ttl).exec()];
    if (call.providerCallSid) writes.push(client.set(this.callSidKey(call.providerCallSid), call.callId, { expiration: { type: 'PX', value: ttl } }));
    await Promise.all(writes);
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
    // Only the replica that placed the call journals it (a replica that merely patched it would
    // hold a copy nobody keeps current); the placer hears of the patch by the notice.
    if (call) {
      this.conn.journal.updateCall(call);
      await this.announce('p', JSON.stringify(call));
    }
    return call;
  }

  async patchCallIfEmpty(callId: string, field: string, data: Record<string, unknown>): Promise<StoredCall | 'taken' | undefined> {
    const args = [`d:${field}`, ...dataArgs(data)];
    const reply = (await this.conn.op(() => this.conn.client.eval(PATCH_IF_EMPTY_SCRIPT, { keys: [this.callKey(callId)], arguments: args }))) as string[] | number | null;
    if (reply === 0) return 'taken';
    const call = Array.isArray(reply) ? parseCall(hashOf(reply)) : undefined;
    if (call) {
      this.conn.journal.updateCall(call);
      await this.announce('p', JSON.stringify(call));
    }
    return call;
  }

  private async patchCallNow(callId: string, data: Record<string, unknown>, providerCallSid?: string): Promise<StoredCall | undefined> {
    const args = dataArgs(data);
    if (providerCallSid) args.push('sid', providerCallSid);
    if (args.length === 0) return this.getCall(callId);
    const flat = (await this.conn.client.eval(PATCH_SCRIPT, { keys: [this.callKey(callId)], arguments: args })) as string[] | null;
    if (!flat) return undefined;
    const call = parseCall(hashOf(flat));
    if (call && providerCallSid) {
      await this.conn.client.set(this.callSidKey(providerCallSid), callId, { expiration: { type: 'PX', value: Math.max(1, call.expiresAtMs - this.conn.clock.now()) } });
    }
    return call;
  }

  async deleteCall(callId: string): Promise<StoredCall | undefined> {
    this.conn.journal.deleteCall(callId);
    const call = await this.conn.op(() => this.deleteCallNow(callId));
    if (call) await this.announce('d', callId);
    return call;
  }

  private async deleteCallNow(callId: string): Promise<StoredCall | undefined> {
    const call = parseCall(await this.conn.client.hGetAll(this.callKey(callId)));
    if (!call) return undefined;
    const { client } = this.conn;
    // Indexes and seat first, the hash last: a delete cut short (Redis unreachable midway) is
    // retried by the caller and finds the call again; the other order would strand its seat.
    const cleanup: Array<Promise<unknown>> = [client.zRem(this.callIndexKey({ userId: call.userId }), callId), client.zRem(this.callIndexKey({ poolId: call.poolId }), callId)];
    if (call.providerCallSid) cleanup.push(client.del(this.callSidKey(call.providerCallSid)));
    await Promise.all(cleanup);
    const tombstoneMs = Math.max(1, Math.min(TOMBSTONE_MAX_MS, call.expiresAtMs - this.conn.clock.now()));
    const [deleted] = (await client.multi().del(this.callKey(callId)).set(this.goneKey(callId), '1', { expiration: { type: 'PX', value: tombstoneMs } }).exec()) as unknown as [number];
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
    // One HGETALL per call (pipelined), not a transaction: the hashes live on different slots.
    const hashes = await Promise.all(ids.map((id) => client.hGetAll(this.callKey(id))));
    const out: StoredCall[] = [];
    const gone: string[] = [];
    hashes.forEach((h, i) => {
      const c = parseCall(h);
      if (c) out.push(c);
      else gone.push(ids[i]!);
    });
    // A seat without its hash yet is a call being placed, not a stale entry (writeCall).
    if (gone.length && 'userId' in by) await client.zRem(key, gone);
    return out.sort((a, b) => a.createdAtMs - b.createdAtMs);
  }
}

/** A record's fields as HSET arguments: `d:<field>`, JSON value. */
function dataArgs(data: Record<string, unknown>): string[] {
  const args: string[] = [];
  for (const [k, v] of Object.entries(data)) args.push(`d:${k}`, JSON.stringify(v ?? null));
  return args;
}

/** HGETALL's flat reply from a script, as an object. */
function hashOf(flat: string[]): Record<string, string> {
  const hash: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
  return hash;
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
