/**
 * What the telephony handlers share: their dependencies, the public base URL carrier callbacks are
 * built from, carrier credential resolution and webhook signature checks.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { AppError } from '../../shared/errors.js';
import type { Config } from '../../shared/config.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Registry } from '../../shared/registry/index.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import type { Jobs } from '../jobs/index.js';
import type { LiveAgentConfig } from '../agents/index.js';
import type { Auth } from '../http/auth.js';
import type { VoiceDomain } from '../voice/index.js';
import { type CallEvent, LiveCalls } from './live-calls.js';
import { type CarrierAccount, type CarrierAdapter, type CarrierAdapters, type CarrierName, type CarrierRecording, type WebhookRequest } from './carriers/index.js';

export interface TelephonyOptions {
  /** Seconds an outbound call rings before `no-answer`. Default 30. */
  ringTimeoutS?: number;
  /**
   * How long an outbound call's session waits for the carrier's stream beyond the ring timeout,
   * counted from the placement and again from the carrier's `ringing` or answer. Default 30,000 ms.
   */
  answerMarginMs?: number;
  /**
   * Time a placed call may wait in the carrier's queue before it rings (a carrier paces an
   * account's calls per second: a campaign's calls queue there), added to the window counted from
   * the placement. Default 60,000 ms.
   */
  carrierQueueAllowanceMs?: number;
  /** Pause of one hold round (no hold audio URL). Default 10 s. */
  holdPauseS?: number;
  /** Hold rounds before the caller is told to call back and hung up on. Default 60 (10 minutes). */
  maxHoldRounds?: number;
  /** How long an AMD verdict waits for the engine to claim the call's session. Default 5000 ms. */
  amdRouteWaitMs?: number;
  /** Registry command timeout (end, transfer, amd). Default 3000 ms. */
  commandTimeoutMs?: number;
  /**
   * Event carriers (Telnyx): how long past a spoken step's longest play (a refusal, a hold round)
   * its end event may take before the step's deadline job hangs the call up (inbound-deadline.ts).
   * Covers the speech itself and the carrier's event retries (60 s). Default 90 s.
   */
  stepGraceS?: number;
  /**
   * A placed call not connected yet whose end was not heard of is asked of its carrier this long
   * after its placement at the earliest, then at most this often (callbacks.ts
   * `reconcileWithCarrier`: a final status callback lost, e.g. answered 503 during a registry
   * outage). Default 15,000 ms.
   */
  carrierRecheckMs?: number;
}

export interface TelephonyDeps {
  config: Config;
  logger: Logger;
  clock: Clock;
  registry: Registry;
  auth: Auth;
  /** The agents domain's published configuration (secrets decrypted). */
  liveConfig: (agentId: string, signal?: AbortSignal) => Promise<LiveAgentConfig>;
  findAgentByNumber: (e164: string, signal?: AbortSignal) => Promise<LiveAgentConfig | undefined>;
  voice: Pick<VoiceDomain, 'startSession' | 'sessions'>;
  /** The carrier adapters (carriers/index.ts); default: every supported carrier. */
  carriers: CarrierAdapters;
  /**
   * The workspace's carrier accounts (call-center settings, secrets decrypted) by carrier; absent:
   * none stored. Blank binding fields inherit from these before the environment's.
   */
  workspaceCarriers?: (workspaceId: string, signal?: AbortSignal) => Promise<Partial<Record<CarrierName, CarrierAccount>>>;
  /**
   * Called on every status change and at the end of each call. The conversations domain can
   * update its record here (it exports no function for that yet; see docs/telephony.md).
   */
  onCallEvent?: (ev: CallEvent) => void;
  /**
   * Ended calls whose person's leg's recording is still awaited (the portal's pending hand-off
   * transcripts): carriers that name it in a callback of its own (Telnyx, Plivo, Vonage) may do
   * so after the call has left the registry. Absent: such a late callback is dropped.
   */
  lateRecordings?: LateRecordings;
  /** Carrier recording downloads (URLs named in webhooks) go through it; absent: none is downloaded. */
  outbound?: OutboundClient;
  /** The durable job queue, for event carriers' step deadlines (inbound-deadline.ts); absent: no deadline. */
  jobs?: Pick<Jobs, 'enqueue'>;
  options?: TelephonyOptions;
}

