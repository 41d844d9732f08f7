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
}

/** Carrier callbacks normalized to ours (each handled like the Twilio form callbacks). */
export type CarrierCallEvent =
  | { kind: 'status'; callSid: string; status: string; durationS?: number; sequence?: number }
  | { kind: 'amd'; callSid: string; answeredBy: string }
  | { kind: 'recording'; callSid: string; url: string; sid: string }
  | { kind: 'dial_complete'; status: string }
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
  connect(streamUrl: string, params: DialRequest['streamParams']): string;
  sayAndHangup(text: string): string;
  hold(opts: { announce?: string; holdAudioUrl?: string; pauseS: number; redirectUrl: string }): string;
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
   * Hands the call to a person's client identity (issue 21 hand-off: Twilio-compatible
   * `<Dial><Client>`); absent: the carrier cannot, and hand-off is refused for its calls.
   */
  dialClient?(account: CarrierAccount, callSid: string, req: { identity: string; callerId: string; actionUrl: string }): Promise<void>;
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
   * Event carriers: answers an inbound call and starts its stream by REST (the webhook itself is
   * answered with `documents.empty()`); refusals speak and hang up by REST too.
   */
  answerInbound?(account: CarrierAccount, callSid: string, action: { connect: { streamUrl: string; params: DialRequest['streamParams']; callbackBase: string } } | { sayAndHangup: string }): Promise<void>;
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
