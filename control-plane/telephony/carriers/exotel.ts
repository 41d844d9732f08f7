/**
 * Exotel (docs/telephony.md "Exotel"): outbound with the Connect Voice AI API (`POST
 * /v1/Accounts/{sid}/Calls/connect.json`, basic auth API key : API token, a form with `StreamUrl`
 * and `StreamType=bidirectional`), inbound through a Voicebot applet whose URL is our inbound
 * route: it answers `{"url": "wss://..."}` (the applet's dynamic endpoint), the stream speaks
 * Exotel's JSON frames (media-engine/transports/exotel.ts).
 *
 * What Exotel cannot do here: answering-machine detection, transfer (a Voicebot call is
 * transferred by the flow's next applet, not by API), hang-up by API (closing the stream ends a
 * Connect Voice AI call; the engine closes it when the session ends), speaking a refusal (the
 * endpoint answers without a URL and the applet fails over to the flow's next applet).
 *
 * Exotel signs nothing. Its requests are authenticated by what we put in the URLs: the applet URL
 * carries basic-auth credentials (`https://<api_key>:<api_token>@host/...`, sent as
 * `Authorization: Basic`), and the status callback URL we hand it at dial carries `sig` =
 * base64url(HMAC-SHA256(api_token, call_id)), checked in constant time.
 *
 * Credentials: `account_sid`, `auth_token` = API token, `api_key`. Environment fallback:
 * EXOTEL_ACCOUNT_SID, EXOTEL_API_KEY, EXOTEL_API_TOKEN; EXOTEL_API_BASE_URL (default
 * https://api.exotel.com, India: https://api.in.exotel.com), EXOTEL_VERIFY_SIGNATURE (default true).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Config } from '../../../shared/config.js';
import { carrierRequest, trimBase } from './http.js';
import { withSessionQuery } from './stream-url.js';
import { CarrierError, type CarrierAccount, type CarrierAdapter, type CarrierCallEvent } from './types.js';

const STATUS: Record<string, string> = {
  'in-progress': 'in-progress',
  answered: 'in-progress',
  ringing: 'ringing',
  completed: 'completed',
  busy: 'busy',
  failed: 'failed',
  'no-answer': 'no-answer',
  canceled: 'canceled',
};

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
  return Boolean(apiToken && callId && sig && sig.length <= 128 && safeEqual(exotelCallbackSig(apiToken, callId), sig));
}

/** `Authorization: Basic` of the applet URL's credentials, checked in constant time. */
export function verifyExotelBasicAuth(account: { apiKey: string; apiToken: string }, authorization: string | null | undefined): boolean {
  if (!account.apiKey || !account.apiToken || !authorization || authorization.length > 1024) return false;
  return safeEqual(`Basic ${Buffer.from(`${account.apiKey}:${account.apiToken}`).toString('base64')}`, authorization.trim());
}