export interface LateRecordings {
  /** The AI agent and carrier of an ended call whose person's leg's recording is still awaited. */
  awaiting(callId: string): Promise<{ agentId: string; carrier: string } | undefined>;
  /** That recording, named by the carrier's (verified) callback. */
  arrived(callId: string, carrier: string, recording: CarrierRecording): Promise<void>;
}

export interface Ctx {
  deps: TelephonyDeps;
  calls: LiveCalls;
  log: Logger;
  opts: Required<TelephonyOptions>;
  /** Background work (AMD routing) awaited at close. */
  background: Set<Promise<void>>;
}

export function createCtx(deps: TelephonyDeps): Ctx {
  const o = deps.options ?? {};
  return {
    deps,
    calls: new LiveCalls(deps.registry, deps.clock),
    log: deps.logger.child({ domain: 'telephony' }),
    opts: {
      ringTimeoutS: o.ringTimeoutS ?? 30,
      answerMarginMs: o.answerMarginMs ?? 30_000,
      carrierQueueAllowanceMs: o.carrierQueueAllowanceMs ?? 60_000,
      holdPauseS: o.holdPauseS ?? 10,
      maxHoldRounds: o.maxHoldRounds ?? 60,
      amdRouteWaitMs: o.amdRouteWaitMs ?? 5000,
      commandTimeoutMs: o.commandTimeoutMs ?? 3000,
      stepGraceS: o.stepGraceS ?? 90,
      carrierRecheckMs: o.carrierRecheckMs ?? 15_000,
    },
    background: new Set(),
  };
}

/**
 * Base URL of this service as the carrier reaches it: PUBLIC_BASE_URL, except when the listener's
 * port is chosen at listen time (HTTP_PORT=0 or a `:0` base URL: tests, local runs), where the
 * configured URL cannot be right and the request's Host is used.
 */
export function publicBase(ctx: Ctx, hc: HandlerContext): string {
  const configured = ctx.deps.config.publicBaseUrl.replace(/\/+$/, '');
  let port = '';
  try {
    port = new URL(configured).port;
  } catch {
    // validated by config
  }
  if (port !== '0' && ctx.deps.config.httpPort !== 0) return configured;
  const host = hc.requestHeader.get('host');
  return host ? `http://${host}` : configured;
}

/** The URL the carrier requested (for signatures): public base + the path and query as received. */
export function requestedUrl(ctx: Ctx, hc: HandlerContext): string {
  const u = new URL(hc.url);
  return `${publicBase(ctx, hc)}${u.pathname}${u.search}`;
}

/** The carrier an account id belongs to (the adapters' `detect`), else Twilio (legacy bindings). */
export function detectFrom(ctx: Ctx, accountSid: string, authToken = ''): CarrierName {
  for (const a of ctx.deps.carriers.values()) if (a.detect(accountSid, authToken)) return a.id;
  return 'twilio';
}

export function adapterOf(ctx: Ctx, carrier: string): CarrierAdapter | undefined {
  return ctx.deps.carriers.get(carrier as CarrierName);
}

/**
 * Carrier account of an agent: its binding's account SID and token, each blank one inherited from
 * the workspace's carrier account (call-center settings), then from the deployment's environment.
 * The carrier: `want`, else the one the binding's account id belongs to, else the first carrier
 * (Twilio first) with a workspace account, then with an environment account. The binding's fields
 * are used only for the carrier they belong to.
 */
