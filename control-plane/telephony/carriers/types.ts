/**
 * The control-plane side of the carrier interface (issue 24): one `CarrierAdapter` per carrier in
 * `carriers/<carrier>.ts`, listed in `carriers/index.ts`. The telephony handlers (inbound,
 * outbound, manage, callbacks) only talk to adapters: dial, hang up, transfer, recording, webhook
 * verification, the inbound answer and the carrier's callback events normalized to ours. The
 * engine side is `media-engine/transports/carrier-protocol.ts` (the socket
 * `/api/v1/voice/ws/<carrier>/{id}` of each carrier).
 */
import type { Config } from '../../../shared/config.js';

export const CARRIERS = ['twilio', 'telnyx', 'plivo', 'vonage', 'signalwire', 'exotel'] as const;
export type CarrierName = (typeof CARRIERS)[number];

/**
 * Resolved credentials of one carrier account: the agent binding's fields, else the workspace's
 * carrier account (call-center settings), else the deployment's environment variables.
 * `accountSid`: Twilio / SignalWire account SID or project id, Telnyx API key id (unused: its API
 * key is the `authToken`), Plivo auth id, Vonage API key / application id, Exotel account sid.
 * `authToken`: the REST secret. `extra`: carrier fields named in `credentialFields`
 * (SignalWire `space_url` and `signing_key`, Telnyx `connection_id` and `public_key`, ...).
 */
export interface CarrierAccount {
  carrier: CarrierName;
  accountSid: string;
  authToken: string;
  extra: Readonly<Record<string, string>>;
}

/** One field of a workspace carrier account (PUT /call-center/settings `carriers.<carrier>.<name>`). */
export interface CredentialField {
  name: string;
  /** Secrets are stored encrypted and answered masked (`••••` + last 4). */
  secret: boolean;
  /** Needed before the account can dial. */
  required: boolean;
  /** Checked at the edge (400 with the field named); default: any text up to 512 characters. */
  pattern?: RegExp;
  /** Longest value accepted (default 512; a PEM private key needs more). */
  maxChars?: number;
}

export interface CarrierCapabilities {
  inbound: boolean;
  outbound: boolean;
  answeringMachineDetection: boolean;
  coldTransfer: boolean;
  recording: boolean;
  dtmf: boolean;
  bargeInClear: boolean;
  /** The carrier echoes playback marks (else the engine emulates them from its play-out clock). */
  playbackMarks: boolean;
  signatureVerification: boolean;
}

/** What the handlers ask an adapter to dial. */
export interface DialRequest {
  callId: string;
  to: string;
  from: string;
  /** The engine socket of this carrier for this call (`wss://node/api/v1/voice/ws/<carrier>/<callId>`). */
  streamUrl: string;
  /** Must come back with the stream (start parameters, or the URL query: see CarrierProtocol.sessionParams). */
  streamParams: { session_id: string; agent_id: string; call_id: string };
  /** `${publicBase}/api/v1/telephony/calls/${callId}`: status, amd, recording, dial-complete, events/<carrier>. */
  callbackBase: string;
  ringTimeoutS: number;
  /** Absent: no AMD. `waitForBeep`: leave_voicemail (the verdict comes at the end of the greeting). */
  amd?: { waitForBeep: boolean; timeoutS: number };
  record: boolean;
}

export interface TransferRequest {
  toNumber: string;
  callerId: string;
  /** Where the carrier reports the end of the transferred leg (`.../dial-complete` or events). */
  actionUrl: string;
  callbackBase: string;
}

/** What the person's leg is dialled with (the AI's stream stops when the carrier runs it). */
export interface PersonDialRequest {
  /** `PersonHandoff.address` of the person. */
  address: string;
  /** The agent's number (the person sees it). */
  callerId: string;
  /** `.../dial-complete` (document carriers' `<Dial action>`: the person's leg ended). */
  actionUrl: string;
  /** `${publicBase}/api/v1/telephony/calls/${callId}`: event carriers report the leg there. */
  callbackBase: string;
}

/**
 * How a carrier connects a live call to a person (issue 21's hand-off): the person's address on
 * this account (`identity` is `human-<human agent id>`, the name the agent's softphone registers),
 * then the dial that replaces the AI's stream with that leg.
 */
export interface PersonHandoff {
  /**
   * The person's address: the account's `person_uri` template (`{identity}` replaced), else the
   * carrier's default; '' when this account has neither (the hand-off then fails cleanly).
   */
  address(account: CarrierAccount, identity: string): string;
  dial(account: CarrierAccount, callSid: string, req: PersonDialRequest): Promise<void>;
  /**
   * Where the carrier names the recording of the person's leg (recorded in two channels, the
   * caller's leg first): false, with the end of the leg (`dial_complete`'s `recording`: Twilio's
   * and SignalWire's `<Dial action>`); true, in a callback of its own (`leg_recording`: Telnyx
   * `call.recording.saved`, Plivo's `<Record>` callback, Vonage's `record` event), which may come
   * after the call has left the registry.
   */
  readonly recordingInCallback: boolean;
}

