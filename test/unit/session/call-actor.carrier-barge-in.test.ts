/**
 * Barge-in on a carrier call through the real Twilio transport: the caller's frames are analysed
 * (VAD, ASR) when they ARRIVE on the socket, not when the jitter buffer's playout schedule pops
 * them, so the `clear` that a confirming transcript triggers goes out before that frame would
 * have been played out. Simulated clock; the node's tick is modelled as in production: the pop
 * runs half a frame after each arrival.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { mulawEncode, MULAW_SILENCE } from '../../../media-engine/audio/g711.js';
import { CallActor } from '../../../media-engine/session/actor.js';
import { TwilioTransport } from '../../../media-engine/transports/twilio.js';
import { createSimAsr } from '../../../shared/providers/asr/sim.js';
import { createSimLlm } from '../../../shared/providers/llm/sim.js';
import { encodeText } from '../../../shared/providers/sim/codec.js';
import { createSimTts } from '../../../shared/providers/tts/sim.js';
import { captureLogger } from '../../helpers/infra.js';
import { sessionConfig } from '../../helpers/session-config.js';

const QUESTION = 'tell me about the opening hours of the restaurant on the weekend';

class FakeSocket {
  /** Simulated time of each `clear` sent. */
  clearsAtMs: number[] = [];
  mediaFrames = 0;
  constructor(private readonly clock: SimulatedClock) {}
  send(message: ArrayBufferView | string): number {
    if (typeof message === 'string') {
      if (message.includes('"event":"clear"')) this.clearsAtMs.push(this.clock.monotonicMs());
    } else {
      this.mediaFrames++;
    }
    return 1;
  }
  getBufferedAmount(): number {
    return 0;
  }
  end(): void {}
}

function media(chunk: number, bytes: Uint8Array): string {
  return JSON.stringify({ event: 'media', sequenceNumber: String(chunk + 1), streamSid: 'MZ1', media: { track: 'inbound', chunk: String(chunk), timestamp: String((chunk - 1) * 20), payload: Buffer.from(bytes).toString('base64') } });
}

function carrierCall() {
  const clock = new SimulatedClock();
  const ws = new FakeSocket(clock);
  const transport = new TwilioTransport(ws, clock);
  transport.receiveText(JSON.stringify({ event: 'start', sequenceNumber: '1', streamSid: 'MZ1', start: { streamSid: 'MZ1', accountSid: 'AC1', callSid: 'CA1', customParameters: { session_id: 's-1' } } }));
  const actor = new CallActor({
    config: sessionConfig({ welcome_message: '', silence_timeout_ms: 600_000 }),
    transport,
    providers: { asr: createSimAsr({ clock }), llm: createSimLlm({ clock }), tts: createSimTts({ clock }) },
    profile: 'telephony',
    clock,
    logger: captureLogger().logger,
    asrInput: { encoding: 'mulaw', sampleRateHz: 8000 },
  });
  actor.start();
  transport.attach(actor, { passRawMulaw: true });
  const turns = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  };
  let chunk = 0;
  /**
   * One 20 ms caller frame: it arrives, the call's async work (ASR events) settles, and only then,
   * half a frame later, does the node's tick pop the jitter buffer and pace the agent's audio.
   * Returns what happened between the arrival and that pop.
   */
  const frame = async (bytes: Uint8Array): Promise<{ arrivedAtMs: number; clearsBeforePop: number; playedBeforePop: number }> => {
    clock.advance(10);
    chunk++;
    transport.receiveText(media(chunk, bytes));
    const arrivedAtMs = clock.monotonicMs();
    await turns(4);
    const clearsBeforePop = ws.clearsAtMs.length;
    const playedBeforePop = transport.stats().jitter.played;
    clock.advance(10);
    transport.pace(clock.monotonicMs());
    actor.pace(clock.monotonicMs());
    await turns(4);
    return { arrivedAtMs, clearsBeforePop, playedBeforePop };
  };
  return { clock, ws, transport, actor, frame, chunk: () => chunk };
}

