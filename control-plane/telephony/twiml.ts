/**
 * The TwiML this service answers with (docs/protocols.md section 2). Pure builders; every attribute and
 * text is XML-escaped. Stream URLs never carry a query string (Twilio refuses it): values travel as
 * `<Parameter>`s and come back in the `start` frame's customParameters.
 */

const HEADER = '<?xml version="1.0" encoding="UTF-8"?>';

export function xmlEscape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

function attrs(a: Record<string, string | number | undefined>): string {
  return Object.entries(a)
    .filter(([, v]) => v !== undefined && v !== '')
    .map(([k, v]) => ` ${k}="${xmlEscape(String(v))}"`)
    .join('');
}

export function response(...verbs: string[]): string {
  return `${HEADER}<Response>${verbs.join('')}</Response>`;
}

/**
 * Connects the call to the engine's carrier socket. `<Connect>` blocks until the socket closes; the
 * `<Hangup/>` after it ends the call when the AI hangs up (or the engine refuses the stream).
 */
export function connectStream(streamUrl: string, params: Record<string, string>): string {
  const p = Object.entries(params)
    .filter(([, v]) => v)
    .map(([name, value]) => `<Parameter${attrs({ name, value })}/>`)
    .join('');
  return response(`<Connect><Stream${attrs({ url: streamUrl })}>${p}</Stream></Connect>`, '<Hangup/>');
}

/** A spoken message, then hang up (refused calls). */
export function sayAndHangup(text: string): string {
  return response(say(text), '<Hangup/>');
}

export function say(text: string): string {
  return `<Say>${xmlEscape(text)}</Say>`;
}

/**
 * Hold: an announcement on the first round only, then hold audio (a `<Play>` of the agent's hold
 * URL, else a `<Pause>`), then back to the inbound webhook to try for a seat again.
 */
export function hold(opts: { announce?: string; holdAudioUrl?: string; pauseS: number; redirectUrl: string }): string {
  const verbs: string[] = [];
  if (opts.announce) verbs.push(say(opts.announce));
  verbs.push(opts.holdAudioUrl ? `<Play>${xmlEscape(opts.holdAudioUrl)}</Play>` : `<Pause${attrs({ length: opts.pauseS })}/>`);
  verbs.push(`<Redirect${attrs({ method: 'POST' })}>${xmlEscape(opts.redirectUrl)}</Redirect>`);
  return response(...verbs);
}

/** Cold transfer: dial the human with the agent's number as caller id, recording the new leg. */
export function dialTransfer(opts: { toNumber: string; callerId: string; actionUrl: string; timeoutS?: number }): string {
  return response(
    `<Dial${attrs({ callerId: opts.callerId, record: 'record-from-answer', timeout: opts.timeoutS ?? 30, action: opts.actionUrl, method: 'POST' })}><Number>${xmlEscape(opts.toNumber)}</Number></Dial>`,
  );
}

/**
 * Hand-off to a person on the agent portal (issue 21): dial the agent's carrier client identity,
 * recording the new leg in two channels (first the caller's leg, then the person's), so the human
 * segment's transcript can tell the two speakers apart.
 */
export function dialClient(opts: { identity: string; callerId: string; actionUrl: string; timeoutS?: number }): string {
  return response(
    `<Dial${attrs({ callerId: opts.callerId, record: 'record-from-answer-dual', timeout: opts.timeoutS ?? 30, action: opts.actionUrl, method: 'POST' })}><Client>${xmlEscape(opts.identity)}</Client></Dial>`,
  );
}

/** Hand-off to a person's SIP endpoint (SignalWire LaML has `<Sip>`, not `<Client>`), recording the new leg in two channels as `dialClient` does. */
export function dialSip(opts: { uri: string; callerId: string; actionUrl: string; timeoutS?: number }): string {
  return response(
    `<Dial${attrs({ callerId: opts.callerId, record: 'record-from-answer-dual', timeout: opts.timeoutS ?? 30, action: opts.actionUrl, method: 'POST' })}><Sip>${xmlEscape(opts.uri)}</Sip></Dial>`,
  );
}

export function hangup(): string {
  return response('<Hangup/>');
}
