/**
 * The live call registry: call records in the shared session registry (Redis when configured), so
 * every control-plane replica lists, ends and transfers every call (the spec keeps them per
 * replica; see docs/telephony.md). Ended calls are removed, so a lookup answers 404.
 *
 * A call ends when the carrier says so (status callback), when a transferred leg finishes
 * (`dial-complete`), when `end` is called, or, for calls the carrier never reports on (inbound:
 * the customer configured only our voice URL), when its voice session is gone from the registry:
 * such a stale record is dropped the next time anyone reads it (`sweep`).
 */
import type { Clock } from '../../shared/clock.js';
import { REGISTRY_RESTORE_GRACE_MS, type Registry, type StoredCall } from '../../shared/registry/index.js';

export type CallStatus = 'initiated' | 'ringing' | 'in_progress';
export type CallDirection = 'inbound' | 'outbound';

/** The record stored per call (flat JSON: every field patchable on its own). */
export interface CallRecord {
  call_id: string;
  session_id: string;
  agent_id: string;
  workspace_id: string;
  user_id: string;
  direction: CallDirection;
  status: CallStatus;
  to_number: string;
  from_number: string;
  telephony_provider: string;
  provider_call_sid: string;
  amd_verdict: string;
  answered_by: string;
  created_at_ms: number;
  /** When the callee answered (duration counts from here); 0 before. */
  answered_at_ms: number;
  /**
   * When the call's media stream reached an engine (the engine stamps it); 0 before. Proof of an
   * answer that does not depend on the carrier's "answered" callback arriving.
   */
  media_connected_at_ms: number;
  /** When that stream ended (the engine stamps it); 0 while it runs or when the engine died. */
  media_ended_at_ms: number;
  transferred_to: string;
  recording_url: string;
  recording_sid: string;
  /**
   * The person's leg's recording when its carrier named it in a callback of its own before the
   * call ended (`leg_recording`; the `ended` event carries it as `dialRecording`).
   */
  leg_recording_url: string;
  leg_recording_sid: string;
  /** Highest carrier SequenceNumber applied (status callbacks may arrive out of order). */
  last_sequence: number;
  /** The engine socket the TwiML points at (a redirected inbound webhook answers the same). */
  stream_url: string;
  /** The campaign that placed the call ('' for other calls). */
  campaign_id: string;
}

export interface CallEvent {
  /** `status`: a status change; `ended`: the call left the registry (with the carrier's final status when known). */
  type: 'status' | 'ended' | 'amd' | 'recording' | 'transferred';
  call: CallRecord;
  /** Carrier status (`completed`, `busy`, ...), end reason, verdict or recording URL. */
  detail?: string;
  /** Seconds, on `ended` when the carrier reported it. */
  durationS?: number;
  /**
   * On the `ended` event of a transferred call: the recording of the dialed leg (Twilio passes
   * `RecordingUrl` / `RecordingSid` to the `<Dial action>` when `record` is set; Telnyx, Plivo
   * and Vonage name it in a callback of its own, kept on the record if it came first).
   */
  dialRecording?: { url: string; sid: string };
  /**
   * On the `ended` event of a call handed to a person without `dialRecording`: its carrier names
   * that recording in a callback of its own, still to come (`TelephonyDeps.lateRecordings`).
   */
  recordingFollows?: boolean;
}

/** Longest a call record lives if nobody ends it (crashed engine and no carrier callback). */
export const CALL_TTL_MS = 6 * 60 * 60 * 1000;

const STATUS_RANK: Record<CallStatus, number> = { initiated: 0, ringing: 1, in_progress: 2 };

export function newCallRecord(fields: Partial<CallRecord> & Pick<CallRecord, 'call_id' | 'agent_id' | 'workspace_id' | 'user_id' | 'direction' | 'status'>): CallRecord {
  return {
    session_id: '',
    to_number: '',
    from_number: '',
    telephony_provider: 'twilio',
    provider_call_sid: '',
    amd_verdict: '',
    answered_by: '',
    created_at_ms: 0,
    answered_at_ms: 0,
    media_connected_at_ms: 0,
    media_ended_at_ms: 0,
    transferred_to: '',
    recording_url: '',
    recording_sid: '',
    leg_recording_url: '',
    leg_recording_sid: '',
    last_sequence: -1,
    stream_url: '',
    campaign_id: '',
    ...fields,
  };
}

/** Whether `next` moves the call forward (statuses never go back: callbacks can arrive out of order). */
export function advances(current: CallStatus, next: CallStatus): boolean {
  return STATUS_RANK[next] > STATUS_RANK[current];
}

