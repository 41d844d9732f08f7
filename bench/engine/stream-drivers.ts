/**
 * Lite callers in the media dialects of Telnyx, Plivo, Vonage and Exotel (issue 24: the engine's
 * capacity per carrier media format), on ws-lite through the carrier simulator's ImpairedLink like
 * `twilio-lite`. Wire shapes as in test/carrier-sim (the integration suites' callers):
 *
 * - `telnyx-pcmu` / `telnyx-pcma`: `connected`, `start` (media_format PCMU or PCMA), `media` JSON
 *   every 20 ms with `stream_id`; agent `media` counted, `mark` echoed, `clear` counted. PCMA calls
 *   hand the ASR frames transcoded to mu-law (engine side), so no format resamples.
 * - `plivo`: `start` (session in `extra_headers`), `media` JSON every 20 ms, mu-law 8 kHz base64;
 *   agent `playAudio` counted, `checkpoint` echoed as `playedStream` on arrival.
 * - `vonage`: `websocket:connected` (audio/l16;rate=8000, what our NCCO asks for by default), then
 *   binary 320-byte frames every 20 ms; agent binary frames counted, `notify` echoed as
 *   `websocket:notify`. `vonage-16k`: the same at 16 kHz (640-byte frames; a workspace's
 *   `sample_rate_hz: 16000`).
 * - `exotel`: `connected`, `start` (custom_parameters), `media` JSON every 100 ms (five 20 ms frames of
 *   16-bit PCM at 8 kHz, base64); agent `media` counted, `mark` echoed.
 *
 * Every driver sends the session id in the socket URL's query too (the engine reads it there).
 */
import { randomBytes } from 'node:crypto';
import { alawEncode, mulawEncode, MULAW_SILENCE } from '../../media-engine/audio/g711.js';
import { encodeText } from '../../shared/providers/sim/codec.js';
import { ImpairedLink } from '../../test/carrier-sim/index.js';
import { payloadFrames, type Driver, type DriverContext } from './drivers.js';
import type { CallScript } from './scenario.js';
import { encodeClientFrame, WsLite } from './ws-lite.js';

export type StreamWire = 'telnyx-pcmu' | 'telnyx-pcma' | 'plivo' | 'vonage' | 'vonage-16k' | 'exotel';

const FRAME_MS = 20;
/** Exotel sends about 100 ms per `media` message. */
const EXOTEL_BATCH = 5;

interface Dialect {
  rate: 8000 | 16000;
  /** One 20 ms frame of the phrase (or silence) as the wire carries it: base64 text or raw bytes. */
  encode(pcm: Int16Array): Buffer;
  start(ids: { streamId: string; callId: string; sessionId: string }): string[];
  /** The link message for frame `n` (1-based); binary frames travel the link as NUL + base64. */
  media(n: number, frame: Buffer, streamId: string): string;
  /** Payload bytes of one 20 ms frame in the agent's media messages (frames received = payload / this). */
  bytesPerAgentFrame: number;
  /** Reply to an engine text message: a mark echo, or undefined. `clear` counts are read from `isClear`. */
  echo(msg: Record<string, any>, streamId: string): string | undefined;
  isMedia(text: string): boolean;
  isClear(msg: Record<string, any>): boolean;
  binaryOut: boolean;
}

const le = (pcm: Int16Array) => Buffer.from(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength));
const ALAW_SILENCE = 0xd5;

function g711(law: 'mu' | 'a') {
  return (pcm: Int16Array) => {
    const out = new Uint8Array(pcm.length).fill(law === 'a' ? ALAW_SILENCE : MULAW_SILENCE);
    (law === 'a' ? alawEncode : mulawEncode)(pcm, out);
    return Buffer.from(out);
  };
}

