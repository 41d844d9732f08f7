/**
 * Wire-faithful fake of Deepgram live ASR (docs/protocols.md section 5) at `/v1/listen`:
 * `Authorization: Token <key>`, `encoding` + `sample_rate` query params, binary audio in, text
 * control (KeepAlive / Finalize / CloseStream) in; `Results` (interim is_final:false; finals with
 * is_final and speech_final true), `SpeechStarted`, `UtteranceEnd` and a closing `Metadata` out.
 * It "transcribes" sim-coded audio with SimDecoder (mu-law is decoded first). With no audio and
 * no KeepAlive for `idleTimeoutMs` (10 s like the real service) it closes with 1011 / NET-0001.
 */
import alawmulaw from 'alawmulaw';
import type { WebSocket } from 'ws';
import { SimDecoder } from '../../shared/providers/sim/codec.js';
import { WsFake, type WsRecord } from './ws-fake.js';

export interface DeepgramFakeOptions {
  /** Expected key. Default `test-deepgram-key`. */
  apiKey?: string;
  /** Close after this long without audio or a text message. Default 10000. */
  idleTimeoutMs?: number;
}

/** Per-connection transcript state, exposed for assertions. */
export interface DeepgramSession {
  rec: WsRecord;
  audioSec: number;
  finals: string[];
  keepAlives: number;
}

export class DeepgramFake extends WsFake {
  readonly apiKey: string;
  idleTimeoutMs: number;
  readonly sessions: DeepgramSession[] = [];

  constructor(opts: DeepgramFakeOptions = {}) {
    super('/v1/listen');
    this.apiKey = opts.apiKey ?? 'test-deepgram-key';
    this.idleTimeoutMs = opts.idleTimeoutMs ?? 10_000;
  }

  protected authorize(rec: WsRecord): { status: number; body: unknown } | null {
    if (rec.headers.authorization !== `Token ${this.apiKey}`)
      return { status: 401, body: { err_code: 'INVALID_AUTH', err_msg: 'Invalid credentials.' } };
    const enc = rec.query.get('encoding');
    const rate = Number(rec.query.get('sample_rate'));
    if (!(enc === 'linear16' || enc === 'mulaw') || !(rate === 8000 || rate === 16000))
      return { status: 400, body: { err_code: 'Bad Request', err_msg: 'the fake takes linear16 or mulaw at 8000/16000' } };
    return null;
  }

  protected onConnection(rec: WsRecord, ws: WebSocket): void {
    const mulaw = rec.query.get('encoding') === 'mulaw';
    const rate = Number(rec.query.get('sample_rate')) as 8000 | 16000;
    const decoder = new SimDecoder(rate);
    const session: DeepgramSession = { rec, audioSec: 0, finals: [], keepAlives: 0 };
    this.sessions.push(session);
    const requestId = `req-${this.connections.length}`;
    let segStartSec = 0;
    let inSpeech = false;
    let firstInterimSent = false;
    let idle: NodeJS.Timeout | undefined;
    const armIdle = (): void => {
      clearTimeout(idle);
      idle = setTimeout(
        () => this.serverClose(rec, ws, 1011, 'Deepgram did not receive audio data or a text message within the timeout window. See https://dpgr.am/net0001'),
        this.idleTimeoutMs,
      );
    };
    armIdle();
    ws.on('close', () => clearTimeout(idle));
    const send = (msg: unknown): void => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
    };
    if (rec.faults.greetThenClose) {
      // A moment after the upgrade, as a real server would: the client sees the connection work.
      setTimeout(() => send({ type: 'Metadata', transaction_key: 'deprecated', request_id: requestId, sha256: 'fake', created: new Date().toISOString(), duration: 0, channels: 1 }), 20);
      setTimeout(() => this.serverClose(rec, ws, 1011, 'internal error'), 40);
      return;
    }
    const results = (text: string, isFinal: boolean, speechFinal: boolean, fromFinalize = false): void =>
      send({
        type: 'Results',
        channel_index: [0, 1],
        start: segStartSec,
        duration: Math.max(0, session.audioSec - segStartSec),
        is_final: isFinal,
        speech_final: speechFinal,
        from_finalize: fromFinalize,
        channel: { alternatives: [{ transcript: text, confidence: 0.99, words: [] }] },
        metadata: { request_id: requestId, model_info: { name: 'fake-nova', version: '0', arch: 'fake' }, model_uuid: 'fake' },
      });
    const drain = (fromFinalize: boolean): number => {
      let n = 0;
      for (const ev of decoder.takeEvents()) {
        n++;
        if (ev.type === 'interim') {
          if (!inSpeech) {
            inSpeech = true;
            send({ type: 'SpeechStarted', channel: [0, 1], timestamp: segStartSec });
          }
          results(ev.text, false, false);
          if (!firstInterimSent) {
            firstInterimSent = true;
            if (rec.faults.disconnectMidStream) {
              this.serverClose(rec, ws); // TCP drop, no close frame: the client sees 1006
              return n;
            }
            if (rec.faults.malformedChunk) ws.send(typeof rec.faults.malformedChunk === 'string' ? rec.faults.malformedChunk : '{"type":"Results","channel_index":[0,');
          }
        } else {
          // A forced Finalize answers is_final without speech_final (it was not a pause).
          results(ev.text, true, !fromFinalize, fromFinalize);
          session.finals.push(ev.text);
          send({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: session.audioSec });
          segStartSec = session.audioSec;
          inSpeech = false;
        }
      }
      return n;
    };

    ws.on('message', (data, isBinary) => {
      armIdle();
      if (isBinary) {
        const bytes = data as Buffer;
        const samples = mulaw ? alawmulaw.mulaw.decode(new Uint8Array(bytes)) : s16le(bytes);
        session.audioSec += samples.length / rate;
        decoder.push(samples);
        drain(false);
        return;
      }
      let msg: { type?: string };
      try {
        msg = JSON.parse(data.toString()) as { type?: string };
      } catch {
        return this.serverClose(rec, ws, 1008, 'DATA-0000: invalid control message');
      }
      if (msg.type === 'KeepAlive') session.keepAlives++;
      else if (msg.type === 'Finalize') {
        decoder.flush();
        if (drain(true) === 0) results('', true, false, true);
      } else if (msg.type === 'CloseStream') {
        decoder.flush();
        drain(false);
        send({
          type: 'Metadata', transaction_key: 'deprecated', request_id: requestId, sha256: 'fake',
          created: new Date().toISOString(), duration: session.audioSec, channels: 1,
        });
        this.serverClose(rec, ws, 1000);
      }
    });
  }
}

/** Binary frame -> samples (the adapter only sends whole samples). */
function s16le(bytes: Buffer): Int16Array {
  const out = new Int16Array(bytes.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = bytes.readInt16LE(i * 2);
  return out;
}