export function createExotelAdapter(config: () => Config): CarrierAdapter {
  const base = () => trimBase(config().carrierEnv.EXOTEL_API_BASE_URL ?? 'https://api.exotel.com');
  const apiKey = (a: CarrierAccount) => a.extra.api_key ?? '';
  const json = (v: unknown) => JSON.stringify(v);

  return {
    id: 'exotel',
    displayName: 'Exotel',
    media: { encoding: 'pcm_s16le', sampleRateHz: 8000 },
    capabilities: { inbound: true, outbound: true, answeringMachineDetection: false, coldTransfer: false, recording: true, dtmf: true, bargeInClear: true, playbackMarks: true, signatureVerification: true },
    credentialFields: [
      { name: 'account_sid', secret: false, required: true, pattern: /^[A-Za-z0-9_-]{1,64}$/ },
      { name: 'auth_token', secret: true, required: true },
      { name: 'api_key', secret: false, required: true, pattern: /^[A-Za-z0-9_-]{1,128}$/ },
    ],
    // Exotel account sids have no shape of their own: chosen by name or by a workspace account only.
    detect: () => false,
    envAccount: (c) => {
      const e = c.carrierEnv;
      if (!e.EXOTEL_ACCOUNT_SID || !e.EXOTEL_API_TOKEN) return undefined;
      return { carrier: 'exotel', accountSid: e.EXOTEL_ACCOUNT_SID, authToken: e.EXOTEL_API_TOKEN, extra: { api_key: e.EXOTEL_API_KEY ?? '' } };
    },
    documents: {
      contentType: 'application/json',
      connect: (streamUrl, params) => json({ url: withSessionQuery(streamUrl, params) }),
      // No speech from a dynamic endpoint: no URL, and the flow's next applet takes over.
      sayAndHangup: (text) => json({ error: text }),
      hold: (o) => json({ error: o.announce ?? 'busy' }),
      hangup: () => json({}),
      empty: () => json({ received: true }),
    },

    async dial(account, req) {
      if (!apiKey(account)) throw new CarrierError(400, 'the Exotel account has no api_key');
      const status = new URL(`${req.callbackBase}/events/exotel`);
      status.searchParams.set('sig', exotelCallbackSig(account.authToken, req.callId));
      const form = new URLSearchParams({
        From: req.to,
        CallerId: req.from,
        StreamUrl: withSessionQuery(req.streamUrl, req.streamParams),
        StreamType: 'bidirectional',
        CustomField: req.callId,
        TimeOut: String(req.ringTimeoutS),
        StatusCallback: status.toString(),
        'StatusCallbackEvents[0]': 'answered',
        'StatusCallbackEvents[1]': 'terminal',
        StatusCallbackContentType: 'application/json',
      });
      if (req.record) form.set('Record', 'true');
      const r = await carrierRequest({ url: `${base()}/v1/Accounts/${encodeURIComponent(account.accountSid)}/Calls/connect.json`, auth: { basic: [apiKey(account), account.authToken] }, body: form });
      const c = r.Call as Record<string, unknown> | undefined;
      if (!c || typeof c.Sid !== 'string' || !c.Sid) throw new CarrierError(200, 'carrier answered without a call sid');
      return { sid: c.Sid, status: String(c.Status ?? '') };
    },

    // Closing the stream ends the call: the handlers end the engine session right after this.
    async hangup() {},

    async transfer() {
      throw new CarrierError(400, 'Exotel cannot transfer a Voicebot call by API: transfer it with the flow (the applet after the Voicebot)');
    },

    verifyWebhook(req, account, cfg) {
      const token = account?.authToken || cfg.carrierEnv.EXOTEL_API_TOKEN || '';
      const key = (account ? apiKey(account) : '') || cfg.carrierEnv.EXOTEL_API_KEY || '';
      if (cfg.carrierEnv.EXOTEL_VERIFY_SIGNATURE === 'false' || !token) return true;
      const u = new URL(req.url);
      const m = /\/calls\/([^/]+)\/events\/exotel$/.exec(u.pathname);
      if (m) return verifyExotelCallbackSig(token, decodeURIComponent(m[1]!), u.searchParams.get('sig'));
      return verifyExotelBasicAuth({ apiKey: key, apiToken: token }, req.headers.get('authorization'));
    },

    parseInbound(req) {
      const p = req.params;
      return { callSid: p.CallSid ?? '', from: p.CallFrom ?? p.From ?? '', to: p.CallTo ?? p.To ?? '', accountSid: p.AccountSid ?? '' };
    },

    parseEvents(req): CarrierCallEvent[] {
      const p = req.params;
      const sid = p.CallSid ?? '';
      const out: CarrierCallEvent[] = [];
      const s = STATUS[(p.Status ?? '').toLowerCase()] ?? (p.EventType === 'answered' ? 'in-progress' : undefined);
      if (s) {
        const d = Number(p.ConversationDuration ?? p.Duration);
        out.push({ kind: 'status', callSid: sid, status: s, durationS: Number.isFinite(d) && (p.ConversationDuration ?? p.Duration) ? d : undefined });
      }
      if (p.RecordingUrl) out.push({ kind: 'recording', callSid: sid, url: p.RecordingUrl, sid: sid });
      return out.length ? out : [{ kind: 'ignored', type: p.EventType ?? 'unknown' }];
    },
  };
}
