/**
 * Plivo Voice REST client (Call API, docs/telephony.md "Plivo"): basic auth with the Auth ID and
 * Auth Token, JSON bodies, snake_case. Base URL configurable (`PLIVO_API_BASE_URL`) so tests talk to
 * the simulator.
 *
 * - dial: `POST /v1/Account/{auth_id}/Call/` -> 201 {request_uuid} (the call's CallUUID only
 *   arrives with its callbacks: answer_url, hangup_url carry both);
 * - hang up: `DELETE /v1/Account/{auth_id}/Call/{call_uuid}/` (a call not yet answered:
 *   `DELETE .../Request/{request_uuid}/`);
 * - transfer: `POST /v1/Account/{auth_id}/Call/{call_uuid}/` {legs: aleg, aleg_url} (Plivo fetches
 *   the XML there; the stream stops);
 * - record: `POST /v1/Account/{auth_id}/Call/{call_uuid}/Record/` {callback_url};
 * - AMD: `machine_detection: "true"` on dial, the verdict POSTed to `machine_detection_url`.
 */
import { basicAuth, CarrierError, carrierRequest } from './http.js';

export interface PlivoAccount {
  authId: string;
  authToken: string;
}

export interface PlivoDial {
  from: string;
  to: string;
  answerUrl: string;
  hangupUrl: string;
  ringTimeoutS: number;
  timeLimitS?: number;
  /** AMD: the verdict is POSTed here (`machine_detection_url`); Plivo's detection time in ms. */
  machineDetection?: { url: string; timeMs: number };
}

export interface PlivoClient {
  dial(account: PlivoAccount, d: PlivoDial, signal?: AbortSignal): Promise<{ requestUuid: string }>;
  hangup(account: PlivoAccount, callUuid: string, signal?: AbortSignal): Promise<void>;
  /** Cancels a call that has not been answered yet (by its request uuid). */
  cancel(account: PlivoAccount, requestUuid: string, signal?: AbortSignal): Promise<void>;
  transfer(account: PlivoAccount, callUuid: string, xmlUrl: string, signal?: AbortSignal): Promise<void>;
  record(account: PlivoAccount, callUuid: string, callbackUrl: string, signal?: AbortSignal): Promise<{ recordingId: string; url: string }>;
}

export function createPlivoClient(opts: { baseUrl: string; timeoutMs?: number }): PlivoClient {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const path = (a: PlivoAccount, p: string) => `${base}/v1/Account/${encodeURIComponent(a.authId)}${p}`;
  const call = (a: PlivoAccount, method: 'POST' | 'DELETE', p: string, json: unknown, signal?: AbortSignal) =>
    carrierRequest({ method, url: path(a, p), headers: { authorization: basicAuth(a.authId, a.authToken) }, json, timeoutMs, signal });

  return {
    async dial(a, d, signal) {
      const body: Record<string, unknown> = {
        from: d.from.replace(/^\+/, ''),
        to: d.to.replace(/^\+/, ''),
        answer_url: d.answerUrl,
        answer_method: 'POST',
        hangup_url: d.hangupUrl,
        hangup_method: 'POST',
        ring_timeout: d.ringTimeoutS,
      };
      if (d.timeLimitS) body.time_limit = d.timeLimitS;
      if (d.machineDetection) {
        body.machine_detection = 'true';
        body.machine_detection_time = d.machineDetection.timeMs;
        body.machine_detection_url = d.machineDetection.url;
        body.machine_detection_method = 'POST';
      }
      const r = await call(a, 'POST', '/Call/', body, signal);
      const id = r.body.request_uuid;
      const requestUuid = Array.isArray(id) ? id[0] : id;
      if (typeof requestUuid !== 'string' || !requestUuid) throw new CarrierError(r.status, 'carrier answered without a request_uuid');
      return { requestUuid };
    },
    async hangup(a, callUuid, signal) {
      await call(a, 'DELETE', `/Call/${encodeURIComponent(callUuid)}/`, undefined, signal);
    },
    async cancel(a, requestUuid, signal) {
      await call(a, 'DELETE', `/Request/${encodeURIComponent(requestUuid)}/`, undefined, signal);
    },
    async transfer(a, callUuid, xmlUrl, signal) {
      await call(a, 'POST', `/Call/${encodeURIComponent(callUuid)}/`, { legs: 'aleg', aleg_url: xmlUrl, aleg_method: 'POST' }, signal);
    },
    async record(a, callUuid, callbackUrl, signal) {
      const r = await call(a, 'POST', `/Call/${encodeURIComponent(callUuid)}/Record/`, { callback_url: callbackUrl, callback_method: 'POST', file_format: 'mp3' }, signal);
      return { recordingId: String(r.body.recording_id ?? ''), url: String(r.body.url ?? '') };
    },
  };
}
