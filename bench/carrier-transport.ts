/**
 * The carrier transport's own cost per 20 ms of audio, per carrier wire (issue 24: why the engine
 * bench finds Exotel's 100 ms messages and Vonage's binary frames cheaper than the JSON carriers):
 * one `CarrierTransport` per wire in this process, fed pre-built carrier messages (inbound: parse,
 * validate, decode, jitter buffer, hand-over) and sending the agent's frames (outbound: encode,
 * base64 into the template, `send` on a no-op socket). No uWS, no kernel: the per-message cost of
 * the socket itself (callback into JS, one write per message) comes on top in the engine bench.
 *
 *   npm run build:bench && node dist-bench/bench/carrier-transport.js [--messages 20000] [--rounds 5]
 *
 * CPU time of this process (process.cpuUsage), rounds interleaved across wires, median reported.
 */
import { loadavg } from 'node:os';
import { benchArgs } from './lib/args.js';
import { mulawEncode } from '../media-engine/audio/g711.js';
import { CarrierTransport } from '../media-engine/transports/carrier-transport.js';
import { PROTOCOLS } from '../media-engine/transports/carrier-protocols.js';
import { SimulatedClock } from '../shared/clock.js';

interface Wire {
  carrier: string;
  start: unknown;
  /** 20 ms frames per inbound message (Exotel: 5). */
  framesPerMessage: number;
  message(k: number): { text: string } | { bin: Buffer };
  /** Samples of one outbound 20 ms frame. */
  outSamples: number;
}

const tone = (n: number) => Int16Array.from({ length: n }, (_, i) => Math.round(3000 * Math.sin(i / 5)));
const mulaw = (n: number) => {
  const o = new Uint8Array(n);
  mulawEncode(tone(n), o);
  return Buffer.from(o).toString('base64');
};
const le = (n: number) => Buffer.from(tone(n).buffer);
const ab = (b: Buffer) => b.buffer.slice(b.byteOffset, b.byteOffset + b.length) as ArrayBuffer;

const WIRES: Record<string, Wire> = {
  'twilio (JSON mu-law, 20 ms)': {
    carrier: 'twilio',
    start: { event: 'start', sequenceNumber: '1', streamSid: 'MZ1', start: { streamSid: 'MZ1', callSid: 'CA1', accountSid: 'AC1', customParameters: {} } },
    framesPerMessage: 1,
    message: (k) => ({ text: `{"event":"media","sequenceNumber":"${k + 1}","media":{"track":"inbound","chunk":"${k}","timestamp":"${(k - 1) * 20}","payload":"${mulaw(160)}"},"streamSid":"MZ1"}` }),
    outSamples: 160,
  },
  'plivo (JSON mu-law, 20 ms)': {
    carrier: 'plivo',
    start: { event: 'start', sequenceNumber: 0, start: { callId: 'c1', streamId: 's1', accountId: 'MA1', tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 } }, extra_headers: 'session_id=s' },
    framesPerMessage: 1,
    message: (k) => ({ text: `{"event":"media","sequenceNumber":${k},"streamId":"s1","media":{"track":"inbound","timestamp":"${1_700_000_000_000 + k * 20}","chunk":${k},"payload":"${mulaw(160)}"}}` }),
    outSamples: 160,
  },
  'vonage 8 kHz (binary L16, 20 ms)': { carrier: 'vonage', start: { event: 'websocket:connected', 'content-type': 'audio/l16;rate=8000' }, framesPerMessage: 1, message: () => ({ bin: le(160) }), outSamples: 160 },
  'vonage 16 kHz (binary L16, 20 ms)': { carrier: 'vonage', start: { event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000' }, framesPerMessage: 1, message: () => ({ bin: le(320) }), outSamples: 320 },
  'exotel (JSON L16, 100 ms)': {
    carrier: 'exotel',
    start: { event: 'start', sequence_number: '1', stream_sid: 'MZ1', start: { stream_sid: 'MZ1', call_sid: 'CA1', account_sid: 'a', custom_parameters: {}, media_format: { encoding: 'base64', sample_rate: '8000' } } },
    framesPerMessage: 5,
    message: (k) => ({ text: `{"event":"media","sequence_number":"${k + 1}","stream_sid":"MZ1","media":{"chunk":"${k}","timestamp":"${(k - 1) * 100}","payload":"${le(800).toString('base64')}"}}` }),
    outSamples: 160,
  },
};

/** CPU ns per 20 ms of audio, in and out, for `messages` inbound messages of `w`. */
function measure(w: Wire, messages: number): { ns: number; delivered: number; frames: number } {
  const protocol = PROTOCOLS.find((p) => p.carrier === w.carrier)!;
  const clock = new SimulatedClock();
  const socket = { send: () => 1, getBufferedAmount: () => 0, end: () => {} };
  const t = new CarrierTransport(socket, clock, protocol);
  t.receiveFrame(ab(Buffer.from(JSON.stringify(w.start))), false);
  let delivered = 0;
  t.attach({ onAudio: () => void delivered++ });
  // Built before the clock starts: the carrier's work, not ours.
  const msgs = Array.from({ length: messages }, (_, i) => {
    const m = w.message(i + 1);
    return 'bin' in m ? { data: ab(m.bin), binary: true } : { data: ab(Buffer.from(m.text)), binary: false };
  });
  const out = tone(w.outSamples);
  const t0 = process.cpuUsage();
  for (const m of msgs) {
    t.receiveFrame(m.data, m.binary);
    clock.advance(20 * w.framesPerMessage);
    t.pace(clock.monotonicMs());
    for (let f = 0; f < w.framesPerMessage; f++) t.sendAudio(out);
  }
  const used = process.cpuUsage(t0);
  const frames = messages * w.framesPerMessage;
  return { ns: ((used.user + used.system) * 1000) / frames, delivered, frames };
}

export function runCarrierTransportBench(o: { messages: number; rounds: number }): string {
  const ns = new Map<string, number[]>();
  for (const w of Object.values(WIRES)) measure(w, 2000); // warm-up: let V8 optimise every path
  for (let r = 0; r < o.rounds; r++) {
    for (const [name, w] of Object.entries(WIRES)) {
      const m = measure(w, o.messages);
      if (m.delivered < m.frames * 0.99) throw new Error(`${name}: ${m.delivered} of ${m.frames} frames handed over`);
      ns.set(name, [...(ns.get(name) ?? []), m.ns]);
    }
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
  const base = median(ns.get('twilio (JSON mu-law, 20 ms)')!);
  const lines = [`carrier transport, CPU ns per 20 ms of audio (in + out), median of ${o.rounds} rounds of ${o.messages} messages; load average ${loadavg()[0]!.toFixed(1)}`, ''];
  lines.push('| wire | messages per 100 ms (in + out) | ns / 20 ms | min | vs Twilio |', '|---|---|---|---|---|');
  for (const [name, v] of ns) {
    const w = WIRES[name]!;
    const perHundred = w.framesPerMessage === 5 ? '1 + 1' : '5 + 5';
    lines.push(`| ${name} | ${perHundred} | ${Math.round(median(v))} | ${Math.round(Math.min(...v))} | ${(median(v) / base).toFixed(2)} |`);
  }
  return lines.join('\n');
}

const { values } = benchArgs({ options: { messages: { type: 'string' }, rounds: { type: 'string' } } });
console.log(runCarrierTransportBench({ messages: Number(values.messages ?? 20_000), rounds: Number(values.rounds ?? 5) }));