function telnyx(codec: 'PCMU' | 'PCMA'): Dialect {
  return {
    rate: 8000,
    encode: g711(codec === 'PCMA' ? 'a' : 'mu'),
    start: ({ streamId, callId }) => [
      JSON.stringify({ event: 'connected', version: '1.0.0' }),
      JSON.stringify({ event: 'start', sequence_number: '1', stream_id: streamId, start: { call_control_id: `v3:${callId}`, media_format: { encoding: codec, sample_rate: 8000, channels: 1 } } }),
    ],
    media: (n, frame, streamId) => `{"event":"media","sequence_number":"${n + 1}","media":{"track":"inbound","chunk":"${n}","timestamp":"${(n - 1) * FRAME_MS}","payload":"${frame.toString('base64')}"},"stream_id":"${streamId}"}`,
    echo: (msg, streamId) => (msg.event === 'mark' ? JSON.stringify({ event: 'mark', stream_id: streamId, mark: { name: msg.mark?.name ?? '' } }) : undefined),
    isMedia: (text) => text.startsWith('{"event":"media"'),
    isClear: (msg) => msg.event === 'clear',
    binaryOut: false,
    bytesPerAgentFrame: 160,
  };
}

function vonage(rate: 8000 | 16000): Dialect {
  return {
    rate,
    encode: le,
    start: ({ sessionId }) => [JSON.stringify({ event: 'websocket:connected', 'content-type': `audio/l16;rate=${rate}`, session_id: sessionId })],
    media: (_n, frame) => `\u0000${frame.toString('base64')}`,
    echo: (msg) => (msg.action === 'notify' ? JSON.stringify({ event: 'websocket:notify', payload: msg.payload }) : undefined),
    isMedia: () => false,
    isClear: (msg) => msg.action === 'clear',
    binaryOut: true,
    bytesPerAgentFrame: 160,
  };
}

const DIALECTS: Record<StreamWire, Dialect> = {
  'telnyx-pcmu': telnyx('PCMU'),
  'telnyx-pcma': telnyx('PCMA'),
  plivo: {
    rate: 8000,
    encode: g711('mu'),
    start: ({ streamId, callId, sessionId }) => [
      JSON.stringify({ event: 'start', sequenceNumber: 0, start: { callId, streamId, accountId: 'MA0000000000000000', tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 } }, extra_headers: `session_id=${sessionId}` }),
    ],
    media: (n, frame, streamId) => `{"event":"media","sequenceNumber":${n},"streamId":"${streamId}","media":{"track":"inbound","timestamp":"${1_700_000_000_000 + (n - 1) * FRAME_MS}","chunk":${n},"payload":"${frame.toString('base64')}"}}`,
    echo: (msg, streamId) => (msg.event === 'checkpoint' ? JSON.stringify({ event: 'playedStream', streamId, name: msg.name }) : undefined),
    isMedia: (text) => text.startsWith('{"event":"playAudio"'),
    isClear: (msg) => msg.event === 'clearAudio',
    binaryOut: false,
    bytesPerAgentFrame: 160,
  },
  vonage: vonage(8000),
  'vonage-16k': vonage(16000),
  exotel: {
    rate: 8000,
    encode: le,
    start: ({ streamId, callId, sessionId }) => [
      '{"event":"connected"}',
      JSON.stringify({ event: 'start', sequence_number: '1', stream_sid: streamId, start: { stream_sid: streamId, call_sid: callId, account_sid: 'exo', from: '+919800000000', to: '+918000000000', custom_parameters: { session_id: sessionId }, media_format: { encoding: 'base64', sample_rate: '8000', bit_rate: '128kbps' } } }),
    ],
    // `frame` is a whole 100 ms batch here (the driver batches); `n` is the last frame's number.
    media: (n, frame, streamId) => {
      const chunk = n / EXOTEL_BATCH;
      return `{"event":"media","sequence_number":"${chunk + 1}","stream_sid":"${streamId}","media":{"chunk":"${chunk}","timestamp":"${(chunk - 1) * FRAME_MS * EXOTEL_BATCH}","payload":"${frame.toString('base64')}"}}`;
    },
    echo: (msg, streamId) => (msg.event === 'mark' ? JSON.stringify({ event: 'mark', stream_sid: streamId, mark: msg.mark }) : undefined),
    isMedia: (text) => text.startsWith('{"event":"media"'),
    isClear: (msg) => msg.event === 'clear',
    binaryOut: false,
    bytesPerAgentFrame: 320,
  },
};

const phraseCache = new Map<string, Buffer[]>();

