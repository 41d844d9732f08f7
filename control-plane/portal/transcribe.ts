/**
 * Transcript of a hand-off's human segment (issue 21, `transcribe_human_segment`; docs/portal.md
 * "Transcript of the human segment").
 *
 * - Asked for at accept (handoff.ts) when the AI agent's published telephony has
 *   `transcribe_human_segment`: the hand-off row gets `transcription_status = 'pending'`, mirrored in
 *   the segment conversation's `metadata.transcription_status`.
 * - The carrier records the dialed leg in two channels (the caller's first) and names the
 *   recording when the leg ends (Twilio's and SignalWire's `<Dial action>`: telephony's `ended`
 *   event, `dialRecording`), or in a callback of its own (Telnyx, Plivo, Vonage), before the call
 *   ended (then `dialRecording` too) or after (`recordingFollows` on `ended`, then `arrived` through
 *   telephony's `lateRecordings`). The recording goes on the row and `portal.transcribe` is queued
 *   (one job per hand-off); a leg that ended with no recording named or to follow fails the
 *   transcription at once, one whose recording never follows is failed by the sweep.
 * - The job downloads the recording through telephony (the outbound client, the carrier
 *   account's auth), decodes the WAV (PCM or mu-law, shared/providers/audio/wav.ts), transcribes
 *   each channel with the AI agent's published ASR (the provider registry; `sim` decodes sim-coded
 *   audio) and writes the messages: channel 1 (the caller's leg) as `user` / `speaker: caller`,
 *   channel 2 (the person) as `assistant` / `speaker: human_agent`; a mono recording, where both
 *   voices are mixed, as `assistant` / `speaker: mixed`.
 * - Exactly once: the messages are inserted in the transaction that moves the row from `pending`
 *   to `completed`, so a retried or duplicated job writes nothing twice and a failure writes
 *   nothing. Retryable failures (recording not ready: 404, 5xx, an ASR outage) are retried with
 *   backoff by pg-boss; the last attempt, or a failure no retry can fix (no ASR, a foreign
 *   recording host, an unreadable file), ends `failed` with `transcription_error`.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';
import { isUuid, newId } from '../../shared/ids.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import { parseWavChannels } from '../../shared/providers/audio/wav.js';
import { transcribeRecorded } from '../../shared/providers/asr/recorded.js';
import { ProviderError } from '../../shared/providers/errors.js';
import { createAsrProvider } from '../../shared/providers/registry.js';
import type { AsrProvider } from '../../shared/providers/types.js';
import type { LiveAgentConfig } from '../agents/types.js';
import type { JobContext, Jobs } from '../jobs/index.js';
import type { CallEvent, RecordingRef } from '../telephony/index.js';
import { RecordingFetchError } from '../telephony/index.js';

const MAX_ERROR_CHARS = 500;
/** A hand-off that ended this long ago with no recording named will not get one (the carrier names it as the leg ends). */
export const NO_RECORDING_AFTER_MS = 4 * 60_000;
/** Past this, a pending transcript is given up whatever the reason (the job's retries end within minutes). */
export const TRANSCRIPT_GIVE_UP_AFTER_MS = 30 * 60_000;

export interface TranscriberDeps {
  sql: Sql;
  jobs: Jobs;
  clock: Clock;
  logger: Logger;
  outbound: OutboundClient;
  liveConfig(agentId: string): Promise<LiveAgentConfig>;
  fetchRecording(ref: RecordingRef, signal?: AbortSignal): Promise<Uint8Array>;
  /** The ASR for an agent's published settings. Default: the provider registry. */
  asrFor?: (live: LiveAgentConfig) => AsrProvider;
}

interface Row {
  id: string;
  ai_agent_id: string;
  human_agent_id: string | null;
  conversation_id: string | null;
  recording_url: string | null;
  recording_sid: string | null;
  carrier: string | null;
  transcription_status: string | null;
}

/** A failure no retry can fix. */
class Permanent extends Error {}

type Speaker = 'caller' | 'human_agent' | 'mixed';
interface Line {
  speaker: Speaker;
  channel: number;
  startMs: number;
  endMs: number;
  text: string;
  confidence?: number;
}