export async function resolveAccount(ctx: Ctx, agent: LiveAgentConfig | undefined, want?: CarrierName, signal?: AbortSignal): Promise<CarrierAccount | undefined> {
  const t = agent?.telephony;
  const boundSid = t?.carrier_account_sid?.trim() ?? '';
  const boundToken = t?.carrier_auth_token?.trim() ?? '';
  const bound = boundSid ? detectFrom(ctx, boundSid, boundToken) : undefined;
  // The binding's credentials belong to one carrier: another carrier asked for by name gets its
  // own account (workspace, environment), never them (a Twilio token was sent to Telnyx's API).
  const own = !want || !bound || want === bound;
  const sid = own ? boundSid : '';
  const token = own ? boundToken : '';
  const ws: Partial<Record<CarrierName, CarrierAccount>> = agent && ctx.deps.workspaceCarriers ? await ctx.deps.workspaceCarriers(agent.workspace_id, signal).catch((err: unknown) => {
    ctx.log.warn({ err }, 'workspace carrier accounts could not be read');
    return {};
  }) : {};
  const env = (c: CarrierName) => ctx.deps.carriers.get(c)?.envAccount(ctx.deps.config);
  const complete = (a: CarrierAccount | undefined) => Boolean(a?.accountSid && a.authToken);
  const carrier: CarrierName | undefined =
    want ?? bound ?? [...ctx.deps.carriers.keys()].find((c) => complete(ws[c])) ?? [...ctx.deps.carriers.keys()].find((c) => complete(env(c)));
  if (!carrier) return undefined;
  // Field by field: the binding, then the workspace account, then the environment.
  const w = ws[carrier];
  const e = env(carrier);
  const accountSid = sid || w?.accountSid || e?.accountSid || '';
  const authToken = token || w?.authToken || e?.authToken || '';
  const extra: Record<string, string> = {};
  for (const src of [e?.extra, w?.extra]) for (const [k, v] of Object.entries(src ?? {})) if (v) extra[k] = v;
  return accountSid && authToken ? { carrier, accountSid, authToken, extra } : undefined;
}

/** The webhook as the adapters verify and parse it. */
export function webhookOf(ctx: Ctx, hc: HandlerContext, rawBody: string, params: Record<string, string>, json?: unknown): WebhookRequest {
  return { url: requestedUrl(ctx, hc), headers: hc.requestHeader, rawBody, params, json };
}

/** 403 unless the carrier's adapter accepts the webhook's signature (see CarrierAdapter.verifyWebhook). */
export function verifyWebhook(ctx: Ctx, hc: HandlerContext, adapter: CarrierAdapter, req: WebhookRequest, account: CarrierAccount | undefined): void {
  if (adapter.verifyWebhook(req, account && account.carrier === adapter.id ? account : undefined, ctx.deps.config)) return;
  ctx.log.warn({ path: new URL(hc.url).pathname, carrier: adapter.id }, 'carrier webhook with an invalid signature refused');
  throw new AppError('FORBIDDEN', 'invalid carrier signature');
}

/** Runs `fn` in the background, tracked so `close()` can wait for it. */
export function inBackground(ctx: Ctx, fn: () => Promise<void>): void {
  const p = fn()
    .catch((err: unknown) => ctx.log.warn({ err }, 'telephony background task failed'))
    .finally(() => ctx.background.delete(p));
  ctx.background.add(p);
}

/**
 * Hands a call event to the hook. Every `ended` of a call handed to a person says what is known of
 * that leg's recording: `dialRecording` (named at the leg's end, or earlier in a callback of its
 * own and kept on the record), else `recordingFollows` when its carrier names it later.
 */
export function emit(ctx: Ctx, ev: CallEvent): void {
  if (ev.type === 'ended' && ev.call.transferred_to && !ev.dialRecording) {
    const kept = ev.call.leg_recording_url ? { url: ev.call.leg_recording_url, sid: ev.call.leg_recording_sid ?? '' } : undefined;
    if (kept) ev = { ...ev, dialRecording: kept };
    else if (adapterOf(ctx, ev.call.telephony_provider)?.handoff?.recordingInCallback) ev = { ...ev, recordingFollows: true };
  }
  try {
    ctx.deps.onCallEvent?.(ev);
  } catch (err) {
    ctx.log.warn({ err }, 'call event hook failed');
  }
}

/** E.164 numbers in logs: country code and the last two digits only. */
export function maskNumber(n: string): string {
  return n.length > 6 ? `${n.slice(0, 3)}…${n.slice(-2)}` : '…';
}
