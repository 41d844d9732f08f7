/**
 * The issue-23 cluster on one machine, as real processes: control planes
 * (`test/helpers/control-plane-tuned.ts`: `control-plane/main.ts`'s start and shutdown with
 * faster job polling and dialer timings) behind one load balancer (the carrier's webhooks and
 * callbacks reach whichever replica is up, as PUBLIC_BASE_URL does in a deployment), engine nodes
 * (`media-engine/main.ts`), a Redis of the rig's own and the machine's Postgres (the suite's
 * schema). It starts and replaces those processes the way an orchestrator does, and holds the
 * live calls: browser calls (text turns) and inbound carrier calls from the carrier simulator
 * (sim-coded audio both ways in real time; spoken turns).
 */
import type { TelephonyHarness } from '../carrier-sim/harness.js';
import { api } from './accounts.js';
import { until } from './campaigns.js';
import { placeInbound, type PlacedInbound } from './carrier-calls.js';
import { startControlPlaneChild, startEngineChild, type EngineChild } from './engine-child.js';
import { establishedCall, postText } from './established-call.js';
import type { HttpBalancer } from './http-balancer.js';
import type { TestRedisServer } from './redis-server.js';
import type { VoiceClient } from './voice-client.js';

export interface RigCall {
  kind: 'browser' | 'carrier';
  sessionId: string;
  /** Port of the engine node it runs on. */
  port: number;
  browser?: VoiceClient;
  carrier?: PlacedInbound;
  /** Ended by its caller. */
  hungUp: boolean;
  /** Its node was SIGKILLed. */
  lost: boolean;
}

export interface ClusterRigOptions {
  h: TelephonyHarness;
  redis: TestRedisServer;
  lb: HttpBalancer;
  /** Output of `buildChild(['test/helpers/control-plane-tuned.ts'])`. */
  dir: string;
  /** Control plane options (JSON) of every control-plane process. */
  cpOptions: object;
  /** Environment of every process (OUTBOUND_ALLOW_CIDRS, TWILIO_API_BASE_URL, ...). */
  env: Record<string, string>;
  browserAgentId: string;
  /** The inbound carrier agent's number and a caller number. */
  inbound: { to: string; from: string };
}

export class ClusterRig {
  /** Live engine nodes and control planes (a stopped one leaves the list). */
  readonly engines: EngineChild[] = [];
  readonly cps: EngineChild[] = [];
  readonly calls: RigCall[] = [];
  /** Every process ever started (afterAll SIGKILLs what is left). */
  readonly procs: EngineChild[] = [];
  /** 503s (Retry-After) retried by text turns, as a client does. */
  retried503 = 0;
  private rr = 0;

  constructor(readonly o: ClusterRigOptions) {}

  private childOptions() {
    const { h, redis, dir, env } = this.o;
    return { dir, schema: h.infra.schema, registryPrefix: h.infra.registryPrefix, redisUrl: redis.url, env };
  }

  async startEngine(): Promise<EngineChild> {
    const e = await startEngineChild(this.childOptions());
    this.procs.push(e);
    this.engines.push(e);
    return e;
  }

  /** A control plane, in the balancer's rotation once it listens. */
  async startCp(): Promise<EngineChild> {
    const c = await startControlPlaneChild({ ...this.childOptions(), secretsKey: this.o.h.infra.config.secretsKey!, options: this.o.cpOptions });
    this.procs.push(c);
    this.cps.push(c);
    this.o.lb.add(c.port);
    return c;
  }

  /** The next control plane's port, round robin (the test's API client spreads its requests). */
  cpPort(): number {
    return this.cps[this.rr++ % this.cps.length]!.port;
  }

  /** REST under /api/v1 with the harness user's token, through a control plane. */
  api(method: string, path: string, body?: unknown, port = this.cpPort()) {
    return api({ port }, method, `/api/v1${path}`, { token: this.o.h.user.token, body });
  }

  live(): RigCall[] {
    return this.calls.filter((c) => !c.hungUp && !c.lost);
  }

  on(e: EngineChild): RigCall[] {
    return this.live().filter((c) => c.port === e.port);
  }

  engineOf(c: RigCall): EngineChild {
    const e = this.procs.find((p) => p.port === c.port && p.nodeId);
    if (!e) throw new Error(`no engine on port ${c.port}`);
    return e;
  }

  async browserCall(): Promise<RigCall> {
    const c = await establishedCall(this.cpPort(), this.o.browserAgentId);
    const call: RigCall = { kind: 'browser', sessionId: c.sessionId, port: c.port, browser: c.client, hungUp: false, lost: false };
    this.calls.push(call);
    return call;
  }

