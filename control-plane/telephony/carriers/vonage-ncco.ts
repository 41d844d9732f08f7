/**
 * The NCCOs (Vonage's call-control document, JSON) this service answers with. The websocket
 * endpoint streams linear PCM at 8 kHz (`audio/l16;rate=8000`, the default: what a phone call
 * carries) or 16 kHz (the account's `sample_rate_hz`); our session travels in its `headers`, which Vonage echoes in
 * the socket's first frame (`websocket:connected`). When the websocket closes the NCCO is done and
 * Vonage ends the call, so no trailing hang-up action is needed. Hold has no `<Redirect>`: an
 * `input` action that waits `pauseS` for digits and then fetches the next NCCO from its eventUrl.
 */

export type NccoAction = Record<string, unknown> & { action: string };
export type Ncco = NccoAction[];

/** The stream rates Vonage offers on a websocket endpoint (`content-type: audio/l16;rate=<hz>`). */
export const VONAGE_RATES = [8000, 16000] as const;
export type VonageRate = (typeof VONAGE_RATES)[number];

export function connectWebsocket(opts: { streamUrl: string; params: Record<string, string>; rateHz: VonageRate; eventUrl?: string; record?: { eventUrl: string } }): Ncco {
  const ncco: Ncco = [];
  // Recording first: `record` runs in the background for the rest of the call.
  if (opts.record) ncco.push({ action: 'record', eventUrl: [opts.record.eventUrl], eventMethod: 'POST', split: 'conversation', format: 'mp3' });
  ncco.push({
    action: 'connect',
    ...(opts.eventUrl ? { eventUrl: [opts.eventUrl], eventMethod: 'POST' } : {}),
    endpoint: [{ type: 'websocket', uri: opts.streamUrl, 'content-type': `audio/l16;rate=${opts.rateHz}`, headers: Object.fromEntries(Object.entries(opts.params).filter(([, v]) => v)) }],
  });
  return ncco;
}

export function talk(text: string): NccoAction {
  return { action: 'talk', text };
}

/** A spoken message; the call ends after the last action. */
export function sayAndHangup(text: string): Ncco {
  return [talk(text)];
}

export function hold(opts: { announce?: string; holdAudioUrl?: string; pauseS: number; redirectUrl: string }): Ncco {
  const ncco: Ncco = [];
  if (opts.announce) ncco.push(talk(opts.announce));
  if (opts.holdAudioUrl) ncco.push({ action: 'stream', streamUrl: [opts.holdAudioUrl] });
  ncco.push({ action: 'input', type: ['dtmf'], dtmf: { timeOut: Math.min(10, Math.max(1, opts.pauseS)), maxDigits: 1 }, eventUrl: [opts.redirectUrl], eventMethod: 'POST' });
  return ncco;
}

/** Cold transfer to a phone number with the agent's number as caller id. */
export function dialTransfer(opts: { toNumber: string; callerId: string; actionUrl: string; timeoutS?: number }): Ncco {
  return [{ action: 'connect', from: opts.callerId.replace(/^\+/, ''), timeout: opts.timeoutS ?? 30, eventUrl: [opts.actionUrl], eventMethod: 'POST', endpoint: [{ type: 'phone', number: opts.toNumber.replace(/^\+/, '') }] }];
}

/**
 * Portal hand-off: connect to the person, a Client SDK user (`app:<user>` -> endpoint `app`) or a
 * SIP URI (endpoint `sip`), with the agent's number as caller id. The `record` before it records
 * the conversation in the background as a stereo WAV split by party (`split: conversation`,
 * `channels: 2`: what the caller says in the first channel, what they hear, the person, in the
 * second); Vonage posts the file's `recording_url` to `recordingEventUrl` once the call ends.
 */
export function connectPerson(opts: { address: string; callerId: string; actionUrl: string; recordingEventUrl: string; timeoutS?: number }): Ncco {
  const endpoint = opts.address.startsWith('app:') ? { type: 'app', user: opts.address.slice('app:'.length) } : { type: 'sip', uri: opts.address };
  return [
    { action: 'record', split: 'conversation', channels: 2, format: 'wav', eventUrl: [opts.recordingEventUrl], eventMethod: 'POST' },
    { action: 'connect', from: opts.callerId.replace(/^\+/, ''), timeout: opts.timeoutS ?? 30, eventUrl: [opts.actionUrl], eventMethod: 'POST', endpoint: [endpoint] },
  ];
}

/** Hang up: NCCO has no hang-up action; a call whose NCCO ends is hung up, so: a 10 ms pause. */
export function hangup(): Ncco {
  return [talk('<speak><break time="10ms"/></speak>')];
}
