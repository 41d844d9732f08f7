/**
 * The Plivo, Exotel and Vonage stream parsers (shared/protocol/<carrier>-stream.ts): the frames of
 * each carrier's documentation parse to the neutral shape, and untrusted fields are refused with a
 * reason (never thrown).
 */
import { describe, expect, it } from 'vitest';
import { MAX_MEDIA_PAYLOAD_BYTES } from '../../../shared/protocol/twilio-media.js';
import { parseExotelFrame } from '../../../shared/protocol/exotel-stream.js';
import { parseExtraHeaders, parsePlivoFrame, plivoCheckpoint, plivoClearAudio, plivoPlayAudioTemplate } from '../../../shared/protocol/plivo-stream.js';
import { parseVonageBinary, parseVonageText, vonageFormat, vonageNotify, VONAGE_CLEAR } from '../../../shared/protocol/vonage-stream.js';

const j = JSON.stringify;
const b64 = (n: number, fill = 0xff) => Buffer.alloc(n, fill).toString('base64');

describe('Plivo stream frames', () => {
  it('parses start with extra_headers as a string or as JSON', () => {
    const start = { event: 'start', sequenceNumber: 0, start: { callId: 'c0a8-11', streamId: '20170ada-f610-433b-8758-c02a2aab3662', accountId: 'MA123', tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 } } };
    expect(parsePlivoFrame(j({ ...start, extra_headers: 'session_id=s-1,agent_id=a-1' }))).toEqual({
      ok: true,
      frame: { event: 'start', streamId: '20170ada-f610-433b-8758-c02a2aab3662', callId: 'c0a8-11', customParameters: { session_id: 's-1', agent_id: 'a-1' }, format: { encoding: 'mulaw', sampleRateHz: 8000 } },
    });
    const r = parsePlivoFrame(j({ ...start, extra_headers: j({ session_id: 's-2' }) }));
    expect(r.ok && r.frame.event === 'start' && r.frame.customParameters).toEqual({ session_id: 's-2' });
    expect(parsePlivoFrame(j({ ...start, start: { ...start.start, mediaFormat: { encoding: 'audio/x-l16', sampleRate: 16000 } } }))).toEqual({ ok: false, reason: 'bad_media_format' });
    expect(parsePlivoFrame(j({ ...start, extra_headers: 'no-equals-sign' }))).toEqual({ ok: false, reason: 'bad_custom_parameters' });
    expect(parsePlivoFrame(j({ ...start, start: { ...start.start, streamId: 'x'.repeat(65) } }))).toEqual({ ok: false, reason: 'bad_stream_sid' });
  });

  it('parses media, dtmf, playedStream, clearedAudio, stop; unknown events are not errors', () => {
    expect(parsePlivoFrame(j({ event: 'media', sequenceNumber: 3, streamId: 's1', media: { track: 'inbound', timestamp: '1700000000020', chunk: 2, payload: b64(160) } }))).toEqual({
      ok: true,
      frame: { event: 'media', chunk: 2, timestampMs: 1700000000020, payload: b64(160) },
    });
    expect(parsePlivoFrame(j({ event: 'dtmf', streamId: 's1', dtmf: { digit: '5', track: 'inbound' } }))).toEqual({ ok: true, frame: { event: 'dtmf', digit: '5' } });
    expect(parsePlivoFrame(j({ event: 'playedStream', streamId: 's1', name: 'run-1' }))).toEqual({ ok: true, frame: { event: 'mark', name: 'run-1' } });
    expect(parsePlivoFrame(j({ event: 'clearedAudio', streamId: 's1' }))).toEqual({ ok: true, frame: { event: 'cleared' } });
    expect(parsePlivoFrame(j({ event: 'stop' }))).toEqual({ ok: true, frame: { event: 'stop' } });
    expect(parsePlivoFrame(j({ event: 'somethingNew' }))).toEqual({ ok: true, frame: { event: 'unknown' } });
  });

  it('refuses hostile fields', () => {
    const media = (m: Record<string, unknown>) => parsePlivoFrame(j({ event: 'media', media: { payload: b64(160), ...m } }));
    expect(media({ chunk: '1e300' })).toEqual({ ok: false, reason: 'bad_chunk' });
    expect(media({ timestamp: -1 })).toEqual({ ok: false, reason: 'bad_timestamp' });
    expect(media({ payload: b64(MAX_MEDIA_PAYLOAD_BYTES + 3) })).toEqual({ ok: false, reason: 'bad_payload' });
    // 160 ms of mu-law (a sender of larger frames): accepted.
    expect(media({ payload: b64(1280) }).ok).toBe(true);
    expect(media({ payload: 'not base64!' })).toEqual({ ok: false, reason: 'bad_payload' });
    expect(media({ track: 'sideways' })).toEqual({ ok: false, reason: 'bad_track' });
    expect(parsePlivoFrame(j({ event: 'dtmf', dtmf: { digit: '55' } }))).toEqual({ ok: false, reason: 'bad_dtmf' });
    expect(parsePlivoFrame('{')).toEqual({ ok: false, reason: 'not_json' });
    expect(parsePlivoFrame('[]')).toEqual({ ok: false, reason: 'not_object' });
    expect(parsePlivoFrame('x'.repeat(17 * 1024))).toEqual({ ok: false, reason: 'too_large' });
    expect(parseExtraHeaders({ a: { nested: true } })).toBeUndefined();
    expect(parseExtraHeaders(Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, 'v'])))).toBeUndefined();
  });

  it('writes playAudio, checkpoint and clearAudio as Plivo documents them', () => {
    const { head, tail } = plivoPlayAudioTemplate('s1');
    expect(JSON.parse(head + b64(160) + tail)).toEqual({ event: 'playAudio', streamId: 's1', media: { contentType: 'audio/x-mulaw', sampleRate: 8000, payload: b64(160) } });
    expect(JSON.parse(plivoCheckpoint('s1', 'run-1'))).toEqual({ event: 'checkpoint', streamId: 's1', name: 'run-1' });
    expect(JSON.parse(plivoClearAudio('s1'))).toEqual({ event: 'clearAudio', streamId: 's1' });
  });
});

