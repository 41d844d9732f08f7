/**
 * `call.completed` events (spec doc 3, "call.completed event body", "Events" rules 5-9):
 *
 * - One per carrier call (`conversations.call_id`; browser and voice-test sessions have none and
 *   get no event). The post-call relay queues `webhook.call-completed` for the call when one of
 *   its stints ends; the job builds the event once the call has settled and stores it as a
 *   delivery (unique per workspace and call), so a second trigger is a no-op.
 * - Analysis hold: the event waits while a stint is still active (a transfer to a person), a human
 *   segment's transcript is `pending` (issue 21, `transcribe_human_segment`), or a
 *   configured summary, QA score or analysis result is still running, at most `ANALYSIS_HOLD_MS`
 *   (4 min) after the last stint ended (a call still going, an active stint or a cold-transferred
 *   leg: until it ends, at most `TRANSFERRED_LEG_HOLD_MS`), then ships what exists: `qa_score` and `analysis_status`
 *   by the rules of ./analysis-status.ts (`skipped` for failed and abandoned calls). The hold is
 *   this job re-queuing itself on the job queue (no timer in the process).
 * - The body is serialised here, once; deliveries re-send these bytes.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { newId } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/client.js';
import type { Jobs, JobContext } from '../jobs/index.js';
import type { Tx } from '../post-call/relay.js';
import type { CallEvent } from '../telephony/live-calls.js';
import { analysisStatus, loadCallAnalysis, mustHold, type CallAnalysis } from './analysis-status.js';
import type { DeliveryWorker } from './deliver.js';
import { EVENT_TYPE } from './signing.js';
import { recordingPath } from '../conversations/recordings.js';
import * as store from './store.js';

/** Longest an event waits for the summary, the QA score and the analysis results. */
export const ANALYSIS_HOLD_MS = 4 * 60_000;
/**
 * Longest an event waits, after the AI's stint ended, for the rest of the call (a person's segment,
 * or the carrier end of a leg handed on by a cold transfer): Twilio's longest call (`timeLimit`, 4 h), so a lost status callback delays the
 * event by that much at worst instead of holding it forever.
 */
export const TRANSFERRED_LEG_HOLD_MS = 4 * 3_600_000;
/** First look at a call after a stint ended (lets a transfer's next stint start). */
const SETTLE_S = 2;
/** Re-check period while holding. */
const HOLD_RECHECK_S = 5;
/** Re-check period past the analysis hold while the call is still going (it can last hours). */
const LEG_RECHECK_S = 15;
/**
 * How long after an answered call ended its conversation is looked for (default). The engine
 * writes the row when it claims the session, while the call is still up; this covers a write
 * still queued.
 */
const UNRECORDED_CHECK_S = 30;
/** Carrier final statuses of a call that never connected (spec: `failed`: busy, no answer, rejected). */
const NEVER_CONNECTED = new Set(['busy', 'no-answer', 'failed', 'canceled']);
/** `metadata.end_reason` the abandoned-call sweeper writes (post-call/abandoned.ts). */
export const ABANDONED_REASON = 'abandoned';
/** `metadata.end_reason` the node sweeper writes when the call's engine node died (control-plane/ops/node-sweeper.ts). */
export const NODE_LOST_REASON = 'node_lost';
/** End reasons of calls closed without a recorded completion: their event's status is `abandoned` (spec doc 3). */
const UNRECORDED_ENDS = new Set([ABANDONED_REASON, NODE_LOST_REASON]);

interface StintRow {
  id: string;
  agent_id: string;
  agent_name: string | null;
  workspace_id: string;
  call_id: string;
  segment_kind: 'ai' | 'human';
  status: string;
  summary: string | null;
  summary_status: string | null;
  total_duration_ms: number;
  metadata: Record<string, unknown>;
  started_at: Date;
  ended_at: Date | null;
}

export interface CallEventsOptions {
  sql: Sql;
  jobs: Jobs;
  clock: Clock;
  logger: Logger;
  deliveries: DeliveryWorker;
  /** Public base URL of the control plane (links); loopback: links are null. */
  publicBaseUrl: string;
  /** Seconds after an answered call ended before a missing conversation is looked for. Default 30. */
  unrecordedCheckS?: number;
}

export interface CallEvents {
  /** Post-call relay handler: queue the call's event job (inside the relay's transaction). */
  onConversationEnded(ev: { conversation_id: string }, tx: Tx): Promise<void>;
  run(job: JobContext<'webhook.call-completed'>): Promise<void>;
  /**
   * Telephony hook: a carrier call that ended without ever connecting, or answered but never
   * reaching an engine (no conversation), gets a `failed` event.
   */
  onCarrierCallEnded(ev: CallEvent): Promise<void>;
  runFailed(job: JobContext<'webhook.call-failed'>): Promise<void>;
  /** A test ping: real signing and delivery, obviously fake values. */
  testEvent(workspaceId: string): { eventId: string; body: string };
}

