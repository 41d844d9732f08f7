/**
 * The wire side of simulated callers. Each driver owns one call's socket and feeds a CallScript:
 *
 * - `browser`: the engine's voice socket, 16 kHz PCM binary frames, JSON events back (ws-lite).
 * - `twilio-lite`: a Twilio Media Streams client on ws-lite: `connected`, `start` (session id in
 *   customParameters), then one `media` JSON frame (mu-law 8 kHz, base64) per 20 ms through the
 *   carrier simulator's `ImpairedLink` (jitter). Agent `media` frames are counted, not decoded;
 *   `mark`s are echoed on arrival. Cheap enough for a thousand calls.
 * - `telnyx-pcmu`, `telnyx-pcma`, `plivo`, `vonage` (8 kHz), `vonage-16k`, `exotel`: the same as `twilio-lite` in those
 *   carriers' media dialects (stream-drivers.ts): the engine's capacity per carrier media format.
 * - `twilio-carrier`: the telephony engineer's full carrier simulator (`MediaStreamCall`, `ws`
 *   client, virtual playout clock, marks echoed when played, sim decoding of what was heard).
 *   Faithful but ~10x the CPU per call: for small N and cross-checks.
 */
import { randomBytes } from 'node:crypto';
import { mulawEncode, MULAW_SILENCE } from '../../media-engine/audio/g711.js';
import { encodeText } from '../../shared/providers/sim/codec.js';
import { ImpairedLink, MediaStreamCall } from '../../test/carrier-sim/index.js';
import type { Histogram } from '../lib/stats.js';
import type { CallScript } from './scenario.js';
import { encodeClientFrame, WsLite } from './ws-lite.js';

export type DriverKind = 'browser' | 'twilio-lite' | 'twilio-carrier' | 'telnyx-pcmu' | 'telnyx-pcma' | 'plivo' | 'vonage' | 'vonage-16k' | 'exotel';

/**
 * 20 ms frames in an agent media message (CARRIER_OUT_MESSAGE_MS may put several in one): the
 * base64 `"payload":"..."` length, without parsing the JSON; at least 1.
 */
export function payloadFrames(text: string, bytesPerFrame: number): number {
  const at = text.indexOf('"payload":"');
  if (at < 0) return 1;
  const end = text.indexOf('"', at + 11);
  return Math.max(1, Math.round(((end - at - 11) * 3) / 4 / bytesPerFrame));
}

export interface DriverContext {
  host: string;
  port: number;
  /** Extra delay of each inbound (caller -> engine) frame, uniform 0..jitterMs (telephony). */
  jitterMs: number;
  lossProb: number;
  seed: number;
  sendLate: Histogram;
  counts: { framesSent: number; framesReceived: number; errors: number; clears: number; closedEarly: number };
  closing: () => boolean;
}

export interface Driver {
  readonly script: CallScript;
  ready: boolean;
  closed(): boolean;
  /** Milliseconds from connect to ready (browser: `pipeline_ready`; carrier: socket open + start sent). */
  readyMs: number;
  tick(now: number): void;
  close(): void;
}

const FRAME_MS = 20;

// ---------------------------------------------------------------- browser

const browserPhraseCache = new Map<string, Buffer[]>();
const browserSilence = encodeClientFrame(new Uint8Array(640), 2);

function browserPhrase(text: string): Buffer[] {
  let frames = browserPhraseCache.get(text);
  if (!frames) {
    const pcm = encodeText(text, 16000);
    frames = [];
    for (let i = 0; i < pcm.length; i += 320) {
      const f = new Int16Array(320);
      f.set(pcm.subarray(i, Math.min(i + 320, pcm.length)));
      frames.push(encodeClientFrame(new Uint8Array(f.buffer), 2));
    }
    browserPhraseCache.set(text, frames);
  }
  return frames;
}

