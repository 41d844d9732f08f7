/**
 * Vonage Voice API client (docs/telephony.md "Vonage"): `Authorization: Bearer <application JWT>`
 * (vonage-jwt.ts), JSON bodies. Base URL configurable (`VONAGE_API_BASE_URL`) so tests talk to the
 * simulator.
 *
 * - dial: `POST /v1/calls` {to, from, ncco, event_url, ringing_timer, advanced_machine_detection}
 *   -> 201 {uuid, status, conversation_uuid};
 * - hang up: `PUT /v1/calls/{uuid}` {action: hangup};
 * - transfer: `PUT /v1/calls/{uuid}` {action: transfer, destination: {type: ncco, ncco}} (the
 *   websocket leg is dropped when the new NCCO runs);
 * - record: a `record` action in the NCCO (no REST call), its file announced to its eventUrl;
 * - AMD: `advanced_machine_detection` {behavior: continue, mode: detect}, the verdict an event
 *   (`status: human | machine`) on the event_url.
 */
import { CarrierError, carrierRequest } from './http.js';
import { appJwt, type VonageApp } from './vonage-jwt.js';
import type { Ncco } from './vonage-ncco.js';

export interface VonageDial {
  from: string;
  to: string;
  ncco: Ncco;
  eventUrl: string;
  ringTimeoutS: number;
  lengthTimerS?: number;
  /** AMD; the beep wait in seconds (45..120). */
  machineDetection?: { beepTimeoutS: number };
}

export interface VonageClient {
  dial(app: VonageApp, d: VonageDial, signal?: AbortSignal): Promise<{ uuid: string; status: string }>;
  hangup(app: VonageApp, uuid: string, signal?: AbortSignal): Promise<void>;
  transfer(app: VonageApp, uuid: string, ncco: Ncco, signal?: AbortSignal): Promise<void>;
}

const digits = (n: string) => n.replace(/^\+/, '');

export function createVonageClient(opts: { baseUrl: string; timeoutMs?: number }): VonageClient {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const req = async (app: VonageApp, method: 'POST' | 'PUT', path: string, json: unknown, signal?: AbortSignal) =>
    carrierRequest({ method, url: `${base}${path}`, headers: { authorization: `Bearer ${await appJwt(app)}` }, json, timeoutMs, signal });

  return {
    async dial(app, d, signal) {
      const body: Record<string, unknown> = {
        to: [{ type: 'phone', number: digits(d.to) }],
        from: { type: 'phone', number: digits(d.from) },
        ncco: d.ncco,
        event_url: [d.eventUrl],
        event_method: 'POST',
        ringing_timer: d.ringTimeoutS,
      };
      if (d.lengthTimerS) body.length_timer = d.lengthTimerS;
      if (d.machineDetection) body.advanced_machine_detection = { behavior: 'continue', mode: 'detect', beep_timeout: Math.min(120, Math.max(45, d.machineDetection.beepTimeoutS)) };
      const r = await req(app, 'POST', '/v1/calls', body, signal);
      if (typeof r.body.uuid !== 'string' || !r.body.uuid) throw new CarrierError(r.status, 'carrier answered without a call uuid');
      return { uuid: r.body.uuid, status: String(r.body.status ?? '') };
    },
    async hangup(app, uuid, signal) {
      await req(app, 'PUT', `/v1/calls/${encodeURIComponent(uuid)}`, { action: 'hangup' }, signal);
    },
    async transfer(app, uuid, ncco, signal) {
      await req(app, 'PUT', `/v1/calls/${encodeURIComponent(uuid)}`, { action: 'transfer', destination: { type: 'ncco', ncco } }, signal);
    },
  };
}
