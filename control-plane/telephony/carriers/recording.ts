/**
 * The recording a carrier callback names, bounded like every field we keep: a URL over 2,048
 * characters or not http(s) is not one we fetch, and the id is cut to 64 characters. Carriers
 * that name no id with the URL (SignalWire's `<Dial action>` has `RecordingUrl` only) get the
 * URL's last path segment without its extension.
 */
import type { CarrierRecording } from './types.js';

const MAX_URL_CHARS = 2048;
const MAX_SID_CHARS = 64;

export function recordingRef(url: string | undefined, sid?: string): CarrierRecording | undefined {
  if (!url || url.length > MAX_URL_CHARS || !/^https?:\/\//i.test(url)) return undefined;
  const id = sid || lastSegment(url);
  return { url, sid: id.slice(0, MAX_SID_CHARS) };
}

function lastSegment(url: string): string {
  try {
    const seg = new URL(url).pathname.split('/').filter(Boolean).at(-1) ?? '';
    return decodeURIComponent(seg).replace(/\.[a-z0-9]{1,4}$/i, '');
  } catch {
    return '';
  }
}

/**
 * The person's leg's callbacks come to the call's events route marked `?leg=person` (Telnyx: the
 * leg's events; Plivo, Vonage: the recording callback), so that leg's recording is told apart
 * from the whole call's (`record_calls`), which comes to the same route.
 */
export function personLegUrl(eventsUrl: string): string {
  const u = new URL(eventsUrl);
  u.searchParams.set('leg', 'person');
  return u.toString();
}

/** Whether a callback came to a `personLegUrl`. */
export function isPersonLeg(url: string): boolean {
  try {
    return new URL(url).searchParams.get('leg') === 'person';
  } catch {
    return false;
  }
}

/** A named recording's URL as we may fetch it: http(s), without credentials of its own; undefined otherwise. */
export function fetchableUrl(url: string): URL | undefined {
  try {
    const u = new URL(url);
    return /^https?:$/.test(u.protocol) && !u.username && !u.password ? u : undefined;
  } catch {
    return undefined;
  }
}