export async function connectBrowser(ctx: DriverContext, sessionId: string, script: CallScript): Promise<Driver> {
  const started = performance.now();
  let ws: WsLite | undefined;
  let mouth: Buffer[] | undefined;
  let mi = 0;
  let nextSendAt = 0;
  const d: Driver = {
    script,
    ready: false,
    readyMs: NaN,
    closed: () => ws?.closed ?? false,
    tick(now) {
      if (!d.ready || !ws || ws.closed) return;
      if (!mouth) {
        const phrase = script.poll(now);
        if (phrase) {
          mouth = browserPhrase(phrase);
          mi = 0;
        }
      }
      while (now >= nextSendAt) {
        ctx.sendLate.record(now - nextSendAt);
        if (mouth) {
          ws.sendFrame(mouth[mi++]!);
          if (mi >= mouth.length) {
            mouth = undefined;
            script.spoken(now);
          }
        } else {
          ws.sendFrame(browserSilence);
        }
        ctx.counts.framesSent++;
        nextSendAt += FRAME_MS;
      }
    },
    close: () => ws?.close(),
  };
  let resolveReady!: () => void;
  const readyP = new Promise<void>((r) => (resolveReady = r));
  ws = await WsLite.connect(ctx.host, ctx.port, `/api/v1/voice/ws/${sessionId}?profile=browser_headset`, {
    onBinary: () => {
      ctx.counts.framesReceived++;
      script.onAgentFrame(performance.now());
    },
    onText: (text) => {
      if (!d.ready && text.includes('"type":"pipeline_ready"')) {
        const now = performance.now();
        d.ready = true;
        d.readyMs = now - started;
        nextSendAt = now;
        resolveReady();
      } else if (text.includes('"type":"error"')) ctx.counts.errors++;
    },
    onClose: () => {
      if (!ctx.closing()) ctx.counts.closedEarly++;
      resolveReady();
    },
  });
  await withTimeout(readyP, 30_000, 'pipeline_ready');
  if (!d.ready) throw new Error('closed before pipeline_ready');
  return d;
}

// ---------------------------------------------------------------- twilio (lite)

const mulawPhraseCache = new Map<string, string[]>();
const MULAW_SILENCE_B64 = Buffer.alloc(160, MULAW_SILENCE).toString('base64');

/** base64 payloads of a phrase's 20 ms mu-law frames. */
function mulawPhrase(text: string): string[] {
  let frames = mulawPhraseCache.get(text);
  if (!frames) {
    const pcm = encodeText(text, 8000);
    const bytes = new Uint8Array(Math.ceil(pcm.length / 160) * 160).fill(MULAW_SILENCE);
    mulawEncode(pcm, bytes.subarray(0, pcm.length));
    frames = [];
    for (let i = 0; i < bytes.length; i += 160) frames.push(Buffer.from(bytes.subarray(i, i + 160)).toString('base64'));
    mulawPhraseCache.set(text, frames);
  }
  return frames;
}

