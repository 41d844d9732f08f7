/**
 * CARRIER_OUT_MESSAGE_MS (issue 13): several 20 ms frames per outgoing media message on the carriers
 * that play any payload length (Twilio, SignalWire, Telnyx, Plivo), never on Vonage (exactly 20 ms
 * binary frames), never below Exotel's own 100 ms. What goes out is the same audio in fewer
 * messages: frames in order, a mark sends the partial batch first, a clear drops it.
 */
import { describe, expect, it } from 'vitest';
import { FakeCarrierSocket } from '../../helpers/fake-carrier-socket.js';
import { SimulatedClock } from '../../../shared/clock.js';
import { loadConfig, ConfigError } from '../../../shared/config.js';
import { mulawEncode } from '../../../media-engine/audio/g711.js';
import { CarrierTransport } from '../../../media-engine/transports/carrier-transport.js';
import type { CarrierProtocol } from '../../../media-engine/transports/carrier-protocol.js';
import { twilioProtocol } from '../../../media-engine/transports/twilio.js';
import { telnyxProtocol } from '../../../media-engine/transports/telnyx.js';
import { plivoProtocol } from '../../../media-engine/transports/plivo.js';
import { vonageProtocol } from '../../../media-engine/transports/vonage.js';
import { exotelProtocol } from '../../../media-engine/transports/exotel.js';
import { SpeechOutput } from '../../../media-engine/session/speech-output.js';

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v)).buffer as ArrayBuffer;

const STARTS: Record<string, unknown> = {
  twilio: { event: 'start', sequenceNumber: '1', streamSid: 'MZ1', start: { streamSid: 'MZ1', accountSid: 'AC1', callSid: 'CA1', customParameters: { session_id: 's-1' } } },
  telnyx: { event: 'start', sequence_number: '1', stream_id: 'st-1', start: { call_control_id: 'v3:1', media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 }, custom_parameters: [{ name: 'session_id', value: 's-1' }] } },
  plivo: { event: 'start', sequenceNumber: 0, start: { callId: 'call-1', streamId: 'st-1', accountId: 'MA1', tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 } }, extra_headers: 'session_id=s-1' },
  vonage: { event: 'websocket:connected', 'content-type': 'audio/l16;rate=8000', session_id: 's-1' },
  exotel: { event: 'start', sequence_number: '1', stream_sid: 'MZ1', start: { stream_sid: 'MZ1', call_sid: 'CA1', account_sid: 'acct', custom_parameters: { session_id: 's-1' }, media_format: { encoding: 'base64', sample_rate: '8000', bit_rate: '128kbps' } } },
};

function started(protocol: CarrierProtocol, framesPerMessage: number) {
  const ws = new FakeCarrierSocket();
  const t = new CarrierTransport(ws, new SimulatedClock(), protocol, { framesPerMessage });
  expect(t.receiveFrame(enc(STARTS[protocol.carrier]), false)).toMatchObject({ event: 'start' });
  ws.sent.length = 0;
  return { ws, t };
}

/** A 20 ms frame whose samples all say which frame it is (k), so order and content can be checked. */
const frame = (k: number) => new Int16Array(160).fill(1000 * (k + 1));

/** mu-law of the frames, back to back. */
function mulaw(...ks: number[]): Buffer {
  const pcm = Int16Array.from(ks.flatMap((k) => [...frame(k)]));
  const out = new Uint8Array(pcm.length);
  mulawEncode(pcm, out);
  return Buffer.from(out);
}

/** The payload bytes of each outgoing media message (mu-law), whatever the carrier calls its message. */
function payloads(ws: FakeCarrierSocket): Buffer[] {
  return ws.texts().filter((m) => m.event === 'media' || m.event === 'playAudio').map((m) => Buffer.from(m.media.payload, 'base64'));
}

