/**
 * The carrier transport over protocols other than Twilio's: Telnyx frames parsed and validated
 * (PCMA chosen by `start`, ids with `:`, custom parameters as a list), Telnyx's outgoing media /
 * clear / mark frames, a malformed frame counted as invalid, DTMF handed back, and mark emulation
 * for a protocol without mark echoes.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { alawDecode, alawEncode, mulawDecode } from '../../../media-engine/audio/g711.js';
import { CarrierTransport } from '../../../media-engine/transports/carrier-transport.js';
import type { CarrierProtocol } from '../../../media-engine/transports/carrier-protocol.js';
import { parseTelnyxFrame, telnyxProtocol } from '../../../media-engine/transports/telnyx.js';
import { PROTOCOLS } from '../../../media-engine/transports/carrier-protocols.js';

class FakeSocket {
  sent: Array<string | Uint8Array> = [];
  send(message: ArrayBufferView | string, isBinary?: boolean): number {
    this.sent.push(typeof message === 'string' ? message : isBinary ? new Uint8Array(message.buffer.slice(message.byteOffset, message.byteOffset + message.byteLength)) : Buffer.from(message.buffer, message.byteOffset, message.byteLength).toString('utf8'));
    return 1;
  }
  getBufferedAmount(): number {
    return 0;
  }
  end(): void {}
  text(): string[] {
    return this.sent.filter((s): s is string => typeof s === 'string');
  }
}

const START = {
  event: 'start',
  sequence_number: '1',
  stream_id: '32DE0DEA-53CB-4B21-89A4-9E1819C043BC',
  start: { call_control_id: 'v3:abc_DEF-1', media_format: { encoding: 'PCMA', sample_rate: 8000, channels: 1 }, custom_parameters: [{ name: 'session_id', value: 's-1' }] },
};

function media(chunk: number, bytes: Uint8Array): string {
  return JSON.stringify({ event: 'media', sequence_number: String(chunk + 1), stream_id: START.stream_id, media: { track: 'inbound', chunk: String(chunk), timestamp: String((chunk - 1) * 20), payload: Buffer.from(bytes).toString('base64') } });
}

describe('telnyx frames', () => {
  it('parses start with its format and parameters', () => {
    const r = parseTelnyxFrame(JSON.stringify(START));
    expect(r).toEqual({ ok: true, frame: { event: 'start', sequenceNumber: 1, streamSid: START.stream_id, callSid: 'v3:abc_DEF-1', accountSid: '', customParameters: { session_id: 's-1' }, format: { codec: 'pcma', sampleRateHz: 8000 } } });
  });

  it.each([
    [{ ...START, start: { ...START.start, media_format: { encoding: 'OPUS' } } }, 'bad_media_format'],
    [{ ...START, start: { ...START.start, media_format: { encoding: 'PCMU', sample_rate: 16000 } } }, 'bad_media_format'],
    [{ ...START, stream_id: 'has "quotes"' }, 'bad_stream_sid'],
    [{ event: 'media', sequence_number: '2', stream_id: 'x', media: { chunk: '1e300', timestamp: '0', payload: 'AAAA' } }, 'bad_chunk'],
    [{ event: 'media', sequence_number: '2', stream_id: 'x', media: { chunk: '1', timestamp: '0', payload: 'not base64!' } }, 'bad_payload'],
    [{ event: 'dtmf', stream_id: 'x', dtmf: { digit: '12' } }, 'bad_dtmf'],
    [{ event: 'start', stream_id: 'x', start: { custom_parameters: [{ name: 'a', value: 1 }] } }, 'bad_custom_parameters'],
  ])('refuses %j (%s)', (frame, reason) => {
    expect(parseTelnyxFrame(JSON.stringify(frame))).toEqual({ ok: false, reason });
  });

  it('ignores unknown events (error frames)', () => {
    expect(parseTelnyxFrame('{"event":"error","payload":{"code":100002}}')).toEqual({ ok: true, frame: { event: 'unknown' } });
  });
});

describe('CarrierTransport over Telnyx', () => {
  it('decodes PCMA chosen at start, sends Telnyx media / clear / mark frames, hands DTMF back', () => {
    const ws = new FakeSocket();
    const clock = new SimulatedClock();
    const t = new CarrierTransport(ws, clock, telnyxProtocol);
    const ev = t.receiveText(JSON.stringify(START));
    expect(ev).toMatchObject({ event: 'start', customParameters: { session_id: 's-1' } });
    expect(t.format.codec).toBe('pcma');
    expect(t.rawIsMulaw).toBe(true);

    const got: Int16Array[] = [];
    const raws: Uint8Array[] = [];
    t.attach({ onAudio: (pcm, raw) => (raws.push(raw!.slice()), got.push(pcm.slice())) }, { passRawMulaw: true });
    const pcm = Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin(i / 5)));
    const a = new Uint8Array(160);
    alawEncode(pcm, a);
    t.receiveText(media(1, a));
    clock.advance(20);
    t.pace(clock.monotonicMs());
    t.receiveText(media(2, a));
    expect(got.length).toBeGreaterThanOrEqual(1);
    const expected = new Int16Array(160);
    alawDecode(a, expected);
    expect(Array.from(got[got.length - 1]!)).toEqual(Array.from(expected));
    // The ASR that takes mu-law gets the frame transcoded: decoding it gives (nearly) the same signal.
    const viaMulaw = new Int16Array(160);
    mulawDecode(raws[raws.length - 1]!, viaMulaw);
    for (let i = 0; i < 160; i++) expect(Math.abs(viaMulaw[i]! - expected[i]!)).toBeLessThanOrEqual(Math.max(16, Math.abs(expected[i]!) / 16));

    t.sendAudio(pcm);
    const out = JSON.parse(ws.text().at(-1)!) as { event: string; media: { payload: string } };
    expect(out.event).toBe('media');
    expect(Object.keys(out)).toEqual(['event', 'media']);
    const sentBytes = new Uint8Array(Buffer.from(out.media.payload, 'base64'));
    expect(Array.from(sentBytes)).toEqual(Array.from(a));

    t.mark('run-1');
    expect(JSON.parse(ws.text().at(-1)!)).toEqual({ event: 'mark', mark: { name: 'run-1' } });
    t.clearAudio();
    expect(JSON.parse(ws.text().at(-1)!)).toEqual({ event: 'clear' });
    expect(t.receiveText(JSON.stringify({ event: 'mark', stream_id: START.stream_id, mark: { name: 'run-1' } }))).toEqual({ event: 'mark', name: 'run-1', cleared: true });

    expect(t.receiveText(JSON.stringify({ event: 'dtmf', stream_id: START.stream_id, dtmf: { digit: '#' } }))).toEqual({ event: 'dtmf', digit: '#' });
    expect(t.receiveText(JSON.stringify({ event: 'media', stream_id: 'another', sequence_number: '9', media: { chunk: '3', timestamp: '40', payload: 'AAAA' } }))).toMatchObject({ event: 'invalid', reason: 'stream_sid_mismatch' });
    expect(t.stats()).toMatchObject({ dtmf: 1, clears: 1, marksSent: 1, marksCleared: 1, invalidFrames: 1 });
  });

  it('a start naming a format of another frame size is invalid', () => {
    const t = new CarrierTransport(new FakeSocket(), new SimulatedClock(), { ...telnyxProtocol, parse: () => ({ ok: true, frame: { event: 'start', streamSid: 's', callSid: '', accountSid: '', customParameters: {}, format: { codec: 'l16', sampleRateHz: 8000 } } }) });
    expect(t.receiveText('{}')).toMatchObject({ event: 'invalid', reason: 'bad_media_format' });
  });
});

describe('mark emulation (a protocol without mark echoes)', () => {
  it('reports a mark heard once the audio before it has played in real time; a clear drops it', () => {
    const noMarks: CarrierProtocol = { ...telnyxProtocol, carrier: 'nomarks', marks: false };
    const ws = new FakeSocket();
    const clock = new SimulatedClock();
    const t = new CarrierTransport(ws, clock, noMarks);
    t.receiveText(JSON.stringify(START));
    const heard: string[] = [];
    t.onMarkEmulated((n) => heard.push(n));
    const frame = new Int16Array(160);
    for (let i = 0; i < 5; i++) t.sendAudio(frame); // 100 ms queued at the carrier
    t.mark('run-1');
    expect(ws.text().some((s) => s.includes('"mark"'))).toBe(false);
    clock.advance(80);
    t.pace(clock.monotonicMs());
    expect(heard).toEqual([]);
    clock.advance(30);
    t.pace(clock.monotonicMs());
    expect(heard).toEqual(['run-1']);

    for (let i = 0; i < 5; i++) t.sendAudio(frame);
    t.mark('run-2');
    t.clearAudio();
    clock.advance(500);
    t.pace(clock.monotonicMs());
    expect(heard).toEqual(['run-1']);
    expect(t.stats()).toMatchObject({ marksSent: 2, marksHeard: 1, marksCleared: 1 });
  });
});

describe('protocol table', () => {
  it('serves twilio, signalwire and telnyx, each once', () => {
    const names = PROTOCOLS.map((p) => p.carrier);
    expect(names).toEqual(expect.arrayContaining(['twilio', 'signalwire', 'telnyx']));
    expect(new Set(names).size).toBe(names.length);
  });
});