export function createCallEvents(opts: CallEventsOptions): CallEvents {
  const { sql, jobs, clock, logger, deliveries } = opts;
  const linkBase = publicLinkBase(opts.publicBaseUrl);

  async function run(job: JobContext<'webhook.call-completed'>): Promise<void> {
    const [workspaceId, callId] = job.data.call_key.split(':');
    const settings = await store.getSettings(sql, workspaceId);
    // No endpoint: nothing to send (events are not kept for an endpoint that may never exist).
    if (!settings?.webhook_url) return;
    const stints = await sql<StintRow[]>`
      select c.id, c.agent_id, a.name as agent_name, c.workspace_id, c.call_id, c.segment_kind, c.status, c.summary,
             c.summary_status, c.total_duration_ms, c.metadata, c.started_at, c.ended_at
      from conversations c left join agents a on a.id = c.agent_id
      where c.workspace_id = ${workspaceId} and c.call_id = ${callId}
      order by c.started_at, c.id`;
    if (!stints.length) return;
    const now = clock.now();
    const lastEnd = Math.max(...stints.map((s) => s.ended_at?.getTime() ?? 0));
    const sinceEnd = lastEnd > 0 ? now - lastEnd : -1;
    // The call is still going while a stint is active (a person took it over through the portal)
    // or a leg it was handed on to by a cold transfer (`<Dial>` to a number) has no carrier end
    // yet: the rest of the call is part of the event (its end, duration, segments, recording).
    // That holds the event past the analysis hold, up to TRANSFERRED_LEG_HOLD_MS (the sweepers
    // end stints whose process died).
    const callLive = stints.some((s) => s.status === 'active' || awaitingTransferredLeg(s));
    const holdOver = sinceEnd >= (callLive ? TRANSFERRED_LEG_HOLD_MS : ANALYSIS_HOLD_MS);
    // A human segment whose transcript is still being made holds the event like an active stint
    // (control-plane/portal/transcribe.ts): its messages are part of the call's transcript.
    const active = callLive || stints.some((s) => (s.metadata ?? {}).transcription_status === 'pending');
    const analysis = await loadCallAnalysis(sql, stints);
    if (mustHold(analysis.pieces, active, holdOver)) {
      const delaySeconds = callLive && sinceEnd >= ANALYSIS_HOLD_MS ? LEG_RECHECK_S : HOLD_RECHECK_S;
      await jobs.enqueue('webhook.call-completed', job.data, { singletonKey: job.data.call_key, delaySeconds });
      return;
    }
    const eventId = newId();
    const body = JSON.stringify(callCompletedBody(eventId, new Date(now), stints, linkBase, analysis));
    await storeEvent(workspaceId, callId, eventId, body, now);
    logger.debug({ callId, workspaceId }, 'call.completed queued');
  }

  /** Stores the event as a delivery (once per call) and queues its first attempt, in one transaction. */
  async function storeEvent(workspaceId: string, callId: string, eventId: string, body: string, now: number): Promise<void> {
    await sql.begin(async (tx) => {
      const d = await store.insertDelivery(tx, {
        id: newId(),
        workspace_id: workspaceId,
        event_id: eventId,
        event_type: EVENT_TYPE,
        test: false,
        call_id: callId,
        body,
        next_attempt_at: new Date(now),
        created_at: new Date(now),
      });
      if (d) await deliveries.schedule(d.id, new Date(now), tx);
    });
  }

  async function runFailed(job: JobContext<'webhook.call-failed'>): Promise<void> {
    const c = job.data;
    const settings = await store.getSettings(sql, c.workspace_id);
    if (!settings?.webhook_url) return;
    if (c.answered_at_ms) {
      // Answered: the conversation's own end sends call.completed, unless there is none.
      const [recorded] = await sql`select 1 from conversations where workspace_id = ${c.workspace_id} and call_id = ${c.call_id} limit 1`;
      if (recorded) return;
      logger.warn({ callId: c.call_id, carrierStatus: c.carrier_status }, 'answered call ended without reaching an engine: call.completed sent as failed');
    }
    const [agent] = await sql<{ name: string }[]>`select name from agents where id = ${c.agent_id}`;
    const now = clock.now();
    const eventId = newId();
    const body = JSON.stringify({
      id: eventId,
      type: EVENT_TYPE,
      created_at: new Date(now).toISOString(),
      test: false,
      workspace_id: c.workspace_id,
      data: {
        call_id: c.call_id,
        // The spec types it a string (not in its nullable list): no conversation is "".
        conversation_id: '',
        conversation_ids: [],
        status: 'failed',
        carrier_status: c.carrier_status,
        ...(c.answered_at_ms ? { failure_reason: 'media_not_connected' } : {}),
        direction: c.direction,
        caller_number: c.from_number,
        callee_number: c.to_number,
        caller_name: '',
        started_at: new Date(c.created_at_ms).toISOString(),
        // When the media reached an engine (the first conversation's start): never, for a failed call,
        // even one the carrier answered (`failure_reason` says so).
        answered_at: null,
        ended_at: new Date(c.ended_at_ms).toISOString(),
        duration_ms: Math.max(0, c.ended_at_ms - c.created_at_ms),
        talk_duration_ms: 0,
        ai_agent: { id: c.agent_id, name: agent?.name ?? '' },
        human_agents: [],
        segments: [],
        disposition: null,
        summary: null,
        qa_score: null,
        analysis_status: 'skipped',
        transcript_url: null,
        recordings: [],
      },
    });
    await storeEvent(c.workspace_id, c.call_id, eventId, body, now);
  }

  return {
    async onConversationEnded(ev, tx) {
      const [row] = await tx<{ workspace_id: string; call_id: string | null }[]>`
        select workspace_id, call_id from conversations where id = ${ev.conversation_id}`;
      if (!row?.call_id) return; // browser and voice-test sessions: no call-center record, no event
      const key = `${row.workspace_id}:${row.call_id}`;
      await jobs.enqueue('webhook.call-completed', { call_key: key }, { singletonKey: key, delaySeconds: SETTLE_S, tx });
    },
    run,
    runFailed,
    async onCarrierCallEnded(ev) {
      const c = ev.call;
      if (ev.type !== 'ended') return;
      const neverConnected = !c.answered_at_ms && NEVER_CONNECTED.has(ev.detail ?? '');
      // Spec: no event for campaign contacts that never connected (the campaign's calls list and
      // export say how each attempt ended).
      if (neverConnected && c.campaign_id) return;
      // An answered call normally has a conversation, whose end sends call.completed. One whose
      // media never reached an engine (the stream did not connect) has none: checked once the
      // engine would have written it, then sent as failed rather than lost.
      if (!neverConnected && !c.answered_at_ms) return;
      await jobs.enqueue(
        'webhook.call-failed',
        {
          call_id: c.call_id,
          workspace_id: c.workspace_id,
          agent_id: c.agent_id,
          direction: c.direction,
          from_number: c.from_number,
          to_number: c.to_number,
          carrier_status: ev.detail ?? '',
          created_at_ms: c.created_at_ms,
          ended_at_ms: clock.now(),
          ...(neverConnected ? {} : { answered_at_ms: c.answered_at_ms }),
        },
        { singletonKey: c.call_id, ...(neverConnected ? {} : { delaySeconds: opts.unrecordedCheckS ?? UNRECORDED_CHECK_S }) },
      );
    },
    testEvent(workspaceId) {
      const eventId = newId();
      const at = new Date(clock.now()).toISOString();
      const fake = '00000000-0000-0000-0000-000000000000';
      const body = {
        id: eventId,
        type: EVENT_TYPE,
        created_at: at,
        test: true,
        workspace_id: workspaceId,
        data: {
          call_id: fake,
          conversation_id: fake,
          conversation_ids: [fake],
          status: 'completed',
          direction: 'inbound',
          caller_number: '+15555550100',
          callee_number: '+15555550199',
          caller_name: 'Test Caller',
          started_at: at,
          answered_at: at,
          ended_at: at,
          duration_ms: 0,
          talk_duration_ms: 0,
          ai_agent: { id: fake, name: 'Test agent' },
          human_agents: [],
          segments: [{ n: 1, handler: 'ai', conversation_id: fake, human_agent_id: null }],
          disposition: null,
          summary: 'This is a test event from voiceplane.',
          qa_score: null,
          analysis_status: 'partial',
          transcript_url: null,
          recordings: [],
        },
      };
      return { eventId, body: JSON.stringify(body) };
    },
  };
}