describe('CARRIER_OUT_MESSAGE_MS: frames per outgoing carrier message', () => {
  for (const protocol of [twilioProtocol, telnyxProtocol, plivoProtocol]) {
    it(`${protocol.carrier}: 40 ms per message, the same audio in order; a mark sends the rest first; a clear drops a partial batch`, () => {
      const { ws, t } = started(protocol, 2);
      expect(t.leadMs).toBe(120);
      for (let k = 0; k < 5; k++) t.sendAudio(frame(k));
      let p = payloads(ws);
      expect(p.map((b) => b.length)).toEqual([320, 320]);
      expect(Buffer.concat(p)).toEqual(mulaw(0, 1, 2, 3));
      t.mark('end-1'); // frame 4 waits in a half-full batch: it goes before the mark
      p = payloads(ws);
      expect(p.map((b) => b.length)).toEqual([320, 320, 160]);
      expect(p[2]).toEqual(mulaw(4));
      const kinds = ws.texts().map((m) => m.event);
      expect(kinds.slice(-2)).toEqual(protocol.carrier === 'plivo' ? ['playAudio', 'checkpoint'] : ['media', 'mark']);
      t.sendAudio(frame(5));
      t.clearAudio();
      t.sendAudio(frame(6));
      t.sendAudio(frame(7));
      p = payloads(ws);
      // Frame 5 was dropped by the clear; 6 and 7 go together.
      expect(p.map((b) => b.length)).toEqual([320, 320, 160, 320]);
      expect(p[3]).toEqual(mulaw(6, 7));
      expect(t.stats()).toMatchObject({ outFrames: 7, outFramesDropped: 0 });
    });
  }

  it('when the agent\'s audio runs dry mid-answer, a half-full message goes at once (not when the next audio comes)', () => {
    const clock = new SimulatedClock();
    const ws = new FakeCarrierSocket();
    const t = new CarrierTransport(ws, clock, twilioProtocol, { framesPerMessage: 2 });
    t.receiveFrame(enc(STARTS.twilio), false);
    ws.sent.length = 0;
    const out = new SpeechOutput(t, clock);
    out.enqueue(Int16Array.from([0, 1, 2].flatMap((k) => [...frame(k)])), 8000);
    out.pace(clock.monotonicMs()); // the lead: all three frames are due; the third waits for a partner
    expect(payloads(ws).map((b) => b.length)).toEqual([320, 160]);
    expect(Buffer.concat(payloads(ws))).toEqual(mulaw(0, 1, 2));
    // Mid-answer, three more frames, then nothing: the third goes alone at once.
    ws.sent.length = 0;
    out.enqueue(Int16Array.from([...frame(3), ...frame(4), ...frame(5)]), 8000);
    clock.advance(20);
    out.pace(clock.monotonicMs());
    expect(payloads(ws).map((b) => b.length)).toEqual([320, 160]);
    expect(Buffer.concat(payloads(ws))).toEqual(mulaw(3, 4, 5));
  });

  it('Exotel: when the answer\'s audio runs dry mid-answer, a short message waits for its 100 ms; at the end of the answer it goes', () => {
    const clock = new SimulatedClock();
    const ws = new FakeCarrierSocket();
    const t = new CarrierTransport(ws, clock, exotelProtocol);
    t.receiveFrame(enc(STARTS.exotel), false);
    ws.sent.length = 0;
    const out = new SpeechOutput(t, clock);
    out.resetTurn();
    // A TTS that streams 40 ms chunks in real time: the queue runs dry after each one.
    out.beginSegment('First sentence.');
    let k = 0;
    const chunk = () => out.enqueue(Int16Array.from([k++, k++].flatMap((i) => [...frame(i)])), 8000);
    for (let i = 0; i < 3; i++) {
      chunk();
      out.pace(clock.monotonicMs());
      clock.advance(40);
      out.pace(clock.monotonicMs());
    }
    out.endSegment();
    // Between two sentences of the same answer the short message still waits.
    clock.advance(40);
    out.pace(clock.monotonicMs());
    out.beginSegment('Second.');
    chunk();
    out.pace(clock.monotonicMs());
    clock.advance(40);
    out.pace(clock.monotonicMs());
    out.endSegment();
    expect(payloads(ws).map((b) => b.length)).toEqual([1600]);
    out.endInput(); // the run is over: the last 3 frames go
    expect(payloads(ws).map((b) => b.length)).toEqual([1600, 960]);
    expect(Buffer.concat(payloads(ws)).length).toBe(8 * 320);
  });

  it('100 ms (5 frames) on Twilio: one message per 5 frames', () => {
    const { ws, t } = started(twilioProtocol, 5);
    for (let k = 0; k < 10; k++) t.sendAudio(frame(k));
    expect(payloads(ws).map((b) => b.length)).toEqual([800, 800]);
  });

  it('Vonage keeps exactly 20 ms binary frames; Exotel never goes below its 100 ms', () => {
    const v = started(vonageProtocol, 5);
    for (let k = 0; k < 3; k++) v.t.sendAudio(frame(k));
    expect(v.ws.sent.filter((s) => s.binary).map((s) => (s.msg as Uint8Array).length)).toEqual([320, 320, 320]);
    expect(v.t.leadMs).toBe(100);
    const e = started(exotelProtocol, 2);
    for (let k = 0; k < 5; k++) e.t.sendAudio(frame(k));
    expect(payloads(e.ws).map((b) => b.length)).toEqual([1600]);
  });

  it('the default is 40 ms per message; 20 ms when asked for', () => {
    expect(loadConfig({}).carrierOutMessageMs).toBe(40);
    const { ws, t } = started(twilioProtocol, loadConfig({ CARRIER_OUT_MESSAGE_MS: '20' }).carrierOutMessageMs / 20);
    t.sendAudio(frame(0));
    expect(payloads(ws).map((b) => b.length)).toEqual([160]);
  });

  it('config: whole 20 ms frames from 20 to 100 ms, else an error naming the variable', () => {
    expect(loadConfig({ CARRIER_OUT_MESSAGE_MS: '40' }).carrierOutMessageMs).toBe(40);
    for (const bad of ['30', '0', '120', 'x']) {
      expect(() => loadConfig({ CARRIER_OUT_MESSAGE_MS: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ CARRIER_OUT_MESSAGE_MS: bad }), bad).toThrow(/CARRIER_OUT_MESSAGE_MS/);
    }
  });
});
