/**
 * Transcription of the human segment of a hand-off (issue 21, docs/portal.md "Transcript of the
 * human segment"). On the hand-off row: the carrier recording of the person's leg (`recording_url`,
 * `recording_sid`, the `carrier` that serves it) and `transcription_status`: NULL (not asked:
 * `transcribe_human_segment` off), `pending` (asked at accept; waiting for the recording or the
 * `portal.transcribe` job), `completed` (messages written, in the same transaction), `failed`
 * (`transcription_error` says why; no messages). The segment's conversation mirrors the status in
 * `metadata.transcription_status`.
 *
 * `human_handoff_requests`: an engine's hand-off request whose registry bus notice could not be
 * sent (Redis unreachable). The engine writes it; the presence sweep (a pg-boss job) turns it
 * into the call's `portal.handoff` job; that job deletes it. One row per call.
 */
export const m0020_handoff_transcription = {
  version: 20,
  name: 'handoff_transcription',
  sql: /* sql */ `
alter table human_handoffs
  add column recording_url text,
  add column recording_sid text,
  add column carrier text,
  add column transcription_status text check (transcription_status in ('pending', 'completed', 'failed')),
  add column transcription_error text,
  add column transcribed_at timestamptz;

create table human_handoff_requests (
  call_id uuid primary key,
  requested_at timestamptz not null default now()
);
`,
};