export async function connectTwilioLite(ctx: DriverContext, sessionId: string, script: CallScript, index: number): Promise<Driver> {
  const started = performance.now();
  const streamSid = `MZ${randomBytes(16).toString('hex')}`;
  const callSid = `CA${randomBytes(16).toString('hex')}`;
  const link = new ImpairedLink({ seed: ctx.seed * 100_003 + index, jitterMs: ctx.jitterMs, lossProb: ctx.lossProb });
  let mouth: string[] | undefined;
  let mi = 0;
  let seq = 0;
  let chunk = 0;
  let t0 = 0;
  let ws: WsLite | undefined;
  const sendJson = (o: unknown) => ws?.sendText(JSON.stringify(o));
  const d: Driver = {
    script,
    ready: false,
    readyMs: NaN,
    closed: () => ws?.closed ?? false,
    tick(now) {
      if (!d.ready || !ws || ws.closed) return;
      if (!mouth) {
        const phrase = script.poll(now);
        if (phrase) {
          mouth = mulawPhrase(phrase);
          mi = 0;
        }
      }
      while (now >= t0 + chunk * FRAME_MS) {
        ctx.sendLate.record(now - (t0 + chunk * FRAME_MS));
        chunk++;
        let payload = MULAW_SILENCE_B64;
        if (mouth) {
          payload = mouth[mi++]!;
          if (mi >= mouth.length) {
            mouth = undefined;
            script.spoken(now);
          }
        }
        link.offer(
          `{"event":"media","sequenceNumber":"${++seq}","media":{"track":"inbound","chunk":"${chunk}","timestamp":"${(chunk - 1) * FRAME_MS}","payload":"${payload}"},"streamSid":"${streamSid}"}`,
          now,
        );
        ctx.counts.framesSent++;
      }
      for (const m of link.due(now)) ws.sendText(m);
    },
    close() {
      if (!ws || ws.closed) return;
      sendJson({ event: 'stop', sequenceNumber: String(++seq), streamSid, stop: { callSid } });
      ws.close();
    },
  };
  ws = await WsLite.connect(ctx.host, ctx.port, `/api/v1/voice/ws/twilio/${callSid}`, {
    onText: (text) => {
      if (text.startsWith('{"event":"media"')) {
        ctx.counts.framesReceived += payloadFrames(text, 160);
        script.onAgentFrame(performance.now());
      } else if (text.includes('"event":"mark"')) {
        // Echo at once (the engine only uses marks to re-arm its idle timer, which the bench disables).
        const name = (JSON.parse(text) as { mark?: { name?: string } }).mark?.name ?? '';
        sendJson({ event: 'mark', sequenceNumber: String(++seq), streamSid, mark: { name } });
      } else if (text.includes('"event":"clear"')) ctx.counts.clears++;
    },
    onClose: () => {
      if (!ctx.closing()) ctx.counts.closedEarly++;
    },
  });
  sendJson({ event: 'connected', protocol: 'Call', version: '1.0.0' });
  sendJson({
    event: 'start',
    sequenceNumber: String(++seq),
    streamSid,
    start: { streamSid, accountSid: 'AC' + '0'.repeat(32), callSid, tracks: ['inbound'], customParameters: { session_id: sessionId }, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } },
  });
  t0 = performance.now();
  d.ready = true;
  d.readyMs = t0 - started;
  return d;
}

// ---------------------------------------------------------------- twilio (full carrier simulator)

export async function connectTwilioCarrier(ctx: DriverContext, sessionId: string, script: CallScript, index: number): Promise<Driver> {
  const started = performance.now();
  const callSid = `CA${randomBytes(16).toString('hex')}`;
  const call = new MediaStreamCall({
    url: `ws://${ctx.host}:${ctx.port}/api/v1/voice/ws/twilio/${callSid}`,
    callSid,
    accountSid: 'AC' + '0'.repeat(32),
    customParameters: { session_id: sessionId },
    link: { seed: ctx.seed * 100_003 + index, jitterMs: ctx.jitterMs, lossProb: ctx.lossProb },
  });
  await call.connect();
  let seenMedia = 0;
  let speaking = false;
  let seenClears = 0;
  const d: Driver = {
    script,
    ready: true,
    readyMs: performance.now() - started,
    closed: () => !call.isOpen,
    tick(now) {
      if (!call.isOpen) return;
      if (call.mediaReceived > seenMedia) {
        ctx.counts.framesReceived += call.mediaReceived - seenMedia;
        seenMedia = call.mediaReceived;
        script.onAgentFrame(now);
      }
      if (call.clears > seenClears) {
        ctx.counts.clears += call.clears - seenClears;
        seenClears = call.clears;
      }
      const phrase = speaking ? undefined : script.poll(now);
      if (phrase) {
        speaking = true;
        const frames = Math.ceil((encodeText(phrase, 8000).length) / 160);
        ctx.counts.framesSent += frames;
        void call.say(phrase).then(() => {
          speaking = false;
          script.spoken(performance.now());
        });
      }
    },
    close: () => call.hangup(),
  };
  return d;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([p, new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} not received in ${ms} ms`)), ms)))]).finally(() => clearTimeout(timer));
}