/** A carrier webhook as received: verification needs the exact URL, headers and body. */
export interface WebhookRequest {
  /** The URL the carrier requested (public base + path + query). */
  url: string;
  headers: Headers;
  /** Exactly as posted (Ed25519 / HMAC over the bytes). */
  rawBody: string;
  /** Form fields, or the JSON body's top-level scalar fields, for the adapters that want them. */
  params: Record<string, string>;
  /** The JSON body, when it was JSON. */
  json?: unknown;
}

/** An inbound call as its voice webhook describes it. */
export interface InboundCall {
  callSid: string;
  from: string;
  to: string;
  accountSid: string;
  /** The caller ID name (CNAM) when the carrier sends one (Twilio and SignalWire: `CallerName`). */
  callerName?: string;
  /**
   * Event carriers only: this event ends a step of a call we answered without a stream
   * (`answerInbound`'s `sayAndHangup` or `hold`) and came back to the inbound route. `hold`: a hold
   * round's audio ended, the caller tries for a seat again as round `round` (the document
   * carriers' `?hold=n`); `pauseOnly`: pause from now on (the hold audio could not be played, or
   * was not used). `refused`: a refusal's message was spoken, the call is hung up. Absent: the
   * call's first webhook (document carriers: every webhook).
   */
  step?: { kind: 'hold'; round: number; pauseOnly: boolean } | { kind: 'refused' };
}

/** How one hold round sounds (document carriers: `documents.hold`; event carriers: `answerInbound`). */
export interface HoldRound {
  /** Spoken first (the first round only). */
  announce?: string;
  /** The agent's hold audio (http(s), at most 2,048 characters), played once; absent: a pause. */
  holdAudioUrl?: string;
  /** The pause without hold audio. */
  pauseS: number;
}

/** What an event carrier is asked to do with an inbound call (`answerInbound`). */
export type InboundAction =
  /** Answer with the stream (a call answered for hold: start the stream on it). */
  | { connect: { streamUrl: string; params: DialRequest['streamParams']; callbackBase: string } }
  /** Answer (unless answered), speak, and hang up once the speech has ended (`step: refused`). */
  | { sayAndHangup: string }
  /** Answer (unless answered) and play a hold round; its end comes back as `step: hold` with `nextRound`. */
  | { hold: HoldRound & { nextRound: number } }
  /** Hang up (a refusal's message has been spoken). */
  | { hangup: true };

/**
 * A spoken step an event carrier is playing (a refusal or a hold round): the next step waits for
 * the event at its end, which carries `state` (the carrier-held state the step set, as
 * `callState` reads it back). `playS`: the longest its audio plays, when known (a pause: its
 * length; speech: 0, the grace covers it); absent for hold audio of unknown length.
 */
export interface PendingStep {
  state: string;
  playS?: number;
}

/** A recording a carrier callback named: its URL (at most 2,048 characters) and id (at most 64). */
export interface CarrierRecording {
  url: string;
  sid: string;
}

/** How a recording is downloaded: the media URL and the headers (credentials) it needs. */
export interface RecordingRequest {
  url: string;
  headers: Record<string, string>;
}

/** Carrier callbacks normalized to ours (each handled like the Twilio form callbacks). */
export type CarrierCallEvent =
  | { kind: 'status'; callSid: string; status: string; durationS?: number; sequence?: number }
  | { kind: 'amd'; callSid: string; answeredBy: string }
  | { kind: 'recording'; callSid: string; url: string; sid: string }
  /** `recording`: the dialed leg's recording, when the carrier names it with the leg's end. */
  | { kind: 'dial_complete'; status: string; recording?: CarrierRecording }
  /** The person's leg's recording, named in a callback of its own (`PersonHandoff.recordingInCallback`). */
  | { kind: 'leg_recording'; recording: CarrierRecording }
  /**
   * The media stream ended while the call goes on (event carriers: closing our socket does not end
   * the call as `<Hangup/>` after `<Connect>` does): the call is hung up unless it was transferred.
   */
  | { kind: 'stream_ended'; callSid: string }
  /** The carrier's inbound `call.initiated`-style event (event-driven carriers: Telnyx). */
  | { kind: 'inbound'; call: InboundCall }
  | { kind: 'ignored'; type: string };

/**
 * The documents a document-driven carrier (TwiML/LaML/Plivo XML/NCCO/Exoml) answers webhooks
 * with. Event-driven carriers (Telnyx Call Control) answer webhooks with an empty JSON and act
 * through REST (`answerInbound`).
 */
export interface CallDocuments {
  contentType: string;
  /** `account`: the call's resolved account, for carrier settings of the stream (Vonage's sample rate). */
  connect(streamUrl: string, params: DialRequest['streamParams'], account?: CarrierAccount): string;
  sayAndHangup(text: string): string;
  hold(opts: HoldRound & { redirectUrl: string }): string;
  hangup(): string;
  /** The answer to a callback that expects no document. */
  empty(): string;
}

