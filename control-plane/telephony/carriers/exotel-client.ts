/**
 * Exotel REST client and webhook authentication (docs/telephony.md "Exotel").
 *
 * - dial: `POST /v1/Accounts/{sid}/Calls/connect.json`, basic auth (API key : API token), a form:
 *   `From` (the number called), `CallerId` (the ExoPhone), `Url` (the app/flow whose Voicebot
 *   applet points at our stream endpoint), `CustomField` (our call id: the flow hands it to that
 *   endpoint), `StatusCallback` -> {Call: {Sid, Status}}.
 * - Exotel has no hang-up, transfer or AMD endpoint for a flow call: hanging up or transferring is
 *   closing the stream (the flow then runs its next applet), recording is the applet's setting.
 *
 * Exotel signs nothing. Its requests are authenticated by what we put in the URLs: the Voicebot
 * applet's URL carries basic-auth credentials (`https://<api_key>:<api_token>@host/...`, which
 * Exotel sends as `Authorization: Basic`), and the status callback URLs we hand it carry
 * `sig` = HMAC-SHA256(api_token, "<call_id>") (base64url), checked in constant time.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { basicAuth, CarrierError, carrierRequest } from './http.js';

export interface ExotelAccount {
  /** Account SID (the subdomain-less account name). */
  accountSid: string;
  apiKey: string;
  apiToken: string;
}

export interface ExotelDial {
  to: string;
  callerId: string;
  /** The flow to run once the callee answers: `http://my.exotel.com/{sid}/exoml/start_voice/{app_id}`. */
  flowUrl: string;
  callId: string;
  statusCallback: string;
  timeLimitS?: number;
  ringTimeoutS: number;
  record?: boolean;
}

export interface ExotelClient {
  dial(account: ExotelAccount, d: ExotelDial, signal?: AbortSignal): Promise<{ sid: string; status: string }>;
}

export function createExotelClient(opts: { baseUrl: string; timeoutMs?: number }): ExotelClient {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const timeoutMs = opts.timeoutMs ?? 10_000;
  return {
    async dial(a, d, signal) {
      const form = new URLSearchParams({
        From: d.to,
        CallerId: d.callerId,
        Url: d.flowUrl,
        CallType: 'trans',
        CustomField: d.callId,
        TimeOut: String(d.ringTimeoutS),
        StatusCallback: d.statusCallback,
        'StatusCallbackEvents[0]': 'terminal',
        'StatusCallbackEvents[1]': 'answered',
        StatusCallbackContentType: 'application/json',
      });
      if (d.timeLimitS) form.set('TimeLimit', String(d.timeLimitS));
      if (d.record) form.set('Record', 'true');
      const r = await carrierRequest({
        method: 'POST',
        url: `${base}/v1/Accounts/${encodeURIComponent(a.accountSid)}/Calls/connect.json`,
        headers: { authorization: basicAuth(a.apiKey, a.apiToken) },
        form,
        timeoutMs,
        signal,
      });
      const call = r.body.Call as Record<string, unknown> | undefined;
      if (!call || typeof call.Sid !== 'string' || !call.Sid) throw new CarrierError(r.status, 'carrier answered without a call sid');
      return { sid: call.Sid, status: String(call.Status ?? '') };
    },
  };
}

/** `sig` for our callback URLs of one call. */
export function exotelCallbackSig(apiToken: string, callId: string): string {
  return createHmac('sha256', apiToken).update(callId, 'utf8').digest('base64url');
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

export function verifyExotelCallbackSig(apiToken: string, callId: string, sig: string | null | undefined): boolean {
  return Boolean(apiToken && sig && sig.length <= 128 && safeEqual(exotelCallbackSig(apiToken, callId), sig));
}

/** `Authorization: Basic` of the applet URL's credentials, checked in constant time. */
export function verifyExotelBasicAuth(account: Pick<ExotelAccount, 'apiKey' | 'apiToken'>, authorization: string | null | undefined): boolean {
  if (!account.apiKey || !account.apiToken || !authorization || authorization.length > 1024) return false;
  return safeEqual(basicAuth(account.apiKey, account.apiToken), authorization.trim());
}
