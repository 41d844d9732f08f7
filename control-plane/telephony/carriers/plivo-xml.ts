/**
 * The Plivo XML this service answers with (Plivo's call-control document). Pure builders, every
 * attribute and text XML-escaped. The stream is bidirectional and keeps the call alive while the
 * socket is open; our session travels in `extraHeaders` (names and values [A-Za-z0-9_-]), which
 * Plivo hands back in the `start` frame. `<Hangup/>` after the stream ends the call when the
 * engine closes the socket (the AI hung up, or the stream was refused).
 */
import { plivoExtraHeaders } from '../../../shared/protocol/plivo-stream.js';
import { xmlEscape } from '../twiml.js';

const HEADER = '<?xml version="1.0" encoding="UTF-8"?>';

function attrs(a: Record<string, string | number | undefined>): string {
  return Object.entries(a)
    .filter(([, v]) => v !== undefined && v !== '')
    .map(([k, v]) => ` ${k}="${xmlEscape(String(v))}"`)
    .join('');
}

export function response(...verbs: string[]): string {
  return `${HEADER}<Response>${verbs.join('')}</Response>`;
}

export function connectStream(streamUrl: string, params: Record<string, string>): string {
  const headers = plivoExtraHeaders(Object.fromEntries(Object.entries(params).filter(([, v]) => v)));
  return response(
    `<Stream${attrs({ bidirectional: 'true', keepCallAlive: 'true', contentType: 'audio/x-mulaw;rate=8000', extraHeaders: headers })}>${xmlEscape(streamUrl)}</Stream>`,
    '<Hangup/>',
  );
}

export function speak(text: string): string {
  return `<Speak>${xmlEscape(text)}</Speak>`;
}

export function sayAndHangup(text: string): string {
  return response(speak(text), '<Hangup/>');
}

export function hold(opts: { announce?: string; holdAudioUrl?: string; pauseS: number; redirectUrl: string }): string {
  const verbs: string[] = [];
  if (opts.announce) verbs.push(speak(opts.announce));
  verbs.push(opts.holdAudioUrl ? `<Play>${xmlEscape(opts.holdAudioUrl)}</Play>` : `<Wait${attrs({ length: opts.pauseS })}/>`);
  verbs.push(`<Redirect${attrs({ method: 'POST' })}>${xmlEscape(opts.redirectUrl)}</Redirect>`);
  return response(...verbs);
}

/** Cold transfer: dial the human with the agent's number as caller id; `action` gets the outcome. */
export function dialTransfer(opts: { toNumber: string; callerId: string; actionUrl: string; timeoutS?: number }): string {
  return response(`<Dial${attrs({ callerId: opts.callerId.replace(/^\+/, ''), timeout: opts.timeoutS ?? 30, action: opts.actionUrl, method: 'POST' })}><Number>${xmlEscape(opts.toNumber.replace(/^\+/, ''))}</Number></Dial>`);
}

/**
 * Portal hand-off: dial the person's SIP endpoint (`<User>`); `action` gets the outcome. The
 * `<Record>` before it records the dialed conversation from the person's answer (`startOnDialAnswer`,
 * in the background, no beep) as a stereo WAV (`recordChannelType`, one party per channel) and
 * announces the file to `recordingCallbackUrl` when it is ready; `redirect="false"`: the document
 * goes on to the `<Dial>` at once.
 */
export function dialUser(opts: { uri: string; callerId: string; actionUrl: string; recordingCallbackUrl: string; timeoutS?: number }): string {
  const record = `<Record${attrs({ startOnDialAnswer: 'true', redirect: 'false', fileFormat: 'wav', recordChannelType: 'stereo', maxLength: MAX_RECORDING_S, callbackUrl: opts.recordingCallbackUrl, callbackMethod: 'POST' })}/>`;
  return response(record, `<Dial${attrs({ callerId: opts.callerId.replace(/^\+/, ''), timeout: opts.timeoutS ?? 30, action: opts.actionUrl, method: 'POST' })}><User>${xmlEscape(opts.uri)}</User></Dial>`);
}

export function hangup(): string {
  return response('<Hangup/>');
}

/** Records the whole call in the background (`recordSession`), the file announced to `callbackUrl`. */
export function recordSession(callbackUrl: string): string {
  return `<Record${attrs({ recordSession: 'true', redirect: 'false', maxLength: MAX_RECORDING_S, fileFormat: 'mp3', callbackUrl, callbackMethod: 'POST' })}/>`;
}

/** `<Record maxLength>`: Plivo's default is 60 s; a call is recorded up to 4 hours. */
const MAX_RECORDING_S = 14400;
