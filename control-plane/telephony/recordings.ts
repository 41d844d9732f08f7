/**
 * Downloads a carrier recording named in a callback (issue 21: the person's leg of a hand-off, for
 * its transcript). The URL came in a carrier webhook, so it is fetched through the outbound
 * client (shared/outbound: address policy, bounded time and size), and the carrier account's
 * credentials go only to that carrier's own recording hosts (the adapter's `recordingRequest`
 * decides, per carrier; a redirect to another origin drops them).
 *
 * Errors say whether a retry can help: a 404 (the carrier has not finished the file yet), 429, 5xx
 * or an unreachable host are retryable; a refused address, a foreign host, missing credentials or
 * another 4xx are not.
 */
import { findOutboundRefusal, readBodyCapped } from '../../shared/outbound/index.js';
import { adapterOf, type Ctx, resolveAccount } from './context.js';
import { AppError } from '../../shared/errors.js';
import type { RecordingRequest } from './carriers/index.js';

/** Largest recording read: about 35 minutes of a dual-channel 8 kHz 16-bit WAV. */
export const MAX_RECORDING_BYTES = 64 * 1024 * 1024;
/** Redirects followed (carriers serve media from a CDN); credentials never cross origins. */
const MAX_REDIRECTS = 3;

export class RecordingFetchError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'RecordingFetchError';
  }
}

export interface RecordingRef {
  /** The AI agent of the call: its carrier account (binding, workspace, environment). */
  agentId: string;
  carrier: string;
  url: string;
}

export async function fetchRecording(ctx: Ctx, r: RecordingRef, signal?: AbortSignal): Promise<Uint8Array> {
  const outbound = ctx.deps.outbound;
  if (!outbound) throw new RecordingFetchError('no outbound client wired into telephony', false);
  const adapter = adapterOf(ctx, r.carrier);
  if (!adapter?.recordingRequest) throw new RecordingFetchError(`recordings of carrier "${r.carrier}" cannot be downloaded`, false);
  const live = await ctx.deps.liveConfig(r.agentId, signal);
  const account = await resolveAccount(ctx, live, adapter.id, signal);
  if (!account?.accountSid || !account.authToken) throw new RecordingFetchError(`no ${adapter.displayName} account to download the recording with`, false);
  let req: RecordingRequest | undefined;
  try {
    req = await adapter.recordingRequest(account, r.url);
  } catch (err) {
    // Incomplete credentials (a Vonage account without its application key): no retry helps.
    throw new RecordingFetchError(`no ${adapter.displayName} credentials to download the recording with: ${(err as Error).message}`, false);
  }
  if (!req) throw new RecordingFetchError(`the recording URL is not one of ${adapter.displayName}'s recording hosts`, false);
  let res: Response;
  try {
    res = await outbound.fetch(req.url, { headers: req.headers, signal, maxRedirects: MAX_REDIRECTS });
  } catch (err) {
    if (findOutboundRefusal(err)) throw new RecordingFetchError((err as Error).message, false);
    if (signal?.aborted) throw err;
    throw new RecordingFetchError(`recording download failed: ${(err as Error).message}`, true);
  }
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined);
    const retryable = res.status === 404 || res.status === 429 || res.status >= 500;
    throw new RecordingFetchError(`the carrier answered ${res.status} for the recording`, retryable);
  }
  try {
    return new Uint8Array(await readBodyCapped(res, MAX_RECORDING_BYTES));
  } catch (err) {
    if (signal?.aborted) throw err;
    // readBodyCapped's only AppError is the size cap: no retry makes the file smaller.
    throw new RecordingFetchError(`recording not read: ${(err as Error).message}`, !(err instanceof AppError));
  }
}
