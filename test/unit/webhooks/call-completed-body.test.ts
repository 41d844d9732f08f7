/**
 * `call.completed`'s links (spec doc 3): `transcript_url` and `recordings[].url` are proxy links
 * under the deployment's public base URL, null when it has none (or only a loopback one).
 */
import { describe, expect, it } from 'vitest';
import { callCompletedBody } from '../../../control-plane/webhooks/events.js';

const stint = {
  id: '01a22f3c-0000-7000-8000-000000000001',
  agent_id: '01a22f3c-0000-7000-8000-000000000002',
  agent_name: 'Front desk',
  workspace_id: '01a22f3c-0000-7000-8000-000000000003',
  call_id: '01a22f3c-0000-7000-8000-000000000004',
  segment_kind: 'ai' as const,
  status: 'completed',
  summary: null,
  summary_status: null,
  total_duration_ms: 4000,
  metadata: { recording_sid: `RE${'a'.repeat(32)}`, call_direction: 'inbound' },
  started_at: new Date('2026-12-01T10:00:00Z'),
  ended_at: new Date('2026-12-01T10:00:04Z'),
};
const analysis = { pieces: { summary: 'none' as const, qa: 'none' as const, analysis: 'none' as const }, qaScore: null };

describe('call.completed links', () => {
  it('a recording the carrier named gets a proxy link under the public base URL', () => {
    const body = callCompletedBody('ev-1', new Date(), [stint], 'https://voice.example.com', analysis);
    expect(body.data.recordings).toEqual([{ id: `RE${'a'.repeat(32)}`, channel: 'mixed', url: `https://voice.example.com/api/v1/conversations/${stint.id}/recordings/RE${'a'.repeat(32)}` }]);
    expect(body.data.transcript_url).toBe(`https://voice.example.com/api/v1/conversations/${stint.id}/messages`);
  });

  it('a cold-transferred call ends with its carrier call and lists the transferred leg\'s recording', () => {
    const transferred = {
      ...stint,
      metadata: { ...stint.metadata, transferred_to: '+14155559999', call_ended_at: '2026-12-01T10:00:24.000Z', transfer_recording_sid: `RE${'b'.repeat(32)}` },
    };
    const body = callCompletedBody('ev-3', new Date(), [transferred], 'https://voice.example.com', analysis);
    expect(body.data.ended_at).toBe('2026-12-01T10:00:24.000Z');
    expect(body.data.duration_ms).toBe(24_000);
    expect(body.data.recordings.map((r) => [r.id, r.channel])).toEqual([
      [`RE${'a'.repeat(32)}`, 'mixed'],
      [`RE${'b'.repeat(32)}`, 'transferred'],
    ]);
    expect(body.data.recordings[1]!.url).toBe(`https://voice.example.com/api/v1/conversations/${stint.id}/recordings/RE${'b'.repeat(32)}`);
  });

  it('no public base URL: the recording is listed with a null url', () => {
    const body = callCompletedBody('ev-2', new Date(), [stint], null, analysis);
    expect(body.data.recordings).toEqual([{ id: `RE${'a'.repeat(32)}`, channel: 'mixed', url: null }]);
    expect(body.data.transcript_url).toBeNull();
  });
});