/** A phrase's 20 ms frames in a dialect's encoding (cached: every caller says the same few). */
function phrase(wire: StreamWire, text: string): Buffer[] {
  const key = `${wire}\u0000${text}`;
  let frames = phraseCache.get(key);
  if (!frames) {
    const d = DIALECTS[wire];
    const samples = (d.rate * FRAME_MS) / 1000;
    const pcm = encodeText(text, d.rate);
    frames = [];
    for (let i = 0; i < pcm.length; i += samples) {
      const f = new Int16Array(samples);
      f.set(pcm.subarray(i, Math.min(pcm.length, i + samples)));
      frames.push(d.encode(f));
    }
    phraseCache.set(key, frames);
  }
  return frames;
}

export async function connectStreamLite(ctx: DriverContext, sessionId: string, script: CallScript, index: number, wire: StreamWire): Promise<Driver> {
  const d0 = DIALECTS[wire];
  const started = performance.now();
  const streamId = randomBytes(16).toString('hex');
  const callId = randomBytes(16).toString('hex');
  const link = new ImpairedLink({ seed: ctx.seed * 100_003 + index, jitterMs: ctx.jitterMs, lossProb: ctx.lossProb });
  const silence = d0.encode(new Int16Array((d0.rate * FRAME_MS) / 1000));
  const batch: Buffer[] = [];
  let mouth: Buffer[] | undefined;
  let mi = 0;
  let chunk = 0;
  let t0 = 0;
  let ws: WsLite | undefined;
  const driver: Driver = {
    script,
    ready: false,
    readyMs: NaN,
    closed: () => ws?.closed ?? false,
    tick(now) {
      if (!driver.ready || !ws || ws.closed) return;
      if (!mouth) {
        const next = script.poll(now);
        if (next) {
          mouth = phrase(wire, next);
          mi = 0;
        }
      }
      while (now >= t0 + chunk * FRAME_MS) {
        ctx.sendLate.record(now - (t0 + chunk * FRAME_MS));
        chunk++;
        let frame = silence;
        if (mouth) {
          frame = mouth[mi++]!;
          if (mi >= mouth.length) {
            mouth = undefined;
            script.spoken(now);
          }
        }
        ctx.counts.framesSent++;
        if (wire === 'exotel') {
          batch.push(frame);
          if (batch.length < EXOTEL_BATCH) continue;
          frame = Buffer.concat(batch.splice(0));
        }
        link.offer(d0.media(chunk, frame, streamId), now);
      }
      for (const m of link.due(now)) {
        if (m.charCodeAt(0) === 0) ws.sendFrame(encodeClientFrame(Buffer.from(m.slice(1), 'base64'), 2));
        else ws.sendText(m);
      }
    },
    close() {
      if (!ws || ws.closed) return;
      if (wire === 'plivo') ws.sendText(JSON.stringify({ event: 'stop', streamId }));
      if (wire === 'exotel') ws.sendText(JSON.stringify({ event: 'stop', stream_sid: streamId, stop: { call_sid: callId, reason: 'callended' } }));
      if (wire.startsWith('telnyx')) ws.sendText(JSON.stringify({ event: 'stop', stream_id: streamId, stop: { call_control_id: `v3:${callId}` } }));
      ws.close();
    },
  };
  const carrier = wire.startsWith('telnyx') ? 'telnyx' : wire.startsWith('vonage') ? 'vonage' : wire;
  ws = await WsLite.connect(ctx.host, ctx.port, `/api/v1/voice/ws/${carrier}/${index}?session_id=${encodeURIComponent(sessionId)}`, {
    onBinary: () => {
      if (!d0.binaryOut) return;
      ctx.counts.framesReceived++;
      script.onAgentFrame(performance.now());
    },
    onText: (text) => {
      if (d0.isMedia(text)) {
        ctx.counts.framesReceived += payloadFrames(text, d0.bytesPerAgentFrame);
        script.onAgentFrame(performance.now());
        return;
      }
      const msg = JSON.parse(text) as Record<string, any>;
      if (d0.isClear(msg)) ctx.counts.clears++;
      const reply = d0.echo(msg, streamId);
      if (reply) ws?.sendText(reply);
    },
    onClose: () => {
      if (!ctx.closing()) ctx.counts.closedEarly++;
    },
  });
  for (const m of d0.start({ streamId, callId, sessionId })) ws.sendText(m);
  t0 = performance.now();
  driver.ready = true;
  driver.readyMs = t0 - started;
  return driver;
}