describe('Exotel stream frames', () => {
  it('parses the documented frames', () => {
    expect(parseExotelFrame(j({ event: 'connected' }))).toEqual({ ok: true, frame: { event: 'ignored' } });
    const start = {
      event: 'start',
      sequence_number: '1',
      stream_sid: 'MZ18ad3ab5a668481ce02b83e7395059f0',
      start: { stream_sid: 'MZ18ad3ab5a668481ce02b83e7395059f0', call_sid: 'CA1', account_sid: 'exo1', from: '+919876543210', to: '+918047491899', custom_parameters: { session_id: 's-1' }, media_format: { encoding: 'base64', sample_rate: '8000', bit_rate: '128kbps' } },
    };
    expect(parseExotelFrame(j(start))).toEqual({ ok: true, frame: { event: 'start', streamId: 'MZ18ad3ab5a668481ce02b83e7395059f0', callId: 'CA1', customParameters: { session_id: 's-1' }, format: { encoding: 'l16', sampleRateHz: 8000 } } });
    expect(parseExotelFrame(j({ ...start, start: { ...start.start, media_format: { sample_rate: '24000' } } }))).toEqual({ ok: false, reason: 'bad_media_format' });
    expect(parseExotelFrame(j({ event: 'media', sequence_number: '3', stream_sid: 'MZ1', media: { chunk: '2', timestamp: '200', payload: b64(1600, 0) } }))).toEqual({
      ok: true,
      frame: { event: 'media', chunk: 2, timestampMs: 200, payload: b64(1600, 0) },
    });
    expect(parseExotelFrame(j({ event: 'dtmf', stream_sid: 'MZ1', dtmf: { digit: '#', duration: '100' } }))).toEqual({ ok: true, frame: { event: 'dtmf', digit: '#' } });
    expect(parseExotelFrame(j({ event: 'mark', stream_sid: 'MZ1', mark: { name: 'run-2' } }))).toEqual({ ok: true, frame: { event: 'mark', name: 'run-2' } });
    expect(parseExotelFrame(j({ event: 'stop', stream_sid: 'MZ1', stop: { call_sid: 'CA1', reason: 'callended' } }))).toEqual({ ok: true, frame: { event: 'stop' } });
  });

  it('refuses hostile fields', () => {
    expect(parseExotelFrame(j({ event: 'media', media: { chunk: 'abc', payload: b64(320) } }))).toEqual({ ok: false, reason: 'bad_chunk' });
    expect(parseExotelFrame(j({ event: 'media', media: { payload: b64(9000) } }))).toEqual({ ok: false, reason: 'bad_payload' });
    expect(parseExotelFrame(j({ event: 'media', stream_sid: 'a b', media: { payload: b64(320) } }))).toEqual({ ok: false, reason: 'bad_stream_sid' });
    expect(parseExotelFrame(j({ event: 'mark', mark: { name: 'x'.repeat(200) } }))).toEqual({ ok: false, reason: 'bad_mark' });
    expect(parseExotelFrame(j({ event: 'start', start: { stream_sid: 'MZ1', custom_parameters: { a: ['x'] } } }))).toEqual({ ok: false, reason: 'bad_custom_parameters' });
  });
});