/** The event body of a settled call (every field of the spec's table). */
/** A stint of a call cold-transferred to a number whose carrier end has not been recorded yet. */
function awaitingTransferredLeg(s: StintRow): boolean {
  const meta = s.metadata ?? {};
  return s.segment_kind === 'ai' && typeof meta.transferred_to === 'string' && meta.transferred_to !== '' && !meta.call_ended_at;
}

export function callCompletedBody(eventId: string, createdAt: Date, stints: StintRow[], linkBase: string | null, analysis: CallAnalysis) {
  const first = stints[0];
  const meta = first.metadata ?? {};
  const session = (meta.session_metadata ?? {}) as Record<string, unknown>;
  const str = (...vals: unknown[]) => (vals.find((v) => typeof v === 'string' && v) as string | undefined) ?? '';
  // The call began when telephony placed or took it (`call_started_at`, stamped at session start):
  // ringing is part of `duration_ms`; the conversation itself starts when the media connected.
  const answeredAt = first.started_at;
  const placedMs = Date.parse(str(meta.call_started_at, session.call_started_at));
  const startedAt = Number.isFinite(placedMs) && placedMs <= answeredAt.getTime() ? new Date(placedMs) : answeredAt;
  const stintsEnd = stints.reduce<Date | null>((max, s) => (s.ended_at && (!max || s.ended_at > max) ? s.ended_at : max), null);
  // A cold-transferred call ends when its carrier call does (the transferred leg), not with the AI.
  const carrierEndMs = typeof meta.transferred_to === 'string' && meta.transferred_to ? Date.parse(str(meta.call_ended_at)) : NaN;
  const endedAt = Number.isFinite(carrierEndMs) && (!stintsEnd || carrierEndMs > stintsEnd.getTime()) ? new Date(carrierEndMs) : stintsEnd;
  // A conversation row exists only once the carrier connected the call to the engine: `completed`,
  // unless a sweeper closed it without a recorded end (`abandoned`, `node_lost`: status `abandoned`).
  const status = stints.some((s) => UNRECORDED_ENDS.has(String((s.metadata ?? {}).end_reason))) ? 'abandoned' : 'completed';
  const summary = stints.map((s) => s.summary).filter((s): s is string => !!s).join('\n\n') || null;
  const humans = stints.filter((s) => s.segment_kind === 'human');
  const recordingSid = str(meta.recording_sid);
  const legRecordingSid = str(meta.transfer_recording_sid);
  const recordingUrl = (sid: string) => (linkBase ? `${linkBase}${recordingPath(first.id, sid)}` : null);
  return {
    id: eventId,
    type: EVENT_TYPE,
    created_at: createdAt.toISOString(),
    test: false,
    workspace_id: first.workspace_id,
    data: {
      call_id: first.call_id,
      conversation_id: first.id,
      conversation_ids: stints.map((s) => s.id),
      status,
      direction: str(meta.call_direction, session.call_direction) || 'inbound',
      caller_number: str(session.from_number, meta.from_number),
      callee_number: str(session.to_number, meta.to_number),
      caller_name: str(session.caller_name, meta.caller_name),
      started_at: startedAt.toISOString(),
      answered_at: answeredAt.toISOString(),
      ended_at: endedAt?.toISOString() ?? null,
      duration_ms: endedAt ? Math.max(0, endedAt.getTime() - startedAt.getTime()) : 0,
      talk_duration_ms: stints.reduce((a, s) => a + Number(s.total_duration_ms || 0), 0),
      ai_agent: { id: first.agent_id, name: first.agent_name ?? '' },
      human_agents: humans.map((s) => ({
        id: str((s.metadata ?? {}).human_agent_id) || null,
        name: str((s.metadata ?? {}).human_agent_name),
        segment_started_at: s.started_at.toISOString(),
        segment_ended_at: s.ended_at?.toISOString() ?? null,
      })),
      segments: stints.map((s, i) => ({ n: i + 1, handler: s.segment_kind, conversation_id: s.id, human_agent_id: str((s.metadata ?? {}).human_agent_id) || null })),
      disposition: null,
      summary,
      qa_score: analysis.qaScore,
      analysis_status: analysisStatus(analysis.pieces, status === 'abandoned'),
      transcript_url: linkBase ? `${linkBase}/api/v1/conversations/${first.id}/messages` : null,
      // The proxy route re-authenticates (conversations/recordings.ts); null without a public link (spec).
      recordings: [
        ...(recordingSid ? [{ id: recordingSid, channel: 'mixed', url: recordingUrl(recordingSid) }] : []),
        // The leg a cold transfer dialed (recorded from its answer).
        ...(legRecordingSid && legRecordingSid !== recordingSid ? [{ id: legRecordingSid, channel: 'transferred', url: recordingUrl(legRecordingSid) }] : []),
      ],
    },
  };
}

/** Links only for a public base URL (spec: null when the deployment has only a loopback one). */
function publicLinkBase(base: string): string | null {
  try {
    const host = new URL(base).hostname;
    if (host === 'localhost' || host.startsWith('127.') || host === '[::1]' || host === '0.0.0.0') return null;
    return base.replace(/\/$/, '');
  } catch {
    return null;
  }
}
