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
import type { LiveAgentConfig } from '../agents/index.js';
import type { Auth } from '../http/auth.js';
import type { VoiceDomain } from '../voice/index.js';
import { type CallEvent, LiveCalls } from './live-calls.js';
import { verifySignature } from './signature.js';
import type { CarrierAccount, TwilioClient } from './twilio-client.js';

export interface TelephonyOptions {
  /** Seconds an outbound call rings before `no-answer`. Default 30. */
  ringTimeoutS?: number;
  /** Pause of one hold round (no hold audio URL). Default 10 s. */
  holdPauseS?: number;
  /** Hold rounds before the caller is told to call back and hung up on. Default 60 (10 minutes). */
  maxHoldRounds?: number;
  /** How long an AMD verdict waits for the engine to claim the call's session. Default 5000 ms. */
  amdRouteWaitMs?: number;
  /** Registry command timeout (end, transfer, amd). Default 3000 ms. */
  commandTimeoutMs?: number;
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
  /** Carrier REST client; default: Twilio at `config.twilioApiBaseUrl`. */
  twilio: TwilioClient;
  /**
   * Called on every status change and at the end of each call. The conversations domain can
   * update its record here (it exports no function for that yet; see docs/telephony.md).
   */
  onCallEvent?: (ev: CallEvent) => void;
  options?: TelephonyOptions;
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
      holdPauseS: o.holdPauseS ?? 10,
      maxHoldRounds: o.maxHoldRounds ?? 60,
      amdRouteWaitMs: o.amdRouteWaitMs ?? 5000,
      commandTimeoutMs: o.commandTimeoutMs ?? 3000,
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

/**
 * Carrier account of an agent: its binding's account SID and token, each blank one inherited from
 * the deployment account (TWILIO_ACCOUNT_SID / TWILIO_AUTH_TOKEN; no workspace settings store exists).
 */
export function resolveAccount(ctx: Ctx, agent: LiveAgentConfig | undefined): CarrierAccount | undefined {
  const t = agent?.telephony;
  const accountSid = t?.carrier_account_sid?.trim() || ctx.deps.config.twilioAccountSid || '';
  const authToken = t?.carrier_auth_token?.trim() || ctx.deps.config.twilioAuthToken || '';
  return accountSid && authToken ? { accountSid, authToken } : undefined;
}

/**
 * Checks `X-Twilio-Signature` when verification is on (TWILIO_VERIFY_SIGNATURE, default on) and a
 * token is known; 403 when it does not match. Without a token there is nothing to check against
 * (the spec's behaviour: not verified).
 */
export function verifyWebhook(ctx: Ctx, hc: HandlerContext, params: Record<string, string>, authToken: string | undefined): void {
  if (!ctx.deps.config.twilioVerifySignature || !authToken) return;
  const url = requestedUrl(ctx, hc);
  if (!verifySignature(authToken, url, params, hc.requestHeader.get('x-twilio-signature'))) {
    ctx.log.warn({ path: new URL(hc.url).pathname }, 'carrier webhook with an invalid signature refused');
    throw new AppError('FORBIDDEN', 'invalid carrier signature');
  }
}

/** Runs `fn` in the background, tracked so `close()` can wait for it. */
export function inBackground(ctx: Ctx, fn: () => Promise<void>): void {
  const p = fn()
    .catch((err: unknown) => ctx.log.warn({ err }, 'telephony background task failed'))
    .finally(() => ctx.background.delete(p));
  ctx.background.add(p);
}

export function emit(ctx: Ctx, ev: CallEvent): void {
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