describe('Vonage websocket frames', () => {
  it('parses websocket:connected with our headers as the start', () => {
    const r = parseVonageText(j({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=16000', session_id: 's-1', agent_id: 'a-1', call_id: 'call-1' }));
    expect(r).toEqual({ ok: true, frame: { event: 'start', streamId: 'call-1', callId: 'call-1', customParameters: { session_id: 's-1', agent_id: 'a-1', call_id: 'call-1' }, format: { encoding: 'l16', sampleRateHz: 16000 } } });
    expect(vonageFormat('audio/l16;rate=8000')).toEqual({ encoding: 'l16', sampleRateHz: 8000 });
    expect(parseVonageText(j({ event: 'websocket:connected', 'content-type': 'audio/l16;rate=24000' }))).toEqual({ ok: false, reason: 'bad_media_format' });
  });

  it('parses dtmf, notify, cleared; binary frames are audio', () => {
    expect(parseVonageText(j({ event: 'websocket:dtmf', digit: '7', duration: 250 }))).toEqual({ ok: true, frame: { event: 'dtmf', digit: '7' } });
    expect(parseVonageText(j({ event: 'websocket:dtmf', dtmf: { digit: 3 } }))).toEqual({ ok: true, frame: { event: 'dtmf', digit: '3' } });
    expect(parseVonageText(j({ event: 'websocket:notify', payload: { mark: 'run-1' } }))).toEqual({ ok: true, frame: { event: 'mark', name: 'run-1' } });
    expect(parseVonageText(j({ event: 'websocket:notify', payload: { other: 1 } }))).toEqual({ ok: true, frame: { event: 'ignored' } });
    expect(parseVonageText(j({ event: 'websocket:cleared' }))).toEqual({ ok: true, frame: { event: 'cleared' } });
    const audio = new Uint8Array(640);
    expect(parseVonageBinary(audio)).toEqual({ ok: true, frame: { event: 'media', payload: audio } });
    expect(parseVonageBinary(new Uint8Array(641))).toEqual({ ok: false, reason: 'bad_payload' });
    expect(parseVonageBinary(new Uint8Array(0))).toEqual({ ok: false, reason: 'bad_payload' });
    expect(parseVonageBinary(new Uint8Array(8192))).toEqual({ ok: false, reason: 'too_large' });
  });

  it('writes notify and clear commands', () => {
    expect(JSON.parse(vonageNotify('run-3'))).toEqual({ action: 'notify', payload: { mark: 'run-3' } });
    expect(JSON.parse(VONAGE_CLEAR)).toEqual({ action: 'clear' });
  });
});