export interface CarrierAdapter {
  readonly id: CarrierName;
  readonly displayName: string;
  /** Media on the wire of its stream. */
  readonly media: { encoding: string; sampleRateHz: number };
  readonly capabilities: CarrierCapabilities;
  /** Fields of the workspace carrier account; `account_sid` and `auth_token` map onto CarrierAccount, others into `extra`. */
  readonly credentialFields: readonly CredentialField[];
  /** Whether an account id and secret (their shapes) are this carrier's: outbound auto-detection. */
  detect(accountSid: string, authToken: string): boolean;
  /**
   * The deployment-wide account from environment variables, if any of them is set: its blank
   * `accountSid` / `authToken` mean "not configured" (an agent binding may supply them while the
   * environment supplies the extra fields, e.g. SignalWire's space URL).
   */
  envAccount(config: Config): CarrierAccount | undefined;
  /** Places the call; the carrier's call id. Throws CarrierError. */
  dial(account: CarrierAccount, req: DialRequest): Promise<{ sid: string; status: string }>;
  hangup(account: CarrierAccount, callSid: string): Promise<void>;
  transfer(account: CarrierAccount, callSid: string, req: TransferRequest): Promise<void>;
  /**
   * Hand-off to a person on the agent portal (issue 21, on every carrier that can: person.ts);
   * absent: the carrier cannot (Exotel), and hand-off fails cleanly for its calls.
   */
  readonly handoff?: PersonHandoff;
  /**
   * How to download a recording this carrier named in a callback: the media URL and the headers.
   * The carrier's credentials go only to a host of that carrier that serves this account's
   * recordings (each adapter writes its rule down; docs/portal.md "Transcript of the human
   * segment"); undefined when `url` is one this carrier's recordings cannot be at (no request is
   * made) or the carrier has no recording download here.
   */
  recordingRequest?(account: CarrierAccount, url: string): RecordingRequest | undefined | Promise<RecordingRequest | undefined>;
  /** Starts recording a live call (carriers where recording is not a dial option). */
  startRecording?(account: CarrierAccount, callSid: string, callbackUrl: string): Promise<void>;
  /**
   * Whether the webhook is the carrier's: false refuses it (403). `undefined` account: only the
   * deployment's key (if any) can verify; an adapter with nothing to verify against answers true
   * (the spec's "not verified" without a token).
   */
  verifyWebhook(req: WebhookRequest, account: CarrierAccount | undefined, config: Config): boolean;
  /** Parses the inbound voice webhook (document carriers) or its initiating event (event carriers). */
  parseInbound(req: WebhookRequest): InboundCall | undefined;
  /** Parses a callback into our events (status, AMD, recording, transfer leg end). */
  parseEvents(req: WebhookRequest): CarrierCallEvent[];
  /**
   * The document a callback on the events route is answered with, when it is one the carrier runs
   * (Plivo's `answer_url` and transfer `aleg_url`, which cannot carry the XML inline); undefined:
   * `documents.empty()`.
   */
  answerEvent?(req: WebhookRequest): string | undefined;
  /** Document carriers: their documents. */
  readonly documents: CallDocuments;
  /**
   * Event carriers: acts on an inbound call by REST (the webhook itself is answered with
   * `documents.empty()`): answers it with its stream, or answers it to speak a refusal or play a
   * hold round, whose end comes back to the inbound route as an event (`parseInbound`'s `step`).
   * A call with a `step` was answered by an earlier action. Answers the spoken step it started,
   * if any (the inbound handler bounds its wait for the end event with a deadline job).
   */
  answerInbound?(account: CarrierAccount, call: InboundCall, action: InboundAction): Promise<PendingStep | undefined>;
  /**
   * Event carriers with `answerInbound`: whether the call is still up and the state it holds (a
   * `PendingStep.state` while that step has not moved on); undefined when the carrier no longer
   * knows the call. Read by the step deadline (inbound-deadline.ts).
   */
  callState?(account: CarrierAccount, callSid: string): Promise<{ alive: boolean; state: string } | undefined>;
  /**
   * The carrier's status of a call, in Twilio's vocabulary (queued, ringing, in-progress, completed,
   * busy, no-answer, failed, canceled), with its duration once known; undefined when the carrier
   * does not know the call. Asked of a call whose callbacks went quiet (callbacks.ts
   * `reconcileWithCarrier`): a final status lost on its way to us is not sent again.
   */
  callStatus?(account: CarrierAccount, callSid: string): Promise<{ status: string; durationS?: number } | undefined>;
}

/** The carrier refused (`status` = its HTTP status, `code` its error code) or was unreachable (`status` 0). */
export class CarrierError extends Error {
  /**
   * The request may have reached the carrier and done its work (no answer within the timeout, or
   * the connection dropped after the request was written): a create may have placed the call, so
   * the caller must not treat it as "nothing happened" and send it again.
   */
  outcomeUnknown = false;

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