  /** An inbound carrier call through the balancer, once the agent's audio flows to the carrier. */
  async carrierCall(): Promise<RigCall> {
    const { h, lb, inbound } = this.o;
    const p = await placeInbound(h.sim, { webhookUrl: `${lb.url}/api/v1/telephony/calls/inbound`, from: inbound.from, to: inbound.to, accountSid: h.accountSid });
    const call: RigCall = { kind: 'carrier', sessionId: p.sessionId, port: p.port, carrier: p, hungUp: false, lost: false };
    this.calls.push(call);
    await p.media.waitUntil(() => p.media.mediaArrivals.length > 0, 15_000, 'agent audio');
    return call;
  }

  /** A new call of the same kind. */
  replacement(c: RigCall): Promise<RigCall> {
    return c.kind === 'browser' ? this.browserCall() : this.carrierCall();
  }

  /**
   * One answered turn. Browser: a text through `via` (a control plane, else the next one), the
   * agent's reply on the socket. Carrier: spoken by the caller (sim code), or a text through
   * `via` when given; answered once the agent's reply is recorded. The record, not what the
   * carrier decoded: the sim code garbles when this process is starved of CPU, the turn does not.
   */
  async turn(c: RigCall, text: string, via?: number): Promise<void> {
    if (c.kind === 'browser') {
      const client = c.browser!;
      const from = client.events.length;
      await this.text(c, text, via ?? this.cpPort());
      await client.waitFor((e) => e.type === 'llm_end', 20_000, from);
      return;
    }
    const before = await this.replies(c);
    if (via !== undefined) await this.text(c, text, via);
    else void c.carrier!.media.say(text);
    await until(async () => (await this.replies(c)) > before, 20_000, `the agent's answer to "${text}" on carrier call ${c.sessionId}`, 100);
  }

  /** The agent's recorded replies to caller turns (the welcome is turn 0). */
  private async replies(c: RigCall): Promise<number> {
    const [r] = await this.o.h.infra.sql<Array<{ n: number }>>`
      select count(*)::int as n from messages m join conversations v on v.id = m.conversation_id
      where v.session_id = ${c.sessionId} and m.role = 'assistant' and m.turn_number >= 1`;
    return r!.n;
  }

  private async text(c: RigCall, text: string, via: number): Promise<void> {
    const r = await postText(via, c.sessionId, text);
    this.retried503 += r.retried;
    if (r.status !== 200) throw new Error(`text for ${c.kind} call ${c.sessionId}: ${r.status} ${JSON.stringify(r.body)}`);
  }

  hangUp(c: RigCall): void {
    c.hungUp = true;
    if (c.browser) c.browser.close();
    else c.carrier!.media.hangup();
  }

  /**
   * An engine node replaced with a drain, as a rolling update does it: a new node starts (or was
   * `started` already), the old one gets SIGTERM; its calls answer a turn while it drains (alternately through each control
   * plane) while new calls replace them (none may land on the draining node), then their callers
   * hang up and the old node exits by itself.
   */
  async replaceEngine(old: EngineChild, text: string, started?: EngineChild) {
    const fresh = started ?? (await this.startEngine());
    const termAt = performance.now();
    old.proc.kill('SIGTERM');
    await until(async () => (await this.o.h.infra.registry.nodes.listNodes()).some((n) => n.nodeId === old.nodeId && n.draining), 10_000, 'draining mark');
    const onOld = this.on(old);
    // Its calls' turns and the new calls that replace them, at once: the node drains meanwhile.
    const [, replacements] = await Promise.all([
      Promise.all(onOld.map((c, k) => this.turn(c, text, c.kind === 'browser' ? this.cps[k % this.cps.length]!.port : undefined))),
      Promise.all(onOld.map((c) => this.replacement(c))),
    ]);
    for (const c of onOld) this.hangUp(c);
    const exit = await old.exited;
    this.engines.splice(this.engines.indexOf(old), 1);
    return { fresh, onOld, replacements, exit, drainMs: exit.atMs - termAt };
  }

  /** A control plane replaced: a new one joins the balancer, then the old one is stopped (`stopCp`). */
  async replaceCp(old: EngineChild) {
    const fresh = await this.startCp();
    return { fresh, ...(await this.stopCp(old)) };
  }