describe('carrier barge-in: voice activity and recognition on arrival', () => {
  it('the clear goes out when the confirming frame arrives, before the jitter buffer would play it', async () => {
    const call = carrierCall();
    const silence = new Uint8Array(160).fill(MULAW_SILENCE);
    call.actor.post({ kind: 'text_inject', text: QUESTION, role: 'user' });
    for (let i = 0; i < 200 && call.actor.phase !== 'speaking'; i++) await call.frame(silence);
    for (let i = 0; i < 25; i++) await call.frame(silence); // half a second of the answer plays
    expect(call.actor.phase).toBe('speaking');
    const framesBefore = call.ws.mediaFrames;
    expect(framesBefore).toBeGreaterThan(20);

    const speech = encodeText('wait a second', 8000);
    let confirming: { chunk: number; arrivedAtMs: number; playedBeforePop: number } | undefined;
    for (let at = 0; at < speech.length && !confirming; at += 160) {
      const pcm = new Int16Array(160);
      pcm.set(speech.subarray(at, at + 160));
      const bytes = new Uint8Array(160);
      mulawEncode(pcm, bytes);
      const r = await call.frame(bytes);
      if (call.ws.clearsAtMs.length > 0) confirming = { chunk: call.chunk(), ...r };
      // Once sent, the clear must already have been sent in the arrival window of its frame.
      if (confirming) expect(r.clearsBeforePop).toBe(1);
    }
    expect(confirming, 'the caller was never recognised: no clear').toBeDefined();
    // The clear left at the confirming frame's arrival time, with that frame still in the jitter
    // buffer: the playout schedule had not popped it (it pops half a frame later).
    expect(call.ws.clearsAtMs).toEqual([confirming!.arrivedAtMs]);
    expect(confirming!.playedBeforePop).toBeLessThan(confirming!.chunk);
    expect(call.transport.stats().jitter).toMatchObject({ lost: 0, late: 0 });
  });

  it('every frame reaches the actor exactly once and in order, also when frames are reordered or lost', async () => {
    const call = carrierCall();
    // Each test frame is one repeated byte; a concealed frame fades within the frame (-1 here).
    const seen: number[] = [];
    call.transport.attach({ onAudio: (_pcm, raw) => seen.push(raw!.every((b) => b === raw![0]) ? raw![0]! : -1) }, { passRawMulaw: true });
    const real = () => seen.filter((b) => b >= 0x11 && b <= 0x17);
    const bytes = (v: number) => new Uint8Array(160).fill(v);
    const arrive = (chunk: number) => call.transport.receiveText(media(chunk, bytes(0x10 + chunk)));
    const tick = () => {
      call.clock.advance(20);
      call.transport.pace(call.clock.monotonicMs());
    };
    arrive(1);
    tick(); // the first pop fixes where the stream starts
    arrive(2); // in order: handed over at once
    expect(seen).toEqual([0x11, 0x12]);
    arrive(4); // ahead of 3: held
    expect(seen).toEqual([0x11, 0x12]);
    arrive(3); // 3 arrives: 3 and the held 4 go at once
    expect(seen).toEqual([0x11, 0x12, 0x13, 0x14]);
    tick();
    tick();
    tick(); // the playout slots of 2..4 pass: nothing is handed over twice
    expect(seen).toHaveLength(4);
    arrive(6); // 5 is lost
    tick(); // its slot: concealed (given up, 6 is waiting), then 6 at once
    expect(seen).toEqual([0x11, 0x12, 0x13, 0x14, -1, 0x16]);
    tick();
    tick(); // nothing buffered: the playout waits for 7 and hands nothing over (7 may still come)
    arrive(7); // in order again: at once
    // One frame per chunk: a concealed frame for the wait as well would shift the caller's audio by 20 ms.
    expect(seen).toEqual([0x11, 0x12, 0x13, 0x14, -1, 0x16, 0x17]);
    expect(real()).toEqual([0x11, 0x12, 0x13, 0x14, 0x16, 0x17]);
    expect(call.transport.stats().jitter).toMatchObject({ received: 6, reordered: 1, late: 0 });
  });
});