export function createTranscriber(deps: TranscriberDeps) {
  const { sql, jobs, clock, logger } = deps;
  const asrFor =
    deps.asrFor ??
    ((live: LiveAgentConfig) => {
      const asr = live.providers.asr;
      if (!asr?.provider_name) throw new Permanent('the agent has no published ASR provider');
      return createAsrProvider(asr, { clock, outbound: deps.outbound, language: live.language || undefined });
    });

  /** Mirrors the status onto the segment's conversation (what the conversation APIs and the webhook read). */
  async function mirror(conversationId: string | null, status: string, error?: string): Promise<void> {
    if (!conversationId) return;
    const patch: Record<string, unknown> = { transcription_status: status };
    if (error) patch.transcription_error = error;
    await sql`update conversations set metadata = metadata || ${sql.json(patch as never)}, updated_at = ${new Date(clock.now())} where id = ${conversationId}`;
  }

  async function fail(row: Row, message: string): Promise<void> {
    const error = message.slice(0, MAX_ERROR_CHARS);
    // `returning`: the segment id as of now (accept may have written it since the row was read).
    const [done] = await sql<{ conversation_id: string | null }[]>`
      update human_handoffs set transcription_status = 'failed', transcription_error = ${error} where id = ${row.id} and transcription_status = 'pending' returning conversation_id`;
    if (done) await mirror(done.conversation_id, 'failed', error);
    logger.warn({ handoffId: row.id, error }, 'human segment not transcribed');
  }

  async function transcribe(row: Row, signal: AbortSignal): Promise<{ lines: Line[]; asrProvider: string; asrModel: string }> {
    // The ASR first: an agent without one fails without downloading the recording.
    const live = await deps.liveConfig(row.ai_agent_id);
    let asr: AsrProvider;
    try {
      asr = asrFor(live);
    } catch (err) {
      // Unknown provider, missing key or base URL: the configuration, not the moment.
      if (err instanceof ProviderError || err instanceof Permanent) throw new Permanent(err.message);
      throw err;
    }
    let bytes: Uint8Array;
    try {
      bytes = await deps.fetchRecording({ agentId: row.ai_agent_id, carrier: row.carrier ?? '', url: row.recording_url ?? '' }, signal);
    } catch (err) {
      if (err instanceof RecordingFetchError && !err.retryable) throw new Permanent(err.message);
      throw err;
    }
    let wav: ReturnType<typeof parseWavChannels>;
    try {
      wav = parseWavChannels(bytes);
    } catch (err) {
      throw new Permanent(`the recording is not a readable WAV: ${(err as Error).message}`);
    }
    const speakers: Speaker[] = wav.channels.length === 2 ? ['caller', 'human_agent'] : ['mixed'];
    const lines: Line[] = [];
    try {
      for (let c = 0; c < wav.channels.length; c++) {
        const utterances = await transcribeRecorded(asr, wav.channels[c]!, wav.sampleRateHz, { clock, signal, language: live.language || undefined }).catch((err: unknown) => {
          if (err instanceof RangeError) throw new Permanent(err.message);
          throw err;
        });
        for (const u of utterances) lines.push({ speaker: speakers[c]!, channel: c + 1, ...u });
      }
    } finally {
      asr.close?.();
    }
    lines.sort((a, b) => a.startMs - b.startMs || a.channel - b.channel);
    return { lines, asrProvider: live.providers.asr?.provider_name ?? asr.label, asrModel: live.providers.asr?.model_name ?? '' };
  }

  /** Writes the lines and completes the row in one transaction; false: someone else already did. */
  async function write(row: Row, lines: Line[], live: { asrProvider: string; asrModel: string }): Promise<boolean> {
    return sql.begin(async (tx) => {
      const done = await tx`update human_handoffs set transcription_status = 'completed', transcription_error = null, transcribed_at = ${new Date(clock.now())}
        where id = ${row.id} and transcription_status = 'pending' returning id`;
      if (!done.length) return false;
      const [conv] = await tx<{ started_at: Date }[]>`select started_at from conversations where id = ${row.conversation_id}`;
      const base = conv?.started_at.getTime() ?? clock.now();
      let turn = 0;
      let prev: Line | undefined;
      const rows = lines.map((l) => {
        // A caller line opens a turn; the person's answer right after it shares it.
        const role = l.speaker === 'caller' ? 'user' : 'assistant';
        if (!(role === 'assistant' && prev?.speaker === 'caller')) turn++;
        prev = l;
        return {
          id: newId(),
          conversation_id: row.conversation_id,
          turn_number: turn,
          role,
          content: l.text,
          asr_provider: live.asrProvider,
          asr_model: live.asrModel || null,
          asr_confidence: l.confidence ?? null,
          metadata: tx.json({ speaker: l.speaker, channel: l.channel, start_ms: l.startMs, end_ms: l.endMs, source: 'recording', recording_sid: row.recording_sid ?? '', ...(l.speaker === 'human_agent' ? { human_agent_id: row.human_agent_id } : {}) } as never),
          // The human stint's words: not our pipeline's usage (migration 0026).
          billable: false,
          created_at: new Date(base + l.startMs),
        };
      });
      if (rows.length) await tx`insert into messages ${tx(rows as never)}`;
      await tx`update conversations set total_turns = greatest(total_turns, ${turn}),
          metadata = (metadata - 'transcription_error') || ${tx.json({ transcription_status: 'completed' } as never)}, updated_at = ${new Date(clock.now())}
        where id = ${row.conversation_id}`;
      return true;
    });
  }

  async function run(job: JobContext<'portal.transcribe'>): Promise<void> {
    const [row] = await sql<Row[]>`select * from human_handoffs where id = ${job.data.handoff_id}`;
    if (!row || row.transcription_status !== 'pending' || !row.recording_url) return;
    try {
      // The leg can end before accept has written the segment: a retry finds it.
      if (!row.conversation_id) throw new Error('the human segment is not written yet');
      const { lines, asrProvider, asrModel } = await transcribe(row, job.signal);
      const wrote = await write(row, lines, { asrProvider, asrModel });
      if (wrote) logger.info({ handoffId: row.id, lines: lines.length }, 'human segment transcribed');
    } catch (err) {
      const message = (err as Error)?.message ?? String(err);
      if (err instanceof Permanent || job.isLastAttempt) return fail(row, message);
      // Visible while retrying; the status stays pending.
      await sql`update human_handoffs set transcription_error = ${message.slice(0, MAX_ERROR_CHARS)} where id = ${row.id} and transcription_status = 'pending'`.catch(() => {});
      throw err;
    }
  }

  /** The recording goes on the call's pending rows still without one, and their jobs are queued. */
  async function stored(callId: string, carrier: string, rec: { url: string; sid: string }): Promise<void> {
    const rows = await sql<{ id: string }[]>`
      update human_handoffs set recording_url = ${rec.url}, recording_sid = ${rec.sid}, carrier = ${carrier}
      where call_id = ${callId} and transcription_status = 'pending' and recording_url is null returning id`;
    for (const r of rows) await jobs.enqueue('portal.transcribe', { handoff_id: r.id }, { singletonKey: r.id });
  }

  return {
    run,
    /**
     * Sweep: a transcript left `pending` because no recording will come (the `ended` hook failed,
     * or the carrier's callback was lost) or because its job never finished ends `failed`, so the
     * call's `call.completed` is not held for it and the segment says why.
     */
    async abandonStale(): Promise<number> {
      const nowMs = clock.now();
      const rows = await sql<{ id: string; conversation_id: string | null; transcription_error: string }[]>`
        update human_handoffs set transcription_status = 'failed',
          transcription_error = case when recording_url is null then 'no recording of the person''s leg arrived' else 'the transcription did not finish' end
        where transcription_status = 'pending' and status = 'ended'
          and ((recording_url is null and ended_at < ${new Date(nowMs - NO_RECORDING_AFTER_MS)}) or ended_at < ${new Date(nowMs - TRANSCRIPT_GIVE_UP_AFTER_MS)})
        returning id, conversation_id, transcription_error`;
      for (const r of rows) {
        await mirror(r.conversation_id, 'failed', r.transcription_error);
        logger.warn({ handoffId: r.id, error: r.transcription_error }, 'human segment not transcribed');
      }
      return rows.length;
    },
    /**
     * Telephony hook (`ended`): the leg's recording goes on the pending hand-off rows of the call
     * and their jobs are queued. A carrier that names it in a callback of its own (Telnyx, Plivo,
     * Vonage: `recordingFollows`) may do so later (`arrived`; the sweep bounds the wait); a call
     * that ended without one otherwise cannot be transcribed.
     */
    async onCallEnded(ev: CallEvent): Promise<void> {
      const callId = ev.call.call_id;
      const carrier = ev.call.telephony_provider || 'twilio';
      if (ev.dialRecording) return stored(callId, carrier, ev.dialRecording);
      if (ev.recordingFollows) {
        await sql`update human_handoffs set carrier = coalesce(carrier, ${carrier}) where call_id = ${callId} and transcription_status = 'pending' and recording_url is null`;
        return;
      }
      const rows = await sql<Row[]>`select * from human_handoffs where call_id = ${callId} and transcription_status = 'pending' and recording_url is null`;
      for (const r of rows) await fail(r, 'the carrier named no recording of the person\'s leg');
    },
    /**
     * Telephony hook (`lateRecordings.awaiting`): an ended call whose person's leg's recording is
     * still awaited, and from which carrier (the one that dialed the person).
     */
    async awaiting(callId: string): Promise<{ agentId: string; carrier: string } | undefined> {
      if (!isUuid(callId)) return undefined;
      const [r] = await sql<{ ai_agent_id: string; carrier: string | null }[]>`
        select ai_agent_id, carrier from human_handoffs where call_id = ${callId} and transcription_status = 'pending' and recording_url is null limit 1`;
      return r?.carrier ? { agentId: r.ai_agent_id, carrier: r.carrier } : undefined;
    },
    /** Telephony hook (`lateRecordings.arrived`): the carrier named the recording after the call ended. */
    arrived: (callId: string, carrier: string, rec: { url: string; sid: string }) => stored(callId, carrier, rec),
  };
}

export type Transcriber = ReturnType<typeof createTranscriber>;
