/**
 * Twilio REST client (docs/protocols.md section 3): create a call and update a live one, basic auth,
 * form bodies with PascalCase keys (a key repeated once per value, e.g. StatusCallbackEvent).
 * The base URL is configurable (`TWILIO_API_BASE_URL`) so tests talk to the carrier simulator.
 */

export interface CarrierAccount {
  accountSid: string;
  authToken: string;
}

/** The carrier refused (`status` = its HTTP status, `code` its error code) or was unreachable (`status` 0). */
export class CarrierError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly carrierCode?: number,
    readonly moreInfo?: string,
  ) {
    super(message);
    this.name = 'CarrierError';
  }
}

export interface CarrierCall {
  sid: string;
  status: string;
}

export interface TwilioClient {
  createCall(account: CarrierAccount, params: URLSearchParams, signal?: AbortSignal): Promise<CarrierCall>;
  updateCall(account: CarrierAccount, callSid: string, params: URLSearchParams, signal?: AbortSignal): Promise<CarrierCall>;
}

export interface TwilioClientOptions {
  /** e.g. https://api.twilio.com (no trailing slash). */
  baseUrl: string;
  /** Per request. Default 10 000 ms. */
  timeoutMs?: number;
}

export function createTwilioClient(opts: TwilioClientOptions): TwilioClient {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const timeoutMs = opts.timeoutMs ?? 10_000;

  async function post(account: CarrierAccount, path: string, params: URLSearchParams, signal?: AbortSignal): Promise<CarrierCall> {
    const url = `${base}/2010-04-01/Accounts/${encodeURIComponent(account.accountSid)}${path}`;
    const timeout = AbortSignal.timeout(timeoutMs);
    let res: Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${account.accountSid}:${account.authToken}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: params.toString(),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      throw new CarrierError(0, `carrier unreachable: ${(err as Error).message}`);
    }
    const text = await res.text().catch(() => '');
    let body: Record<string, unknown> = {};
    try {
      body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    } catch {
      // not JSON: keep the status
    }
    if (!res.ok) {
      const message = typeof body.message === 'string' ? body.message : `carrier answered ${res.status}`;
      throw new CarrierError(res.status, message, typeof body.code === 'number' ? body.code : undefined, typeof body.more_info === 'string' ? body.more_info : undefined);
    }
    if (typeof body.sid !== 'string') throw new CarrierError(res.status, 'carrier answered without a call sid');
    return { sid: body.sid, status: String(body.status ?? '') };
  }

  return {
    createCall: (account, params, signal) => post(account, '/Calls.json', params, signal),
    updateCall: (account, callSid, params, signal) => post(account, `/Calls/${encodeURIComponent(callSid)}.json`, params, signal),
  };
}