/** Carrier `CallStatus` -> our status, or `ended` for the final ones. */
export function mapCarrierStatus(s: string): CallStatus | 'ended' | undefined {
  switch (s.trim().toLowerCase()) {
    case 'queued':
    case 'initiated':
      return 'initiated';
    case 'ringing':
      return 'ringing';
    case 'in-progress':
    case 'answered':
      return 'in_progress';
    case 'completed':
    case 'busy':
    case 'no-answer':
    case 'failed':
    case 'canceled':
      return 'ended';
    default:
      return undefined;
  }
}

export class LiveCalls {
  constructor(
    /** Calls and seats; sessions to tell whether a call's voice session is gone. */
    private readonly registry: Pick<Registry, 'calls' | 'sessions' | 'reconnectedWithin'>,
    private readonly clock: Clock,
  ) {}

  /** Stores a new call; false when its pool (workspace) has no free seat. */
  async put(rec: CallRecord, seatLimit: number): Promise<boolean> {
    const now = this.clock.now();
    const stored: StoredCall = {
      callId: rec.call_id,
      userId: rec.user_id,
      poolId: rec.workspace_id,
      data: { ...rec },
      createdAtMs: now,
      expiresAtMs: now + CALL_TTL_MS,
    };
    if (rec.provider_call_sid) stored.providerCallSid = rec.provider_call_sid;
    return this.registry.calls.putCall(stored, { seatLimit });
  }

  async get(callId: string): Promise<CallRecord | undefined> {
    return recordOf(await this.registry.calls.getCall(callId));
  }

  async bySid(sid: string): Promise<CallRecord | undefined> {
    return recordOf(await this.registry.calls.findCallBySid(sid));
  }

  async patch(callId: string, fields: Partial<CallRecord>): Promise<CallRecord | undefined> {
    return recordOf(await this.registry.calls.patchCall(callId, fields, fields.provider_call_sid || undefined));
  }

  /**
   * Marks the call handed to `to` unless it already is (one step: of two concurrent transfers
   * exactly one gets the call). 'taken': already transferred; undefined: the call is gone.
   */
  async claimTransfer(callId: string, to: string): Promise<CallRecord | 'taken' | undefined> {
    const c = await this.registry.calls.patchCallIfEmpty(callId, 'transferred_to', { transferred_to: to, status: 'in_progress' });
    return c === 'taken' ? c : recordOf(c);
  }

  /** Removes the call; only the caller that removed it gets the record (so end effects run once). */
  async remove(callId: string): Promise<CallRecord | undefined> {
    return recordOf(await this.registry.calls.deleteCall(callId));
  }

  async list(by: { userId: string } | { poolId: string }): Promise<CallRecord[]> {
    return (await this.registry.calls.listCalls(by)).map((c) => recordOf(c)!);
  }

  /**
   * A call whose voice session is gone and that was not handed to a human is over, whether or not
   * a carrier callback said so: connected, its engine ended it (or died); not yet answered, the
   * session's answer window (ring timeout + 30 s for outbound) passed with no final status.
   */
  async isStale(rec: CallRecord): Promise<boolean> {
    if (rec.transferred_to || !rec.session_id) return false;
    // Just after Redis came back (maybe empty) the engine's claim may not be written back yet:
    // a missing session is not evidence that the call is over (voice/sessions.ts, same grace).
    if (this.registry.reconnectedWithin?.(REGISTRY_RESTORE_GRACE_MS)) return false;
    if (await this.registry.sessions.sessionOwner(rec.session_id)) return false;
    return (await this.registry.sessions.getSession(rec.session_id)) === undefined;
  }

  /** Live calls a campaign has placed in a workspace (its `max_concurrent_calls` is counted here). */
  async countCampaign(workspaceId: string, campaignId: string): Promise<number> {
    return (await this.list({ poolId: workspaceId })).filter((c) => c.campaign_id === campaignId).length;
  }

  durationS(rec: CallRecord): number {
    return rec.answered_at_ms ? Math.max(0, Math.floor((this.clock.now() - rec.answered_at_ms) / 1000)) : 0;
  }
}

function recordOf(c: StoredCall | undefined): CallRecord | undefined {
  if (!c) return undefined;
  const rec = c.data as unknown as CallRecord;
  if (c.providerCallSid && !rec.provider_call_sid) rec.provider_call_sid = c.providerCallSid;
  return rec;
}
