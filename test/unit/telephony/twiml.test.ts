/** The TwiML we answer with: exact documents, escaping, and a round trip through the simulator's reader. */
import { describe, expect, it } from 'vitest';
import * as twiml from '../../../control-plane/telephony/twiml.js';
import { parseTwiml, streamOf } from '../../carrier-sim/twiml.js';

const HEAD = '<?xml version="1.0" encoding="UTF-8"?>';

describe('TwiML', () => {
  it('connects a stream with parameters, then hangs up when the socket closes', () => {
    const doc = twiml.connectStream('wss://media.example.com/api/v1/voice/ws/twilio/CA1', { session_id: 'a&b"c', agent_id: 'ag-1', call_id: '' });
    expect(doc).toBe(
      `${HEAD}<Response><Connect><Stream url="wss://media.example.com/api/v1/voice/ws/twilio/CA1"><Parameter name="session_id" value="a&amp;b&quot;c"/><Parameter name="agent_id" value="ag-1"/></Stream></Connect><Hangup/></Response>`,
    );
    const parsed = parseTwiml(doc);
    expect(streamOf(parsed.children[0]!)).toEqual({ url: 'wss://media.example.com/api/v1/voice/ws/twilio/CA1', parameters: { session_id: 'a&b"c', agent_id: 'ag-1' } });
  });

  it('says a message and hangs up (escaped)', () => {
    expect(twiml.sayAndHangup('Tom & Jerry <3')).toBe(`${HEAD}<Response><Say>Tom &amp; Jerry &lt;3</Say><Hangup/></Response>`);
    expect(parseTwiml(twiml.sayAndHangup('Tom & Jerry <3')).children[0]!.text).toBe('Tom & Jerry <3');
  });

  it('holds: announcement on the first round, hold audio or a pause, redirect back', () => {
    expect(twiml.hold({ announce: 'Please hold.', pauseS: 10, redirectUrl: 'https://x.test/api/v1/telephony/calls/inbound?hold=1' })).toBe(
      `${HEAD}<Response><Say>Please hold.</Say><Pause length="10"/><Redirect method="POST">https://x.test/api/v1/telephony/calls/inbound?hold=1</Redirect></Response>`,
    );
    const again = parseTwiml(twiml.hold({ holdAudioUrl: 'https://x.test/hold.mp3', pauseS: 10, redirectUrl: 'https://x.test/in?hold=2&a=b' }));
    expect(again.children.map((c) => [c.name, c.text])).toEqual([
      ['Play', 'https://x.test/hold.mp3'],
      ['Redirect', 'https://x.test/in?hold=2&a=b'],
    ]);
  });

  it('dials a human for a cold transfer, recording the new leg', () => {
    const doc = parseTwiml(twiml.dialTransfer({ toNumber: '+14155559999', callerId: '+14155550101', actionUrl: 'https://x.test/done' }));
    expect(doc.children[0]).toEqual({
      name: 'Dial',
      attrs: { callerId: '+14155550101', record: 'record-from-answer', timeout: '30', action: 'https://x.test/done', method: 'POST' },
      children: [{ name: 'Number', attrs: {}, children: [], text: '+14155559999' }],
      text: '',
    });
  });
});