  /**
   * A control plane leaves the balancer and gets SIGTERM (`whileStopping` runs right after the
   * signal); resolves once it exited by itself.
   */
  async stopCp(old: EngineChild, whileStopping?: () => Promise<void>) {
    this.o.lb.remove(old.port);
    this.cps.splice(this.cps.indexOf(old), 1);
    const termAt = performance.now();
    old.proc.kill('SIGTERM');
    await whileStopping?.();
    const exit = await old.exited;
    return { exit, stopMs: exit.atMs - termAt };
  }

  /** Redis restarted empty; resolves once every live engine node and every live call's claim is back. */
  async restartRedis(): Promise<{ backMs: number }> {
    const { h, redis } = this.o;
    await redis.restart();
    const at = performance.now();
    const ids = this.engines.map((e) => e.nodeId);
    await until(async () => {
      const listed = new Set((await h.infra.registry.nodes.listNodes().catch(() => [])).map((n) => n.nodeId));
      return ids.every((id) => listed.has(id));
    }, 15_000, 'engine nodes back in the registry');
    const live = this.live();
    await until(async () => {
      const owners = await Promise.all(live.map((c) => h.infra.registry.sessions.sessionOwner(c.sessionId).catch(() => undefined)));
      return owners.every((o, i) => o === this.engineOf(live[i]!).nodeId);
    }, 15_000, 'claims back in the registry');
    return { backMs: performance.now() - at };
  }

  /** Conversation rows by session id: status, end reason, call id. */
  async conversations(sessionIds: string[]) {
    const { sql } = this.o.h.infra;
    const rows = await sql<Array<{ session_id: string; status: string; reason: string | null; call_id: string | null }>>`
      select session_id, status, metadata->>'end_reason' as reason, call_id from conversations where session_id = any(${sql.array(sessionIds)})`;
    return new Map(rows.map((r) => [r.session_id, r]));
  }

  async messageCount(sessionId: string): Promise<number> {
    const [r] = await this.o.h.infra.sql<Array<{ n: number }>>`select count(*)::int as n from messages m join conversations c on c.id = m.conversation_id where c.session_id = ${sessionId}`;
    return r!.n;
  }

  /** Live-call record ids, as a customer lists them. */
  async listedCallIds(): Promise<Set<string>> {
    const r = await this.api('GET', '/telephony/calls?limit=200');
    if (r.status !== 200) throw new Error(`GET /telephony/calls: ${r.status} ${JSON.stringify(r.body)}`);
    return new Set((r.body.calls as Array<{ call_id: string }>).map((c) => c.call_id));
  }

  /** What a failed run leaves to read: live-call records, unfinished contacts and deliveries, carrier callbacks that failed, the processes' warnings. */
  async diagnostics(campaignId: string): Promise<string> {
    const { sql } = this.o.h.infra;
    const failed = (e: Error) => e.message;
    const listed = await this.listedCallIds().then((ids) => ids.size, failed);
    const open = await sql`select to_number, status, attempts, call_id from campaign_contacts where campaign_id = ${campaignId} and status not in ('completed', 'failed')`.catch(failed);
    const deliveries = await sql`
      select d.event_type, d.test, d.status, d.attempts, d.last_status_code, d.last_error, d.next_attempt_at,
        (select json_agg(json_build_object('n', a.n, 'code', a.status_code, 'error', a.error, 'ms', a.latency_ms)) from webhook_attempts a where a.delivery_id = d.id) as tries
      from webhook_deliveries d where d.status <> 'delivered' or d.attempts > 1`.catch(failed);
    const failedCallbacks = [...this.o.h.sim.calls.values()].flatMap((c) => c.callbacks.filter((b) => b.status !== 200).map((b) => ({ to: c.to, kind: b.kind, status: b.status, body: b.body.slice(0, 200) })));
    const noise = (msg: string) => msg === 'call annotation found no conversation row' || msg.startsWith('SMTP_URL unset') || msg.startsWith('SECRETS_KEY unset');
    const warnings = this.procs.flatMap((p) => p.logs.filter((l) => Number(l.level) >= 40 && !noise(String(l.msg))).map((l) => ({ port: p.port, msg: l.msg, err: (l.err as { message?: string } | undefined)?.message })));
    return JSON.stringify({ listed, open, deliveries, failedCallbacks, balancerFailed: this.o.lb.failed, warnings: warnings.slice(-40) }, null, 1);
  }

  /** SIGKILL for every process still running (afterAll). */
  killAll(): void {
    for (const p of this.procs) if (p.proc.exitCode === null && p.proc.signalCode === null) p.proc.kill('SIGKILL');
    for (const c of this.calls) {
      c.browser?.close();
      c.carrier?.media.hangup();
    }
  }
}
